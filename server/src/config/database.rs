//! DATABASE_*: which Postgres, through how many connections, and how long a statement may run.
//! The pools themselves are set up in [`crate::db`].

use std::str::FromStr;

use invoicer_core::secret::Secret;
use sqlx::postgres::{PgConnectOptions, PgSslMode};

/// The local cluster over its unix socket, database `invoicer`, as the OS user (peer auth).
pub const DEFAULT_DATABASE_URL: &str = "postgres:///invoicer?host=/var/run/postgresql";

/// The reads' pool's size unless DATABASE_READ_POOL_SIZE says otherwise: at 16 clients on the
/// large benchmark database, 4 connections served the invoice page 23-43 % faster than 16
/// (docs/performance.md).
pub const DEFAULT_READ_POOL_SIZE: u32 = 4;

#[derive(clap::Args, Debug, Clone)]
pub struct Database {
    /// Postgres; the default is the local cluster over its socket as your OS user.
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL, global = true, hide_env_values = true)]
    pub database_url: Secret,
    /// `true` lets production reach a database on another host without TLS (DATABASE_URL without
    /// `sslmode=require`, `verify-ca` or `verify-full`): only on a network you trust end to end.
    #[arg(long, env = "DATABASE_ALLOW_PLAINTEXT", default_value_t = false, action = clap::ArgAction::Set, global = true)]
    pub database_allow_plaintext: bool,
    /// Connections in the first pool: writes, sessions and searches.
    #[arg(long, env = "DATABASE_POOL_SIZE", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub database_pool_size: u32,
    /// Connections in the reads' pool, opened as needed (default: 4, or DATABASE_POOL_SIZE if
    /// smaller). Its statements are short and never wait for a lock, so a few connections serve
    /// them; more only make Postgres' backends take turns for its cores.
    #[arg(long, env = "DATABASE_READ_POOL_SIZE", value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub database_read_pool_size: Option<u32>,
    /// Longest a request-serving SQL statement may run, in milliseconds.
    #[arg(long, env = "STATEMENT_TIMEOUT_MS", default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(100..), global = true)]
    pub statement_timeout_ms: u64,
}

impl Database {
    /// DATABASE_READ_POOL_SIZE, or its default.
    pub fn read_pool_size(&self) -> u32 {
        self.database_read_pool_size
            .unwrap_or(DEFAULT_READ_POOL_SIZE.min(self.database_pool_size))
    }

    /// Production (`dev` false) reaches a database on another host only over TLS, unless told the
    /// network is trusted.
    pub(super) fn check(&self, dev: bool) -> anyhow::Result<()> {
        anyhow::ensure!(
            dev || self.database_allow_plaintext || is_private(self.database_url.expose()),
            "DATABASE_URL names a database on another host without TLS: add sslmode=verify-full \
             (and sslrootcert=<the CA's file>) or sslmode=require, or set \
             DATABASE_ALLOW_PLAINTEXT=true if the network to it is trusted"
        );
        Ok(())
    }
}

/// The database is reached over TLS that at least encrypts (`sslmode` require, verify-ca,
/// verify-full), or it is on this machine (a socket, localhost, a loopback address).
fn is_private(url: &str) -> bool {
    let Ok(options) = PgConnectOptions::from_str(url) else {
        // Refused with its own message when connecting.
        return true;
    };
    let encrypted = matches!(
        options.get_ssl_mode(),
        PgSslMode::Require | PgSslMode::VerifyCa | PgSslMode::VerifyFull
    );
    let host = options.get_host();
    let local = host.starts_with('/')
        || host.eq_ignore_ascii_case("localhost")
        || host
            .trim_matches(['[', ']'])
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    encrypted || local || options.get_socket().is_some()
}
