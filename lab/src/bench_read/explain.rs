//! `--explain`: EXPLAIN (ANALYZE, BUFFERS) of every statement each path sends, into markdown, and
//! the big scans found in those plans.

use std::collections::HashMap;

use anyhow::Context;
use sqlx::PgPool;
use uuid::Uuid;

use super::paths::{Read, SCRIPTS};
use super::script::{parameterize, statements, substitute};
use crate::pgbench;

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
pub(super) async fn explain_all(
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
                    // pgbench's \gset leaves a NULL column's variable empty: so do we.
                    let null = row
                        .try_get_raw(i)
                        .map(|v| sqlx::ValueRef::is_null(&v))
                        .unwrap_or(false);
                    if null {
                        values.insert(format!("{prefix}{}", column.name()), String::new());
                        continue;
                    }
                    let value = row
                        .try_get::<Uuid, _>(i)
                        .map(|v| v.to_string())
                        .or_else(|_| row.try_get::<String, _>(i))
                        .or_else(|_| row.try_get::<i64, _>(i).map(|v| v.to_string()))
                        .or_else(|_| row.try_get::<i32, _>(i).map(|v| v.to_string()))
                        .or_else(|_| row.try_get::<bool, _>(i).map(|v| v.to_string()))
                        .or_else(|_| {
                            row.try_get::<chrono::NaiveDate, _>(i)
                                .map(|v| v.to_string())
                        })
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
                    .filter(|rows| *rows > MAX_PLAN_ROWS && !read.sums_everything())
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

#[cfg(test)]
mod tests {
    use super::*;

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
