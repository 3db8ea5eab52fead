//! The two pools ([`AppState::pool`](invoicer_core::AppState) and its reads' pool) as DATABASE_* and
//! STATEMENT_TIMEOUT_MS configure them, and the migrations run before either serves.

use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::PgPool;

use crate::config::Database;

/// [`connect`], then the migrations.
pub async fn connect_and_migrate(database: &Database) -> anyhow::Result<PgPool> {
    let pool = connect(database).await?;
    // Migrations (an index on a large table, say) may take longer than a request's statement
    // timeout: they run on a connection of their own without one, closed afterwards.
    let mut conn = pool.acquire().await?.detach();
    sqlx::query("set statement_timeout = 0")
        .execute(&mut conn)
        .await?;
    invoicer_core::MIGRATOR
        .run(&mut conn)
        .await
        .context("applying database migrations")?;
    sqlx::Connection::close(conn).await?;
    Ok(pool)
}

/// The pool: up to DATABASE_POOL_SIZE connections, planning as Postgres chooses.
pub async fn connect(database: &Database) -> anyhow::Result<PgPool> {
    let url = database.database_url.expose();
    let options =
        PgConnectOptions::from_str(url).context("DATABASE_URL is not a valid Postgres URL")?;
    let url = redact(url);
    pool_options(database)
        .connect_with(options)
        .await
        .map_err(|e| {
            // rustls' refusal arrives as an I/O error during the handshake.
            let said = e.to_string();
            if matches!(e, sqlx::Error::Tls(_)) || said.contains("certificate") {
                anyhow::anyhow!(
                    "the TLS handshake with Postgres at DATABASE_URL ({url}) failed: {said}. \
                     With sslmode=verify-full the server's certificate must be signed by the \
                     CA in sslrootcert and name the host of the URL"
                )
            } else {
                anyhow::Error::new(e).context(format!(
                    "cannot connect to Postgres at DATABASE_URL ({url}); is it running? \
                     scripts/dev starts one"
                ))
            }
        })
}

/// The reads' pool ([`AppState::reads`](invoicer_core::AppState)): up to DATABASE_READ_POOL_SIZE more
/// connections that run every prepared statement on its generic plan. Connects when first used.
pub fn connect_reads(database: &Database) -> anyhow::Result<PgPool> {
    let options = PgConnectOptions::from_str(database.database_url.expose())
        .context("DATABASE_URL is not a valid Postgres URL")?;
    Ok(pool_options(database)
        .max_connections(database.read_pool_size())
        .connect_lazy_with(invoicer_core::state::generic_plans(options)))
}

/// How long a request waits for a pooled connection before it is answered 503: a pool that stays
/// empty this long is overloaded, and a quick, logged refusal beats a page that hangs.
pub const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

fn pool_options(database: &Database) -> PgPoolOptions {
    let statement_timeout_ms = database.statement_timeout_ms;
    PgPoolOptions::new()
        // Claims rely on READ COMMITTED (a concurrent duplicate waits, then sees the winner's row);
        // a server default of REPEATABLE READ would turn duplicates into serialization errors.
        // A statement that runs longer than STATEMENT_TIMEOUT_MS is cancelled: no request can
        // hold a connection (and the pool) hostage with a slow query.
        .after_connect(move |conn, _| {
            Box::pin(async move {
                use sqlx::Executor;
                conn.execute(
                    "set session characteristics as transaction isolation level read committed",
                )
                .await?;
                conn.execute(format!("set statement_timeout = {statement_timeout_ms}").as_str())
                    .await
                    .map(drop)
            })
        })
        .max_connections(database.database_pool_size)
        // sqlx pings every connection before handing it out by default: one more round trip per
        // acquire (three per duplicate webhook), the largest single cost the benchmark's profile
        // showed. A connection broken by a Postgres restart fails its next query instead, is
        // closed, and that request gets a 5xx its client retries (the fault harness does this).
        .test_before_acquire(false)
        .acquire_timeout(ACQUIRE_TIMEOUT)
}

/// Hides a password in a URL for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_owned(),
            }
        }
        _ => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            super::redact("postgres://me:secret@db:5432/x"),
            "postgres://me:***@db:5432/x"
        );
        assert_eq!(
            super::redact(crate::config::DEFAULT_DATABASE_URL),
            crate::config::DEFAULT_DATABASE_URL
        );
    }
}
