//! `lab bench read`: the read paths at 1, 16 and 64 clients against a running server over generated
//! data (`lab datagen`): the invoice list (first page, a deep keyset page, a filter, searches), an
//! invoice page, the public page and its PDF, the activity page (first page, a filter, a search), the
//! API list with a cursor, and `/metrics`. Prints requests/s, p50 and p99 per path and client count,
//! and right after each, pgbench running the SQL that path sends (bench/pgbench/read_*.sql) with as
//! many clients for as long, and their ratio. `--explain` writes `EXPLAIN (ANALYZE, BUFFERS)` of every
//! statement of those scripts, with the same values, to a markdown file.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use sqlx::PgPool;
use uuid::Uuid;

use crate::pgbench;
use lab::harness::process::{cpu_ms, cpu_ms_between, cpu_ms_named};

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

/// The SQL each path sends, as pgbench scripts (see their headers for where each statement comes
/// from).
const SCRIPTS: [(&str, &str); 13] = [
    (
        "read_list_first.sql",
        include_str!("../../bench/pgbench/read_list_first.sql"),
    ),
    (
        "read_list_deep.sql",
        include_str!("../../bench/pgbench/read_list_deep.sql"),
    ),
    (
        "read_list_overdue.sql",
        include_str!("../../bench/pgbench/read_list_overdue.sql"),
    ),
    (
        "read_list_search_number.sql",
        include_str!("../../bench/pgbench/read_list_search_number.sql"),
    ),
    (
        "read_list_search_customer.sql",
        include_str!("../../bench/pgbench/read_list_search_customer.sql"),
    ),
    (
        "read_invoice_page.sql",
        include_str!("../../bench/pgbench/read_invoice_page.sql"),
    ),
    (
        "read_public_page.sql",
        include_str!("../../bench/pgbench/read_public_page.sql"),
    ),
    (
        "read_public_pdf.sql",
        include_str!("../../bench/pgbench/read_public_pdf.sql"),
    ),
    (
        "read_activity_first.sql",
        include_str!("../../bench/pgbench/read_activity_first.sql"),
    ),
    (
        "read_activity_webhook.sql",
        include_str!("../../bench/pgbench/read_activity_webhook.sql"),
    ),
    (
        "read_activity_search.sql",
        include_str!("../../bench/pgbench/read_activity_search.sql"),
    ),
    (
        "read_api_list.sql",
        include_str!("../../bench/pgbench/read_api_list.sql"),
    ),
    (
        "read_metrics.sql",
        include_str!("../../bench/pgbench/read_metrics.sql"),
    ),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Auth {
    /// The signed-in owner's session cookie.
    Session,
    /// The API key, as a bearer token.
    ApiKey,
    /// `METRICS_TOKEN` as a bearer token when given (production), nothing otherwise (dev: open).
    Metrics,
}

/// A path to read, with the credentials it needs.
struct Read {
    name: &'static str,
    path: String,
    /// What the request carries.
    auth: Auth,
    /// Its pgbench script (one of [`SCRIPTS`]).
    script: &'static str,
}

impl Read {
    /// Paths whose main statement the server sends unprepared (the activity search: planned with
    /// its `like` pattern each time) are run by pgbench the same way; the others prepared, as sqlx's
    /// statement cache sends them.
    fn mode(&self) -> pgbench::Mode {
        if self.script == "read_activity_search.sql" {
            pgbench::Mode::Extended
        } else {
            pgbench::Mode::Prepared
        }
    }
}

pub async fn run(pool: &PgPool, args: ReadBenchArgs) -> anyhow::Result<()> {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()?;
    let res = http
        .post(format!("{}/rpc/login", args.url))
        .header("accept", "text/html")
        .form(&[("email", &args.email), ("password", &args.password)])
        .send()
        .await?;
    anyhow::ensure!(res.status() == 302, "login answered {}", res.status());
    let cookie = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.contains("invoicer_session="))
        .and_then(|v| v.split(';').next())
        .context("login set no session cookie")?
        .to_owned();
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
    let key = app::ssr::api_keys::create_for_user(pool, org, user, "read bench").await?;
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
    let reads = [
        Read {
            name: "list, first page",
            path: "/invoices".into(),
            auth: Auth::Session,
            script: "read_list_first.sql",
        },
        Read {
            name: "list, a page 90 % deep",
            path: format!("/invoices?before={cursor}"),
            auth: Auth::Session,
            script: "read_list_deep.sql",
        },
        Read {
            name: "list, overdue",
            path: "/invoices?status=overdue".into(),
            auth: Auth::Session,
            script: "read_list_overdue.sql",
        },
        Read {
            name: "list, search a number",
            path: format!("/invoices?q={prefix}"),
            auth: Auth::Session,
            script: "read_list_search_number.sql",
        },
        Read {
            name: "list, search a customer",
            path: format!("/invoices?q={}", customer.replace(' ', "%20")),
            auth: Auth::Session,
            script: "read_list_search_customer.sql",
        },
        Read {
            name: "invoice page",
            path: format!("/invoices/{id}"),
            auth: Auth::Session,
            script: "read_invoice_page.sql",
        },
        Read {
            name: "public page",
            path: format!("/i/{token}"),
            auth: Auth::Session,
            script: "read_public_page.sql",
        },
        Read {
            name: "public PDF",
            path: format!("/i/{token}/pdf"),
            auth: Auth::Session,
            script: "read_public_pdf.sql",
        },
        Read {
            name: "activity, first page",
            path: "/activity".into(),
            auth: Auth::Session,
            script: "read_activity_first.sql",
        },
        Read {
            name: "activity, webhook only",
            path: "/activity?surface=webhook".into(),
            auth: Auth::Session,
            script: "read_activity_webhook.sql",
        },
        Read {
            name: "activity, search a key",
            path: format!("/activity?q={api_key}"),
            auth: Auth::Session,
            script: "read_activity_search.sql",
        },
        Read {
            name: "API list, a cursor",
            path: format!("/api/v1/invoices?limit=20&cursor={cursor}"),
            auth: Auth::ApiKey,
            script: "read_api_list.sql",
        },
        Read {
            name: "/metrics",
            path: "/metrics".into(),
            auth: Auth::Metrics,
            script: "read_metrics.sql",
        },
    ];
    // What the scripts name, with the values the paths use.
    let (session,): (String,) = sqlx::query_as(
        r#"select id from "tower_sessions"."session" order by expiry_date desc limit 1"#,
    )
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
    // The searches' statement binds its text lowered, with the end of its prefix range.
    let number_range = app::ssr::PrefixRange::new(&prefix.to_lowercase());
    let customer_range = app::ssr::PrefixRange::new(&customer.to_lowercase());
    let vars: Vec<(&str, String)> = vec![
        ("org", org.to_string()),
        ("user", user.to_string()),
        ("sid", sid.to_string()),
        ("session", session),
        ("invoice", id.to_string()),
        ("token", token.clone()),
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
    let work = match &args.work_dir {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("invoicer-read-{}", std::process::id())),
    };
    std::fs::create_dir_all(&work)?;
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
                args.secs,
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

/// Tables that grow with an org's years: a plan that scans one of them sequentially does not have
/// flat cost.
const BIG: [&str; 8] = [
    "invoices",
    "invoice_lines",
    "attempts",
    "claims",
    "outbox",
    "payments",
    "stripe_events",
    "customers",
];

/// EXPLAIN (ANALYZE, BUFFERS) of every statement of every path's script, with `vars` as literals,
/// into `out` (markdown). Statements whose row feeds the next ones (`\gset`) are run first to take
/// their values; a statement the server sends prepared is explained as its generic plan. Returns
/// the big scans found: sequential scans of big tables ("path: table") and nodes that read more
/// than [`MAX_PLAN_ROWS`].
async fn explain_all(
    pool: &PgPool,
    reads: &[Read],
    vars: &[(&str, String)],
    out: &std::path::Path,
) -> anyhow::Result<Vec<String>> {
    let mut doc = String::from(
        "<!-- Written by `lab bench read --explain` (scripts/bench-read); do not edit by hand. -->\n\
         # The read paths' plans\n\n\
         `EXPLAIN (ANALYZE, BUFFERS)` of every statement each read path sends (bench/pgbench/read_*.sql),\n\
         with the values the benchmark uses, on the database of the latest `scripts/bench-read` run.\n\
         Paths the server sends prepared show the generic plan (`plan_cache_mode = force_generic_plan`,\n\
         `PREPARE`, `EXPLAIN EXECUTE`): the plan Postgres runs once it stops planning with the values.\n",
    );
    let mut big = Vec::new();
    for read in reads {
        let text = lab::pgbench_script::expand(
            SCRIPTS
                .iter()
                .find(|(name, _)| *name == read.script)
                .map(|(_, text)| *text)
                .context("no such script")?,
        )?;
        let mut values: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        doc.push_str(&format!("\n## {} (`{}`)\n", read.name, read.script));
        for (n, (statement, gset)) in statements(&text).into_iter().enumerate() {
            let sql = substitute(&statement, &values);
            if let Some(prefix) = gset {
                use sqlx::{Column, Row};
                let row = sqlx::query(&sql)
                    .persistent(false)
                    .fetch_one(pool)
                    .await
                    .with_context(|| format!("{}: {sql}", read.script))?;
                for (i, column) in row.columns().iter().enumerate() {
                    let value = row
                        .try_get::<Uuid, _>(i)
                        .map(|v| v.to_string())
                        .or_else(|_| row.try_get::<String, _>(i))
                        .or_else(|_| row.try_get::<i64, _>(i).map(|v| v.to_string()))
                        .or_else(|_| {
                            row.try_get::<Vec<Uuid>, _>(i).map(|v| {
                                let ids: Vec<String> = v.iter().map(Uuid::to_string).collect();
                                format!("{{{}}}", ids.join(","))
                            })
                        })
                        .with_context(|| format!("{}: column {}", read.script, column.name()))?;
                    values.insert(format!("{prefix}{}", column.name()), value);
                }
            }
            // A statement the server sends prepared runs its generic plan (planned without its
            // values) once Postgres has switched to it, after five runs: that plan is the one to see.
            let plan: Vec<String> = if read.mode() == pgbench::Mode::Prepared {
                let (text, literals) = parameterize(&statement, &values);
                let mut conn = pool.acquire().await?;
                sqlx::raw_sql(&format!(
                    "set plan_cache_mode = force_generic_plan; prepare explained as {text}"
                ))
                .execute(&mut *conn)
                .await
                .with_context(|| format!("{}: {text}", read.script))?;
                let plan = sqlx::query_scalar(&format!(
                    "explain (analyze, buffers) execute explained{}",
                    if literals.is_empty() {
                        String::new()
                    } else {
                        format!("({})", literals.join(", "))
                    }
                ))
                .persistent(false)
                .fetch_all(&mut *conn)
                .await
                .with_context(|| format!("{}: {text}", read.script))?;
                sqlx::raw_sql("deallocate explained; reset plan_cache_mode")
                    .execute(&mut *conn)
                    .await?;
                plan
            } else {
                sqlx::query_scalar(&format!("explain (analyze, buffers) {sql}"))
                    .persistent(false)
                    .fetch_all(pool)
                    .await
                    .with_context(|| format!("{}: {sql}", read.script))?
            };
            for line in &plan {
                if let Some(table) = line
                    .split("Seq Scan on ")
                    .nth(1)
                    .and_then(|rest| rest.split_whitespace().next())
                {
                    if BIG.contains(&table) {
                        big.push(format!("{}: {table}", read.name));
                    }
                }
                let removed = line
                    .split_once("Rows Removed by ")
                    .and_then(|(_, rest)| rest.rsplit(':').next())
                    .and_then(|n| n.trim().parse::<u64>().ok());
                if let Some(rows) = rows_read(line)
                    .or(removed)
                    .filter(|rows| *rows > MAX_PLAN_ROWS)
                {
                    let node = line
                        .trim()
                        .split("  (")
                        .next()
                        .unwrap_or("")
                        .trim_start_matches("->  ");
                    big.push(format!("{}: {node} reads {rows} rows", read.name));
                }
            }
            let first = statement.lines().next().unwrap_or("").trim();
            doc.push_str(&format!(
                "\nStatement {} — `{}`…\n\n```\n{}\n```\n",
                n + 1,
                first.replace('`', "'"),
                plan.join("\n")
            ));
        }
    }
    std::fs::write(out, doc)?;
    Ok(big)
}

/// A plan node that reads more rows than this (its rows times its loops, or the rows its filter
/// removed) does not have flat cost: a page shows 50, and the widest count (`/metrics`) stops at
/// 1,000.
const MAX_PLAN_ROWS: u64 = 10_000;

/// The rows a plan line's node produced over all its loops (`actual time=… rows=R loops=L`).
fn rows_read(line: &str) -> Option<u64> {
    let actual = line.split("(actual ").nth(1)?;
    let field = |name: &str| -> Option<f64> {
        actual
            .split_whitespace()
            .find_map(|part| part.strip_prefix(name))
            .and_then(|v| v.trim_end_matches(')').parse().ok())
    };
    Some((field("rows=")? * field("loops=")?) as u64)
}

/// A pgbench script's statements, each with its `\gset` prefix when it has one.
fn statements(script: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in script.lines() {
        let trimmed = line.trim();
        if current.is_empty()
            && (trimmed.is_empty() || trimmed.starts_with("--") || trimmed.starts_with('\\'))
        {
            continue;
        }
        if let Some((before, after)) = line.split_once("\\gset") {
            current.push_str(before);
            out.push((std::mem::take(&mut current), Some(after.trim().to_owned())));
        } else if trimmed.ends_with(';') {
            current.push_str(&line[..line.rfind(';').unwrap_or(line.len())]);
            out.push((std::mem::take(&mut current), None));
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    out
}

/// `:name` (not `::type`) replaced by `values[name]` as a quoted literal; unknown names are kept.
fn substitute(sql: &str, values: &HashMap<String, String>) -> String {
    let (out, _) = rewrite_vars(sql, values, false);
    out
}

/// `:name` replaced by `$n` (one per name, in order of first use), with the quoted literals to
/// `EXECUTE` it with: the statement as a prepared statement receives it.
fn parameterize(sql: &str, values: &HashMap<String, String>) -> (String, Vec<String>) {
    rewrite_vars(sql, values, true)
}

fn rewrite_vars(
    sql: &str,
    values: &HashMap<String, String>,
    as_params: bool,
) -> (String, Vec<String>) {
    let bytes = sql.as_bytes();
    let name_char = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let (mut out, mut copied, mut i) = (String::with_capacity(sql.len()), 0, 0);
    let mut names: Vec<&str> = Vec::new();
    let mut literals = Vec::new();
    while i < bytes.len() {
        let is_var = bytes[i] == b':'
            && (i == 0 || bytes[i - 1] != b':')
            && bytes
                .get(i + 1)
                .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_');
        if is_var {
            let end = (i + 1..bytes.len())
                .find(|&j| !name_char(bytes[j]))
                .unwrap_or(bytes.len());
            let name = &sql[i + 1..end];
            if let Some(value) = values.get(name) {
                let literal = format!("'{}'", value.replace('\'', "''"));
                out.push_str(&sql[copied..i]);
                if as_params {
                    let n = match names.iter().position(|known| *known == name) {
                        Some(n) => n,
                        None => {
                            names.push(name);
                            literals.push(literal);
                            names.len() - 1
                        }
                    };
                    out.push_str(&format!("${}", n + 1));
                } else {
                    out.push_str(&literal);
                }
                copied = end;
            }
            i = end;
            continue;
        }
        i += 1;
    }
    out.push_str(&sql[copied..]);
    (out, literals)
}

/// What the requests carry (see [`Auth`]).
struct Credentials<'a> {
    cookie: &'a str,
    api_key: &'a str,
    metrics_token: Option<&'a str>,
}

/// How long each row's clients run before it is measured.
const WARM_UP: Duration = Duration::from_secs(1);

async fn measure(
    http: &reqwest::Client,
    base: &str,
    read: &Read,
    credentials: &Credentials<'_>,
    clients: usize,
    length: Duration,
) -> (f64, f64, f64, u64) {
    let deadline = Instant::now() + length;
    let url = format!("{base}{}", read.path);
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (http, url, cookie, key, auth, metrics) = (
                http.clone(),
                url.clone(),
                credentials.cookie.to_owned(),
                credentials.api_key.to_owned(),
                read.auth,
                credentials.metrics_token.map(str::to_owned),
            );
            tokio::spawn(async move {
                let (mut took, mut errors) = (Vec::new(), 0u64);
                while Instant::now() < deadline {
                    let req = match (auth, &metrics) {
                        (Auth::Session, _) => http.get(&url).header("cookie", &cookie),
                        (Auth::ApiKey, _) => http.get(&url).bearer_auth(&key),
                        (Auth::Metrics, Some(token)) => http.get(&url).bearer_auth(token),
                        (Auth::Metrics, None) => http.get(&url),
                    };
                    let sent = Instant::now();
                    match req.send().await {
                        Ok(res) if res.status().is_success() => {
                            // A read answered with nothing read nothing: it counts as an error.
                            match res.bytes().await {
                                Ok(body) if !body.is_empty() => took.push(sent.elapsed()),
                                _ => errors += 1,
                            }
                        }
                        _ => errors += 1,
                    }
                }
                (took, errors)
            })
        })
        .collect();
    let (mut all, mut errors) = (Vec::new(), 0);
    for task in tasks {
        if let Ok((took, e)) = task.await {
            all.extend(took);
            errors += e;
        }
    }
    all.sort();
    let at = |q: f64| {
        all.get(((all.len().max(1) - 1) as f64 * q).round() as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    (
        all.len() as f64 / length.as_secs_f64(),
        at(0.5),
        at(0.99),
        errors,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_statement_becomes_a_prepared_statement_with_its_literals() {
        let values: HashMap<String, String> = [("org", "o'1"), ("ids", "{a,b}")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let sql = "select 1 from t where org = :org::uuid and id = any(:ids::uuid[]) \
                   and again = :org and :unknown";
        let (text, literals) = parameterize(sql, &values);
        assert_eq!(
            text,
            "select 1 from t where org = $1::uuid and id = any($2::uuid[]) \
             and again = $1 and :unknown"
        );
        assert_eq!(literals, ["'o''1'", "'{a,b}'"]);
        assert_eq!(
            substitute(sql, &values),
            "select 1 from t where org = 'o''1'::uuid and id = any('{a,b}'::uuid[]) \
             and again = 'o''1' and :unknown"
        );
    }

    #[test]
    fn a_plan_node_reads_its_rows_times_its_loops() {
        let bitmap =
            "  ->  Bitmap Index Scan on invoices_org_idx  (cost=0.00..16.85 rows=1123 width=0) \
                      (actual time=3.925..3.925 rows=100001 loops=1)";
        assert_eq!(rows_read(bitmap), Some(100_001));
        let inner =
            "->  Index Scan using invoices_pkey on invoices i  (cost=0.42..8.45 rows=1 width=41) \
                     (actual time=0.004..0.004 rows=1 loops=20)";
        assert_eq!(rows_read(inner), Some(20));
        assert_eq!(
            rows_read(
                "  ->  Seq Scan on disputes d  (cost=0.00..0.00 rows=1 width=40) (never executed)"
            ),
            None
        );
    }
}
