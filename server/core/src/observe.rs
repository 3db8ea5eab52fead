//! What operators see of each attempt: one structured log event, the Prometheus series and the
//! activity page's row, from one place, whatever the surface.
//!
//! Every surface runs its attempt inside `surfaces::record::track`. The outcome comes from the
//! answer's type ([`Tracked`]), never from a response. The rows are written by `surfaces::record`,
//! the only writer of `attempts`; this module holds the attempt, its log event and its series.

use model::OrgId;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use uuid::Uuid;

pub use crate::claim::Surface;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// This attempt did the work.
    Won,
    /// A repeat of a finished attempt: answered with what the first one produced.
    Replay,
    /// A repeat while the first is still running.
    InFlight,
    /// The key was used for a different request.
    Mismatch,
    /// Refused before claiming (bad signature, invalid input, bad key).
    Rejected,
    /// Failed on our side; nothing committed.
    Failed,
}

impl AttemptOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Won => "won",
            AttemptOutcome::Replay => "replay",
            AttemptOutcome::InFlight => "in_flight",
            AttemptOutcome::Mismatch => "mismatch",
            AttemptOutcome::Rejected => "rejected",
            AttemptOutcome::Failed => "failed",
        }
    }
}

/// The org and invoice an attempt concerned, for the activity page.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Concerns {
    pub org: Option<OrgId>,
    pub invoice: Option<Uuid>,
}

/// An answer that knows what kind of attempt it ends: each surface's outcome and error types.
pub trait Tracked {
    fn outcome(&self) -> AttemptOutcome;
    /// What it concerned, where the answer knows better than the attempt (a webhook's invoice).
    fn concerns(&self) -> Concerns {
        Concerns::default()
    }
}

/// Refusals are the client's; anything else failed on our side.
impl Tracked for model::error::AppError {
    fn outcome(&self) -> AttemptOutcome {
        use model::error::AppError;
        match self {
            AppError::Internal
            | AppError::Contended
            | AppError::Transport(_)
            | AppError::Busy(_)
            | AppError::Unavailable { .. } => AttemptOutcome::Failed,
            AppError::Throttled(_) => AttemptOutcome::Rejected,
            AppError::Unauthorized
            | AppError::NotFound
            | AppError::Forbidden(_)
            | AppError::Invalid(_)
            | AppError::BadRequest(_) => AttemptOutcome::Rejected,
        }
    }
}

impl<T: Tracked, E: Tracked> Tracked for Result<T, E> {
    fn outcome(&self) -> AttemptOutcome {
        match self {
            Ok(answer) => answer.outcome(),
            Err(error) => error.outcome(),
        }
    }

    fn concerns(&self) -> Concerns {
        match self {
            Ok(answer) => answer.concerns(),
            Err(error) => error.concerns(),
        }
    }
}

/// One attempt at a surface. Cheap to clone: the surface's code gets a handle while `track` keeps
/// its own.
#[derive(Clone, Debug)]
pub struct Attempt(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    surface: Surface,
    request_id: Option<String>,
    started: Instant,
    who: Mutex<Who>,
    /// The row was written in the transaction that did the work.
    stored: AtomicBool,
}

#[derive(Debug, Clone)]
struct Who {
    owner: String,
    key: String,
    org: Option<OrgId>,
}

impl Attempt {
    /// An attempt whose owner is not known yet (`-` until [`Attempt::identify`]).
    pub fn new(surface: Surface, key: impl Into<String>, request_id: Option<String>) -> Self {
        Attempt(Arc::new(Inner {
            surface,
            request_id,
            started: Instant::now(),
            who: Mutex::new(Who {
                owner: "-".into(),
                key: bounded(key.into()),
                org: None,
            }),
            stored: AtomicBool::new(false),
        }))
    }

    /// Names who the attempt belongs to, once the surface has authenticated it.
    pub fn identify(&self, owner: impl Into<String>, org: Option<OrgId>) -> &Self {
        let mut who = self.who_mut();
        who.owner = owner.into();
        who.org = org;
        self
    }

    /// Names the attempt by a key found inside the request (a webhook's event id, read only after
    /// its signature was checked).
    pub fn rekey(&self, key: impl Into<String>) -> &Self {
        self.who_mut().key = bounded(key.into());
        self
    }

    fn who_mut(&self) -> std::sync::MutexGuard<'_, Who> {
        self.0.who.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn surface(&self) -> Surface {
        self.0.surface
    }

    pub fn key(&self) -> String {
        self.who().key
    }

    pub fn request_id(&self) -> Option<&str> {
        self.0.request_id.as_deref()
    }

    pub fn started(&self) -> Instant {
        self.0.started
    }

    fn who(&self) -> Who {
        self.who_mut().clone()
    }

    pub fn owner(&self) -> String {
        self.who().owner
    }

    /// The org named by [`Attempt::identify`], if any.
    pub fn org(&self) -> Option<OrgId> {
        self.who().org
    }

    /// Its row was written (by `surfaces::record`, in the statement that settled its claim or with
    /// a statement of its own): the surfaces' `track` writes none after.
    pub fn mark_stored(&self) {
        self.0.stored.store(true, Ordering::Release);
    }

    pub fn is_stored(&self) -> bool {
        self.0.stored.load(Ordering::Acquire)
    }
}

/// One log event (inside the request's span, so it carries the request id) and the
/// `invoicer_attempts_total` / `invoicer_attempt_duration_seconds` series.
pub fn log_and_count(attempt: &Attempt, outcome: AttemptOutcome) {
    let elapsed = attempt.0.started.elapsed();
    let surface = attempt.0.surface.as_str();
    let who = attempt.who();
    tracing::info!(
        surface,
        owner = who.owner,
        key = who.key,
        outcome = outcome.as_str(),
        duration_ms = elapsed.as_secs_f64() * 1000.0,
        "attempt"
    );
    metrics::counter!("invoicer_attempts_total", "surface" => surface, "outcome" => outcome.as_str())
        .increment(1);
    metrics::histogram!("invoicer_attempt_duration_seconds", "surface" => surface)
        .record(elapsed.as_secs_f64());
}

/// Longest key kept in an attempt row: the API's own limit. A refused request's key is whatever
/// the client sent, so it is cut here rather than stored at any length.
pub const MAX_KEY_CHARS: usize = 255;

fn bounded(mut key: String) -> String {
    if let Some((cut, _)) = key.char_indices().nth(MAX_KEY_CHARS) {
        key.truncate(cut);
    }
    key
}
