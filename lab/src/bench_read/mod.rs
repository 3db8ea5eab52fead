//! `lab bench read`: the read paths at 1, 16 and 64 clients against a running server over generated
//! data (`lab datagen`): the invoice list (first page, a deep keyset page, a filter, searches), an
//! invoice page, the public page and its PDF, the activity page (first page, a filter, a search), the
//! API list with a cursor, and `/metrics`. Prints requests/s, p50 and p99 per path and client count,
//! and right after each, pgbench running the SQL that path sends (bench/pgbench/read_*.sql) with as
//! many clients for as long, and their ratio. `--explain` writes `EXPLAIN (ANALYZE, BUFFERS)` of every
//! statement of those scripts, with the same values, to a markdown file.

mod explain;
mod measure;
mod paths;
mod script;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use sqlx::PgPool;
use uuid::Uuid;

use crate::pgbench;
use lab::harness::{
    self,
    process::{cpu_ms, cpu_ms_between, cpu_ms_named},
};

use explain::explain_all;
use measure::{measure, Credentials, WARM_UP};
use paths::SCRIPTS;

#[derive(clap::Args, Debug)]
pub struct ReadBenchArgs {
    /// The server.
    #[arg(long)]
    pub url: String,
    /// The generated big org's owner (`lab datagen --email`).
    #[arg(long, default_value = "reader@example.com")]
    pub email: String,
    #[arg(long, default_value = "reader password")]
    pub password: String,
    /// Client counts, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64")]
    pub clients: Vec<usize>,
    /// Seconds per path and client count (HTTP and pgbench alike).
    #[arg(long, default_value_t = 5)]
    pub secs: u64,
    /// The database as pgbench reaches it (defaults to DATABASE_URL).
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: String,
    /// Where pgbench's scripts and logs go (a fresh temporary folder if unset).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Write EXPLAIN (ANALYZE, BUFFERS) of every statement each path sends to this markdown file.
    #[arg(long)]
    pub explain: Option<PathBuf>,
    /// The server's METRICS_TOKEN (production serves /metrics only with it).
    #[arg(long, env = "METRICS_TOKEN")]
    pub metrics_token: Option<String>,
    /// Fail if a plan reads a table of the big org's data by a sequential scan, or a plan node
    /// reads more than 10,000 rows (for large sizes, where every read must cost what a page does).
    #[arg(long)]
    pub forbid_big_scans: bool,
    /// Measure only the paths whose name contains one of these (comma separated; all if unset).
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// The server's process id, when it runs on this machine: each HTTP measurement then reports
    /// the CPU time the server and the local Postgres (every process named `postgres`) spent per
    /// request (Linux `/proc`).
    #[arg(long)]
    pub server_pid: Option<u32>,
}

pub async fn run(pool: &PgPool, args: ReadBenchArgs) -> anyhow::Result<()> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()?;
    let cookie = harness::client::login(&http, &args.url, &args.email, &args.password).await?;
    // What the paths name: the big org, one of its invoices in the middle, a deep cursor.
    let (org,): (Uuid,) = sqlx::query_as(
        "select m.org_id from memberships m join users u on u.id = m.user_id \
         where lower(u.email) = lower($1) limit 1",
    )
    .bind(&args.email)
    .fetch_one(pool)
    .await
    .context("the reader's org (run lab datagen first)")?;
    let (count,): (i64,) = sqlx::query_as("select count(*) from invoices where org_id = $1")
        .bind(org)
        .fetch_one(pool)
        .await?;
    let (id, token, number): (Uuid, String, String) = sqlx::query_as(
        "select id, public_token, number_text from invoices where org_id = $1 and public_token is not null \
         order by created_at offset $2 limit 1",
    )
    .bind(org)
    .bind(count / 2)
    .fetch_one(pool)
    .await?;
    let (deep_at, deep_id): (chrono::DateTime<chrono::Utc>, Uuid) = sqlx::query_as(
        "select created_at, id from invoices where org_id = $1 order by created_at desc, id desc \
         offset $2 limit 1",
    )
    .bind(org)
    .bind(count * 9 / 10)
    .fetch_one(pool)
    .await?;
    let cursor = format!("{}.{}", deep_at.timestamp_micros(), deep_id.simple());
    let (user,): (Uuid,) = sqlx::query_as("select id from users where lower(email) = lower($1)")
        .bind(&args.email)
        .fetch_one(pool)
        .await?;
    let key =
        invoicer_core::accounts::api_keys::create_for_user(pool, org.into(), user, "read bench")
            .await?;
    let prefix = &number[..number.len() - 2];
    // The searches name one customer and one idempotency key, the way a user looks one up, so
    // every size renders the same rows (~20 invoices of a customer, the attempts of a key): the
    // longest name and key, which prefix nothing else.
    let (customer,): (String,) = sqlx::query_as(
        "select name from customers where org_id = $1 order by length(name) desc, name desc limit 1",
    )
    .bind(org)
    .fetch_one(pool)
    .await
    .context("the reader's customers (run lab datagen first)")?;
    let (api_key,): (String,) = sqlx::query_as(
        "select key from attempts where org_id = $1 and surface = 'api' \
         order by length(key) desc, key desc limit 1",
    )
    .bind(org)
    .fetch_one(pool)
    .await
    .context("the reader's API attempts (run lab datagen first)")?;
    let reads = paths::reads(&cursor, prefix, &customer, id, &token, &api_key);
    // What the scripts name, with the values the paths use.
    let (session,): (String,) =
        sqlx::query_as("select id from cookie_sessions order by expiry_date desc limit 1")
            .fetch_one(pool)
            .await
            .context("the bench's session")?;
    let api_key_hash = {
        use sha2::{Digest, Sha256};
        hex::encode(Sha256::digest(key.plaintext.as_bytes()))
    };
    let (sid,): (Uuid,) = sqlx::query_as(
        "select id from user_sessions where user_id = $1 and ended_at is null order by created_at desc limit 1",
    )
    .bind(user)
    .fetch_one(pool)
    .await
    .context("the bench's session row")?;
    // The public PDF is drawn on its first request and served from storage after: drawn here once,
    // so the script reads the stored version the server reads.
    http.get(format!("{}/i/{token}/pdf", args.url))
        .send()
        .await?
        .error_for_status()
        .context("the public PDF")?;
    let (pdf_version,): (String,) = sqlx::query_as(
        "select encode(version, 'hex') from document_pdfs where document_id = $1 and paper = 'a4'",
    )
    .bind(id)
    .fetch_one(pool)
    .await
    .context("the public PDF's stored version")?;
    // The searches' statement binds its text lowered, with the end of its prefix range.
    let number_range = invoicer_core::search::PrefixRange::new(&prefix.to_lowercase());
    let customer_range = invoicer_core::search::PrefixRange::new(&customer.to_lowercase());
    let vars: Vec<(&str, String)> = vec![
        ("org", org.to_string()),
        ("user", user.to_string()),
        ("sid", sid.to_string()),
        ("session", session),
        ("invoice", id.to_string()),
        ("token", token.clone()),
        ("pdf_version", format!("\\x{pdf_version}")),
        (
            "cursor_at",
            deep_at.format("%Y-%m-%d %H:%M:%S%.6f+00").to_string(),
        ),
        ("cursor_id", deep_id.to_string()),
        ("prefix_from", number_range.from),
        (
            "prefix_to",
            number_range.to.context("a number with no range")?,
        ),
        ("customer_from", customer_range.from),
        (
            "customer_to",
            customer_range.to.context("a name with no range")?,
        ),
        ("key", api_key.clone()),
        ("apikeyhash", api_key_hash),
    ];
    let work = crate::work_dir(args.work_dir.as_deref(), "read")?;
    for (name, text) in SCRIPTS {
        std::fs::write(work.join(name), lab::pgbench_script::expand(text)?)?;
    }
    if let Some(out) = &args.explain {
        let big = explain_all(pool, &reads, &vars, out).await?;
        println!(
            "EXPLAIN (ANALYZE, BUFFERS) of every statement: {}",
            out.display()
        );
        if !big.is_empty() {
            println!("big scans: {}", big.join("; "));
        }
        anyhow::ensure!(
            !args.forbid_big_scans || big.is_empty(),
            "plans read big tables whole or read more rows than a page needs: {}",
            big.join("; ")
        );
    }

    println!(
        "invoicer read benchmark: {} invoices in the org, {} s per row",
        count, args.secs
    );
    println!("| path | clients | requests/s | p50 ms | p99 ms | errors | server CPU ms/req | Postgres CPU ms/req | pgbench tx/s | pgbench p50 ms | pgbench p99 ms | ratio |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut failed = 0;
    let chosen = reads
        .iter()
        .filter(|r| args.only.is_empty() || args.only.iter().any(|o| r.name.contains(o.as_str())));
    for read in chosen {
        for &clients in &args.clients {
            let credentials = Credentials {
                cookie: &cookie,
                api_key: &key.plaintext,
                metrics_token: args.metrics_token.as_deref(),
            };
            // A warm-up second, not measured: the path's pages in Postgres' buffers and the pool's
            // connections open (and their statements prepared) at this client count, so the row
            // measures the path and not the first visit after the server started.
            let _ = measure(&http, &args.url, read, &credentials, clients, WARM_UP).await;
            let cpu_before = args
                .server_pid
                .map(|pid| (cpu_ms(pid), cpu_ms_named("postgres")));
            let (rate, p50, p99, errors) = measure(
                &http,
                &args.url,
                read,
                &credentials,
                clients,
                Duration::from_secs(args.secs),
            )
            .await;
            // CPU per request: what each used while the clients ran, over the requests answered.
            let answered = rate * args.secs as f64;
            let per_request = |spent: Option<u64>| match spent {
                Some(ms) if answered > 0.0 => format!("{:.2}", ms as f64 / answered),
                _ => "-".to_owned(),
            };
            let (server_cpu, postgres_cpu) = match (cpu_before, args.server_pid) {
                (Some((server, postgres)), Some(pid)) => (
                    per_request(server.zip(cpu_ms(pid)).map(|(b, a)| a.saturating_sub(b))),
                    per_request(Some(cpu_ms_between(&postgres, &cpu_ms_named("postgres")))),
                ),
                _ => ("-".to_owned(), "-".to_owned()),
            };
            let logs = work.join(format!("pgbench-{}-{clients}", read.script));
            let mut pg = pgbench::run(
                &args.database_url,
                &logs,
                read.mode(),
                &[(work.join(read.script), 1)],
                clients,
                pgbench::Length::Secs(args.secs),
                &vars,
            )
            .await
            .with_context(|| format!("pgbench {}", read.script))?;
            let (pg50, pg99) = (pg.quantile_ms(0.5), pg.quantile_ms(0.99));
            println!(
                "| {} | {clients} | {rate:.0} | {p50:.1} | {p99:.1} | {errors} | {server_cpu} | {postgres_cpu} | {:.0} | {pg50:.2} | {pg99:.2} | {:.2} |",
                read.name,
                pg.rate(),
                rate / pg.rate()
            );
            failed += errors + pg.failed;
        }
    }
    anyhow::ensure!(failed == 0, "{failed} reads or pgbench transactions failed");
    Ok(())
}
