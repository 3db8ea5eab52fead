//! The command line: what `server --help` documents, and how a bad configuration is refused.

use crate::common::{self, rows, TestDb};

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
    let raw = String::from_utf8_lossy(&out.stdout);
    // The variables read as words: clap wraps long lines (at the terminal's width where it knows one).
    let help = raw.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    for command in ["serve", "worker", "admin", "stripe"] {
        assert!(
            raw.contains(&format!("  {command}")),
            "{command} in\n{help}"
        );
    }
    for tool in ["bench", "faults"] {
        assert!(
            !raw.contains(&format!("  {tool}")),
            "{tool} is lab's, in\n{help}"
        );
    }
    // Every variable the configuration reads, from clap itself (a hand list drifts), is in the help
    // and in docs/operating.md.
    use clap::CommandFactory;
    let command = server::cli::Args::command();
    let variables: Vec<String> = command
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .filter_map(|a| a.get_env())
        .map(|e| e.to_string_lossy().into_owned())
        .collect();
    assert!(variables.len() > 50, "{variables:?}");
    let operating =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/operating.md"))
            .unwrap();
    for variable in &variables {
        assert!(
            help.contains(&format!("[env: {variable}")),
            "{variable} in\n{help}"
        );
    }
    // Read outside clap (logging, failpoints): named in the help's own text.
    for variable in ["INVOICER_FAILPOINT", "RUST_LOG", "LOG_FORMAT"] {
        assert!(help.contains(variable), "{variable} in\n{help}");
    }
    for variable in
        variables
            .iter()
            .map(String::as_str)
            .chain(["INVOICER_FAILPOINT", "RUST_LOG", "LOG_FORMAT"])
    {
        assert!(
            operating.contains(&format!("`{variable}`")),
            "{variable} is not documented in docs/operating.md"
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
    // Production is the default: without LEPTOS_ENV, serving needs what production needs, and each
    // missing or unsafe setting is named.
    let complete = [
        ("DATABASE_URL", url.as_str()),
        ("STRIPE_WEBHOOK_SECRET", "whsec_live_secret"),
        ("STRIPE_MODE", "live"),
        ("INVOICER_PUBLIC_URL", "https://billing.example.com"),
        ("MAIL_FROM", "Billing <billing@example.com>"),
    ];
    for (missing, complaint) in [
        ("STRIPE_WEBHOOK_SECRET", "STRIPE_WEBHOOK_SECRET"),
        ("STRIPE_MODE", "STRIPE_MODE"),
        ("INVOICER_PUBLIC_URL", "INVOICER_PUBLIC_URL"),
    ] {
        let env: Vec<_> = complete
            .iter()
            .filter(|(k, _)| *k != missing)
            .copied()
            .collect();
        let out = server(&["serve"], &env).await;
        assert!(!out.status.success(), "served without {missing}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(complaint), "without {missing}: {stderr}");
    }
    let mut dev_secret = complete.to_vec();
    dev_secret[1] = ("STRIPE_WEBHOOK_SECRET", "whsec_dev_invoicer");
    let out = server(&["worker"], &dev_secret).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("dev secret"));
    let mut short_lease = complete.to_vec();
    short_lease.push(("WORKER_LEASE_SECS", "5"));
    let out = server(&["worker"], &short_lease).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("WORKER_LEASE_SECS"));
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
    let orgs: i64 = rows::scalar(&pool, "select count(*) from orgs").await;
    assert_eq!(orgs, 1);
    pool.close().await;
    std::fs::remove_dir_all(&dir).unwrap();
    db.cleanup().await;
}
