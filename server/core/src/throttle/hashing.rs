//! Blocking work bounded to a pool of slots: password hashing at most one per core at a time, and
//! the slots other costly work (renders, image decodes) waits for, each wait bounded.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use tokio::sync::Semaphore;

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

impl From<HashError> for model::error::AppError {
    fn from(err: HashError) -> Self {
        match err {
            HashError::Busy => model::error::AppError::Busy(1),
            other => model::error::AppError::internal("password hashing", other),
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

#[cfg(test)]
mod tests {
    use super::*;

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
        let answer = model::error::AppError::from(HashError::Busy);
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
}
