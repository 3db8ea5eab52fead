//! The pgbench scripts (`bench/pgbench/*.sql`) send the statements the server sends: each workload's
//! real request is made once against the real router while sqlx's statement log (`sqlx::query`
//! events) is captured, and the captured statements must be the script's, each once (in any order:
//! a page's reads run side by side), token for token. A server parameter (`$n`) matches any one
//! expression of the script; the script's bench-only text (ids it mints, the lookups of its own
//! client table) sits between `/*bench*/` and `/*end*/` and is left out. The floors (`*_floor.sql`)
//! are what any design must send, not what the server sends, and are not compared.

use std::sync::{Arc, Mutex};

use invoicer_core::payments::stripe::standin;
use sqlx::PgPool;
use tracing_subscriber::layer::SubscriberExt;
use uuid::Uuid;

use crate::common::served::{TestApp, SECRET};

/// The statements sqlx runs on this thread while it is set (`#[sqlx::test]` runs the test, the
/// server it spawns and the pools on one thread).
#[derive(Clone, Default)]
struct Statements(Arc<Mutex<Vec<String>>>);

impl Statements {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.0.lock().unwrap())
    }
}

#[derive(Default)]
struct Fields {
    summary: String,
    statement: String,
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        match field.name() {
            "summary" => self.summary = value.to_owned(),
            "db.statement" => self.statement = value.to_owned(),
            _ => {}
        }
    }
    fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Statements {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if event.metadata().target() != "sqlx::query" {
            return;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        // sqlx logs a short statement whole as its summary, a longer one in `db.statement`.
        let sql = if fields.statement.trim().is_empty() {
            fields.summary
        } else {
            fields.statement
        };
        self.0.lock().unwrap().push(sql.trim().to_owned());
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// A keyword or unquoted identifier, lowercased; anything else verbatim.
    Word(String),
    /// `$n`: a value the server binds.
    Param,
}

/// The statements of a script: comments, meta-commands (`\set`) and bench-only text dropped, split
/// at `;` and at `\gset`.
fn script_statements(script: &str) -> Vec<Vec<Token>> {
    let mut kept = String::new();
    let mut rest = script;
    while let Some(start) = rest.find("/*bench*/") {
        kept.push_str(&rest[..start]);
        let end = rest[start..]
            .find("/*end*/")
            .expect("a /*bench*/ without its /*end*/");
        rest = &rest[start + end + "/*end*/".len()..];
    }
    kept.push_str(rest);
    let mut text = String::new();
    for line in kept.lines() {
        let line = line.trim_start();
        if line.starts_with('\\') {
            text.push(';');
            continue;
        }
        match line.find("\\gset").or(line.find("\\aset")) {
            Some(at) => {
                text.push_str(&line[..at]);
                text.push(';');
            }
            None => text.push_str(line),
        }
        text.push('\n');
    }
    split(&tokens(&text))
}

fn split(tokens: &[Token]) -> Vec<Vec<Token>> {
    tokens
        .split(|t| *t == Token::Word(";".into()))
        .filter(|s| !s.is_empty())
        .map(<[Token]>::to_vec)
        .collect()
}

/// SQL as tokens: `--` and `/* */` comments dropped, strings and quoted names whole, `:name`
/// (a pgbench variable) one token.
fn tokens(sql: &str) -> Vec<Token> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let word = |from: usize, to: usize| chars[from..to].iter().collect::<String>();
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        if c.is_whitespace() {
            i += 1;
        } else if c == '-' && chars.get(i + 1) == Some(&'-') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                i += 1;
            }
            i += 2;
        } else if c == '\'' || c == '"' {
            i += 1;
            while i < chars.len() {
                if chars[i] == c && chars.get(i + 1) == Some(&c) {
                    i += 2;
                } else if chars[i] == c {
                    break;
                } else {
                    i += 1;
                }
            }
            i += 1;
            out.push(Token::Word(word(start, i.min(chars.len()))));
        } else if c == '$' && chars.get(i + 1).is_some_and(char::is_ascii_digit) {
            i += 1;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            out.push(Token::Param);
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            i += 2;
            out.push(Token::Word("::".into()));
        } else if c == ':'
            && chars
                .get(i + 1)
                .is_some_and(|n| n.is_alphabetic() || *n == '_')
        {
            i += 1;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Word(word(start, i)));
        } else if c.is_alphanumeric() || c == '_' {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token::Word(word(start, i).to_lowercase()));
        } else if "+-*/<>=~!@#%^&|?".contains(c) {
            while i < chars.len() && "+-*/<>=~!@#%^&|?".contains(chars[i]) {
                i += 1;
            }
            out.push(Token::Word(word(start, i)));
        } else {
            i += 1;
            out.push(Token::Word(c.to_string()));
        }
    }
    out
}

/// Whether `script` is `server` with each `$n` replaced by one expression: a non-empty run of
/// tokens, brackets balanced, with no comma outside them.
fn matches(server: &[Token], script: &[Token]) -> bool {
    fn go(
        p: &[Token],
        s: &[Token],
        i: usize,
        j: usize,
        memo: &mut std::collections::HashMap<(usize, usize), bool>,
    ) -> bool {
        if let Some(&m) = memo.get(&(i, j)) {
            return m;
        }
        let m = match p.get(i) {
            None => j == s.len(),
            Some(Token::Param) => {
                let mut depth = 0i32;
                let mut found = false;
                for k in j..s.len() {
                    match &s[k] {
                        Token::Word(w) if w == "(" || w == "[" => depth += 1,
                        Token::Word(w) if w == ")" || w == "]" => depth -= 1,
                        Token::Word(w) if w == "," && depth == 0 => break,
                        _ => {}
                    }
                    if depth < 0 {
                        break;
                    }
                    if depth == 0 && go(p, s, i + 1, k + 1, memo) {
                        found = true;
                        break;
                    }
                }
                found
            }
            Some(t) => s.get(j) == Some(t) && go(p, s, i + 1, j + 1, memo),
        };
        memo.insert((i, j), m);
        m
    }
    go(server, script, 0, 0, &mut Default::default())
}

fn text(tokens: &[Token]) -> String {
    let words: Vec<&str> = tokens
        .iter()
        .map(|t| match t {
            Token::Word(w) => w.as_str(),
            Token::Param => "$n",
        })
        .collect();
    words.join(" ")
}

/// Transaction control: sqlx logs its COMMIT but neither its BEGIN nor the ROLLBACK of a dropped
/// transaction, so the scripts' are not compared.
fn is_transaction_control(statement: &[Token]) -> bool {
    matches!(statement, [Token::Word(w)] if ["begin", "commit", "rollback"].contains(&w.as_str()))
}

/// Fails unless `script` sends the `sent` statements, each once; in any order, since a page's
/// reads run side by side on their own connections.
fn compare(name: &str, sent: &[String]) -> Result<(), String> {
    let path = format!("{}/../bench/pgbench/{name}", env!("CARGO_MANIFEST_DIR"));
    let script = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    let script = lab::pgbench_script::expand(&script).map_err(|e| format!("{path}: {e:#}"))?;
    let mut ours: Vec<Option<Vec<Token>>> = script_statements(&script)
        .into_iter()
        .filter(|s| !is_transaction_control(s))
        .map(Some)
        .collect();
    let mut problems = Vec::new();
    for server in sent.iter().map(|s| tokens(s)) {
        if is_transaction_control(&server) {
            continue;
        }
        let found = ours
            .iter_mut()
            .find(|s| s.as_ref().is_some_and(|s| matches(&server, s)));
        match found {
            Some(script) => *script = None,
            None => problems.push(format!("not in the script: {}", text(&server))),
        }
    }
    for script in ours.into_iter().flatten() {
        problems.push(format!("the server did not send: {}", text(&script)));
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{name} has drifted from the server:\n{}\nthe server sent:\n{}",
        problems.join("\n"),
        sent.join(";\n---\n")
    ))
}

/// A workload's request, made once to warm up (stale session and key rows are written at most
/// once a minute, which the scripts leave out) and once more under the capture.
enum Step {
    Get(String, Auth),
    WebhookNew,
    WebhookDup,
    ApiCreate,
    FormCreate,
    /// A schedule due today, made first, then one scheduler run.
    ScheduleRun,
    /// An invoice due for charging (the fixture's next), made first, then one charger's run.
    ChargeRun,
    /// A new bank statement imported (`bank::import::import`, as the API runs it in its claim).
    BankImport,
    /// The same bank statement imported again: every entry a duplicate.
    BankReimport,
}

#[derive(Clone, Copy)]
enum Auth {
    Session,
    ApiKey,
    None,
}

#[sqlx::test(migrator = "invoicer_core::MIGRATOR")]
async fn each_pgbench_script_sends_what_the_server_sends(pool: PgPool) {
    let capture = Statements::default();
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(capture.clone()));
    // A second live dispatcher: with just one, tracing-core works out a callsite's interest from
    // the default of whichever thread first hits it, and a test beside this one (no subscriber)
    // would switch sqlx's statement events off for good.
    let _second = tracing::Dispatch::new(tracing_subscriber::registry());
    let _guard = tracing::dispatcher::set_default(&dispatch);
    let app = TestApp::spawn(pool.clone()).await;
    let fixture = lab::harness::seed(&pool, 3).await.unwrap();
    let mut target = lab::harness::Target::new(&app.base, SECRET, &fixture).unwrap();
    target
        .login(&fixture.email, &fixture.password)
        .await
        .unwrap();
    let cookie = format!("invoicer_session={}", target.session_id().unwrap());
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let invoice = fixture.invoices[0];
    // The invoice page reads the customer's credit when the invoice has a customer, as the
    // benchmark's invoices do: this one gets one.
    sqlx::query(
        "with c as (insert into customers (id, org_id, name, email) \
         select gen_random_uuid(), org_id, customer_name, customer_email from invoices where id = $1 \
         returning id) update invoices set customer_id = (select id from c) where id = $1",
    )
    .bind(invoice)
    .execute(&pool)
    .await
    .unwrap();
    let (number, token, customer): (String, String, String) = sqlx::query_as(
        "select number_text, public_token, customer_name from invoices where id = $1",
    )
    .bind(invoice)
    .fetch_one(&pool)
    .await
    .unwrap();
    let (at, id): (chrono::DateTime<chrono::Utc>, Uuid) =
        sqlx::query_as("select created_at, id from invoices where id = $1")
            .bind(invoice)
            .fetch_one(&pool)
            .await
            .unwrap();
    let cursor = format!("{}.{}", at.timestamp_micros(), id.simple());
    let prefix = &number[..number.len() - 1];
    standin::open_simulated_session(&pool, model::InvoiceId::from(invoice))
        .await
        .unwrap();
    let dup = standin::checkout_event(
        &standin::event_id(),
        &standin::payment_intent_id(),
        model::InvoiceId::from(invoice),
        1,
        "usd",
    );
    let workloads = [
        ("webhook_new.sql", Step::WebhookNew),
        ("webhook_dup.sql", Step::WebhookDup),
        ("api_create.sql", Step::ApiCreate),
        ("form_create.sql", Step::FormCreate),
        ("form_create_one_org.sql", Step::FormCreate),
        ("schedule_run.sql", Step::ScheduleRun),
        ("charge_run.sql", Step::ChargeRun),
        ("bank_import.sql", Step::BankImport),
        ("bank_reimport.sql", Step::BankReimport),
        (
            "read_list_first.sql",
            Step::Get("/invoices".into(), Auth::Session),
        ),
        (
            "read_list_deep.sql",
            Step::Get(format!("/invoices?before={cursor}"), Auth::Session),
        ),
        (
            "read_list_overdue.sql",
            Step::Get("/invoices?status=overdue".into(), Auth::Session),
        ),
        (
            "read_list_search_number.sql",
            Step::Get(format!("/invoices?q={prefix}"), Auth::Session),
        ),
        (
            "read_list_search_customer.sql",
            Step::Get(
                format!("/invoices?q={}", customer.replace(' ', "%20")),
                Auth::Session,
            ),
        ),
        (
            "read_invoice_page.sql",
            Step::Get(format!("/invoices/{invoice}"), Auth::Session),
        ),
        (
            "read_public_page.sql",
            Step::Get(format!("/i/{token}"), Auth::Session),
        ),
        (
            "read_public_pdf.sql",
            Step::Get(format!("/i/{token}/pdf"), Auth::Session),
        ),
        (
            "read_activity_first.sql",
            Step::Get("/activity".into(), Auth::Session),
        ),
        (
            "read_activity_webhook.sql",
            Step::Get("/activity?surface=webhook".into(), Auth::Session),
        ),
        (
            "read_activity_search.sql",
            Step::Get("/activity?q=some-key".into(), Auth::Session),
        ),
        (
            "read_api_list.sql",
            Step::Get(
                format!("/api/v1/invoices?limit=20&cursor={cursor}"),
                Auth::ApiKey,
            ),
        ),
        ("read_metrics.sql", Step::Get("/metrics".into(), Auth::None)),
        (
            "read_dashboard.sql",
            Step::Get("/dashboard".into(), Auth::Session),
        ),
    ];
    // Every script is compared, or is a floor (parts/ holds what scripts include).
    let dir = format!("{}/../bench/pgbench", env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(&dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            continue;
        }
        let name = entry.file_name().into_string().unwrap();
        assert!(
            name.ends_with("_floor.sql") || workloads.iter().any(|(w, _)| *w == name),
            "{name} is compared with nothing: add its workload here"
        );
    }
    let local = lab::stripe_local::LocalStripe::start(
        "127.0.0.1:0".parse().unwrap(),
        lab::stripe_local::Config::default(),
    )
    .await
    .unwrap();
    let stripe = invoicer_core::payments::stripe::client::Stripe::new(
        &local.base,
        Some("sk_test_local".to_owned().into()),
    );
    let mut to_charge = fixture.invoices[1..].iter();
    lab::harness::bank::own_account(&pool, fixture.org)
        .await
        .unwrap();
    let today = chrono::Utc::now().date_naive();
    let same_statement = lab::harness::bank::statement(20, &Uuid::now_v7().to_string(), today);
    let import = |file: String| {
        let pool = pool.clone();
        async move {
            let parsed = invoicer_core::bank::parse(file.as_bytes()).unwrap();
            let mut tx = pool.begin().await.unwrap();
            let done =
                invoicer_core::bank::import::import(&mut tx, fixture.org, Uuid::now_v7(), &parsed)
                    .await
                    .unwrap();
            tx.commit().await.unwrap();
            done.entries == 20
        }
    };
    let mut failures = Vec::new();
    for (script, step) in &workloads {
        for round in 0..2 {
            capture.take();
            let ok = match step {
                Step::Get(path, auth) => {
                    let req = http.get(format!("{}{path}", app.base));
                    let req = match auth {
                        Auth::Session => req.header("cookie", &cookie),
                        Auth::ApiKey => req.bearer_auth(&fixture.api_token),
                        Auth::None => req,
                    };
                    let res = req.send().await.unwrap();
                    let status = res.status().as_u16();
                    res.bytes().await.unwrap();
                    status == 200
                }
                Step::WebhookNew => {
                    let event = standin::checkout_event(
                        &standin::event_id(),
                        &standin::payment_intent_id(),
                        model::InvoiceId::from(invoice),
                        1,
                        "usd",
                    );
                    target.webhook(&event).await.unwrap() == 200
                }
                Step::WebhookDup => target.webhook(&dup).await.unwrap() == 200,
                Step::ApiCreate => {
                    let key = Uuid::new_v4().to_string();
                    let body = lab::harness::api_body();
                    target.api_create(&key, &body).await.unwrap().0 == 201
                }
                Step::FormCreate => target.form_create(Uuid::now_v7()).await.unwrap() == 200,
                Step::ScheduleRun => {
                    due_schedule(&pool, fixture.org).await;
                    capture.take();
                    let now = chrono::Utc::now();
                    invoicer_core::jobs::schedules::run::run_due(
                        &pool,
                        now,
                        1,
                        "",
                        invoicer_core::mail::gate::Allowance::DEFAULT,
                    )
                    .await
                    .unwrap()
                        == 1
                }
                Step::BankImport => {
                    import(lab::harness::bank::statement(
                        20,
                        &Uuid::now_v7().to_string(),
                        today,
                    ))
                    .await
                }
                Step::BankReimport => import(same_statement.clone()).await,
                Step::ChargeRun => {
                    let next = *to_charge.next().expect("a fixture invoice per round");
                    lab::harness::charges::due(&pool, &stripe, &local, fixture.org, &[next])
                        .await
                        .unwrap();
                    capture.take();
                    invoicer_core::jobs::charges::run_due(
                        &pool,
                        Some(&stripe),
                        chrono::Utc::now(),
                        1,
                        std::time::Duration::from_secs(60),
                        invoicer_core::mail::gate::Allowance::DEFAULT,
                    )
                    .await
                    .unwrap()
                        == 1
                }
            };
            assert!(ok, "{script}: the request failed");
            let sent = capture.take();
            if round == 1 {
                if let Err(e) = compare(script, &sent) {
                    failures.push(e);
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A monthly schedule of `org` whose first run is due today, as `lab bench schedules` makes them.
async fn due_schedule(pool: &PgPool, org: model::OrgId) {
    let mut tx = pool.begin().await.unwrap();
    let today = invoicer_core::jobs::schedules::org_today(&mut tx, org, chrono::Utc::now())
        .await
        .unwrap();
    let input = model::ScheduleInput::from_json(&serde_json::json!({
        "customer_name": "Retainer Client",
        "customer_email": "billing@example.com",
        "currency": "usd",
        "payment_terms_days": 30,
        "lines": [{"description": "Retainer", "quantity": 1, "unit_amount_cents": 30000}],
        "interval": "month",
        "start_date": today,
        "action": "finalize",
    }))
    .unwrap();
    let id = Uuid::now_v7();
    invoicer_core::jobs::schedules::create(&mut tx, org, id, &format!("test:{id}"), &input, today)
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

#[test]
fn a_changed_statement_is_noticed() {
    let server = tokens("select a, b from t where id = $1 and x > $2");
    let same = &script_statements("select a, b from t where id = :id::uuid and x > now();")[0];
    assert!(matches(&server, same));
    let marked = &script_statements(
        "select a, b /*bench*/, md5(random()::text) as r /*end*/ from t where id = :id and x > 1 \\gset",
    )[0];
    assert!(matches(&server, marked));
    for drifted in [
        "select a from t where id = :id and x > now();",
        "select a, b from t where id = :id and y > now();",
        "select a, b, c from t where id = :id and x > now();",
        "select a, b from t where id = :id, x > now();",
    ] {
        assert!(
            !matches(&server, &script_statements(drifted)[0]),
            "{drifted}"
        );
    }
}
