//! The cookie's sessions in Postgres (`cookie_sessions`): tower-sessions' store, whose load also
//! reads the session's user in the same statement (server/core/src/accounts/auth.rs `load_cookie_session`), so
//! a signed-in request asks the database once before its own work. Sessions of the store this one
//! replaced are moved here when their cookie is next seen ([`PgSessions::adopt`]).
//!
//! Read and written on every signed-in request through a pool whose idle connections a failover
//! cuts: a pooled connection fails its first query and is closed, so each operation that fails is
//! tried again, on another connection, for as long as it finds cut ones (every idle connection of
//! the pool may have been cut at once). Every operation is safe to repeat (a read, an upsert, a
//! delete, an insert that takes a new id when its id is taken).

use sqlx::types::Json;
use sqlx::PgPool;
use tower_sessions::cookie::time::OffsetDateTime;
use tower_sessions::session::{Id, Record};
use tower_sessions::session_store::{Error, Result, SessionStore};

#[derive(Clone, Debug)]
pub struct PgSessions {
    pool: PgPool,
    legacy: std::sync::Arc<tokio::sync::OnceCell<bool>>,
}

impl PgSessions {
    pub fn new(pool: PgPool) -> Self {
        PgSessions {
            pool,
            legacy: Default::default(),
        }
    }
}

/// Why an operation of the store failed: the database (perhaps a cut connection), or the store.
enum Failed {
    Db(sqlx::Error),
    Store(Error),
}

impl From<sqlx::Error> for Failed {
    fn from(e: sqlx::Error) -> Self {
        Failed::Db(e)
    }
}

impl From<Error> for Failed {
    fn from(e: Error) -> Self {
        Failed::Store(e)
    }
}

impl Failed {
    /// A pooled connection a failover or a terminated backend cut: the pool drops it on this
    /// failure, and the next try takes another.
    fn cut(&self) -> bool {
        match self {
            Failed::Db(sqlx::Error::Io(_) | sqlx::Error::Protocol(_)) => true,
            // Terminated by an administrator, a crash or a shutdown, or a demoted node that now
            // refuses writes: another connection may reach the new primary.
            Failed::Db(sqlx::Error::Database(e)) => matches!(
                e.code().as_deref(),
                Some("57P01" | "57P02" | "57P03" | "25006")
            ),
            _ => false,
        }
    }

    fn into_store(self) -> Error {
        match self {
            Failed::Db(e) => backend(e),
            Failed::Store(e) => e,
        }
    }
}

/// Runs `op` and, if it failed, once more; and again while it finds cut connections, up to one
/// more than the pool holds (every idle connection may have been cut at once).
macro_rules! retried {
    ($self:ident, $op:expr) => {{
        let tries = $self.pool.options().get_max_connections() + 1;
        let mut tried = 1;
        loop {
            match $op.await {
                Err(e) if tried < tries && (tried == 1 || e.cut()) => {
                    if tried == 1 {
                        tracing::warn!("session store failed; trying again");
                    }
                    tried += 1;
                }
                done => break done.map_err(Failed::into_store),
            }
        }
    }};
}

fn backend(e: sqlx::Error) -> Error {
    Error::Backend(e.to_string())
}

fn to_chrono(at: OffsetDateTime) -> chrono::DateTime<chrono::Utc> {
    let nanos = i64::try_from(at.unix_timestamp_nanos()).unwrap_or(i64::MAX);
    chrono::DateTime::from_timestamp_nanos(nanos)
}

fn to_time(at: chrono::DateTime<chrono::Utc>) -> Result<OffsetDateTime> {
    let nanos = at
        .timestamp_nanos_opt()
        .ok_or_else(|| Error::Decode(format!("expiry out of range: {at}")))?;
    OffsetDateTime::from_unix_timestamp_nanos(nanos.into())
        .map_err(|e| Error::Decode(e.to_string()))
}

impl PgSessions {
    /// Inserts the record under its id unless a session has it: false if one does.
    async fn insert_new(&self, record: &Record) -> std::result::Result<bool, Failed> {
        // language=PostgreSQL
        let inserted = sqlx::query_scalar!(
            r#"insert into cookie_sessions (id, data, expiry_date) values ($1, $2, $3)
               on conflict (id) do nothing returning true as "inserted!""#,
            record.id.to_string(),
            Json(&record.data) as _,
            to_chrono(record.expiry_date)
        )
        .fetch_optional(&self.pool)
        .await?;
        Ok(inserted.is_some())
    }

    async fn upsert(&self, record: &Record) -> std::result::Result<(), Failed> {
        // language=PostgreSQL
        sqlx::query!(
            "insert into cookie_sessions (id, data, expiry_date) values ($1, $2, $3)
             on conflict (id) do update set data = excluded.data, expiry_date = excluded.expiry_date",
            record.id.to_string(),
            Json(&record.data) as _,
            to_chrono(record.expiry_date)
        )
        .execute(&self.pool)
        .await
        ?;
        Ok(())
    }

    async fn load_once(&self, id: &Id) -> std::result::Result<Option<Record>, Failed> {
        let found =
            invoicer_core::accounts::auth::load_cookie_session(&self.pool, &id.to_string()).await?;
        match found {
            Some(s) => Ok(Some(Record {
                id: *id,
                data: s.data.0,
                expiry_date: to_time(s.expiry)?,
            })),
            None => Ok(self.adopt(id).await?),
        }
    }

    async fn delete_once(&self, id: &Id) -> std::result::Result<(), Failed> {
        // language=PostgreSQL
        sqlx::query!("delete from cookie_sessions where id = $1", id.to_string())
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl SessionStore for PgSessions {
    /// A new session: its id is tower-sessions' random 128 bits; one that is taken (never, in
    /// practice) is replaced by a fresh one, never written over.
    async fn create(&self, record: &mut Record) -> Result<()> {
        loop {
            if retried!(self, self.insert_new(record))? {
                return Ok(());
            }
            record.id = Id::default();
        }
    }

    async fn save(&self, record: &Record) -> Result<()> {
        retried!(self, self.upsert(record))
    }

    async fn load(&self, id: &Id) -> Result<Option<Record>> {
        retried!(self, self.load_once(id))
    }

    async fn delete(&self, id: &Id) -> Result<()> {
        retried!(self, self.delete_once(id))
    }
}

impl PgSessions {
    /// Deletes expired sessions every `period`, for as long as the server runs.
    pub async fn sweep_expired(self, period: std::time::Duration) {
        let mut every = tokio::time::interval(period);
        loop {
            every.tick().await;
            // language=PostgreSQL
            let swept = sqlx::query!("delete from cookie_sessions where expiry_date < now()")
                .execute(&self.pool)
                .await;
            if let Err(e) = swept {
                tracing::warn!(error = %e, "expired sessions not swept; next time");
            }
        }
    }
}

impl PgSessions {
    /// Whether the store this one replaced has its table here (looked up once: no release creates
    /// it any more).
    async fn has_legacy(&self) -> Result<bool> {
        let exists = self
            .legacy
            .get_or_try_init(|| async {
                sqlx::query_scalar::<_, bool>(
                    "select to_regclass('tower_sessions.session') is not null",
                )
                .fetch_one(&self.pool)
                .await
            })
            .await
            .map_err(backend)?;
        Ok(*exists)
    }

    /// A session the previous store kept (tower-sessions-sqlx-store's `tower_sessions.session`,
    /// the record MessagePack-encoded), moved here when its cookie is first seen: an upgrade
    /// signs nobody out, also not a user whose session a replica of the previous release wrote
    /// during a rolling deploy. An unreadable record is a session that is not there.
    async fn adopt(&self, id: &Id) -> Result<Option<Record>> {
        if !self.has_legacy().await? {
            return Ok(None);
        }
        let found: Option<Vec<u8>> = sqlx::query_scalar(
            "select data from tower_sessions.session where id = $1 and expiry_date > now()",
        )
        .bind(id.to_string())
        .fetch_optional(&self.pool)
        .await
        .map_err(backend)?;
        let Some(bytes) = found else { return Ok(None) };
        let record = match rmp_serde::from_slice::<Record>(&bytes) {
            Ok(record) => Record { id: *id, ..record },
            Err(e) => {
                tracing::warn!(error = %e, "a session of the previous store could not be read");
                return Ok(None);
            }
        };
        self.insert_new(&record).await.map_err(Failed::into_store)?;
        Ok(Some(record))
    }
}
