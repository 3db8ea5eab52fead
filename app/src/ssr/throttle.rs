//! What anyone on the internet may ask of the expensive paths: login attempts per account and client
//! address and per address, sign-ups per address, emails per org (governor's GCRA limiters, one per
//! key), and password hashing bounded to the cores.
//!
//! Login attempts are keyed by (account, address): guessing at someone's password from one place is
//! slowed, and the owner logging in from elsewhere is not. Guessing one account from many addresses
//! is slowed only by the per-address limit and by hashing being bounded (docs/security.md).

use std::net::{IpAddr, Ipv6Addr};
use std::num::NonZeroU32;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tokio::sync::Semaphore;
use uuid::Uuid;

/// Allowances; every one is configurable (docs/operating.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Login attempts per minute for one account from one address.
    pub logins_per_account_minute: u32,
    /// Login attempts per minute from one address, whatever the account.
    pub logins_per_address_minute: u32,
    /// Sign-ups per hour from one address.
    pub signups_per_address_hour: u32,
    /// Emails an org may queue per hour (Send and Retry).
    pub emails_per_org_hour: u32,
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

/// The key a client address is limited by: an IPv4 address as it is, an IPv6 address by its /64
/// (one subscriber's network: every host in it is one client), an IPv4-mapped IPv6 address as the
/// IPv4 address it is.
pub fn client_key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(
                u128::from(v6) & 0xffff_ffff_ffff_ffff_0000_0000_0000_0000,
            )),
        },
    }
}

type Global = governor::DefaultDirectRateLimiter;

pub struct Throttle {
    login_account: DefaultKeyedRateLimiter<(String, IpAddr)>,
    login_address: DefaultKeyedRateLimiter<IpAddr>,
    signup_address: DefaultKeyedRateLimiter<IpAddr>,
    email_org: DefaultKeyedRateLimiter<Uuid>,
    account_email_address: DefaultKeyedRateLimiter<IpAddr>,
    account_email_recipient: DefaultKeyedRateLimiter<String>,
    reset_address: DefaultKeyedRateLimiter<IpAddr>,
    reset_token: DefaultKeyedRateLimiter<String>,
    page_address: DefaultKeyedRateLimiter<IpAddr>,
    page_token: DefaultKeyedRateLimiter<String>,
    pdf_address: DefaultKeyedRateLimiter<IpAddr>,
    pdf_token: DefaultKeyedRateLimiter<String>,
    logins: Global,
    signups: Global,
    account_emails: Global,
    resets: Global,
    pages: Global,
    pdfs: Global,
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
        let global = |n| RateLimiter::direct(quota(n, HOUR));
        let c = limits.ceilings;
        Throttle {
            login_account: keyed(limits.logins_per_account_minute, MINUTE),
            login_address: keyed(limits.logins_per_address_minute, MINUTE),
            signup_address: keyed(limits.signups_per_address_hour, HOUR),
            email_org: keyed(limits.emails_per_org_hour, HOUR),
            account_email_address: keyed(limits.account_emails_per_address_hour, HOUR),
            account_email_recipient: keyed(limits.account_emails_per_recipient_hour, HOUR),
            reset_address: keyed(limits.resets_per_address_hour, HOUR),
            reset_token: keyed(limits.resets_per_token_hour, HOUR),
            page_address: keyed(limits.public_pages_per_address_minute, MINUTE),
            page_token: keyed(limits.public_pages_per_token_minute, MINUTE),
            pdf_address: keyed(limits.pdfs_per_address_minute, MINUTE),
            pdf_token: keyed(limits.pdfs_per_token_minute, MINUTE),
            logins: global(c.logins),
            signups: global(c.signups),
            account_emails: global(c.account_emails),
            resets: global(c.resets),
            pages: global(c.public_pages),
            pdfs: global(c.pdfs),
        }
    }

    /// One login attempt for `email` from `address`, counted before its password is hashed.
    pub fn login(&self, email: &str, address: IpAddr) -> Result<(), Throttled> {
        let address = client_key(address);
        check(&self.login_address, &address)?;
        check(&self.login_account, &(email.trim().to_lowercase(), address))?;
        check_all(&self.logins)
    }

    pub fn signup(&self, address: IpAddr) -> Result<(), Throttled> {
        check(&self.signup_address, &client_key(address))?;
        check_all(&self.signups)
    }

    pub fn email(&self, org: Uuid) -> Result<(), Throttled> {
        check(&self.email_org, &org)
    }

    /// One account email (reset, verification, invitation) to `recipient` asked for from
    /// `address`, counted whether or not the recipient has an account (the answer is the same).
    pub fn account_email(&self, recipient: &str, address: IpAddr) -> Result<(), Throttled> {
        check(&self.account_email_address, &client_key(address))?;
        check(
            &self.account_email_recipient,
            &recipient.trim().to_lowercase(),
        )?;
        check_all(&self.account_emails)
    }

    /// One try of a reset link (`token`) from `address`, counted before anything is looked up.
    pub fn reset(&self, token: &str, address: IpAddr) -> Result<(), Throttled> {
        check(&self.reset_address, &client_key(address))?;
        check(&self.reset_token, &token_key(token))?;
        check_all(&self.resets)
    }

    /// One customer page (or Pay) of the invoice link `token` from `address`.
    pub fn public_page(&self, token: &str, address: IpAddr) -> Result<(), Throttled> {
        check(&self.page_address, &client_key(address))?;
        check(&self.page_token, &token_key(token))?;
        check_all(&self.pages)
    }

    /// One customer PDF of the invoice link `token` from `address`.
    pub fn pdf(&self, token: &str, address: IpAddr) -> Result<(), Throttled> {
        check(&self.pdf_address, &client_key(address))?;
        check(&self.pdf_token, &token_key(token))?;
        check_all(&self.pdfs)
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
        trim(&self.email_org);
        trim(&self.account_email_address);
        trim(&self.account_email_recipient);
        trim(&self.reset_address);
        trim(&self.reset_token);
        trim(&self.page_address);
        trim(&self.page_token);
        trim(&self.pdf_address);
        trim(&self.pdf_token);
    }
}

impl Default for Throttle {
    fn default() -> Self {
        Throttle::new(Limits::default())
    }
}

/// Password hashing (argon2, ~19 MiB and tens of milliseconds of one core each) runs at most one per
/// core at a time; a request waits up to [`HASH_WAIT`] for its turn and is otherwise told to come
/// back (503 with Retry-After) instead of queueing threads and memory without bound.
static HASHING: LazyLock<Arc<Semaphore>> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    Arc::new(Semaphore::new(cores))
});
pub const HASH_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum HashError {
    #[error("too many password checks at once")]
    Busy,
    #[error("password hashing failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

thread_local! {
    static HASHES_ASKED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Password hashes asked for by code running on this thread: what a test counts to see that a path
/// spends no hash (the tests' runtimes run each test on its own thread).
pub fn hashes_asked_on_this_thread() -> u64 {
    HASHES_ASKED.with(|n| n.get())
}

impl From<Throttled> for crate::error::AppError {
    fn from(t: Throttled) -> Self {
        crate::error::AppError::Throttled(t.retry_after.as_secs().max(1)).respond()
    }
}

impl From<HashError> for crate::error::AppError {
    fn from(err: HashError) -> Self {
        match err {
            HashError::Busy => crate::error::AppError::Busy(1).respond(),
            other => crate::error::AppError::internal("password hashing", other),
        }
    }
}

/// Runs `work` (a password hash or check) on the blocking pool once a hashing slot is free.
pub async fn hashing<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, HashError> {
    HASHES_ASKED.with(|n| n.set(n.get() + 1));
    bounded(&HASHING, HASH_WAIT, work)
        .await
        .map_err(|e| match e {
            Bounded::Busy => HashError::Busy,
            Bounded::Task(e) => HashError::Task(e),
        })
}

/// Why [`bounded`] work did not run to its end.
#[derive(Debug)]
pub enum Bounded {
    /// Every slot stayed taken for the whole wait.
    Busy,
    Task(tokio::task::JoinError),
}

/// Runs blocking `work` on the blocking pool once one of `slots` is free, waiting at most `wait`.
/// The slot travels with the work and is given back when the work ends, not when the caller stops
/// waiting: a client that disconnects cannot free a slot while its work still runs.
pub async fn bounded<T: Send + 'static>(
    slots: &Arc<Semaphore>,
    wait: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Bounded> {
    let permit = tokio::time::timeout(wait, slots.clone().acquire_owned())
        .await
        .map_err(|_| Bounded::Busy)?
        .expect("the semaphore is never closed");
    tokio::task::spawn_blocking(move || {
        let result = work();
        drop(permit);
        result
    })
    .await
    .map_err(Bounded::Task)
}

/// The client's address: the last value of `header` (set by a trusted reverse proxy) when one is
/// configured and present, else the connection's peer.
pub fn client_address(parts: &axum::http::request::Parts, header: Option<&str>) -> IpAddr {
    let from_proxy = header.and_then(|name| {
        let last = parts.headers.get_all(name).iter().next_back()?;
        last.to_str().ok()?.rsplit(',').next()?.trim().parse().ok()
    });
    from_proxy
        .or_else(|| {
            parts
                .extensions
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .map(|c| c.0.ip())
        })
        .unwrap_or(IpAddr::from([0, 0, 0, 0]))
}

#[cfg(test)]
mod tests {
    use super::*;

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
            t.login("ada@example.com", addr(1)).unwrap();
        }
        let refused = t.login("ADA@example.com ", addr(1)).unwrap_err();
        assert!(
            refused.retry_after > Duration::ZERO && refused.retry_after <= Duration::from_secs(20)
        );
        // The owner elsewhere is not slowed by the guesser's failures.
        t.login("ada@example.com", addr(2)).unwrap();
        // Another account from the guessing address: the per-address allowance (5) runs out.
        t.login("bob@example.com", addr(1)).unwrap();
        assert!(t.login("carol@example.com", addr(1)).is_err());
    }

    #[test]
    fn signups_and_emails_have_their_own_allowances() {
        let t = Throttle::new(Limits {
            signups_per_address_hour: 2,
            emails_per_org_hour: 1,
            ..Limits::default()
        });
        t.signup(addr(1)).unwrap();
        t.signup(addr(1)).unwrap();
        assert!(t.signup(addr(1)).is_err());
        t.signup(addr(2)).unwrap();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        t.email(a).unwrap();
        assert!(t.email(a).unwrap_err().retry_after > Duration::from_secs(60));
        t.email(b).unwrap();
    }

    #[test]
    fn account_emails_are_limited_per_address_and_per_recipient() {
        let t = Throttle::new(Limits {
            account_emails_per_address_hour: 3,
            account_emails_per_recipient_hour: 2,
            ..Limits::default()
        });
        // One inbox, asked for from two places: the recipient's allowance (2) runs out.
        t.account_email("victim@example.com", addr(1)).unwrap();
        t.account_email("Victim@example.com ", addr(2)).unwrap();
        assert!(t.account_email("victim@example.com", addr(3)).is_err());
        // One place asking for many inboxes: the address's allowance (3) runs out.
        t.account_email("a@example.com", addr(4)).unwrap();
        t.account_email("b@example.com", addr(4)).unwrap();
        t.account_email("c@example.com", addr(4)).unwrap();
        assert!(t.account_email("d@example.com", addr(4)).is_err());
    }

    #[tokio::test]
    async fn hashing_runs_at_most_one_per_core_at_once() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let running = Arc::new(AtomicUsize::new(0));
        let peak = Arc::new(AtomicUsize::new(0));
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        // More jobs than twice the permits: without the semaphore the peak would exceed them.
        let jobs = (0..2 * cores + 1).map(|_| {
            let (running, peak) = (running.clone(), peak.clone());
            tokio::spawn(hashing(move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(50));
                running.fetch_sub(1, Ordering::SeqCst);
            }))
        });
        for job in jobs.collect::<Vec<_>>() {
            job.await.unwrap().unwrap();
        }
        assert_eq!(
            peak.load(Ordering::SeqCst),
            cores,
            "exactly the permits, at once"
        );
    }

    #[tokio::test]
    async fn with_every_slot_busy_a_hash_is_refused_after_a_short_wait() {
        let slots = Arc::new(Semaphore::new(1));
        let held = slots.acquire().await.unwrap();
        let refused = bounded(&slots, Duration::from_millis(50), || ()).await;
        assert!(matches!(refused, Err(Bounded::Busy)));
        drop(held);
        bounded(&slots, Duration::from_millis(50), || ())
            .await
            .unwrap();
        let answer = crate::error::AppError::from(HashError::Busy);
        assert_eq!(answer.retry_after(), Some(1));
    }

    /// The caller gives up (a client disconnected) while its work runs: the slot stays taken until
    /// the work itself ends.
    #[tokio::test]
    async fn a_slot_is_held_by_the_work_not_by_its_caller() {
        let slots = Arc::new(Semaphore::new(1));
        let (started_tx, started) = std::sync::mpsc::channel::<()>();
        let (finish, finish_rx) = std::sync::mpsc::channel::<()>();
        let caller = tokio::spawn({
            let slots = slots.clone();
            async move {
                bounded(&slots, Duration::from_secs(5), move || {
                    started_tx.send(()).unwrap();
                    finish_rx.recv().unwrap();
                })
                .await
            }
        });
        tokio::task::spawn_blocking(move || started.recv().unwrap())
            .await
            .unwrap();
        caller.abort();
        assert!(caller.await.unwrap_err().is_cancelled());
        assert_eq!(slots.available_permits(), 0, "the work still runs");
        assert!(matches!(
            bounded(&slots, Duration::from_millis(20), || ()).await,
            Err(Bounded::Busy)
        ));
        finish.send(()).unwrap();
        // The work ends on its own thread, then gives its slot back.
        let _slot = tokio::time::timeout(Duration::from_secs(5), slots.acquire())
            .await
            .expect("the slot comes back when the work ends")
            .unwrap();
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
        t.login("a@example.com", a).unwrap();
        t.login("b@example.com", b).unwrap();
        assert!(t
            .login("c@example.com", "2001:db8:1:2::9".parse().unwrap())
            .is_err());
        t.login("c@example.com", other).unwrap();
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
            t.login("a@example.com", net(i)).unwrap();
        }
        assert!(t.login("a@example.com", net(99)).is_err());
        type Act = fn(&Throttle, IpAddr) -> Result<(), Throttled>;
        let actions: [(&str, Act); 5] = [
            ("signup", |t, a| t.signup(a)),
            ("account email", |t, a| t.account_email(&a.to_string(), a)),
            ("reset", |t, a| t.reset(&a.to_string(), a)),
            ("page", |t, a| t.public_page(&a.to_string(), a)),
            ("pdf", |t, a| t.pdf(&a.to_string(), a)),
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
            |t, k, a| t.reset(k, a),
            |t, k, a| t.public_page(k, a),
            |t, k, a| t.pdf(k, a),
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
}
