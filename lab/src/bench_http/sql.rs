//! The SQL side of a measurement: pgbench with the workload's scripts and the values they name,
//! the settled database every measurement starts from, and the per-statement costs.

use std::path::Path;

use anyhow::Context;
use uuid::Uuid;

use lab::harness::Fixture;

use crate::pgbench::{self, Sample};

/// pgbench with the workload's scripts, `clients` connections, prepared statements, per-transaction
/// log for the percentiles.
/// The `user_sessions` row of `user`'s latest login (what every request of that login looks up).
pub(super) async fn latest_session_row(pool: &sqlx::PgPool, user: Uuid) -> anyhow::Result<Uuid> {
    sqlx::query_scalar(
        "select id from user_sessions where user_id = $1 order by created_at desc limit 1",
    )
    .bind(user)
    .fetch_one(pool)
    .await
    .context("the login's session row")
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn pgbench(
    database_url: &str,
    work: &Path,
    scripts: &[(&str, u32)],
    name: String,
    clients: usize,
    secs: u64,
    fixture: &Fixture,
    tag: &str,
    dup_events: usize,
    invoices: usize,
    session: &(String, Uuid),
) -> anyhow::Result<Sample> {
    let logs = work.join(format!("pgbench-{name}-{clients}"));
    let api_key_hash = {
        use sha2::{Digest, Sha256};
        hex::encode(Sha256::digest(fixture.api_token.as_bytes()))
    };
    let sample_event = invoicer_core::payments::stripe::standin::checkout_event(
        &format!("evt_{tag}_pgbench_0_0"),
        &format!("pi_{tag}_pgbench_0_0"),
        model::InvoiceId::from(fixture.invoices[0]),
        1,
        "usd",
    );
    let sample_invoice = serde_json::json!({
        "id": Uuid::new_v4(), "number": "INV-000001", "status": "open",
        "customer_name": "Load Client", "customer_email": "billing@example.com",
        "currency": "usd", "due_date": "2030-01-31",
        "lines": [{"description": "Consulting", "quantity": 2, "unit_amount_cents": 15000, "amount_cents": 30000}],
        "total_cents": 30000, "amount_paid_cents": 0, "payment_state": "unpaid",
        "created_at": chrono::Utc::now(),
    })
    .to_string();
    let vars = [
        ("org", fixture.org.to_string()),
        ("tag", tag.to_owned()),
        ("dups", dup_events.to_string()),
        ("invoices", invoices.to_string()),
        ("apikeyhash", api_key_hash),
        ("apikeyid", fixture.api_key_id.to_string()),
        ("session", session.0.clone()),
        ("sid", session.1.to_string()),
        ("user", fixture.user.to_string()),
        ("payload", sample_event),
        ("response", sample_invoice),
    ];
    let scripts: Vec<_> = scripts
        .iter()
        .map(|(script, weight)| (work.join(script), *weight))
        .collect();
    pgbench::run(
        database_url,
        &logs,
        pgbench::Mode::Prepared,
        &scripts,
        clients,
        pgbench::Length::Secs(secs),
        &vars,
    )
    .await
}

/// Every measurement starts from the same kind of state: vacuumed and analysed (so autovacuum does
/// not wake up in the middle of one side of a pair after the previous workload's writes) and a fresh
/// checkpoint (so no measurement pays for flushing the previous one's pages).
pub(crate) async fn settle(pool: &sqlx::PgPool) {
    use sqlx::ConnectOptions;
    // Its own connection, which does not log these (expected) slow statements as warnings.
    let options = pool
        .connect_options()
        .as_ref()
        .clone()
        .disable_statement_logging();
    let mut conn = match options.connect().await {
        Ok(conn) => conn,
        Err(e) => {
            eprintln!(
                "warning: cannot settle the database ({e}); measurements may include its work"
            );
            return;
        }
    };
    // Two statements: VACUUM cannot run in the implicit transaction of a multi-statement query.
    for sql in ["vacuum analyze", "checkpoint"] {
        if let Err(e) = sqlx::raw_sql(sql).execute(&mut conn).await {
            eprintln!("warning: {sql} failed ({e}); measurements may include its work");
        }
    }
}

/// `ms first-words; ...` for each statement (BEGIN and COMMIT included), and their sum.
pub(super) fn statement_costs(statements: &[(f64, String)]) -> String {
    let total: f64 = statements.iter().map(|(ms, _)| ms).sum();
    let each: Vec<String> = statements
        .iter()
        .map(|(ms, text)| {
            let words: Vec<&str> = text.split_whitespace().take(4).collect();
            format!("{ms:.2} `{}`", words.join(" "))
        })
        .collect();
    format!("{} (sum {total:.2})", each.join(", "))
}
