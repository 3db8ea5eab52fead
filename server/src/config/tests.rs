//! The configuration's parsing, defaults and checks, against the variables docs/operating.md lists.

use clap::Parser;

use super::{Checked, Config};

#[derive(clap::Parser)]
struct Probe {
    #[command(flatten)]
    config: Config,
}

fn parse(args: &[&str]) -> Config {
    Probe::try_parse_from([&["server"], args].concat())
        .unwrap()
        .config
}

#[test]
fn a_bad_value_names_its_variable() {
    let err = Probe::try_parse_from(["server", "--database-pool-size", "many"])
        .err()
        .expect("refused");
    assert!(err.to_string().contains("DATABASE_POOL_SIZE"), "{err}");
    let err = Probe::try_parse_from(["server", "--leptos-env", "staging"])
        .err()
        .expect("refused");
    assert!(err.to_string().contains("LEPTOS_ENV"), "{err}");
}

#[test]
fn the_reads_pool_is_small_unless_told() {
    let size = |args: &[&str]| parse(args).database.read_pool_size();
    assert_eq!(size(&[]), super::DEFAULT_READ_POOL_SIZE);
    assert_eq!(size(&["--database-pool-size", "2"]), 2);
    assert_eq!(size(&["--database-read-pool-size", "12"]), 12);
    assert!(Probe::try_parse_from(["server", "--database-read-pool-size", "0"]).is_err());
}

#[test]
fn production_needs_a_webhook_secret() {
    let mut prod = parse(&["--leptos-env", "PROD"]);
    prod.stripe.stripe_webhook_secret.clear();
    assert!(prod.check(true).is_err());
    let mut dev = parse(&["--leptos-env", "DEV"]);
    dev.stripe.stripe_webhook_secret.clear();
    assert!(dev.check(true).unwrap().stripe.secret_is_default());
}

/// A production configuration with everything required, plus `extra` arguments.
fn prod(extra: &[&str]) -> Config {
    let defaults = [
        ("--leptos-env", "PROD"),
        ("--stripe-webhook-secret", "whsec_live_one"),
        ("--stripe-mode", "live"),
        ("--invoicer-public-url", "https://billing.example.com"),
        ("--mail-from", "Acme billing <billing@acme.example>"),
    ];
    let mut args = vec![];
    for (flag, value) in defaults {
        if !extra.contains(&flag) {
            args.extend([flag, value]);
        }
    }
    args.extend_from_slice(extra);
    parse(&args)
}

fn refusal(config: Config) -> String {
    config.check(true).expect_err("refused").to_string()
}

#[test]
fn production_refuses_what_would_be_unsafe() {
    prod(&[]).check(true).unwrap();
    let dev_secret = prod(&[
        "--stripe-webhook-secret",
        "whsec_live_one,whsec_dev_invoicer",
    ]);
    assert!(refusal(dev_secret).contains("STRIPE_WEBHOOK_SECRET"));
    let mut no_url = prod(&[]);
    no_url.site.invoicer_public_url = None;
    assert!(refusal(no_url).contains("INVOICER_PUBLIC_URL"));
    let mut no_mode = prod(&[]);
    no_mode.stripe.stripe_mode = None;
    assert!(refusal(no_mode).contains("STRIPE_MODE"));
    let mut no_from = prod(&[]);
    no_from.mail.mail_from = None;
    assert_eq!(
        no_from.check(true).unwrap().mail.from,
        "invoicer <billing@billing.example.com>",
        "production mails from its public host by default"
    );
    assert!(refusal(prod(&["--mail-from", "not a mailbox"])).contains("MAIL_FROM"));
    let short_lease = prod(&["--worker-lease-secs", "10", "--smtp-timeout-ms", "10000"]);
    assert!(refusal(short_lease).contains("WORKER_LEASE_SECS"));
    let bad_url = prod(&["--invoicer-public-url", "billing.example.com"]);
    assert!(refusal(bad_url).contains("INVOICER_PUBLIC_URL"));
    let short_token = prod(&["--metrics-token", "abc"]);
    assert!(refusal(short_token).contains("METRICS_TOKEN"));
    let bad_smtp = prod(&["--smtp-url", "http://mail.example"]);
    assert!(refusal(bad_smtp).contains("SMTP_URL"));
    // `admin` needs only the database, in production too.
    let mut admin = prod(&[]);
    admin.stripe.stripe_webhook_secret.clear();
    admin.site.invoicer_public_url = None;
    admin.check(false).unwrap();
}

#[test]
fn out_of_range_numbers_are_refused_by_name() {
    for (flag, value, var) in [
        (
            "--stripe-webhook-tolerance-secs",
            "-5",
            "STRIPE_WEBHOOK_TOLERANCE_SECS",
        ),
        (
            "--stripe-webhook-tolerance-secs",
            "0",
            "STRIPE_WEBHOOK_TOLERANCE_SECS",
        ),
        ("--worker-lease-secs", "0", "WORKER_LEASE_SECS"),
        (
            "--logins-per-address-minute",
            "0",
            "LOGINS_PER_ADDRESS_MINUTE",
        ),
        ("--statement-timeout-ms", "5", "STATEMENT_TIMEOUT_MS"),
    ] {
        let err = Probe::try_parse_from(["server".to_owned(), format!("{flag}={value}")])
            .err()
            .unwrap_or_else(|| panic!("{flag} {value} accepted"));
        assert!(
            err.to_string().contains(var) || err.to_string().contains(flag),
            "{err}"
        );
    }
}

#[test]
fn signups_are_closed_in_production_and_open_in_dev_unless_told() {
    let prod_default = prod(&[]).check(true).unwrap();
    assert!(!prod_default.settings().signups_open);
    let prod_open = prod(&["--signups", "open"]).check(true).unwrap();
    assert!(prod_open.settings().signups_open);
    assert!(
        !prod_open.settings().signup_payments,
        "a signed-up org waits for the operator"
    );
    let mut dev = parse(&["--leptos-env", "DEV"]);
    dev.site.signups = None;
    let dev = dev.check(true).unwrap();
    assert!(dev.settings().signups_open && dev.settings().signup_payments);
    assert!(Probe::try_parse_from(["server", "--signups", "maybe"]).is_err());
}

#[test]
fn secrets_never_show_in_a_debug_print() {
    let config = prod(&[
        "--database-url",
        "postgres://app:db-topsecret@localhost/invoicer",
        "--stripe-webhook-secret",
        "whsec_topsecret_one,whsec_topsecret_two",
        "--stripe-secret-key",
        "sk_live_topsecret",
        "--metrics-token",
        "metrics-topsecret-token",
        "--smtp-url",
        "smtp://user:pw-topsecret@mail.example.com",
    ]);
    let parsed = format!("{config:?}");
    let checked: Checked = config.check(true).unwrap();
    let printed = format!("{parsed} {checked:?} {:?}", checked.settings());
    assert!(!printed.contains("topsecret"), "{printed}");
    assert_eq!(
        checked.settings().stripe_webhook_secrets[1].expose(),
        "whsec_topsecret_two"
    );
    assert_eq!(
        checked.database.database_url.expose(),
        "postgres://app:db-topsecret@localhost/invoicer"
    );
}

#[test]
fn production_refuses_a_remote_database_without_tls() {
    let with_db = |url: &str, allow: &str| {
        prod(&["--database-url", url, "--database-allow-plaintext", allow]).check(true)
    };
    let refused = with_db("postgres://app:pw@db.internal:5432/invoicer", "false")
        .unwrap_err()
        .to_string();
    assert!(refused.contains("sslmode=verify-full"), "{refused}");
    for fine in [
        "postgres://app:pw@db.internal/invoicer?sslmode=verify-full&sslrootcert=/etc/ca.pem",
        "postgres://app:pw@db.internal/invoicer?sslmode=require",
        "postgres://app@localhost/invoicer",
        "postgres://app@127.0.0.1:5432/invoicer",
        "postgres://app@[::1]/invoicer",
        "postgres:///invoicer?host=/var/run/postgresql",
    ] {
        with_db(fine, "false").unwrap_or_else(|e| panic!("{fine}: {e}"));
    }
    with_db("postgres://app:pw@db.internal/invoicer", "true").unwrap();
    // sslmode=prefer falls back to plain text: it is not TLS.
    assert!(with_db(
        "postgres://app:pw@db.internal/invoicer?sslmode=prefer",
        "false"
    )
    .is_err());
}

#[test]
fn dev_fills_in_safe_local_defaults() {
    let mut dev = parse(&["--leptos-env", "DEV"]);
    dev.site.invoicer_public_url = None;
    dev.mail.mail_from = None;
    dev.stripe.stripe_mode = None;
    let addr = dev.site.leptos_site_addr.clone();
    let dev = dev.check(true).unwrap();
    assert_eq!(dev.site.public_url, format!("http://{addr}"));
    assert!(!dev.stripe.live, "test mode");
    assert_eq!(dev.mail.from, invoicer_core::mail::DEV_FROM);
}

#[test]
fn an_unset_leptos_env_is_production() {
    let config = parse(&[]);
    if std::env::var("LEPTOS_ENV").is_err() && std::env::var("LEPTOS_WATCH").is_err() {
        assert!(!config.dev_mode());
    }
    assert!(parse(&["--leptos-env", "DEV"]).dev_mode());
}

#[test]
fn the_defaults_are_the_apps() {
    let checked = parse(&["--leptos-env", "DEV"]).check(true).unwrap();
    let ours = checked.settings();
    let tests = invoicer_core::state::Settings::default();
    assert_eq!(ours.stripe_tolerance_secs, tests.stripe_tolerance_secs);
    assert_eq!(ours.idempotency_key_ttl, tests.idempotency_key_ttl);
    assert_eq!(ours.limits, tests.limits);
    assert_eq!(ours.stripe_max_calls, tests.stripe_max_calls);
    let worker = invoicer_core::worker::WorkerConfig::default();
    assert_eq!(
        (
            checked.worker.lease,
            checked.worker.poll,
            checked.worker.backoff_base
        ),
        (worker.lease, worker.poll, worker.backoff_base)
    );
    let retention = invoicer_core::jobs::retention::RetentionConfig::DEFAULT;
    assert_eq!(
        (
            checked.retention.webhook_days,
            checked.retention.form_key_days,
            checked.retention.activity_days,
            checked.retention.outbox_days,
        ),
        (
            retention.webhook_days,
            retention.form_key_days,
            retention.activity_days,
            retention.outbox_days,
        )
    );
}
