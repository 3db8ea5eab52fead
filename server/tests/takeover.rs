//! Accounts nobody can take over: a link asked for before a reset, a password change or an address
//! change acts on nothing after it; an address-change link counts only while it is the newest; the
//! old address hears of every change; a junk reset link costs no password hash.

use std::net::IpAddr;

use invoicer_core::accounts::{self, TokenError};
use sqlx::PgPool;
use uuid::Uuid;

use crate::common::pages;
use crate::common::rows::{count_rows, emailed_token, execute, scalar_for, scalars};
use crate::common::served::TestApp;
use crate::common::{client, login};

const PASSWORD: &str = "correct horse";
const HERE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 7));

/// The org of a user who belongs to one.
async fn org_of(pool: &PgPool, user: Uuid) -> model::OrgId {
    scalar_for(
        pool,
        "select org_id from memberships where user_id = $1",
        user,
    )
    .await
}

/// The notices sent to `to`: (event, client address), oldest first.
async fn notices(pool: &PgPool, to: &str) -> Vec<(String, String)> {
    sqlx::query_as(
        "select payload->>'event', payload->>'client' from outbox \
         where kind = 'account_notice' and lower(payload->>'to') = lower($1) order by id",
    )
    .bind(to)
    .fetch_all(pool)
    .await
    .unwrap()
}

async fn email_of(pool: &PgPool, user: Uuid) -> String {
    scalar_for(pool, "select email from users where id = $1", user).await
}

async fn post(
    http: &reqwest::Client,
    app: &TestApp,
    endpoint: &str,
    form: &[(&str, &str)],
) -> reqwest::Response {
    pages::post_form(http, format!("{}/rpc/{endpoint}", app.base), form).await
}

/// The attack of the review, over HTTP: someone signs up with the victim's address, asks to move it
/// to their own and keeps the link; the victim recovers the account with "forgot password". The
/// kept link then changes nothing, the victim's address still logs in, and the victim is told of the
/// reset.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_link_kept_from_before_a_reset_cannot_take_the_account(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let victim = format!("victim-{}@corp.example", Uuid::new_v4().simple());
    let attacker_address = format!("attacker-{}@evil.example", Uuid::new_v4().simple());

    let attacker = client();
    let signed_up = post(
        &attacker,
        &app,
        "signup",
        &[
            ("org_name", "Squat"),
            ("email", &victim),
            ("password", "attacker's password"),
        ],
    )
    .await;
    assert!(signed_up.status().as_u16() < 400, "{}", signed_up.status());
    login(&attacker, &app.base, &victim, "attacker's password").await;
    let key = Uuid::now_v7().to_string();
    let asked = post(
        &attacker,
        &app,
        "change_email",
        &[
            ("idempotency_key", &key),
            ("password", "attacker's password"),
            ("email", &attacker_address),
        ],
    )
    .await;
    assert!(asked.status().as_u16() < 400, "{}", asked.status());
    let kept = emailed_token(&app.pool, "verify_email", &attacker_address).await;

    // The real owner recovers the account.
    let owner = client();
    let key = Uuid::now_v7().to_string();
    post(
        &owner,
        &app,
        "forgot_password",
        &[("idempotency_key", &key), ("email", &victim)],
    )
    .await;
    let reset = emailed_token(&app.pool, "reset_password", &victim).await;
    let res = post(
        &owner,
        &app,
        "reset_password",
        &[("token", &reset), ("password", "the owner's own one")],
    )
    .await;
    assert!(res.status().as_u16() < 400, "{}", res.status());

    // The kept link is refused and moves nothing.
    let used = post(&attacker, &app, "confirm_email", &[("token", &kept)]).await;
    assert_eq!(used.status(), 400);
    assert!(used.text().await.unwrap().contains("already used"));
    let user: Uuid = scalar_for(
        &app.pool,
        "select id from users where lower(email) = lower($1)",
        &victim,
    )
    .await;
    assert_eq!(email_of(&app.pool, user).await, victim);
    login(&client(), &app.base, &victim, "the owner's own one").await;

    // The address heard of the reset, with where it came from.
    assert_eq!(
        notices(&app.pool, &victim).await,
        [("password_reset".to_owned(), "127.0.0.1".to_owned())]
    );
}

async fn owner(pool: &PgPool) -> (Uuid, String) {
    let email = format!("owner-{}@example.com", Uuid::new_v4().simple());
    let account = accounts::create_org_with_owner(pool, "Own Co", &email, PASSWORD)
        .await
        .unwrap();
    (account.user_id, email)
}

async fn ask_change(pool: &PgPool, user: Uuid, to: &str) -> String {
    accounts::request_email_change(pool, user, to, &format!("form:{}", Uuid::now_v7()))
        .await
        .unwrap();
    emailed_token(pool, "verify_email", to).await
}

/// Two address changes asked for: only the newest link counts; once it takes effect the old
/// address is told, and every other link of the account is spent.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn only_the_newest_address_change_counts_and_the_old_address_is_told(pool: PgPool) {
    let (user, old) = owner(&pool).await;
    let first = format!("first-{}@example.com", Uuid::new_v4().simple());
    let second = format!("second-{}@example.com", Uuid::new_v4().simple());
    let first_link = ask_change(&pool, user, &first).await;
    let second_link = ask_change(&pool, user, &second).await;
    assert!(matches!(
        accounts::verify_email(&pool, &first_link, HERE).await,
        Err(TokenError::Replaced)
    ));
    assert_eq!(email_of(&pool, user).await, old);
    accounts::request_reset(&pool, &old, "form:reset")
        .await
        .unwrap();
    let reset = emailed_token(&pool, "reset_password", &old).await;

    accounts::verify_email(&pool, &second_link, HERE)
        .await
        .unwrap();
    assert_eq!(email_of(&pool, user).await, second);
    assert_eq!(
        notices(&pool, &old).await,
        [("email_changed".to_owned(), HERE.to_string())]
    );
    // A reset link asked for at the old address before the change is spent with it.
    assert!(matches!(
        accounts::reset_password(&pool, &reset, "a new password", HERE).await,
        Err(TokenError::Used)
    ));
    assert!(matches!(
        accounts::verify_email(&pool, &first_link, HERE).await,
        Err(TokenError::Used)
    ));
}

/// A password change spends every pending link and tells the address.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_password_change_spends_pending_links_and_tells_the_address(pool: PgPool) {
    let (user, email) = owner(&pool).await;
    let elsewhere = format!("elsewhere-{}@example.com", Uuid::new_v4().simple());
    let link = ask_change(&pool, user, &elsewhere).await;
    accounts::change_password(
        &pool,
        user,
        &email,
        Uuid::new_v4(),
        "another password",
        HERE,
    )
    .await
    .unwrap();
    assert!(matches!(
        accounts::verify_email(&pool, &link, HERE).await,
        Err(TokenError::Used)
    ));
    assert_eq!(email_of(&pool, user).await, email);
    assert_eq!(
        notices(&pool, &email).await,
        [("password_changed".to_owned(), HERE.to_string())]
    );
}

/// A reset link that is junk, unknown, spent or expired is refused before any password is hashed.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_reset_with_a_useless_link_spends_no_password_hash(pool: PgPool) {
    let (_, email) = owner(&pool).await;
    accounts::request_reset(&pool, &email, "form:1")
        .await
        .unwrap();
    let token = emailed_token(&pool, "reset_password", &email).await;
    let before = invoicer_core::throttle::hashes_asked_on_this_thread();
    for junk in ["zz", &"ab".repeat(32), &"0".repeat(5000)] {
        assert!(accounts::reset_password(&pool, junk, "long enough", HERE)
            .await
            .is_err());
    }
    execute(
        &pool,
        "update user_tokens set expires_at = now() - interval '1 second'",
    )
    .await;
    assert!(matches!(
        accounts::reset_password(&pool, &token, "long enough", HERE).await,
        Err(TokenError::Expired)
    ));
    assert_eq!(
        invoicer_core::throttle::hashes_asked_on_this_thread(),
        before
    );
    // A good link is hashed once.
    accounts::request_reset(&pool, &email, "form:2")
        .await
        .unwrap();
    let token = emailed_token(&pool, "reset_password", &email).await;
    accounts::reset_password(&pool, &token, "long enough", HERE)
        .await
        .unwrap();
    assert_eq!(
        invoicer_core::throttle::hashes_asked_on_this_thread(),
        before + 1
    );
}

/// The notice as it is mailed: what changed, when, from where, and the API keys the change revoked.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_notice_says_what_when_where_and_names_the_keys(pool: PgPool) {
    let (user, email) = owner(&pool).await;
    let org: model::OrgId = org_of(&pool, user).await;
    invoicer_core::accounts::api_keys::create_for_user(&pool, org, user, "ci")
        .await
        .unwrap();
    accounts::change_password(
        &pool,
        user,
        &email,
        Uuid::new_v4(),
        "another password",
        HERE,
    )
    .await
    .unwrap();
    let dir = mail_to_files(&pool).await;
    let text = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .map(|m| m.replace("=\r\n", "").replace("=\n", ""))
        .find(|m| m.contains("account was changed"))
        .expect("the notice was written");
    assert!(text.contains("password of your invoicer account was changed"));
    assert!(text.contains(&HERE.to_string()));
    assert!(text.contains("UTC"));
    assert!(
        text.contains("1 API key(s) made by this account revoked"),
        "{text}"
    );
    assert!(text.contains("/settings/api-keys"), "{text}");
}

/// Sends every due email as a file into a new folder (the file transport), and returns the folder.
async fn mail_to_files(pool: &PgPool) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("invoicer-mail-{}", Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let mailer = invoicer_core::mail::Mailer::new(
        None,
        None,
        &dir,
        std::time::Duration::from_secs(5),
        invoicer_core::mail::DEV_FROM,
    )
    .unwrap();
    let config = invoicer_core::worker::WorkerConfig {
        id: "mail-to-files".into(),
        ..Default::default()
    };
    while invoicer_core::worker::drain_once(pool, &mailer, &config)
        .await
        .unwrap()
        > 0
    {}
    dir
}

/// Invitations are no phishing channel: only a verified address invites, each counts against the
/// org's email allowance, and the subject holds no address and at most 60 characters of the org's
/// name.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn invitations_need_a_verified_address_the_org_allowance_and_a_plain_subject(pool: PgPool) {
    let app = TestApp::spawn_with(pool, |s| s.limits.emails_per_org_hour = 1).await;
    let invite = |http: reqwest::Client, to: String| {
        let url = format!("{}/rpc/invite_member", app.base);
        async move {
            http.post(url)
                .form(&[
                    ("idempotency_key", Uuid::now_v7().to_string()),
                    ("email", to),
                    ("role", "member".to_owned()),
                ])
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    // A fresh sign-up (unverified) cannot invite.
    let unverified = client();
    let email = format!("new-{}@example.com", Uuid::new_v4().simple());
    let res = post(
        &unverified,
        &app,
        "signup",
        &[
            ("org_name", "Fresh"),
            ("email", &email),
            ("password", PASSWORD),
        ],
    )
    .await;
    assert!(res.status().as_u16() < 400);
    login(&unverified, &app.base, &email, PASSWORD).await;
    assert_eq!(invite(unverified, "a@example.com".into()).await, 403);

    let long_name = format!(
        "Urgent: your account at YourBank needs action {}",
        "!".repeat(80)
    );
    let owner_email = format!("owner-{}@example.com", Uuid::new_v4().simple());
    accounts::create_org_with_owner(&app.pool, &long_name, &owner_email, PASSWORD)
        .await
        .unwrap();
    let owner = client();
    login(&owner, &app.base, &owner_email, PASSWORD).await;
    assert_eq!(invite(owner.clone(), "b@example.com".into()).await, 200);
    assert_eq!(
        invite(owner, "c@example.com".into()).await,
        429,
        "the org's email allowance is spent"
    );
    let dir = mail_to_files(&app.pool).await;
    let subjects: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .map(|m| m.replace("\r\n ", " ").replace("\n ", " "))
        .filter(|m| m.lines().any(|l| l == "To: b@example.com"))
        .filter_map(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("Subject: ").map(str::to_owned))
        })
        .collect();
    let expected: String = long_name.chars().take(60).collect();
    assert_eq!(
        subjects,
        [format!("Invitation to join {expected} on invoicer")]
    );
    assert!(!subjects[0].contains('@'));
}

/// Invitations live on their inviter's authority: demoting an owner withdraws the invitations they
/// sent for a role above their new one, removing them withdraws the rest, and accepting checks the
/// inviter's role as it is then.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn invitations_do_not_outlive_the_inviters_authority(pool: PgPool) {
    use invoicer_core::accounts::audit::Actor;
    use invoicer_core::{accounts::invitations, accounts::members};
    use model::Role;
    let (owner, owner_email) = owner(&pool).await;
    let org: model::OrgId = org_of(&pool, owner).await;
    // A second owner, who invites three people.
    let (second, second_email) = self::owner(&pool).await;
    sqlx::query("update memberships set org_id = $2, role = 'owner' where user_id = $1")
        .bind(second)
        .bind(org)
        .execute(&pool)
        .await
        .unwrap();
    let by_second = Actor::user(second, &second_email);
    let mut sent = Vec::new();
    for role in [Role::Owner, Role::Member, Role::Viewer] {
        let to = format!("{}-{}@example.com", role.as_str(), Uuid::new_v4().simple());
        let mut tx = pool.begin().await.unwrap();
        let key = format!("form:{to}");
        let gate = crate::common::member_gate();
        invitations::invite(&mut tx, org, &by_second, &to, role, &key, gate)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let link: String = scalar_for(&pool, "select payload->>'token' from outbox where kind = 'invitation' and payload->>'to' = $1", &to).await;
        sent.push((role, to, link));
    }
    let open = |role: Role| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, bool>(
                "select revoked_at is null from invitations where org_id = $1 and role = $2",
            )
            .bind(org)
            .bind(role.as_str())
            .fetch_one(&pool)
            .await
            .unwrap()
        }
    };
    let by_owner = Actor::user(owner, &owner_email);
    let mut tx = pool.begin().await.unwrap();
    members::change_role(&mut tx, org, &by_owner, second, Role::Member)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert!(!open(Role::Owner).await, "above the new role: withdrawn");
    assert!(open(Role::Member).await && open(Role::Viewer).await);

    // The member invitation still holds: its inviter is a member.
    let (_, member_to, member_link) = &sent[1];
    invitations::accept(&pool, member_link, "a password for the new one")
        .await
        .unwrap_or_else(|e| panic!("{member_to}: {e:?}"));
    // Demoted further behind the app's back: accepting checks the role as it is now.
    sqlx::query("update memberships set role = 'viewer' where user_id = $1")
        .bind(second)
        .execute(&pool)
        .await
        .unwrap();
    let (_, _, owner_link) = &sent[0];
    assert!(
        invitations::accept(&pool, owner_link, "a password for the new one")
            .await
            .is_err()
    );
    sqlx::query("update memberships set role = 'member' where user_id = $1")
        .bind(second)
        .execute(&pool)
        .await
        .unwrap();

    let mut tx = pool.begin().await.unwrap();
    members::remove(&mut tx, org, &by_owner, second)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert!(!open(Role::Viewer).await, "the inviter left: withdrawn");
    let (_, _, viewer_link) = &sent[2];
    assert!(
        invitations::accept(&pool, viewer_link, "a password for the new one")
            .await
            .is_err()
    );
}

/// Accepting refuses an invitation whose inviter was demoted below its role without the
/// withdrawal (a row changed behind the app's back): the check is made at acceptance.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn accepting_checks_that_the_inviter_may_still_grant_the_role(pool: PgPool) {
    use invoicer_core::accounts::audit::Actor;
    use invoicer_core::accounts::invitations;
    use model::Role;
    let (owner, owner_email) = owner(&pool).await;
    let org: model::OrgId = org_of(&pool, owner).await;
    let to = format!("new-{}@example.com", Uuid::new_v4().simple());
    let mut tx = pool.begin().await.unwrap();
    invitations::invite(
        &mut tx,
        org,
        &Actor::user(owner, &owner_email),
        &to,
        Role::Owner,
        "form:1",
        crate::common::member_gate(),
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    let link = emailed_token(&pool, "invitation", &to).await;
    sqlx::query("update memberships set role = 'member' where user_id = $1")
        .bind(owner)
        .execute(&pool)
        .await
        .unwrap();
    match invitations::accept(&pool, &link, "a password for the new one").await {
        Err(TokenError::Invalid(why)) => assert!(why.contains("cannot grant"), "{why}"),
        Err(e) => panic!("refused for another reason: {e:?}"),
        Ok(_) => panic!("accepted"),
    }
    let members: i64 = count_rows(&pool, "memberships where org_id = $1", org).await;
    assert_eq!(members, 1, "nobody joined");
}

/// An owner of one org who is also `role` in a second org; (the account, its address, its own org,
/// the second org's owner, the second org).
async fn in_two_orgs(
    pool: &PgPool,
    role: &str,
) -> (Uuid, String, model::OrgId, Uuid, model::OrgId) {
    let (user, email) = owner(pool).await;
    let first = org_of(pool, user).await;
    let (other, _) = owner(pool).await;
    let second = org_of(pool, other).await;
    let sql = format!("insert into memberships (user_id, org_id, role) values ($1, $2, '{role}')");
    sqlx::query(&sql)
        .bind(user)
        .bind(second)
        .execute(pool)
        .await
        .unwrap();
    (user, email, first, other, second)
}

/// The account page lists the live API keys the account made, in every org, and one button revokes
/// them all (once per rendered button, each in its org's audit log).
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn the_account_page_lists_the_accounts_keys_and_revokes_them_all(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (user, email, first, other_owner, second) = in_two_orgs(&app.pool, "member").await;
    for org in [first, second] {
        invoicer_core::accounts::api_keys::create_for_user(&app.pool, org, user, "ci")
            .await
            .unwrap();
    }
    // Someone else's key in the same org stays.
    invoicer_core::accounts::api_keys::create_for_user(&app.pool, second, other_owner, "theirs")
        .await
        .unwrap();
    let http = client();
    login(&http, &app.base, &email, PASSWORD).await;
    let page = || async {
        pages::post(&http, format!("{}/rpc/account_page", app.base))
            .await
            .json::<serde_json::Value>()
            .await
            .unwrap()
    };
    let shown = page().await;
    assert_eq!(shown["api_keys"].as_array().unwrap().len(), 2);
    let key = shown["revoke_keys_key"].as_str().unwrap().to_owned();
    let revoke = || {
        http.post(format!("{}/rpc/revoke_own_api_keys", app.base))
            .form(&[("idempotency_key", key.as_str())])
            .send()
    };
    let (a, b) = tokio::join!(revoke(), revoke());
    assert!(a.unwrap().status().as_u16() < 400);
    assert!(b.unwrap().status().as_u16() < 400);
    assert_eq!(page().await["api_keys"].as_array().unwrap().len(), 0);
    assert_eq!(
        app.count("select count(*) from api_keys where revoked_at is null")
            .await,
        1,
        "only the other owner's key is left"
    );
    let audited: Vec<model::OrgId> = scalars(
        &app.pool,
        "select org_id from audit_events where action = 'api_key.revoked' order by org_id",
    )
    .await;
    let mut expected = vec![first, second];
    expected.sort();
    assert_eq!(audited, expected);
}

/// Sign-up answers the same whether or not the address has an account, and does the same work
/// (one password hash, one email queued in one commit): the existing account is emailed instead.
/// "Forgot password" for an address without an account tells that address, once an hour.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn sign_up_and_forgot_password_do_the_same_whether_or_not_the_address_has_an_account(
    pool: PgPool,
) {
    let app = TestApp::spawn(pool).await;
    let (_, existing) = owner(&app.pool).await;
    let fresh = format!("fresh-{}@example.com", Uuid::new_v4().simple());
    let sign_up = |email: String| {
        let url = format!("{}/rpc/signup", app.base);
        async move {
            let res = client()
                .post(url)
                .header("accept", "text/html")
                .form(&[
                    ("org_name", "Same".to_owned()),
                    ("email", email),
                    ("password", "some password".to_owned()),
                ])
                .send()
                .await
                .unwrap();
            let cookie = res.headers().get("set-cookie").is_some();
            let location = res.headers().get("location").cloned();
            (res.status(), location, cookie, res.text().await.unwrap())
        }
    };
    let new = sign_up(fresh.clone()).await;
    let old = sign_up(existing.clone()).await;
    assert_eq!(new, old, "the same answer for a new and a known address");
    assert!(!new.2, "nobody is logged in by signing up");
    let kinds = |to: String| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, String>(
                "select kind from outbox where lower(payload->>'to') = lower($1) order by id",
            )
            .bind(to)
            .fetch_all(&pool)
            .await
            .unwrap()
        }
    };
    assert_eq!(kinds(fresh.clone()).await, ["verify_email"]);
    assert_eq!(kinds(existing.clone()).await, ["account_exists"]);
    // Again within the hour: still one email to the existing account.
    sign_up(existing.clone()).await;
    assert_eq!(kinds(existing.clone()).await, ["account_exists"]);
    // The same work either way, counted: one hash each.
    let before = invoicer_core::throttle::hashes_asked_on_this_thread();
    let other = format!("other-{}@example.com", Uuid::new_v4().simple());
    accounts::sign_up(&app.pool, "X", &other, "some password", false)
        .await
        .unwrap();
    assert_eq!(
        invoicer_core::throttle::hashes_asked_on_this_thread(),
        before + 1
    );
    accounts::sign_up(&app.pool, "X", &existing, "some password", false)
        .await
        .unwrap();
    assert_eq!(
        invoicer_core::throttle::hashes_asked_on_this_thread(),
        before + 2
    );

    let nobody = format!("nobody-{}@example.com", Uuid::new_v4().simple());
    assert!(!accounts::request_reset(&app.pool, &nobody, "form:a")
        .await
        .unwrap());
    assert!(!accounts::request_reset(&app.pool, &nobody, "form:b")
        .await
        .unwrap());
    assert_eq!(kinds(nobody).await, ["no_account"], "once an hour");
}

/// A form carries the org it was rendered for: the new-invoice form opened while acting for one org
/// and submitted after the session switched to another is refused, nothing written anywhere; back
/// in its org, the same form saves.
#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn a_form_rendered_for_one_org_is_refused_after_switching_to_another(pool: PgPool) {
    let app = TestApp::spawn(pool).await;
    let (_, email, first, _, second) = in_two_orgs(&app.pool, "owner").await;
    let http = client();
    login(&http, &app.base, &email, PASSWORD).await;
    let switch = |org: model::OrgId| {
        http.post(format!("{}/rpc/switch_org", app.base))
            .form(&[("org_id", org.to_string())])
            .send()
    };
    assert!(switch(first).await.unwrap().status().as_u16() < 400);
    let html = pages::text(&http, format!("{}/invoices/new", app.base)).await;
    let marker = "name=\"idempotency_key\" value=\"";
    let at = html.find(marker).expect("the form carries its key") + marker.len();
    let key = html[at..at + 36].to_owned();
    assert!(model::form_key_fits(key.parse().unwrap(), first));

    assert!(switch(second).await.unwrap().status().as_u16() < 400);
    let form = crate::common::invoice_form(&key, "Ada");
    let refused = pages::post_form(&http, format!("{}/rpc/create_invoice", app.base), &form).await;
    assert_eq!(refused.status(), 400);
    assert!(refused
        .text()
        .await
        .unwrap()
        .contains("opened for another organisation"));
    assert_eq!(app.count("select count(*) from invoices").await, 0);
    assert_eq!(
        app.count("select count(*) from claims where scope = 'form'")
            .await,
        0,
        "nothing claimed"
    );

    assert!(switch(first).await.unwrap().status().as_u16() < 400);
    let saved = pages::post_form(&http, format!("{}/rpc/create_invoice", app.base), &form).await;
    assert!(saved.status().as_u16() < 400, "{}", saved.status());
    let orgs: Vec<model::OrgId> = scalars(&app.pool, "select org_id from invoices").await;
    assert_eq!(orgs, [first]);
}
