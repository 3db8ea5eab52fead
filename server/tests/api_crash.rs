//! The API survives the process dying after the claim (before commit) and after commit (before the
//! response): the client's retry with the same Idempotency-Key creates exactly one invoice.

use crate::common::{self, cli, create_org, rows, Server, TestDb};

async fn post(
    base: &str,
    token: &str,
    key: &str,
) -> Result<(u16, Option<String>, Vec<u8>), reqwest::Error> {
    let res = reqwest::Client::new()
        .post(format!("{base}/api/v1/invoices"))
        .bearer_auth(token)
        .header("idempotency-key", key)
        .header("content-type", "application/json")
        .body(common::served::invoice_body("Ada"))
        .send()
        .await?;
    let status = res.status().as_u16();
    let replayed = res
        .headers()
        .get("idempotent-replayed")
        .map(|v| v.to_str().unwrap().to_owned());
    Ok((status, replayed, res.bytes().await?.to_vec()))
}

async fn crash_then_retry(failpoint: &str, committed_before_crash: bool) {
    let db = TestDb::new("api_crash").await;
    create_org(&db, "Acme", "api@example.com").await;
    let token = cli(
        &db,
        &["admin", "create-api-key", "--email", "api@example.com"],
    )
    .await;
    let token = token.trim();
    assert!(token.starts_with("ik_"), "{token}");
    let pool = db.pool().await;

    let server = Server::start(&db, failpoint).await;
    assert!(
        post(&server.base, token, "crash-1").await.is_err(),
        "the client gets no answer"
    );
    assert_eq!(server.exit_code().await, Some(70));
    let invoices: i64 = rows::scalar(&pool, "select count(*) from invoices").await;
    assert_eq!(invoices, i64::from(committed_before_crash));

    let server = Server::start(&db, "").await;
    let (status, replayed, first) = post(&server.base, token, "crash-1").await.unwrap();
    assert_eq!(status, 201);
    assert_eq!(
        replayed.as_deref(),
        committed_before_crash.then_some("true")
    );
    let (status, replayed, again) = post(&server.base, token, "crash-1").await.unwrap();
    assert_eq!((status, replayed.as_deref()), (201, Some("true")));
    assert_eq!(again, first);
    let numbers: Vec<i32> = rows::scalars(&pool, "select number from invoices").await;
    assert_eq!(numbers, [1]);

    server.stop().await;
    db.finish(pool).await;
}

#[tokio::test]
async fn a_crash_after_the_claim_before_commit_loses_nothing() {
    crash_then_retry("api.after_claim", false).await;
}

#[tokio::test]
async fn a_crash_after_commit_before_the_response_duplicates_nothing() {
    crash_then_retry("api.after_commit", true).await;
}
