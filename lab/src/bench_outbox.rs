//! `lab bench outbox`: how long from the commit of an outbox row to its arrival at a real SMTP
//! server. Sequential (one email in flight at a time), so each latency is the worker's own path:
//! NOTIFY wake-up, lease, render, SMTP, mark.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use sqlx::PgPool;

pub async fn run(
    lab: &crate::Lab,
    smtp_url: &str,
    sink_dir: &std::path::Path,
    count: usize,
) -> anyhow::Result<()> {
    let pool: &PgPool = &lab.connect().await?;
    let email = format!("bench-{}@example.com", uuid::Uuid::new_v4().simple());
    let account =
        invoicer_core::accounts::create_org_with_owner(pool, "Bench", &email, "bench password")
            .await?;
    let input = bench_invoice()?;
    let mut tx = pool.begin().await?;
    let invoice = invoicer_core::invoicing::invoices::create(
        &mut tx,
        invoicer_core::invoicing::invoices::NewInvoice::new(
            model::InvoiceId::from(uuid::Uuid::new_v4()),
            account.org_id,
        ),
        &input,
    )
    .await?;
    tx.commit().await?;

    let mailer = invoicer_core::mail::Mailer::new(
        Some(smtp_url),
        None,
        sink_dir,
        std::time::Duration::from_secs(10),
        invoicer_core::mail::DEV_FROM,
    )
    .map_err(anyhow::Error::msg)?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let config = invoicer_core::worker::WorkerConfig {
        id: "bench".into(),
        ..Default::default()
    };
    let worker = tokio::spawn(invoicer_core::worker::run(
        pool.clone(),
        mailer,
        config,
        stopped,
    ));
    let log = sink_dir.join("attempts.log");
    let arrivals = || -> Vec<f64> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.parse().ok())
            .collect()
    };
    let already = arrivals().len();
    let mut latencies = Vec::with_capacity(count);
    // The benchmark measures the outbox, not the allowance.
    let unlimited = invoicer_core::mail::gate::Gate::new(
        invoicer_core::mail::gate::Allowance {
            per_org_hour: u32::MAX,
            per_recipient_hour: u32::MAX,
        },
        invoicer_core::mail::gate::Sender::Automatic,
    );
    for i in 0..count {
        let mut tx = pool.begin().await?;
        let permit = unlimited
            .permit(&mut tx, account.org_id, "bench@example.com")
            .await?
            .map_err(|refused| anyhow::anyhow!("the mail gate: {refused}"))?;
        invoicer_core::outbox::enqueue_email(
            &mut tx,
            permit,
            Some(invoice.id),
            invoicer_core::outbox::MailKind::InvoiceEmail,
            serde_json::json!({ "invoice_id": invoice.id }),
        )
        .await?;
        tx.commit().await?;
        let committed = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs_f64();
        let deadline = Instant::now() + Duration::from_secs(10);
        let arrived = loop {
            let seen = arrivals();
            if seen.len() > already + i {
                break seen[already + i];
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "email {i} did not arrive within 10 s"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        };
        latencies.push((arrived - committed) * 1000.0);
    }
    let _ = stop.send(true);
    let _ = worker.await;
    latencies.sort_by(f64::total_cmp);
    let at = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q).round() as usize];
    println!("outbox commit -> SMTP arrival, {count} emails one at a time");
    println!(
        "p50 {:.1} ms   p90 {:.1} ms   p99 {:.1} ms   max {:.1} ms",
        at(0.5),
        at(0.9),
        at(0.99),
        at(1.0)
    );
    Ok(())
}

/// `lab bench outbox --throughput N`: `n` customer emails committed at once, then drained by a
/// worker with each number of places per lane in `places`; emails/s from the worker's start to
/// the last arrival at the SMTP server.
pub async fn throughput(
    lab: &crate::Lab,
    smtp_url: &str,
    sink_dir: &std::path::Path,
    n: usize,
    places: &[usize],
) -> anyhow::Result<()> {
    let pool: &PgPool = &lab.connect().await?;
    let log = sink_dir.join("attempts.log");
    let arrived = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let unlimited = invoicer_core::mail::gate::Gate::new(
        invoicer_core::mail::gate::Allowance {
            per_org_hour: u32::MAX,
            per_recipient_hour: u32::MAX,
        },
        invoicer_core::mail::gate::Sender::Automatic,
    );
    println!("outbox throughput: {n} customer emails queued at once, drained by one worker");
    for &concurrency in places {
        // Several orgs, as a real backlog has: the lane serves them in turn.
        let mut orgs = Vec::new();
        for o in 0..4 {
            let email = format!("tp-{o}-{}@example.com", uuid::Uuid::new_v4().simple());
            let account = invoicer_core::accounts::create_org_with_owner(
                pool,
                "Bench",
                &email,
                "bench password",
            )
            .await?;
            let input = bench_invoice()?;
            let mut tx = pool.begin().await?;
            let invoice = invoicer_core::invoicing::invoices::create(
                &mut tx,
                invoicer_core::invoicing::invoices::NewInvoice::new(
                    model::InvoiceId::from(uuid::Uuid::new_v4()),
                    account.org_id,
                ),
                &input,
            )
            .await?;
            tx.commit().await?;
            orgs.push((account.org_id, invoice.id));
        }
        let mut tx = pool.begin().await?;
        for i in 0..n {
            let (org, invoice) = orgs[i % orgs.len()];
            let permit = unlimited
                .permit(&mut tx, org, &format!("customer-{i}@example.com"))
                .await?
                .map_err(|refused| anyhow::anyhow!("the mail gate: {refused}"))?;
            invoicer_core::outbox::enqueue_email(
                &mut tx,
                permit,
                Some(invoice),
                invoicer_core::outbox::MailKind::InvoiceEmail,
                serde_json::json!({ "invoice_id": invoice }),
            )
            .await?;
        }
        tx.commit().await?;
        let before = arrived();
        let mailer = invoicer_core::mail::Mailer::new(
            Some(smtp_url),
            None,
            sink_dir,
            Duration::from_secs(10),
            invoicer_core::mail::DEV_FROM,
        )
        .map_err(anyhow::Error::msg)?;
        let config = invoicer_core::worker::WorkerConfig {
            id: format!("bench-{concurrency}"),
            concurrency,
            ..Default::default()
        };
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let started = Instant::now();
        let worker = tokio::spawn(invoicer_core::worker::run(
            pool.clone(),
            mailer,
            config,
            stopped,
        ));
        let deadline = started + Duration::from_secs(600);
        while arrived() < before + n {
            anyhow::ensure!(Instant::now() < deadline, "not drained within 10 minutes");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let secs = started.elapsed().as_secs_f64();
        let _ = stop.send(true);
        let _ = worker.await;
        println!(
            "{concurrency} place(s) per lane: {n} emails in {secs:.2} s = {:.0} emails/s",
            n as f64 / secs
        );
    }
    Ok(())
}

fn bench_invoice() -> anyhow::Result<model::InvoiceInput> {
    Ok(model::InvoiceInput {
        customer_name: "Bench".into(),
        customer_email: "bench@example.com".into(),
        currency: "usd".into(),
        due_date: Some(chrono::NaiveDate::from_ymd_opt(2030, 1, 1).context("date")?),
        lines: vec![model::LineInput {
            description: "Benchmark".into(),
            quantity: model::Thousandths::whole(1),
            unit_amount_cents: 100,
            tax_rate_id: None,
        }],
        draft: false,
        customer_id: None,
        ..Default::default()
    })
}
