//! The command line: what `server --help` documents, and how a bad configuration is refused.

use crate::common::{self, TestDb};

async fn server(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut command = tokio::process::Command::new(common::SERVER);
    command.args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().await.unwrap()
}

#[tokio::test]
async fn help_lists_only_what_production_runs_and_every_variable() {
    let out = server(&["--help"], &[]).await;
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for command in ["serve", "worker", "admin", "stripe"] {
        assert!(
            help.contains(&format!("  {command}")),
            "{command} in\n{help}"
        );
    }
    for tool in ["bench", "faults"] {
        assert!(
            !help.contains(&format!("  {tool}")),
            "{tool} is lab's, in\n{help}"
        );
    }
    for variable in [
        "DATABASE_URL",
        "DATABASE_POOL_SIZE",
        "LEPTOS_SITE_ADDR",
        "LEPTOS_ENV",
        "INVOICER_PUBLIC_URL",
        "STRIPE_WEBHOOK_SECRET",
        "STRIPE_WEBHOOK_TOLERANCE_SECS",
        "IDEMPOTENCY_KEY_TTL_HOURS",
        "SMTP_URL",
        "MAIL_DIR",
        "WORKERS",
        "WORKER_LEASE_SECS",
        "WORKER_POLL_MS",
        "WORKER_BACKOFF_BASE_MS",
        "WEBHOOK_CLAIM_RETENTION_DAYS",
        "METRICS_TOKEN",
        "INVOICER_FAILPOINT",
        "RUST_LOG",
        "LOG_FORMAT",
    ] {
        assert!(
            help.contains(&format!("[env: {variable}")),
            "{variable} in\n{help}"
        );
    }
    assert!(
        help.contains("[default: 16]"),
        "defaults are shown:\n{help}"
    );
}

#[tokio::test]
async fn a_bad_value_stops_start_up_naming_its_variable() {
    let db = TestDb::new("cli_config").await;
    let url = db.url();
    let cases = [
        ("DATABASE_POOL_SIZE", "many"),
        ("IDEMPOTENCY_KEY_TTL_HOURS", "0"),
        ("LEPTOS_ENV", "staging"),
        ("WEBHOOK_CLAIM_RETENTION_DAYS", "2"),
    ];
    for (variable, value) in cases {
        let out = server(
            &["admin", "create-api-key", "--email", "nobody@example.com"],
            &[("DATABASE_URL", &url), (variable, value)],
        )
        .await;
        assert!(!out.status.success(), "{variable}={value} accepted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(variable), "{variable}={value}: {stderr}");
    }
    // Production without a webhook secret.
    let out = server(
        &["admin", "create-api-key", "--email", "nobody@example.com"],
        &[("DATABASE_URL", &url), ("LEPTOS_ENV", "PROD")],
    )
    .await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("STRIPE_WEBHOOK_SECRET"));
    db.cleanup().await;
}

#[tokio::test]
async fn a_dot_env_file_sets_variables_without_overriding_the_environment() {
    let db = TestDb::new("cli_dotenv").await;
    let dir = std::env::temp_dir().join(format!("invoicer-dotenv-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    // The .env names the test database; a create-org through it lands there.
    std::fs::write(
        dir.join(".env"),
        format!("DATABASE_URL={}\nDATABASE_POOL_SIZE=many\n", db.url()),
    )
    .unwrap();
    let out = tokio::process::Command::new(common::SERVER)
        .args([
            "admin",
            "create-org",
            "--org",
            "Env",
            "--email",
            "env@example.com",
        ])
        .args(["--password", "correct horse"])
        .current_dir(&dir)
        .env_remove("DATABASE_URL")
        // The real environment wins over the file's bad value.
        .env("DATABASE_POOL_SIZE", "4")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let pool = db.pool().await;
    let orgs: i64 = sqlx::query_scalar("select count(*) from orgs")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(orgs, 1);
    pool.close().await;
    std::fs::remove_dir_all(&dir).unwrap();
    db.cleanup().await;
}
