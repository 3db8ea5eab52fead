//! What a role may call, enumerated rather than sampled: every registered server function is
//! classified, and a viewer and a removed member are refused every one that changes the org,
//! with nothing changed.

use invoicer_core::accounts::audit::Actor;
use invoicer_core::accounts::members;
use model::Role;
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::pages;
use crate::common::served::TestApp;
use crate::common::team::{add_user, browser, form, rpc, seed_org_rows, snapshot, Ids};

/// Server functions anyone may call without a session (they make or use one).
const PUBLIC: [&str; 8] = [
    "signup",
    "signups_open",
    "login",
    "logout",
    "accept_invitation",
    "confirm_email",
    "forgot_password",
    "reset_password",
];
/// Server functions that only read the session's org.
const READS: [&str; 35] = [
    "get_bank_page",
    "get_inbox_page",
    "get_received_page",
    "current_user",
    "list_invoices",
    "get_invoice",
    "list_api_keys",
    "get_draft",
    "list_customers",
    "invoice_form_options",
    "get_customer",
    "get_statement",
    "list_schedules",
    "get_schedule",
    "new_schedule_form",
    "edit_schedule_form",
    "list_quotes",
    "get_quote",
    "new_quote_form",
    "edit_quote_form",
    "get_dashboard",
    "get_aging_report",
    "get_tax_report",
    "webhooks_page",
    "get_webhook_endpoint",
    "import_form",
    "get_customer_import",
    "get_org_settings",
    "activity",
    "team_page",
    "invitation",
    "account_page",
    "list_sessions",
    "list_orgs",
    "audit_log",
];
/// Changes to one's own account or session, which every role may make.
const OWN_ACCOUNT: [&str; 8] = [
    "change_password",
    "revoke_own_api_keys",
    "change_email",
    "resend_verification",
    "end_session",
    "end_other_sessions",
    "switch_org",
    "leave_org",
];

/// `pairs` and the fields of a one-line invoice template (the schedule and quote forms' `input`).
fn with_template(pairs: &[(&str, String)]) -> Vec<(String, String)> {
    let mut body = form(pairs);
    body.extend(form(&[
        ("input[customer_name]", "Refused Co".into()),
        ("input[customer_email]", "r@example.com".into()),
        ("input[currency]", "usd".into()),
        ("input[payment_terms_days]", "14".into()),
        ("input[lines][0][description]", "x".into()),
        ("input[lines][0][quantity]", "1".into()),
        ("input[lines][0][unit_amount]", "1.00".into()),
    ]));
    body
}

/// Every state-changing server function of the org with a body that passes its argument parsing:
/// a refusal then comes from the role check, nothing else.
fn org_changes(ids: &Ids) -> Vec<(&'static str, Vec<(String, String)>)> {
    let key = || Uuid::now_v7().to_string();
    let invoice = ids.invoice.to_string();
    let mut create = crate::common::invoice_form(&key(), "Refused Co");
    create.retain(|(k, _)| k != "idempotency_key");
    create.push(("idempotency_key".into(), key()));
    let mut draft = crate::common::invoice_form(&key(), "Refused Co");
    draft.retain(|(k, _)| k != "idempotency_key");
    draft.extend(form(&[
        ("invoice_id", ids.draft.to_string()),
        ("idempotency_key", key()),
        ("version", "1".into()),
    ]));
    vec![
        ("create_invoice", create),
        ("simulate_payment", form(&[("invoice_id", invoice.clone())])),
        (
            "create_api_key",
            form(&[
                ("idempotency_key", key()),
                ("name", "x".into()),
                ("role", "viewer".into()),
            ]),
        ),
        ("revoke_api_key", form(&[("id", ids.api_key.to_string())])),
        (
            "send_invoice",
            form(&[("invoice_id", invoice.clone()), ("idempotency_key", key())]),
        ),
        (
            "invoice_action",
            form(&[
                ("invoice_id", invoice.clone()),
                ("action", "void".into()),
                ("idempotency_key", key()),
            ]),
        ),
        (
            "duplicate_invoice",
            form(&[("invoice_id", invoice.clone()), ("idempotency_key", key())]),
        ),
        ("update_draft", draft),
        (
            "save_customer",
            form(&[
                ("idempotency_key", key()),
                ("input[name]", "Refused Co".into()),
                ("input[email]", "refused@example.com".into()),
            ]),
        ),
        (
            "customer_action",
            form(&[
                ("customer_id", Uuid::now_v7().to_string()),
                ("action", "archive".into()),
                ("idempotency_key", key()),
            ]),
        ),
        (
            "save_org_details",
            form(&[
                ("idempotency_key", key()),
                ("details[legal_name]", "Refused GmbH".into()),
                ("details[address][country]", "DE".into()),
            ]),
        ),
        (
            "save_org_settings",
            form(&[
                ("idempotency_key", key()),
                ("settings[time_zone]", "UTC".into()),
                ("settings[number_format]", "INV-{seq:6}".into()),
                ("settings[number_reset]", "never".into()),
            ]),
        ),
        (
            "add_tax_rate",
            form(&[
                ("idempotency_key", key()),
                ("name", "VAT".into()),
                ("percent", "20".into()),
            ]),
        ),
        (
            "archive_tax_rate",
            form(&[("idempotency_key", key()), ("id", ids.tax_rate.to_string())]),
        ),
        (
            "retry_email",
            form(&[
                ("id", ids.email.to_string()),
                ("invoice_id", invoice.clone()),
            ]),
        ),
        (
            "save_bank_details",
            form(&[
                ("idempotency_key", key()),
                ("bank[iban]", "NL91ABNA0417164300".into()),
                ("bank[reference]", "{number}".into()),
            ]),
        ),
        (
            "credit_invoice",
            form(&[
                ("invoice_id", invoice.clone()),
                ("idempotency_key", key()),
                ("amount", "1.00".into()),
                ("reason", "refused".into()),
            ]),
        ),
        (
            "create_schedule",
            with_template(&[
                ("idempotency_key", key()),
                ("schedule[interval]", "month".into()),
                ("schedule[start_date]", "2099-01-01".into()),
            ]),
        ),
        (
            "update_schedule",
            with_template(&[
                ("schedule_id", Uuid::now_v7().to_string()),
                ("idempotency_key", key()),
            ]),
        ),
        (
            "save_branding",
            form(&[
                ("idempotency_key", key()),
                ("branding[accent_color]", "#112233".into()),
                ("branding[footer_text]", "Refused".into()),
            ]),
        ),
        ("remove_logo", form(&[("idempotency_key", key())])),
        (
            "create_quote",
            with_template(&[
                ("idempotency_key", key()),
                ("quote[expires_on]", "2099-01-01".into()),
            ]),
        ),
        (
            "update_quote",
            with_template(&[
                ("quote_id", Uuid::now_v7().to_string()),
                ("idempotency_key", key()),
                ("quote[expires_on]", "2099-01-01".into()),
            ]),
        ),
        (
            "send_quote",
            form(&[
                ("id", Uuid::now_v7().to_string()),
                ("idempotency_key", key()),
            ]),
        ),
        (
            "send_payment_method_link",
            form(&[
                ("customer_id", Uuid::now_v7().to_string()),
                ("idempotency_key", key()),
            ]),
        ),
        (
            "pause_schedule",
            form(&[
                ("id", Uuid::now_v7().to_string()),
                ("idempotency_key", key()),
                ("pause", "true".into()),
            ]),
        ),
        (
            "set_reminders",
            form(&[
                ("what", "invoice".into()),
                ("id", invoice.clone()),
                ("idempotency_key", key()),
                ("off", "true".into()),
            ]),
        ),
        (
            "save_reminders",
            form(&[
                ("idempotency_key", key()),
                ("steps[0][offset_days]", "3".into()),
                ("steps[0][message]", "Please pay.".into()),
            ]),
        ),
        (
            "save_collection",
            form(&[
                ("idempotency_key", key()),
                ("collection[retry_days]", "2, 4".into()),
                ("collection[fee_kind]", "fixed".into()),
                ("collection[fee]", "5.00".into()),
                ("collection[fee_after_days]", "7".into()),
            ]),
        ),
        (
            "apply_credit",
            form(&[
                ("invoice_id", invoice.clone()),
                ("idempotency_key", key()),
                ("amount", "1.00".into()),
            ]),
        ),
        (
            "record_payment",
            form(&[
                ("invoice_id", invoice.clone()),
                ("idempotency_key", key()),
                ("form[amount]", "1.00".into()),
                ("form[method]", "cash".into()),
                ("form[paid_on]", "2026-12-01".into()),
            ]),
        ),
        (
            "delete_payment",
            form(&[
                ("invoice_id", invoice.clone()),
                ("payment_id", ids.payment.to_string()),
                ("idempotency_key", key()),
            ]),
        ),
        (
            "invite_member",
            form(&[
                ("idempotency_key", key()),
                ("email", "refused@example.com".into()),
                ("role", "owner".into()),
            ]),
        ),
        (
            "resend_invitation",
            form(&[
                ("idempotency_key", key()),
                ("id", ids.invitation.to_string()),
            ]),
        ),
        (
            "revoke_invitation",
            form(&[
                ("idempotency_key", key()),
                ("id", ids.invitation.to_string()),
            ]),
        ),
        (
            "match_bank_entry",
            form(&[
                ("idempotency_key", key()),
                ("entry_id", key()),
                ("invoice_id", invoice.clone()),
            ]),
        ),
        (
            "ignore_bank_entry",
            form(&[("idempotency_key", key()), ("entry_id", key())]),
        ),
        (
            "mark_received_paid",
            form(&[("idempotency_key", key()), ("document_id", key())]),
        ),
        (
            "apply_customer_import",
            form(&[("idempotency_key", key()), ("id", key())]),
        ),
        (
            "create_webhook_endpoint",
            form(&[
                ("idempotency_key", key()),
                ("url", "https://example.com/hook".into()),
                ("events[]", "invoice.paid".into()),
            ]),
        ),
        (
            "delete_webhook_endpoint",
            form(&[("idempotency_key", key()), ("id", key())]),
        ),
        (
            "rotate_webhook_secret",
            form(&[("idempotency_key", key()), ("id", key())]),
        ),
        (
            "enable_webhook_endpoint",
            form(&[("idempotency_key", key()), ("id", key())]),
        ),
        (
            "redeliver_webhook",
            form(&[
                ("idempotency_key", key()),
                ("endpoint_id", key()),
                ("event_id", key()),
            ]),
        ),
        (
            "change_role",
            form(&[
                ("idempotency_key", key()),
                ("user_id", ids.owner.to_string()),
                ("role", "viewer".into()),
            ]),
        ),
        (
            "remove_member",
            form(&[
                ("idempotency_key", key()),
                ("user_id", ids.owner.to_string()),
            ]),
        ),
    ]
}

/// Every registered server function is classified; a viewer is refused (403) every one that changes
/// the org, and a removed member (401) every one but the public ones, and nothing changes.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn viewers_and_removed_members_are_refused_every_state_changing_server_function(
    pool: PgPool,
) {
    let app = TestApp::spawn(pool).await;
    let (org, ids) = seed_org_rows(&app).await;
    let changes = org_changes(&ids);
    // The enumeration is the registry's, not a sample: a new server function fails this test until
    // it is classified here.
    let mut registered: Vec<String> = leptos::server_fn::axum::server_fn_paths()
        .filter_map(|(path, _)| path.strip_prefix("/rpc/").map(str::to_owned))
        .collect();
    registered.sort();
    registered.dedup();
    let mut classified: Vec<String> = PUBLIC
        .iter()
        .chain(READS.iter())
        .chain(OWN_ACCOUNT.iter())
        .map(|s| (*s).to_owned())
        .chain(changes.iter().map(|(e, _)| (*e).to_owned()))
        .collect();
    classified.sort();
    assert_eq!(
        registered, classified,
        "every server function is classified"
    );

    let (_, viewer_email) = add_user(&app.pool, org.id, Role::Viewer).await;
    let viewer = browser(&app, &viewer_email).await;
    let (removed, removed_email) = add_user(&app.pool, org.id, Role::Member).await;
    let gone = browser(&app, &removed_email).await;
    let mut tx = app.pool.begin().await.unwrap();
    members::remove(
        &mut tx,
        org.id,
        &Actor::user(org.owner, &org.owner_email),
        removed,
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let before = snapshot(&app.pool, org.id).await;
    for (endpoint, body) in &changes {
        assert_eq!(
            rpc(&viewer, &app, endpoint, body).await,
            403,
            "viewer: {endpoint}"
        );
        assert_eq!(
            rpc(&gone, &app, endpoint, body).await,
            401,
            "removed member: {endpoint}"
        );
    }
    for endpoint in READS.iter().chain(OWN_ACCOUNT.iter()) {
        if *endpoint == "current_user" {
            // Answers "nobody" rather than refusing.
            let who = pages::post(&gone, format!("{}/rpc/current_user", app.base)).await;
            assert_eq!(who.text().await.unwrap(), "null");
            continue;
        }
        // Every argument any of them takes, so each reaches its session check.
        let any_args = form(&[
            ("id", ids.invoice.to_string()),
            ("org_id", org.id.to_string()),
            ("archived", "false".into()),
            ("token", "x".into()),
            ("current", "x".into()),
            ("password", "a new password".into()),
            ("email", "x@example.com".into()),
            ("idempotency_key", Uuid::now_v7().to_string()),
        ]);
        let status = rpc(&gone, &app, endpoint, &any_args).await;
        assert!(
            status == 401 || (*endpoint == "invitation" && status == 400),
            "removed member: {endpoint} answered {status}"
        );
    }
    // Every read, as the viewer: answered (never refused as a write) and writing nothing.
    let any_args = form(&[
        ("id", ids.invoice.to_string()),
        ("archived", "false".into()),
        ("token", "x".into()),
    ]);
    for endpoint in READS {
        let status = rpc(&viewer, &app, endpoint, &any_args).await;
        // The audit log is the owners' (ReadAudit): the one read a viewer is refused.
        let refused = if endpoint == "audit_log" { 403 } else { 0 };
        assert!(
            status < 500 && status != 401 && (status != 403 || refused == 403),
            "viewer: {endpoint} answered {status}"
        );
        if refused == 403 {
            assert_eq!(status, 403, "viewer: {endpoint}");
        }
    }
    assert_eq!(snapshot(&app.pool, org.id).await, before, "nothing changed");
    // The viewer still reads.
    assert_eq!(rpc(&viewer, &app, "list_invoices", &[]).await, 200);
}
