//! `lab bench read`: the read paths at 1, 16 and 64 clients against a running server over generated
//! data (`lab datagen`): the invoice list (first page, a deep keyset page, a filter, searches), an
//! invoice page, the public page and its PDF, the activity page (first page, a filter, a search), the
//! API list with a cursor, and `/metrics`. Prints requests/s, p50 and p99 per path and client count.

use std::time::{Duration, Instant};

use anyhow::Context;
use sqlx::PgPool;
use uuid::Uuid;

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
    /// Seconds per path and client count.
    #[arg(long, default_value_t = 5)]
    pub secs: u64,
}

/// A path to read, with the credentials it needs.
struct Read {
    name: &'static str,
    path: String,
    /// Bearer API key instead of the session cookie.
    api: bool,
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
    let key = app::ssr::api_keys::create(pool, org, None, "read bench").await?;
    let prefix = &number[..number.len() - 2];
    let reads = [
        Read {
            name: "list, first page",
            path: "/invoices".into(),
            api: false,
        },
        Read {
            name: "list, a page 90 % deep",
            path: format!("/invoices?before={cursor}"),
            api: false,
        },
        Read {
            name: "list, overdue",
            path: "/invoices?status=overdue".into(),
            api: false,
        },
        Read {
            name: "list, search a number",
            path: format!("/invoices?q={prefix}"),
            api: false,
        },
        Read {
            name: "list, search a customer",
            path: "/invoices?q=Customer%2042".into(),
            api: false,
        },
        Read {
            name: "invoice page",
            path: format!("/invoices/{id}"),
            api: false,
        },
        Read {
            name: "public page",
            path: format!("/i/{token}"),
            api: false,
        },
        Read {
            name: "public PDF",
            path: format!("/i/{token}/pdf"),
            api: false,
        },
        Read {
            name: "activity, first page",
            path: "/activity".into(),
            api: false,
        },
        Read {
            name: "activity, webhook only",
            path: "/activity?surface=webhook".into(),
            api: false,
        },
        Read {
            name: "activity, search a key",
            path: "/activity?q=k42".into(),
            api: false,
        },
        Read {
            name: "API list, a cursor",
            path: format!("/api/v1/invoices?limit=20&cursor={cursor}"),
            api: true,
        },
        Read {
            name: "/metrics",
            path: "/metrics".into(),
            api: false,
        },
    ];
    println!(
        "invoicer read benchmark: {} invoices in the org, {} s per row",
        count, args.secs
    );
    println!("| path | clients | requests/s | p50 ms | p99 ms | errors |");
    println!("|---|---|---|---|---|---|");
    let mut failed = 0;
    for read in &reads {
        for &clients in &args.clients {
            let (rate, p50, p99, errors) = measure(
                &http,
                &args.url,
                read,
                &cookie,
                &key.plaintext,
                clients,
                args.secs,
            )
            .await;
            println!(
                "| {} | {clients} | {rate:.0} | {p50:.1} | {p99:.1} | {errors} |",
                read.name
            );
            failed += errors;
        }
    }
    anyhow::ensure!(failed == 0, "{failed} reads failed");
    Ok(())
}

async fn measure(
    http: &reqwest::Client,
    base: &str,
    read: &Read,
    cookie: &str,
    api_key: &str,
    clients: usize,
    secs: u64,
) -> (f64, f64, f64, u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let url = format!("{base}{}", read.path);
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let (http, url, cookie, key, api) = (
                http.clone(),
                url.clone(),
                cookie.to_owned(),
                api_key.to_owned(),
                read.api,
            );
            tokio::spawn(async move {
                let (mut took, mut errors) = (Vec::new(), 0u64);
                while Instant::now() < deadline {
                    let req = if api {
                        http.get(&url).bearer_auth(&key)
                    } else {
                        http.get(&url).header("cookie", &cookie)
                    };
                    let sent = Instant::now();
                    match req.send().await {
                        Ok(res) if res.status().is_success() => {
                            if res.bytes().await.is_ok() {
                                took.push(sent.elapsed());
                            } else {
                                errors += 1;
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
    (all.len() as f64 / secs as f64, at(0.5), at(0.99), errors)
}
