//! One lane of the outbox: a dispatcher that leases the lane's due rows, at most
//! [`WorkerConfig::concurrency`] at once, each worked on its own task, the orgs served in turn. A
//! round gives every org with a due row one place before any org gets a second, the least recently
//! served first; a round is read afresh from the lane's index each time the last one is used up.
//! So one org's backlog (thousands of deliveries to an endpoint that hangs) holds at most the places
//! nobody else asks for, and a failing endpoint's retries, not due until their backoff ends, hold
//! none. A webhook endpoint gets one delivery at a time from a worker: its events reach it in order,
//! and one that fails is not tried in parallel.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use sqlx::PgPool;
use tokio::sync::{watch, Semaphore};
use uuid::Uuid;

use super::{moved, process, WorkerConfig};
use crate::mail::Mailer;
use crate::outbox::{self, Lane};

/// The orgs of a lane, in turn.
#[derive(Default)]
struct Turns {
    queue: VecDeque<Uuid>,
    /// When each org was last given a place (a counter, not a clock).
    served: HashMap<Uuid, u64>,
    tick: u64,
    /// Where the next round's read of the lane's orgs starts (None: at the first): more orgs than a
    /// round holds are read round after round, none left out.
    after: Option<Uuid>,
    /// The round being served leased something: a round that leased nothing (every due row held
    /// by another worker) is followed by a wait, not by reading the next round at once.
    round_leased: bool,
    in_round: bool,
}

/// The most orgs one round reads.
const ROUND: i64 = 1000;

impl Turns {
    /// The next org to give a place, or None when there is nothing to do now.
    async fn next(&mut self, pool: &PgPool, lane: Lane) -> sqlx::Result<Option<Uuid>> {
        if self.queue.is_empty() {
            if self.in_round && !self.round_leased {
                self.in_round = false;
                return Ok(None);
            }
            let mut orgs = outbox::due_orgs(pool, lane, self.after, ROUND).await?;
            if (orgs.len() as i64) < ROUND && self.after.is_some() {
                // The end of the lane: on from its start.
                let rest = outbox::due_orgs(pool, lane, None, ROUND - orgs.len() as i64).await?;
                orgs.extend(rest.into_iter().filter(|org| Some(*org) <= self.after));
            }
            self.after = if orgs.len() as i64 == ROUND {
                orgs.last().copied()
            } else {
                None
            };
            let due: HashSet<Uuid> = orgs.iter().copied().collect();
            self.served.retain(|org, _| due.contains(org));
            orgs.sort_by_key(|org| self.served.get(org).copied().unwrap_or(0));
            self.queue = orgs.into();
            self.in_round = !self.queue.is_empty();
            self.round_leased = false;
        }
        Ok(self.queue.pop_front())
    }

    fn served(&mut self, org: Uuid) {
        self.tick += 1;
        self.served.insert(org, self.tick);
        self.round_leased = true;
    }
}

/// An endpoint's delivery in hand: taken off the busy set, and the lane woken, however its task
/// ends.
struct InHand {
    busy: Arc<std::sync::Mutex<HashSet<String>>>,
    endpoint: Option<String>,
    done: watch::Sender<u64>,
}

impl Drop for InHand {
    fn drop(&mut self) {
        if let Some(endpoint) = &self.endpoint {
            self.busy
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .remove(endpoint);
        }
        self.done.send_modify(|n| *n = n.wrapping_add(1));
    }
}

/// Runs `lane` until `shutdown`, then waits for the rows it holds. `wake` moves when a row commits.
pub(super) async fn run_lane(
    pool: PgPool,
    mailer: Mailer,
    config: Arc<WorkerConfig>,
    lane: Lane,
    mut wake: watch::Receiver<u64>,
    mut shutdown: watch::Receiver<bool>,
) {
    let places = Arc::new(Semaphore::new(config.concurrency.max(1)));
    let mut working = tokio::task::JoinSet::new();
    let mut turns = Turns::default();
    // The webhook endpoints with a delivery in hand, and a counter that moves when a row is done
    // (a watch: a change while the lane looks is still seen when it waits).
    let busy: Arc<std::sync::Mutex<HashSet<String>>> = Default::default();
    let (done, mut freed) = watch::channel(0u64);
    while !*shutdown.borrow() {
        while working.try_join_next().is_some() {}
        let place = tokio::select! {
            place = places.clone().acquire_owned() => place.expect("the semaphore is never closed"),
            _ = shutdown.changed() => break,
        };
        let next = turns.next(&pool, lane).await.unwrap_or_else(|e| {
            tracing::warn!(worker = %config.id, lane = lane.as_str(), error = %e, "outbox lane: database error");
            None
        });
        if let Some(org) = next {
            let held: Vec<String> = busy
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .iter()
                .cloned()
                .collect();
            match outbox::lease_next(&pool, &config.id, lane, org, &held, config.lease).await {
                Ok(Some(row)) => {
                    turns.served(org);
                    let endpoint = row.payload["endpoint_id"].as_str().map(str::to_owned);
                    if let Some(endpoint) = &endpoint {
                        busy.lock()
                            .unwrap_or_else(|poisoned| poisoned.into_inner())
                            .insert(endpoint.clone());
                    }
                    let in_hand = InHand {
                        busy: busy.clone(),
                        endpoint,
                        done: done.clone(),
                    };
                    let (pool, mailer, config) = (pool.clone(), mailer.clone(), config.clone());
                    working.spawn(async move {
                        if let Err(e) = process(&pool, &mailer, &config, row).await {
                            tracing::warn!(worker = %config.id, error = %e, "outbox worker: database error");
                        }
                        drop(place);
                        drop(in_hand);
                    });
                    continue;
                }
                // Its due rows are held by other workers: the next org.
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(worker = %config.id, lane = lane.as_str(), error = %e, "outbox lane: database error")
                }
            }
        }
        drop(place);
        tokio::select! {
            _ = moved(&mut wake) => {}
            _ = moved(&mut freed) => {}
            _ = tokio::time::sleep(config.poll) => {}
            _ = shutdown.changed() => {}
        }
    }
    while working.join_next().await.is_some() {}
}
