//! Form keys that name the org their form was rendered for. A key is a UUID minted at render: a
//! version-8 key carries the millisecond it was minted (so keys of one org stay time-ordered, as v7
//! keys are), 42 random bits, and 32 bits of the org's id. A form rendered for one org and submitted
//! after the session switched to another is refused, nothing written. Keys of other versions (an
//! API-like client's own) name no org and pass.

use uuid::Uuid;

fn org_tag(org: crate::OrgId) -> [u8; 4] {
    let o = org.uuid();
    let o = o.as_bytes();
    [o[12] ^ o[0], o[13] ^ o[1], o[14] ^ o[2], o[15] ^ o[3]]
}

/// A new form key for a form of `org`.
pub fn form_key(org: crate::OrgId) -> Uuid {
    let mut bytes = *Uuid::new_v4().as_bytes();
    let ms = chrono::Utc::now().timestamp_millis().max(0) as u64;
    bytes[0..6].copy_from_slice(&ms.to_be_bytes()[2..8]);
    bytes[6] = (bytes[6] & 0x0f) | 0x80;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    bytes[12..16].copy_from_slice(&org_tag(org));
    Uuid::from_bytes(bytes)
}

/// Whether `key` may be used by a session acting for `org`: it names `org`, or no org at all.
pub fn form_key_fits(key: Uuid, org: crate::OrgId) -> bool {
    key.get_version_num() != 8 || key.as_bytes()[12..16] == org_tag(org)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_fits_the_org_it_was_minted_for_only() {
        let (a, b) = (
            crate::OrgId::from(Uuid::new_v4()),
            crate::OrgId::from(Uuid::new_v4()),
        );
        let key = form_key(a);
        assert_eq!(key.get_version_num(), 8);
        assert_eq!(key.get_variant(), uuid::Variant::RFC4122);
        assert!(form_key_fits(key, a));
        assert!(!form_key_fits(key, b));
        // A key that names no org (v4, v7) fits any.
        assert!(form_key_fits(Uuid::now_v7(), b));
        assert!(form_key_fits(Uuid::new_v4(), b));
        // Distinct and ordered by time.
        let later = {
            std::thread::sleep(std::time::Duration::from_millis(2));
            form_key(a)
        };
        assert_ne!(key, later);
        assert!(key < later);
    }
}
