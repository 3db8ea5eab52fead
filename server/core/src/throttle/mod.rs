//! What anyone on the internet may ask of the expensive paths: login attempts per account and client
//! address and per address, sign-ups per address, emails per org (governor's GCRA limiters, one per
//! key), and password hashing bounded to the cores.
//!
//! Login attempts are keyed by (account, address): guessing at someone's password from one place is
//! slowed, and the owner logging in from elsewhere is not. Guessing one account from many addresses
//! is slowed only by the per-address limit and by hashing being bounded (docs/security.md).

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

mod address;
mod hashing;

pub use address::{client_address, client_key, network_key};
pub use hashing::{bounded, hashes_asked_on_this_thread, hashing, Bounded, HashError, HASH_WAIT};

/// Allowances; every one is configurable (docs/operating.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Login attempts per minute for one account from one address.
    pub logins_per_account_minute: u32,
    /// Login attempts per minute from one address, whatever the account.
    pub logins_per_address_minute: u32,
    /// Sign-ups per hour from one address.
    pub signups_per_address_hour: u32,
    /// Emails an org may send per hour in its name (the mail gate counts them).
    pub emails_per_org_hour: u32,
    /// Emails one address may receive per hour from all orgs together (the mail gate).
    pub emails_per_recipient_hour: u32,
    /// Account emails (password reset, verification, invitations) asked for per hour from one
    /// client address.
    pub account_emails_per_address_hour: u32,
    /// Account emails per hour to one recipient address, whoever asks: nobody can flood an inbox.
    pub account_emails_per_recipient_hour: u32,
    /// Password resets (a reset link followed with a new password) per hour from one address.
    pub resets_per_address_hour: u32,
    /// Tries of one reset link per hour, from anywhere.
    pub resets_per_token_hour: u32,
    /// Customer pages (`/i/{token}` and its Pay button) per minute from one address.
    pub public_pages_per_address_minute: u32,
    /// Customer pages per minute of one invoice link, from anywhere.
    pub public_pages_per_token_minute: u32,
    /// Customer PDFs per minute from one address.
    pub pdfs_per_address_minute: u32,
    /// Customer PDFs per minute of one invoice link, from anywhere.
    pub pdfs_per_token_minute: u32,
    /// Ceilings per hour over every client together: one network of many addresses cannot sign up,
    /// guess or render without bound.
    pub ceilings: Ceilings,
}

/// Per-hour ceilings of each limited action, whoever asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ceilings {
    pub logins: u32,
    pub signups: u32,
    pub account_emails: u32,
    pub resets: u32,
    pub public_pages: u32,
    pub pdfs: u32,
}

impl Ceilings {
    pub const DEFAULT: Ceilings = Ceilings {
        logins: 20_000,
        signups: 200,
        account_emails: 1_000,
        resets: 500,
        public_pages: 200_000,
        pdfs: 20_000,
    };
}

impl Default for Ceilings {
    fn default() -> Self {
        Ceilings::DEFAULT
    }
}

impl Limits {
    /// The defaults of the configuration's variables (docs/operating.md).
    pub const DEFAULT: Limits = Limits {
        logins_per_account_minute: 10,
        logins_per_address_minute: 30,
        signups_per_address_hour: 10,
        emails_per_org_hour: 100,
        emails_per_recipient_hour: 50,
        account_emails_per_address_hour: 20,
        account_emails_per_recipient_hour: 5,
        resets_per_address_hour: 20,
        resets_per_token_hour: 5,
        public_pages_per_address_minute: 120,
        public_pages_per_token_minute: 60,
        pdfs_per_address_minute: 20,
        pdfs_per_token_minute: 10,
        ceilings: Ceilings::DEFAULT,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// Refused for now; try again after `retry_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttled {
    pub retry_after: Duration,
}

/// An email address as a limiter key: trimmed, lowercased and cut to 320 bytes (the longest an
/// address can be), so junk cannot grow the maps' memory.
pub fn email_key(email: &str) -> String {
    let mut key = email.trim().to_lowercase();
    if key.len() > 320 {
        let mut end = 320;
        while !key.is_char_boundary(end) {
            end -= 1;
        }
        key.truncate(end);
    }
    key
}

/// The share of a ceiling one network may spend: a tenth of it.
const NETWORK_SHARE: u32 = 10;

type Global = governor::DefaultDirectRateLimiter;

/// One action's ceiling over all clients: a share per network, then the whole.
struct Shared {
    network: DefaultKeyedRateLimiter<IpAddr>,
    all: Global,
}

impl Shared {
    fn new(per_hour: u32) -> Arc<Shared> {
        const HOUR: Duration = Duration::from_secs(3600);
        Arc::new(Shared {
            network: RateLimiter::keyed(quota((per_hour / NETWORK_SHARE).max(1), HOUR)),
            all: RateLimiter::direct(quota(per_hour, HOUR)),
        })
    }
}

/// A request's claim on an action's ceiling, handed out once its own allowances (per address, per
/// account or link) let it through. It is spent only once the request proved itself worth it (its
/// link looked up and found, say): junk costs the client's own allowances, never the world's. A
/// signed-in user's request waives it: a ceiling everyone shares never refuses a known user.
#[must_use = "spend the ceiling once the request proved itself, or waive it for a signed-in user"]
pub struct Ceiling {
    shared: Arc<Shared>,
    network: IpAddr,
}

impl Ceiling {
    /// Takes a cell of the client's network's share, then one of the ceiling.
    pub fn spend(self) -> Result<(), Throttled> {
        check(&self.shared.network, &self.network)?;
        check_all(&self.shared.all)
    }

    /// The request is a signed-in user's: no ceiling applies.
    pub fn waive(self) {}
}

pub struct Throttle {
    login_account: DefaultKeyedRateLimiter<(String, IpAddr)>,
    login_address: DefaultKeyedRateLimiter<IpAddr>,
    signup_address: DefaultKeyedRateLimiter<IpAddr>,
    account_email_address: DefaultKeyedRateLimiter<IpAddr>,
    account_email_recipient: DefaultKeyedRateLimiter<String>,
    reset_address: DefaultKeyedRateLimiter<IpAddr>,
    reset_token: DefaultKeyedRateLimiter<String>,
    page_address: DefaultKeyedRateLimiter<IpAddr>,
    page_token: DefaultKeyedRateLimiter<String>,
    pdf_address: DefaultKeyedRateLimiter<IpAddr>,
    pdf_token: DefaultKeyedRateLimiter<String>,
    logins: Arc<Shared>,
    signups: Arc<Shared>,
    account_emails: Arc<Shared>,
    resets: Arc<Shared>,
    pages: Arc<Shared>,
    pdfs: Arc<Shared>,
}

impl std::fmt::Debug for Throttle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Throttle")
    }
}

/// `n` per `period`, all of it available at once (a burst of `n`), refilled evenly.
fn quota(n: u32, period: Duration) -> Quota {
    let n = NonZeroU32::new(n.max(1)).expect("at least 1");
    Quota::with_period(period / n.get())
        .expect("a positive period")
        .allow_burst(n)
}

fn refused(not_until: governor::NotUntil<governor::clock::QuantaInstant>) -> Throttled {
    Throttled {
        retry_after: not_until.wait_time_from(DefaultClock::default().now()),
    }
}

fn check<K: std::hash::Hash + Eq + Clone>(
    limiter: &DefaultKeyedRateLimiter<K>,
    key: &K,
) -> Result<(), Throttled> {
    limiter.check_key(key).map_err(refused)
}

fn check_all(global: &Global) -> Result<(), Throttled> {
    global.check().map_err(refused)
}

/// A token as a limiter key: at most 64 characters of it (a longer one is junk, and is cut so it
/// cannot grow the map's memory).
fn token_key(token: &str) -> String {
    token.trim().chars().take(64).collect()
}

impl Throttle {
    pub fn new(limits: Limits) -> Throttle {
        const MINUTE: Duration = Duration::from_secs(60);
        const HOUR: Duration = Duration::from_secs(3600);
        fn keyed<K: std::hash::Hash + Eq + Clone>(
            n: u32,
            period: Duration,
        ) -> DefaultKeyedRateLimiter<K> {
            RateLimiter::keyed(quota(n, period))
        }
        let c = limits.ceilings;
        Throttle {
            login_account: keyed(limits.logins_per_account_minute, MINUTE),
            login_address: keyed(limits.logins_per_address_minute, MINUTE),
            signup_address: keyed(limits.signups_per_address_hour, HOUR),
            account_email_address: keyed(limits.account_emails_per_address_hour, HOUR),
            account_email_recipient: keyed(limits.account_emails_per_recipient_hour, HOUR),
            reset_address: keyed(limits.resets_per_address_hour, HOUR),
            reset_token: keyed(limits.resets_per_token_hour, HOUR),
            page_address: keyed(limits.public_pages_per_address_minute, MINUTE),
            page_token: keyed(limits.public_pages_per_token_minute, MINUTE),
            pdf_address: keyed(limits.pdfs_per_address_minute, MINUTE),
            pdf_token: keyed(limits.pdfs_per_token_minute, MINUTE),
            logins: Shared::new(c.logins),
            signups: Shared::new(c.signups),
            account_emails: Shared::new(c.account_emails),
            resets: Shared::new(c.resets),
            pages: Shared::new(c.public_pages),
            pdfs: Shared::new(c.pdfs),
        }
    }

    fn ceiling(shared: &Arc<Shared>, address: IpAddr) -> Ceiling {
        Ceiling {
            shared: shared.clone(),
            network: network_key(address),
        }
    }

    /// One login attempt for `email` (or an invitation's token) from `address`, counted before its
    /// password is hashed.
    pub fn login(&self, email: &str, address: IpAddr) -> Result<Ceiling, Throttled> {
        let key = client_key(address);
        check(&self.login_address, &key)?;
        check(&self.login_account, &(email_key(email), key))?;
        Ok(Self::ceiling(&self.logins, address))
    }

    pub fn signup(&self, address: IpAddr) -> Result<Ceiling, Throttled> {
        check(&self.signup_address, &client_key(address))?;
        Ok(Self::ceiling(&self.signups, address))
    }

    /// One account email (reset, verification, invitation) to `recipient` asked for from
    /// `address`, counted whether or not the recipient has an account (the answer is the same).
    pub fn account_email(&self, recipient: &str, address: IpAddr) -> Result<Ceiling, Throttled> {
        check(&self.account_email_address, &client_key(address))?;
        check(&self.account_email_recipient, &email_key(recipient))?;
        Ok(Self::ceiling(&self.account_emails, address))
    }

    /// One try of a reset link (`token`) from `address`, counted before anything is looked up;
    /// the ceiling is spent once the link is found usable.
    pub fn reset(&self, token: &str, address: IpAddr) -> Result<Ceiling, Throttled> {
        check(&self.reset_address, &client_key(address))?;
        check(&self.reset_token, &token_key(token))?;
        Ok(Self::ceiling(&self.resets, address))
    }

    /// One customer page (or Pay) of the invoice link `token` from `address`; the ceiling is spent
    /// once the link is found.
    pub fn public_page(&self, token: &str, address: IpAddr) -> Result<Ceiling, Throttled> {
        check(&self.page_address, &client_key(address))?;
        check(&self.page_token, &token_key(token))?;
        Ok(Self::ceiling(&self.pages, address))
    }

    /// One customer PDF of the invoice link `token` from `address`; the ceiling is spent once the
    /// link is found.
    pub fn pdf(&self, token: &str, address: IpAddr) -> Result<Ceiling, Throttled> {
        check(&self.pdf_address, &client_key(address))?;
        check(&self.pdf_token, &token_key(token))?;
        Ok(Self::ceiling(&self.pdfs, address))
    }

    /// Forgets keys whose allowance is full again, so the maps do not grow with every address and
    /// account ever seen. Called every minute by the server.
    pub fn forget_idle(&self) {
        fn trim<K: std::hash::Hash + Eq + Clone>(limiter: &DefaultKeyedRateLimiter<K>) {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
        trim(&self.login_account);
        trim(&self.login_address);
        trim(&self.signup_address);
        trim(&self.account_email_address);
        trim(&self.account_email_recipient);
        trim(&self.reset_address);
        trim(&self.reset_token);
        trim(&self.page_address);
        trim(&self.page_token);
        trim(&self.pdf_address);
        trim(&self.pdf_token);
        for shared in [
            &self.logins,
            &self.signups,
            &self.account_emails,
            &self.resets,
            &self.pages,
            &self.pdfs,
        ] {
            trim(&shared.network);
        }
    }
}

impl Default for Throttle {
    fn default() -> Self {
        Throttle::new(Limits::default())
    }
}

impl From<Throttled> for model::error::AppError {
    fn from(t: Throttled) -> Self {
        model::error::AppError::Throttled(t.retry_after.as_secs().max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An action's own allowances, then its ceiling.
    fn spent(asked: Result<Ceiling, Throttled>) -> Result<(), Throttled> {
        asked?.spend()
    }

    fn addr(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn login_attempts_are_limited_per_account_and_address() {
        let t = Throttle::new(Limits {
            logins_per_account_minute: 3,
            logins_per_address_minute: 5,
            ..Limits::default()
        });
        for _ in 0..3 {
            spent(t.login("ada@example.com", addr(1))).unwrap();
        }
        let refused = spent(t.login("ADA@example.com ", addr(1))).unwrap_err();
        assert!(
            refused.retry_after > Duration::ZERO && refused.retry_after <= Duration::from_secs(20)
        );
        // The owner elsewhere is not slowed by the guesser's failures.
        spent(t.login("ada@example.com", addr(2))).unwrap();
        // Another account from the guessing address: the per-address allowance (5) runs out.
        spent(t.login("bob@example.com", addr(1))).unwrap();
        assert!(spent(t.login("carol@example.com", addr(1))).is_err());
    }

    #[test]
    fn signups_have_their_own_allowance() {
        let t = Throttle::new(Limits {
            signups_per_address_hour: 2,
            ..Limits::default()
        });
        spent(t.signup(addr(1))).unwrap();
        spent(t.signup(addr(1))).unwrap();
        assert!(spent(t.signup(addr(1))).is_err());
        spent(t.signup(addr(2))).unwrap();
    }

    #[test]
    fn account_emails_are_limited_per_address_and_per_recipient() {
        let t = Throttle::new(Limits {
            account_emails_per_address_hour: 3,
            account_emails_per_recipient_hour: 2,
            ..Limits::default()
        });
        // One inbox, asked for from two places: the recipient's allowance (2) runs out.
        spent(t.account_email("victim@example.com", addr(1))).unwrap();
        spent(t.account_email("Victim@example.com ", addr(2))).unwrap();
        assert!(spent(t.account_email("victim@example.com", addr(3))).is_err());
        // One place asking for many inboxes: the address's allowance (3) runs out.
        spent(t.account_email("a@example.com", addr(4))).unwrap();
        spent(t.account_email("b@example.com", addr(4))).unwrap();
        spent(t.account_email("c@example.com", addr(4))).unwrap();
        assert!(spent(t.account_email("d@example.com", addr(4))).is_err());
    }

    #[test]
    fn ipv6_clients_are_keyed_by_their_64_and_mapped_ipv4_as_ipv4() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff:1:2:3".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(client_key(a), client_key(b));
        assert_ne!(client_key(a), client_key(other));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(client_key(mapped), addr(1));
        assert_eq!(client_key(addr(1)), addr(1));
        // Every host of one /64 shares one login allowance.
        let t = Throttle::new(Limits {
            logins_per_address_minute: 2,
            ..Limits::default()
        });
        spent(t.login("a@example.com", a)).unwrap();
        spent(t.login("b@example.com", b)).unwrap();
        assert!(t
            .login("c@example.com", "2001:db8:1:2::9".parse().unwrap())
            .is_err());
        spent(t.login("c@example.com", other)).unwrap();
    }

    #[test]
    fn every_limited_action_has_a_ceiling_over_all_clients() {
        let t = Throttle::new(Limits {
            ceilings: Ceilings {
                logins: 3,
                signups: 2,
                account_emails: 2,
                resets: 2,
                public_pages: 2,
                pdfs: 2,
            },
            ..Limits::default()
        });
        // Each from a different network: only the ceiling can refuse them.
        let net = |i: u16| -> IpAddr { format!("2001:db8:{i}::1").parse().unwrap() };
        for i in 0..3 {
            spent(t.login("a@example.com", net(i))).unwrap();
        }
        assert!(spent(t.login("a@example.com", net(99))).is_err());
        type Act = fn(&Throttle, IpAddr) -> Result<(), Throttled>;
        let actions: [(&str, Act); 5] = [
            ("signup", |t, a| spent(t.signup(a))),
            ("account email", |t, a| {
                spent(t.account_email(&a.to_string(), a))
            }),
            ("reset", |t, a| spent(t.reset(&a.to_string(), a))),
            ("page", |t, a| spent(t.public_page(&a.to_string(), a))),
            ("pdf", |t, a| spent(t.pdf(&a.to_string(), a))),
        ];
        for (name, act) in actions {
            act(&t, net(1)).unwrap();
            act(&t, net(2)).unwrap();
            assert!(act(&t, net(3)).is_err(), "{name} has no ceiling");
        }
    }

    #[test]
    fn resets_and_customer_pages_are_limited_per_address_and_per_token() {
        let t = Throttle::new(Limits {
            resets_per_address_hour: 3,
            resets_per_token_hour: 2,
            public_pages_per_address_minute: 3,
            public_pages_per_token_minute: 2,
            pdfs_per_address_minute: 3,
            pdfs_per_token_minute: 2,
            ..Limits::default()
        });
        type Act = fn(&Throttle, &str, IpAddr) -> Result<(), Throttled>;
        let actions: [Act; 3] = [
            |t, k, a| spent(t.reset(k, a)),
            |t, k, a| spent(t.public_page(k, a)),
            |t, k, a| spent(t.pdf(k, a)),
        ];
        for act in actions {
            // One token from many places: its own allowance (2).
            act(&t, "tok", addr(1)).unwrap();
            act(&t, "tok", addr(2)).unwrap();
            assert!(act(&t, "tok", addr(3)).is_err());
            // One place, many tokens: the address's allowance (3, one spent above).
            act(&t, "a", addr(1)).unwrap();
            act(&t, "b", addr(1)).unwrap();
            assert!(act(&t, "c", addr(1)).is_err());
        }
    }

    /// 60 addresses of one /48, each within its own allowances, spend a tenth of a ceiling at
    /// most: a user elsewhere still gets through, and a signed-in user is never refused by one.
    #[test]
    fn one_network_cannot_empty_a_ceiling() {
        let t = Throttle::new(Limits {
            resets_per_address_hour: 20,
            account_emails_per_address_hour: 20,
            account_emails_per_recipient_hour: 1_000,
            ceilings: Ceilings {
                resets: 500,
                account_emails: 500,
                ..Ceilings::DEFAULT
            },
            ..Limits::default()
        });
        let host = |i: u16| -> IpAddr { format!("2001:db8:77:{i:x}::1").parse().unwrap() };
        let mut spent_resets = 0;
        let mut spent_emails = 0;
        for i in 0..60 {
            for n in 0..20 {
                // Every try passes its address's allowance; only the network's share refuses.
                let asked = t.reset(&format!("tok-{i}-{n}"), host(i)).unwrap();
                spent_resets += usize::from(asked.spend().is_ok());
                let asked = t
                    .account_email(&format!("x{n}@example.com"), host(i))
                    .unwrap();
                spent_emails += usize::from(asked.spend().is_ok());
            }
        }
        assert_eq!((spent_resets, spent_emails), (50, 50), "a tenth of each");
        let elsewhere: IpAddr = "2001:db8:99::1".parse().unwrap();
        spent(t.reset("real", elsewhere)).unwrap();
        spent(t.account_email("real@example.com", elsewhere)).unwrap();
        // The flooding network's share is spent; its signed-in users still get their emails.
        assert!(spent(t.account_email("me@example.com", host(61))).is_err());
        t.account_email("me@example.com", host(62)).unwrap().waive();
    }

    #[test]
    fn limiter_keys_are_bounded() {
        let long = format!("{}@example.com", "Ä".repeat(400));
        let key = email_key(&long);
        assert!(key.len() <= 320, "{}", key.len());
        assert!(
            key.chars().all(|c| c == 'ä'),
            "cut on a character boundary, lowercased"
        );
        assert_eq!(email_key(" Ada@Example.COM "), "ada@example.com");
    }
}
