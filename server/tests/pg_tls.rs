//! Postgres over TLS: the local cluster serves TLS with a certificate signed by a CA made here by
//! openssl; `sslmode=verify-full` with that CA connects (and the session is encrypted), another CA
//! is refused, and the server says why.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, PgConnection};
use uuid::Uuid;

use crate::common::{TestDb, SERVER};

/// Two throwaway CAs, and a certificate for localhost signed by the first: (dir, ca, other ca).
fn certificates() -> (PathBuf, PathBuf, PathBuf) {
    let script = r#"
        set -e
        for ca in ca other; do
          openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout $ca.key \
            -out $ca.pem -days 1 -subj /CN=invoicer-$ca 2>/dev/null
        done
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key \
          -out server.csr -subj /CN=localhost 2>/dev/null
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem \
          -days 1 -extfile server.ext 2>/dev/null
        chmod 755 .
        chmod 600 server.key
        # The cluster runs as postgres and reads its key only if it owns it.
        if [ "$(id -u)" = 0 ]; then chown postgres:postgres server.key server.pem; fi
    "#;
    let dir = crate::common::openssl("invoicer-pgtls", script);
    (dir.clone(), dir.join("ca.pem"), dir.join("other.pem"))
}

fn admin_url() -> String {
    std::env::var("DATABASE_URL").expect("DATABASE_URL names the local cluster")
}

/// Turns TLS off again (and forgets the files) when the test ends, however it ends: the cluster
/// must not depend on a temporary directory.
struct TlsOn;

impl Drop for TlsOn {
    fn drop(&mut self) {
        let url = admin_url();
        let _ = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap()
                .block_on(async move {
                    let mut admin = PgConnection::connect(&url).await.unwrap();
                    for sql in [
                        "alter system reset ssl",
                        "alter system reset ssl_cert_file",
                        "alter system reset ssl_key_file",
                        "select pg_reload_conf()",
                    ] {
                        sqlx::query(sql).execute(&mut admin).await.unwrap();
                    }
                })
        })
        .join();
    }
}

async fn switch_tls_on(admin: &mut PgConnection, dir: &Path) -> TlsOn {
    let cert = dir.join("server.pem");
    let key = dir.join("server.key");
    for (setting, value) in [
        ("ssl_cert_file", cert.display().to_string()),
        ("ssl_key_file", key.display().to_string()),
        ("ssl", "on".to_owned()),
    ] {
        sqlx::query(&format!(
            "alter system set {setting} = '{}'",
            value.replace('\'', "''")
        ))
        .execute(&mut *admin)
        .await
        .unwrap();
    }
    sqlx::query("select pg_reload_conf()")
        .execute(&mut *admin)
        .await
        .unwrap();
    TlsOn
}

/// `server admin create-org` against `database_url`: what the operator's first command would meet.
async fn create_org_at(database_url: &str) -> std::process::Output {
    tokio::process::Command::new(SERVER)
        .args([
            "admin",
            "create-org",
            "--org",
            "Tls",
            "--email",
            "tls@example.com",
            "--password",
            "correct horse",
        ])
        .env("LEPTOS_ENV", "DEV")
        .env("DATABASE_URL", database_url)
        .env("RUST_LOG", "warn")
        .output()
        .await
        .unwrap()
}

#[tokio::test]
async fn verify_full_connects_over_tls_and_a_wrong_ca_is_refused_clearly() {
    let db = TestDb::new("pgtls").await;
    let mut admin = PgConnection::connect(&admin_url()).await.unwrap();
    let port: String = sqlx::query_scalar("show port")
        .fetch_one(&mut admin)
        .await
        .unwrap();
    let role = format!("tls_{}", Uuid::new_v4().simple());
    sqlx::query(&format!("create role {role} login password 'tls password'"))
        .execute(&mut admin)
        .await
        .unwrap();
    sqlx::query(&format!("alter database \"{}\" owner to {role}", db.name))
        .execute(&mut admin)
        .await
        .unwrap();
    let (dir, ca, other) = certificates();
    let _tls = switch_tls_on(&mut admin, &dir).await;
    let url = |ca: &Path| {
        format!(
            "postgres://{role}:tls%20password@localhost:{port}/{}?sslmode=verify-full&sslrootcert={}",
            db.name,
            ca.display()
        )
    };

    // The reload reaches the cluster's listener shortly: wait for the first TLS session.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut conn = loop {
        let options = PgConnectOptions::from_str(&url(&ca)).unwrap();
        match options.connect().await {
            Ok(conn) => break conn,
            Err(e) => {
                assert!(Instant::now() < deadline, "no TLS session: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    let encrypted: bool =
        sqlx::query_scalar("select ssl from pg_stat_ssl where pid = pg_backend_pid()")
            .fetch_one(&mut conn)
            .await
            .unwrap();
    assert!(encrypted, "the session is over TLS");
    conn.close().await.unwrap();

    // Another CA: refused by the client library...
    let refused = PgConnectOptions::from_str(&url(&other))
        .unwrap()
        .connect()
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("invalid peer certificate"),
        "{refused}"
    );
    // ...and by the server, which names the cause.
    let out = create_org_at(&url(&other)).await;
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("TLS handshake with Postgres") && said.contains("sslrootcert"),
        "{said}"
    );
    assert!(
        !said.contains("tls password"),
        "the password is not printed: {said}"
    );
    // The right CA through the server: it migrates and writes.
    let out = create_org_at(&url(&ca)).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    drop(_tls);
    db.cleanup().await;
    sqlx::query(&format!("drop role {role}"))
        .execute(&mut admin)
        .await
        .unwrap();
    let _ = std::fs::remove_dir_all(dir);
}
