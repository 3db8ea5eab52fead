//! What anyone on the internet may ask of the expensive paths: login attempts per account and client
//! address and per address, sign-ups per address, emails per org (governor's GCRA limiters, one per
//! key), and password hashing bounded to the cores.
//!
//! Login attempts are keyed by (account, address): guessing at someone's password from one place is
//! slowed, and the owner logging in from elsewhere is not. Guessing one account from many addresses
//! is slowed only by the per-address limit and by hashing being bounded (docs/security.md).

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::LazyLock;
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
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            logins_per_account_minute: 10,
            logins_per_address_minute: 30,
            signups_per_address_hour: 10,
            emails_per_org_hour: 100,
            account_emails_per_address_hour: 20,
            account_emails_per_recipient_hour: 5,
        }
    }
}

/// Refused for now; try again after `retry_after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttled {
    pub retry_after: Duration,
}

pub struct Throttle {
    login_account: DefaultKeyedRateLimiter<(String, IpAddr)>,
    login_address: DefaultKeyedRateLimiter<IpAddr>,
    signup_address: DefaultKeyedRateLimiter<IpAddr>,
    email_org: DefaultKeyedRateLimiter<Uuid>,
    account_email_address: DefaultKeyedRateLimiter<IpAddr>,
    account_email_recipient: DefaultKeyedRateLimiter<String>,
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

fn check<K: std::hash::Hash + Eq + Clone>(
    limiter: &DefaultKeyedRateLimiter<K>,
    key: &K,
) -> Result<(), Throttled> {
    limiter.check_key(key).map_err(|not_until| Throttled {
        retry_after: not_until.wait_time_from(DefaultClock::default().now()),
    })
}

impl Throttle {
    pub fn new(limits: Limits) -> Throttle {
        const MINUTE: Duration = Duration::from_secs(60);
        const HOUR: Duration = Duration::from_secs(3600);
        Throttle {
            login_account: RateLimiter::keyed(quota(limits.logins_per_account_minute, MINUTE)),
            login_address: RateLimiter::keyed(quota(limits.logins_per_address_minute, MINUTE)),
            signup_address: RateLimiter::keyed(quota(limits.signups_per_address_hour, HOUR)),
            email_org: RateLimiter::keyed(quota(limits.emails_per_org_hour, HOUR)),
            account_email_address: RateLimiter::keyed(quota(
                limits.account_emails_per_address_hour,
                HOUR,
            )),
            account_email_recipient: RateLimiter::keyed(quota(
                limits.account_emails_per_recipient_hour,
                HOUR,
            )),
        }
    }

    /// One login attempt for `email` from `address`, counted before its password is hashed.
    pub fn login(&self, email: &str, address: IpAddr) -> Result<(), Throttled> {
        check(&self.login_address, &address)?;
        check(&self.login_account, &(email.trim().to_lowercase(), address))
    }

    pub fn signup(&self, address: IpAddr) -> Result<(), Throttled> {
        check(&self.signup_address, &address)
    }

    pub fn email(&self, org: Uuid) -> Result<(), Throttled> {
        check(&self.email_org, &org)
    }

    /// One account email (reset, verification, invitation) to `recipient` asked for from
    /// `address`, counted whether or not the recipient has an account (the answer is the same).
    pub fn account_email(&self, recipient: &str, address: IpAddr) -> Result<(), Throttled> {
        check(&self.account_email_address, &address)?;
        check(
            &self.account_email_recipient,
            &recipient.trim().to_lowercase(),
        )
    }

    /// Forgets keys whose allowance is full again, so the maps do not grow with every address and
    /// account ever seen. Called every minute by the server.
    pub fn forget_idle(&self) {
        self.login_account.retain_recent();
        self.login_address.retain_recent();
        self.signup_address.retain_recent();
        self.email_org.retain_recent();
        self.account_email_address.retain_recent();
        self.account_email_recipient.retain_recent();
        self.account_email_address.shrink_to_fit();
        self.account_email_recipient.shrink_to_fit();
        self.login_account.shrink_to_fit();
        self.login_address.shrink_to_fit();
        self.signup_address.shrink_to_fit();
        self.email_org.shrink_to_fit();
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
static HASHING: LazyLock<Semaphore> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    Semaphore::new(cores)
});
pub const HASH_WAIT: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum HashError {
    #[error("too many password checks at once")]
    Busy,
    #[error("password hashing failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Runs `work` (a password hash or check) on the blocking pool once a hashing slot is free.
pub async fn hashing<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, HashError> {
    hashing_in(&HASHING, HASH_WAIT, work).await
}

async fn hashing_in<T: Send + 'static>(
    slots: &Semaphore,
    wait: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, HashError> {
    let permit = tokio::time::timeout(wait, slots.acquire())
        .await
        .map_err(|_| HashError::Busy)?
        .expect("the semaphore is never closed");
    let result = tokio::task::spawn_blocking(work).await?;
    drop(permit);
    Ok(result)
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
        let jobs = (0..8).map(|_| {
            let (running, peak) = (running.clone(), peak.clone());
            tokio::spawn(hashing(move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
                running.fetch_sub(1, Ordering::SeqCst);
            }))
        });
        for job in jobs.collect::<Vec<_>>() {
            job.await.unwrap().unwrap();
        }
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        assert!(peak.load(Ordering::SeqCst) <= cores);
        assert!(peak.load(Ordering::SeqCst) >= 1);
    }

    #[tokio::test]
    async fn with_every_slot_busy_a_hash_is_refused_after_a_short_wait() {
        let slots = Semaphore::new(1);
        let held = slots.acquire().await.unwrap();
        let refused = hashing_in(&slots, Duration::from_millis(50), || ()).await;
        assert!(matches!(refused, Err(HashError::Busy)));
        drop(held);
        hashing_in(&slots, Duration::from_millis(50), || ())
            .await
            .unwrap();
        let answer = crate::error::AppError::from(HashError::Busy);
        assert_eq!(answer.retry_after(), Some(1));
    }
}
