//! The hourly ceilings every client shares are no lockout: one network's addresses spend at most
//! its share, junk links spend nothing shared, and a signed-in user is never refused by a ceiling.

use invoicer_core::throttle::Ceilings;
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::client;
use crate::common::rows::{emailed_token, new_owner, public_token};
use crate::common::served::TestApp;

/// POSTs `form` to the server function `name` from `address`, as the app's script does (a refusal
/// answers its own status).
async fn rpc(
    http: &reqwest::Client,
    app: &TestApp,
    address: &str,
    name: &str,
    form: &[(&str, &str)],
) -> u16 {
    http.post(format!("{}/rpc/{name}", app.base))
        .header("x-forwarded-for", address)
        .form(form)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

async fn page(http: &reqwest::Client, app: &TestApp, address: &str, path: &str) -> u16 {
    http.get(format!("{}{path}", app.base))
        .header("x-forwarded-for", address)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn sixty_addresses_of_one_network_drain_nothing_a_real_user_needs(pool: PgPool) {
    // Ceilings the flood below would empty were it counted as one client per address.
    let app = TestApp::spawn_with(pool, |s| {
        s.client_ip_header = Some("x-forwarded-for".into());
        s.limits.ceilings = Ceilings {
            logins: 300,
            signups: 100,
            account_emails: 100,
            resets: 100,
            public_pages: 300,
            pdfs: 100,
        };
    })
    .await;
    let (email, _) = new_owner(&app.pool, "Real Co").await;
    let (_, invoice) = app.invoice(1_000, "eur").await;
    let link = public_token(&app.pool, invoice).await;
    // Signed in before the flood; their phone then moves onto the flooding network.
    let member = client();
    let status = rpc(
        &member,
        &app,
        "198.51.100.9",
        "login",
        &[("email", &email), ("password", "correct horse")],
    )
    .await;
    assert!(status < 400, "{status}");

    // 60 addresses of one /48, each within its own allowances.
    let flood = |i: u32| format!("2001:db8:5ee:{i:x}::1");
    let http = client();
    let mut refused = 0;
    for i in 0..60 {
        let from = flood(i);
        let mut tally = |status: u16| refused += usize::from(status == 429);
        for _ in 0..5 {
            let form = [("email", email.as_str()), ("password", "wrong guess")];
            tally(rpc(&http, &app, &from, "login", &form).await);
        }
        for _ in 0..3 {
            let junk = format!("{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple());
            let form = [("token", junk.as_str()), ("password", "long enough")];
            tally(rpc(&http, &app, &from, "reset_password", &form).await);
        }
        for n in 0..2 {
            let (key, to) = (Uuid::now_v7().to_string(), format!("x{i}-{n}@example.com"));
            let form = [("idempotency_key", key.as_str()), ("email", to.as_str())];
            tally(rpc(&http, &app, &from, "forgot_password", &form).await);
            let form = [
                ("org_name", "Flood"),
                ("email", to.as_str()),
                ("password", "flood password"),
            ];
            tally(rpc(&http, &app, &from, "signup", &form).await);
        }
        for _ in 0..6 {
            let junk = Uuid::new_v4().simple().to_string();
            tally(page(&http, &app, &from, &format!("/i/{junk}")).await);
        }
    }
    assert!(refused > 0, "the network's share was reached");

    // The member signed in earlier, now on the flooding network whose share is spent: their
    // account's own email is sent.
    let key = Uuid::now_v7().to_string();
    let form = [
        ("idempotency_key", key.as_str()),
        ("password", "correct horse"),
        ("email", "moved@example.com"),
    ];
    let status = rpc(&member, &app, &flood(70), "change_email", &form).await;
    assert!(
        status < 400,
        "a signed-in user is not refused by a ceiling: {status}"
    );

    // A real user elsewhere: every action works.
    let elsewhere = "198.51.100.7";
    let real = client();
    assert_eq!(
        page(&real, &app, elsewhere, &format!("/i/{link}")).await,
        200
    );
    assert_eq!(
        page(&real, &app, elsewhere, &format!("/i/{link}/pdf")).await,
        200
    );
    let form = [("email", email.as_str()), ("password", "correct horse")];
    assert!(rpc(&real, &app, elsewhere, "login", &form).await < 400);
    let key = Uuid::now_v7().to_string();
    let form = [("idempotency_key", key.as_str()), ("email", email.as_str())];
    assert!(rpc(&real, &app, elsewhere, "forgot_password", &form).await < 400);
    let token = emailed_token(&app.pool, "reset_password", &email).await;
    let form = [("token", token.as_str()), ("password", "a fresh password")];
    assert!(rpc(&real, &app, elsewhere, "reset_password", &form).await < 400);
    let form = [
        ("org_name", "New Co"),
        ("email", "newcomer@example.com"),
        ("password", "newcomer password"),
    ];
    assert!(rpc(&real, &app, elsewhere, "signup", &form).await < 400);
}

/// An invitation token of the wrong shape (ten thousand bytes of junk) is refused before it keys
/// any allowance: the client's login allowance is untouched by any number of them.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_junk_invitation_token_keys_nothing(pool: PgPool) {
    let app = TestApp::spawn_with(pool, |s| {
        s.client_ip_header = Some("x-forwarded-for".into());
        s.limits.logins_per_address_minute = 3;
    })
    .await;
    let http = client();
    let junk = "x".repeat(10_000);
    for _ in 0..10 {
        let form = [("token", junk.as_str()), ("password", "whatever password")];
        let status = rpc(&http, &app, "203.0.113.5", "accept_invitation", &form).await;
        assert_eq!(status, 400, "refused as not valid, never throttled");
    }
}
