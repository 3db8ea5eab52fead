//! The HTTP side of a measurement: concurrent clients, each sending one request after another.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::pgbench::Sample;

/// What a client did in one step.
pub(super) enum Step {
    /// A request went out; true if it got the expected answer.
    Sent(bool),
    /// Nothing left to send.
    Finished,
}

/// A well-spread index in 0..len for a client's i-th request (no shared RNG on the hot path).
pub(super) fn pick(client: usize, i: u64, len: usize) -> usize {
    let mut x =
        (client as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ i.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x ^= x >> 31;
    x = x.wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 29;
    (x % len as u64) as usize
}

/// Runs `clients` tasks, each sending one request after another until `duration` has passed.
pub(super) async fn drive<F, Fut>(clients: usize, duration: Duration, step: F) -> Sample
where
    F: Fn(usize, u64) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = Step> + Send,
{
    let started = Instant::now();
    let deadline = started + duration;
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let step = step.clone();
            tokio::spawn(async move {
                let mut sample = Sample::default();
                let mut i = 0;
                while Instant::now() < deadline {
                    let sent = Instant::now();
                    match step(client, i).await {
                        Step::Finished => break,
                        Step::Sent(true) => {
                            sample.done += 1;
                            sample.latencies_us.push(sent.elapsed().as_micros() as u64);
                        }
                        Step::Sent(false) => sample.failed += 1,
                    }
                    i += 1;
                }
                sample
            })
        })
        .collect();
    let mut total = Sample::default();
    for task in tasks {
        let sample = task.await.expect("a bench client panicked");
        total.done += sample.done;
        total.failed += sample.failed;
        total.latencies_us.extend(sample.latencies_us);
    }
    total.secs = started.elapsed().as_secs_f64();
    total
}
