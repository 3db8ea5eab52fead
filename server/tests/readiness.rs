//! /readyz follows the database: it fails while the database is unreachable and recovers after.
//! The database "goes away" by cutting a unix-socket proxy between the server and Postgres (the
//! machine's cluster is shared, so the test does not stop it).

use crate::common;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::net::{UnixListener, UnixStream};
use tokio::task::JoinSet;

const REAL_SOCKET: &str = "/var/run/postgresql/.s.PGSQL.5432";

/// Forwards connections from `dir/.s.PGSQL.5432` to the real socket until dropped.
struct Proxy {
    tasks: JoinSet<()>,
}

impl Proxy {
    fn start(dir: &Path) -> Proxy {
        let socket = dir.join(".s.PGSQL.5432");
        let _ = std::fs::remove_file(&socket);
        let listener = UnixListener::bind(&socket).unwrap();
        let mut tasks = JoinSet::new();
        tasks.spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((mut client, _)) = listener.accept().await {
                connections.spawn(async move {
                    if let Ok(mut server) = UnixStream::connect(REAL_SOCKET).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        });
        Proxy { tasks }
    }

    /// The database is gone: no new connections, and the open ones are cut.
    async fn stop(mut self, dir: &Path) {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
        let _ = std::fs::remove_file(dir.join(".s.PGSQL.5432"));
    }
}

async fn status_within(url: &str, want: u16, within: Duration) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    common::poll(url, want, within, Duration::from_millis(100), || async {
        http.get(url)
            .send()
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or(0)
    })
    .await;
}

#[tokio::test]
async fn readyz_fails_while_the_database_is_away_and_recovers() {
    let db = common::TestDb::new("readyz").await;
    let dir: PathBuf =
        std::env::temp_dir().join(format!("invoicer-pg-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let proxy = Proxy::start(&dir);
    let url = format!("postgres:///{}?host={}", db.name, dir.display());
    let port = common::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let _server = tokio::process::Command::new(common::SERVER)
        .env("LEPTOS_ENV", "DEV")
        .env("DATABASE_URL", &url)
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .env("WORKERS", "0")
        .env("RUST_LOG", "error")
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    status_within(&format!("{base}/readyz"), 200, Duration::from_secs(60)).await;

    proxy.stop(&dir).await;
    status_within(&format!("{base}/readyz"), 503, Duration::from_secs(20)).await;
    status_within(&format!("{base}/healthz"), 200, Duration::from_secs(5)).await; // the process is fine

    let _proxy = Proxy::start(&dir);
    status_within(&format!("{base}/readyz"), 200, Duration::from_secs(30)).await;
    db.cleanup().await;
}
