//! The sessions table, read and written on every signed-in request, through a pool whose idle
//! connections a failover cuts: a pooled connection fails its first query and is closed, so each
//! store operation that fails is tried once more, on a fresh connection. Every operation is safe to
//! repeat (a read, an upsert, a delete; a create whose id collides takes a new one).

use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{Result, SessionStore};
use tower_sessions_sqlx_store::PostgresStore;

#[derive(Clone, Debug)]
pub struct Retried(pub PostgresStore);

/// Runs `op` and, if it failed, once more.
macro_rules! twice {
    ($op:expr) => {
        match $op.await {
            Err(e) => {
                tracing::warn!(error = %e, "session store failed; trying once more");
                $op.await
            }
            done => done,
        }
    };
}

#[async_trait::async_trait]
impl SessionStore for Retried {
    async fn create(&self, record: &mut Record) -> Result<()> {
        twice!(self.0.create(record))
    }

    async fn save(&self, record: &Record) -> Result<()> {
        twice!(self.0.save(record))
    }

    async fn load(&self, id: &Id) -> Result<Option<Record>> {
        twice!(self.0.load(id))
    }

    async fn delete(&self, id: &Id) -> Result<()> {
        twice!(self.0.delete(id))
    }
}
