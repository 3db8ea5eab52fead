//! The real router served in-process on a loopback port, over a `#[sqlx::test]` database.

use invoicer_core::state::Settings;
use invoicer_core::AppState;
use leptos::config::LeptosOptions;
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

pub const SECRET: &str = "whsec_test_current";
pub const OLD_SECRET: &str = "whsec_test_previous";

pub struct TestApp {
    pub base: String,
    pub pool: PgPool,
    /// The reads' pool (`AppState::reads`), as many connections as `pool`.
    pub reads: PgPool,
    pub http: reqwest::Client,
}

impl TestApp {
    pub async fn spawn(pool: PgPool) -> TestApp {
        Self::spawn_with(pool, |_| {}).await
    }

    /// The router with the tests' settings, changed by `tweak` (limits, for instance).
    pub async fn spawn_with(pool: PgPool, tweak: impl FnOnce(&mut Settings)) -> TestApp {
        Self::spawn_site(
            pool,
            tweak,
            LeptosOptions::builder().output_name("invoicer").build(),
        )
        .await
    }

    /// The router serving the site's files as `site` says (where they are, whether names are hashed).
    pub async fn spawn_site(
        pool: PgPool,
        tweak: impl FnOnce(&mut Settings),
        site: LeptosOptions,
    ) -> TestApp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut settings = Settings {
            stripe_webhook_secrets: vec![SECRET.into(), OLD_SECRET.into()],
            self_url: format!("http://{addr}"),
            public_url: format!("http://{addr}"),
            ..Settings::default()
        };
        tweak(&mut settings);
        // Waits for a connection as long as production's pools do, so a request starved of one
        // answers 503 (and says so in the log) instead of leaving its client waiting.
        let reads = sqlx::postgres::PgPoolOptions::new()
            .max_connections(pool.options().get_max_connections())
            .acquire_timeout(server::db::ACQUIRE_TIMEOUT)
            .connect_lazy_with(invoicer_core::state::generic_plans(
                (*pool.connect_options()).clone(),
            ));
        let state = AppState::new(pool.clone(), reads.clone(), settings);
        let guard = server::security::Guard::new(&format!("http://{addr}"), false);
        let router = server::web::router(state, site, guard, server::web::MetricsAccess::Open)
            .await
            .unwrap();
        tokio::spawn(async move {
            axum::serve(
                listener,
                router.into_make_service_with_connect_info::<std::net::SocketAddr>(),
            )
            .await
            .unwrap()
        });
        TestApp {
            base: format!("http://{addr}"),
            pool,
            reads,
            http: reqwest::Client::new(),
        }
    }

    /// An org with one open invoice of `total` cents in `currency`; returns (org, invoice).
    pub async fn invoice(&self, total: i64, currency: &str) -> (model::OrgId, Uuid) {
        let email = format!("{}@example.com", Uuid::new_v4().simple());
        super::seed_invoice(&self.pool, &email, total, currency).await
    }

    /// POSTs `payload` signed now with `secret`.
    pub async fn deliver_with(&self, secret: &str, payload: &str) -> (u16, String) {
        let header = invoicer_core::payments::stripe::signature::header(
            secret,
            chrono_now(),
            payload.as_bytes(),
        );
        self.post_raw(Some(&header), payload.as_bytes().to_vec())
            .await
    }

    pub async fn deliver(&self, payload: &str) -> (u16, String) {
        self.deliver_with(SECRET, payload).await
    }

    pub async fn post_raw(&self, signature: Option<&str>, body: Vec<u8>) -> (u16, String) {
        let mut req = self
            .http
            .post(format!("{}/webhooks/stripe", self.base))
            .header("content-type", "application/json")
            .body(body);
        if let Some(sig) = signature {
            req = req.header("stripe-signature", sig);
        }
        let res = req.send().await.unwrap();
        (res.status().as_u16(), res.text().await.unwrap())
    }

    /// A new org with an API key; returns (org, key).
    pub async fn api_client(&self) -> (model::OrgId, String) {
        let email = format!("{}@example.com", Uuid::new_v4().simple());
        let account = invoicer_core::accounts::create_org_with_owner(
            &self.pool,
            "Api Co",
            &email,
            "correct horse",
        )
        .await
        .unwrap();
        let org = account.org_id;
        let key = invoicer_core::accounts::api_keys::create_for_user(
            &self.pool,
            org,
            account.user_id,
            "test",
        )
        .await
        .unwrap();
        (org, key.plaintext)
    }

    /// POST /api/v1/invoices with the given token, Idempotency-Key and raw body.
    pub async fn post_invoice(
        &self,
        token: Option<&str>,
        key: Option<&str>,
        body: &str,
    ) -> ApiResponse {
        self.post_to("/api/v1/invoices", token, key, body).await
    }

    /// POST `path` with the given token, Idempotency-Key and raw JSON body.
    pub async fn post_to(
        &self,
        path: &str,
        token: Option<&str>,
        key: Option<&str>,
        body: &str,
    ) -> ApiResponse {
        let mut req = self
            .http
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        if let Some(key) = key {
            req = req.header("idempotency-key", key);
        }
        ApiResponse::read(req.send().await.unwrap()).await
    }

    /// `method` `path` as an API client: the bearer `token`, a new Idempotency-Key, and `body` as
    /// JSON (no body when it is null).
    pub async fn call(&self, method: &str, path: &str, token: &str, body: &Value) -> ApiResponse {
        let mut req = self
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.base))
            .bearer_auth(token)
            .header("idempotency-key", Uuid::new_v4().to_string());
        if !body.is_null() {
            req = req.json(body);
        }
        ApiResponse::read(req.send().await.unwrap()).await
    }

    /// [`TestApp::call`] that must succeed: the answer's JSON.
    pub async fn call_ok(&self, method: &str, path: &str, token: &str, body: &Value) -> Value {
        let res = self.call(method, path, token, body).await;
        let json: Value = serde_json::from_slice(&res.body).unwrap_or(Value::Null);
        assert!(res.status < 300, "{method} {path}: {} {json}", res.status);
        json
    }

    pub async fn get(&self, token: &str, path: &str) -> ApiResponse {
        let res = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        ApiResponse::read(res).await
    }

    pub async fn count(&self, sql: &str) -> i64 {
        sqlx::query_scalar(sql).fetch_one(&self.pool).await.unwrap()
    }

    /// (status, payment_state, amount_paid_cents) of `invoice`.
    pub async fn money(&self, invoice: Uuid) -> (String, String, i64) {
        sqlx::query_as(
            "select status, payment_state, amount_paid_cents from invoices where id = $1",
        )
        .bind(invoice)
        .fetch_one(&self.pool)
        .await
        .unwrap()
    }

    pub async fn invoice_state(&self, invoice: Uuid) -> (String, i64) {
        sqlx::query_as("select status, amount_paid_cents from invoices where id = $1")
            .bind(invoice)
            .fetch_one(&self.pool)
            .await
            .unwrap()
    }
}

pub fn chrono_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// The payment intent inside a checkout.session.completed payload.
pub fn payment_intent(payload: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(payload).unwrap();
    v["data"]["object"]["payment_intent"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The same event under a new event id: what Stripe sends when one payment produces two events.
pub fn with_new_event_id(payload: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(payload).unwrap();
    v["id"] = format!("evt_{}", Uuid::new_v4().simple()).into();
    v.to_string()
}

#[derive(Debug, Clone)]
pub struct ApiResponse {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl ApiResponse {
    pub async fn read(res: reqwest::Response) -> ApiResponse {
        ApiResponse {
            status: res.status().as_u16(),
            headers: res.headers().clone(),
            body: res.bytes().await.unwrap().to_vec(),
        }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// A valid create-invoice body.
pub fn invoice_body(customer: &str) -> String {
    serde_json::json!({
        "customer_name": customer,
        "customer_email": "ap@example.com",
        "currency": "eur",
        "due_date": "2027-02-28",
        "lines": [
            { "description": "Hosting", "quantity": 12, "unit_amount_cents": 2_500 },
            { "description": "Support", "quantity": 1, "unit_amount_cents": 9_900 }
        ]
    })
    .to_string()
}
