//! No way into our network: an endpoint's URL is `https` (plain `http` only where private targets
//! are allowed), and its host's addresses are public ones. The check runs when an endpoint is
//! registered and again, inside the delivery client's resolver, on every delivery: the host is
//! resolved once, every address it gave is checked, and the connection goes to those checked
//! addresses and no others (a name that answers a public address to the check and 127.0.0.1 to
//! the connection, DNS rebinding, has no second lookup to answer). A URL naming an address is
//! checked as it is; redirects are never followed.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// Where deliveries may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Loopback, private, link-local and other non-public addresses allowed
    /// (`WEBHOOKS_ALLOW_PRIVATE=true`; dev mode's default).
    pub allow_private: bool,
    /// Only `https` URLs (production).
    pub https_only: bool,
}

impl Policy {
    /// Production's: public addresses, over https.
    pub const STRICT: Policy = Policy {
        allow_private: false,
        https_only: true,
    };
    /// Development's and the tests': anything, over http or https.
    pub const OPEN: Policy = Policy {
        allow_private: true,
        https_only: false,
    };
}

/// Whether `ip` is an address on the public internet (not loopback, private, link-local, shared,
/// documentation, multicast, reserved or unspecified; an IPv4 address inside IPv6 is judged as the
/// IPv4 one).
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let s = v6.segments();
            // NAT64 (64:ff9b::/96) reaches the IPv4 address in its last 32 bits.
            if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
                let v4 =
                    Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
                return is_public_v4(v4);
            }
            !(v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                // IPv4-compatible (::a.b.c.d, deprecated) and the discard prefix 100::/64
                || (s[0..6] == [0, 0, 0, 0, 0, 0])
                || (s[0] == 0x100 && s[1..4] == [0, 0, 0])
                // unique local fc00::/7 (fd00:ec2::254, a cloud's metadata service, is one)
                || (s[0] & 0xfe00) == 0xfc00
                // link-local fe80::/10 and the old site-local fec0::/10
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] & 0xffc0) == 0xfec0
                // documentation 2001:db8::/32
                || (s[0] == 0x2001 && s[1] == 0xdb8))
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || a == 0
        || ip.is_loopback()
        || ip.is_private()
        // link-local 169.254/16: 169.254.169.254 is the metadata service of most clouds
        || ip.is_link_local()
        // shared address space (carrier-grade NAT) 100.64/10
        || (a == 100 && (b & 0xc0) == 64)
        // IETF protocol assignments 192.0.0/24, benchmarking 198.18/15
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b & 0xfe) == 18)
        || ip.is_documentation()
        || ip.is_multicast()
        || ip.is_broadcast()
        // reserved 240/4
        || a >= 240)
}

/// What is wrong with `url` under `policy` before any lookup (its scheme, its form, an address
/// it names), or the URL parsed.
pub fn check_url(url: &str, policy: Policy) -> Result<url::Url, String> {
    let parsed =
        url::Url::parse(url.trim()).map_err(|_| "Enter a full URL, https://…".to_owned())?;
    match parsed.scheme() {
        "https" => {}
        "http" if !policy.https_only => {}
        "http" => return Err("Use an https:// URL.".into()),
        _ => return Err("Use an https:// URL.".into()),
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("Put no user name or password in the URL.".into());
    }
    let host = match parsed.host() {
        Some(host) => host,
        None => return Err("The URL has no host.".into()),
    };
    if !policy.allow_private {
        let literal = match host {
            url::Host::Ipv4(v4) => Some(IpAddr::V4(v4)),
            url::Host::Ipv6(v6) => Some(IpAddr::V6(v6)),
            url::Host::Domain(name) => {
                if name.eq_ignore_ascii_case("localhost") || name.ends_with(".localhost") {
                    return Err(refused());
                }
                None
            }
        };
        if literal.is_some_and(|ip| !is_public(ip)) {
            return Err(refused());
        }
    }
    Ok(parsed)
}

fn refused() -> String {
    "That address is not on the public internet: webhooks go to public https endpoints only.".into()
}

/// `url` checked as a delivery will check it: the URL, then every address its host resolves to.
pub async fn check_reachable(url: &str, policy: Policy) -> Result<url::Url, String> {
    let parsed = check_url(url, policy)?;
    if policy.allow_private {
        return Ok(parsed);
    }
    if let Some(url::Host::Domain(name)) = parsed.host() {
        resolve_public(name).await.map_err(|e| e.to_string())?;
    }
    Ok(parsed)
}

#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// `name`'s addresses, every one of them public; an error when one is not (or none came back).
async fn resolve_public(name: &str) -> Result<Vec<SocketAddr>, Refused> {
    let lookup =
        tokio::time::timeout(Duration::from_secs(5), tokio::net::lookup_host((name, 0))).await;
    let addrs: Vec<SocketAddr> = match lookup {
        Ok(Ok(addrs)) => addrs.collect(),
        _ => return Err(Refused(format!("{name:.100} could not be resolved."))),
    };
    if addrs.is_empty() {
        return Err(Refused(format!("{name:.100} has no address.")));
    }
    if addrs.iter().any(|a| !is_public(a.ip())) {
        return Err(Refused(refused()));
    }
    Ok(addrs)
}

/// The delivery client's resolver: every name resolved once and all its addresses checked; the
/// client connects to exactly what this returns.
struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let name = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = resolve_public(&name).await?;
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// Every call out takes at most this long, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The client deliveries use under `policy`: redirects not followed, 10 s in all, and (unless
/// private targets are allowed) the resolver above.
pub fn client(policy: Policy) -> reqwest::Client {
    let mut builder = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .pool_max_idle_per_host(2)
        .user_agent("invoicer-webhooks/1");
    if !policy.allow_private {
        builder = builder.dns_resolver(Arc::new(PublicOnly));
    }
    builder.build().expect("a client with a resolver builds")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_loopback_link_local_and_metadata_addresses_are_refused() {
        for bad in [
            "127.0.0.1",
            "127.255.0.1",
            "0.0.0.0",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::1",
            "::",
            "fd00:ec2::254",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2001:db8::1",
        ] {
            assert!(!is_public(bad.parse().unwrap()), "{bad}");
        }
        for good in [
            "93.184.215.14",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "172.32.0.1",
        ] {
            assert!(is_public(good.parse().unwrap()), "{good}");
        }
    }

    #[test]
    fn urls_are_refused_by_scheme_and_by_the_address_they_name() {
        let strict = Policy::STRICT;
        for bad in [
            "http://example.com/hook",
            "ftp://example.com/",
            "https://127.0.0.1/hook",
            "https://10.0.0.8/",
            "https://169.254.169.254/latest/meta-data/",
            "https://[::1]/",
            "https://[fd12::1]/",
            "https://[fe80::1]/",
            "https://localhost/",
            "https://user:pass@example.com/",
            "not a url",
        ] {
            assert!(check_url(bad, strict).is_err(), "{bad}");
        }
        assert!(check_url("https://example.com/hook", strict).is_ok());
        assert!(check_url("http://127.0.0.1:9000/hook", Policy::OPEN).is_ok());
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused_before_and_at_delivery() {
        let err = check_reachable(
            "https://localhost.localdomain.invalid-not-here/",
            Policy::STRICT,
        )
        .await;
        assert!(err.is_err());
        // "localhost" resolves to 127.0.0.1 through the system resolver: the resolver refuses it.
        let refused = resolve_public("localhost").await;
        assert!(refused.is_err());
        let client = client(Policy::STRICT);
        let sent = client.get("https://localhost:1/").send().await;
        assert!(sent.is_err(), "the delivery client never connects to it");
    }
}
