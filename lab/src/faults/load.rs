//! The load of a fault run: clients that make attempts (Stripe events, API creates, form
//! submissions) and retry each with its key until it is answered, and the ledger of what they saw.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::task::JoinHandle;
use uuid::Uuid;

use lab::harness::{self, Fixture, Target};

/// One logical attempt, as its client saw it.
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// A Stripe event (a one-cent payment through its own payment intent), how often it was
    /// delivered and how often acknowledged.
    Event {
        id: String,
        payment_intent: String,
        deliveries: u32,
        acks: u32,
    },
    /// An API create, how often it was sent to an answer, and the invoice ids in its 201 answers.
    Api {
        key: String,
        sent: u32,
        invoices: Vec<Uuid>,
    },
    /// A form submission, how often it was submitted to an answer, and the invoice ids it was
    /// answered with.
    Form {
        key: Uuid,
        sent: u32,
        invoices: Vec<Uuid>,
    },
}

#[derive(Default)]
pub(crate) struct Ledger {
    pub(crate) ops: Mutex<Vec<Op>>,
    pub(crate) requests: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) refused: Mutex<Vec<String>>,
}

/// The running load clients and what they share with the run that started them.
pub(crate) struct Load {
    pub(crate) ledger: Arc<Ledger>,
    stop_new: Arc<AtomicBool>,
    drain_deadline: Arc<Mutex<Option<Instant>>>,
    clients: Vec<JoinHandle<usize>>,
}

impl Load {
    /// Starts `clients` load clients against `target`.
    pub(crate) fn start(clients: usize, target: &Target, fixture: &Arc<Fixture>) -> Self {
        let ledger = Arc::new(Ledger::default());
        let stop_new = Arc::new(AtomicBool::new(false));
        let drain_deadline = Arc::new(Mutex::new(None::<Instant>));
        let tag = Uuid::new_v4().simple().to_string()[..8].to_owned();
        let clients = (0..clients)
            .map(|c| {
                tokio::spawn(client(
                    c,
                    tag.clone(),
                    target.clone(),
                    fixture.clone(),
                    ledger.clone(),
                    stop_new.clone(),
                    drain_deadline.clone(),
                ))
            })
            .collect();
        Load {
            ledger,
            stop_new,
            drain_deadline,
            clients,
        }
    }

    /// Drain: no new attempts; every open one is retried until answered (`within` at most).
    /// Returns how many attempts were still unanswered then.
    pub(crate) async fn drain(&mut self, within: Duration) -> anyhow::Result<usize> {
        self.stop_new.store(true, Ordering::SeqCst);
        *self.drain_deadline.lock().unwrap() = Some(Instant::now() + within);
        let mut unanswered = 0;
        for c in std::mem::take(&mut self.clients) {
            unanswered += c.await.context("a load client panicked")?;
        }
        Ok(unanswered)
    }
}

/// What a request's answer means to a client that must not lose its attempt.
enum Answer<T> {
    Done(T),
    /// Connection refused or cut, 409, 5xx: the same attempt again, shortly.
    Retry,
    /// A 4xx that will not change: the harness reports it (valid requests are never refused).
    Refused(String),
}

/// One load client: makes attempts one after another (event, event, API, form), each retried with
/// its key until answered; every third event is delivered once more after its acknowledgement, as
/// Stripe does, and every third API and form key is sent again after its answer. Returns how many attempts were still unanswered at the drain deadline.
async fn client(
    c: usize,
    tag: String,
    target: Target,
    fixture: Arc<Fixture>,
    ledger: Arc<Ledger>,
    stop_new: Arc<AtomicBool>,
    drain_deadline: Arc<Mutex<Option<Instant>>>,
) -> usize {
    let body = harness::api_body();
    let mut i: usize = 0;
    while !stop_new.load(Ordering::SeqCst) {
        let id = format!("{tag}_{c}_{i}");
        let op = match i % 4 {
            0 | 1 => {
                let invoice = fixture.invoices[(c * 7 + i) % fixture.invoices.len()];
                let (event, payment_intent) = (format!("evt_f_{id}"), format!("pi_f_{id}"));
                let payload = invoicer_core::payments::stripe::standin::checkout_event(
                    &event,
                    &payment_intent,
                    model::InvoiceId::from(invoice),
                    1,
                    "usd",
                );
                let deliveries = if i.is_multiple_of(3) { 2 } else { 1 };
                let mut acks = 0;
                for _ in 0..deliveries {
                    let answered = until_answered(&ledger, &drain_deadline, || async {
                        match target.webhook(&payload).await {
                            Ok(200) => Answer::Done(()),
                            Ok(s) if s == 409 || s >= 500 => Answer::Retry,
                            Ok(s) => Answer::Refused(format!("event {event}: {s}")),
                            Err(_) => Answer::Retry,
                        }
                    })
                    .await;
                    if answered.is_some() {
                        acks += 1;
                    }
                }
                Op::Event {
                    id: event,
                    payment_intent,
                    deliveries,
                    acks,
                }
            }
            2 => {
                let key = format!("faults-{id}");
                let mut invoices = Vec::new();
                for _ in 0..sends(i) {
                    let invoice = until_answered(&ledger, &drain_deadline, || async {
                        match target.api_create(&key, &body).await {
                            Ok((201, bytes)) => match invoice_id_of(&bytes) {
                                Some(id) => Answer::Done(id),
                                None => Answer::Refused(format!("api {key}: 201 without an id")),
                            },
                            Ok((s, _)) if s == 409 || s >= 500 => Answer::Retry,
                            Ok((s, bytes)) => Answer::Refused(format!(
                                "api {key}: {s} {}",
                                String::from_utf8_lossy(&bytes)
                            )),
                            Err(_) => Answer::Retry,
                        }
                    })
                    .await;
                    invoices.extend(invoice);
                }
                let sent = sends(i);
                Op::Api {
                    key,
                    sent,
                    invoices,
                }
            }
            _ => {
                let key = Uuid::now_v7();
                let mut invoices = Vec::new();
                for _ in 0..sends(i) {
                    let invoice = until_answered(&ledger, &drain_deadline, || async {
                        match target.form_create_id(key).await {
                            Ok((200, Some(id))) => Answer::Done(id),
                            Ok((s, _)) if s >= 500 => Answer::Retry,
                            Ok((s, _)) => Answer::Refused(format!("form {key}: {s}")),
                            Err(_) => Answer::Retry,
                        }
                    })
                    .await;
                    invoices.extend(invoice);
                }
                Op::Form {
                    key,
                    sent: sends(i),
                    invoices,
                }
            }
        };
        // A redelivery still unanswered at the deadline counts as much as a first delivery.
        let unanswered = match &op {
            Op::Event {
                deliveries, acks, ..
            } => acks < deliveries,
            Op::Api { sent, invoices, .. } | Op::Form { sent, invoices, .. } => {
                invoices.len() < *sent as usize
            }
        };
        ledger.ops.lock().unwrap().push(op);
        if unanswered {
            // Only at the drain deadline does a client give up; the check counts it.
            return 1;
        }
        i += 1;
    }
    0
}

/// Every third API key and form key is sent once more after its answer (a client retrying after a
/// lost response), so a replay that named another invoice would be caught.
fn sends(i: usize) -> u32 {
    if (i / 4).is_multiple_of(3) {
        2
    } else {
        1
    }
}

/// Sends until the answer is definitive, or the drain deadline passes (None then).
async fn until_answered<T, F, Fut>(
    ledger: &Ledger,
    drain_deadline: &Mutex<Option<Instant>>,
    mut send: F,
) -> Option<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Answer<T>>,
{
    let mut first = true;
    loop {
        ledger.requests.fetch_add(1, Ordering::Relaxed);
        if !first {
            ledger.retries.fetch_add(1, Ordering::Relaxed);
        }
        first = false;
        match send().await {
            Answer::Done(v) => return Some(v),
            Answer::Refused(why) => {
                ledger.refused.lock().unwrap().push(why);
                return None;
            }
            Answer::Retry => {}
        }
        if drain_deadline
            .lock()
            .unwrap()
            .is_some_and(|d| Instant::now() > d)
        {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

pub(crate) fn invoice_id_of(body: &[u8]) -> Option<Uuid> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    Uuid::try_parse(v.get("id")?.as_str()?).ok()
}
