//! The org's settings through the API: who issues its invoices (legal name, address, VAT id, ...),
//! how it is paid by transfer, and whether it issues e-invoices. Read by any key of the org;
//! changed by an owner's key, as a JSON merge patch once per Idempotency-Key.

use axum::extract::State;
use axum::response::Response;
use axum::Json;
use invoicer_core::surfaces::api;
use invoicer_core::{accounts::orgs, AppState};
use model::collection::{LateFees, RetryDays};
use model::{Address, BankDetails, OrgDetails};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::client::Client;
use super::documented::{InFlight, New, Unauthorized};
use super::problem::{Problem, ProblemResponse};
use super::write::{self, Write};

/// How the org is paid by transfer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrgBank {
    #[serde(default)]
    pub holder: String,
    #[serde(default)]
    pub iban: String,
    #[serde(default)]
    pub bic: String,
    /// Other account details (another scheme: routing and account number, sort code).
    #[serde(default)]
    pub text: String,
    /// The payment reference printed on invoices; `{number}` is the invoice's number.
    #[serde(default)]
    pub reference: String,
}

/// What `PATCH /api/v1/org` changes (every field optional in a patch).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OrgEditable {
    #[serde(default)]
    pub legal_name: String,
    #[serde(default)]
    pub address: Address,
    /// With its country prefix: DE123456789.
    #[serde(default)]
    pub vat_id: String,
    #[serde(default)]
    pub tax_registration_id: String,
    #[serde(default)]
    pub email: String,
    #[serde(default)]
    pub phone: String,
    /// Its Peppol participant id, `scheme:value` (`0208:0123456749`); empty: none.
    #[serde(default)]
    #[schema(max_length = 60, example = "0208:0123456749")]
    pub peppol_id: String,
    #[serde(default)]
    pub bank: OrgBank,
    /// Finalize only invoices that make a valid EN 16931 e-invoice; PDFs carry `factur-x.xml`.
    #[serde(default)]
    pub einvoicing: bool,
    /// The language of its customers' pages, PDFs and emails, unless a customer has its own.
    #[serde(default)]
    pub locale: model::Locale,
    /// Days after a declined automatic charge's first attempt on which it is retried (at most 6,
    /// increasing, 1 to 60); then the invoice is sent for the customer to pay.
    #[serde(default)]
    #[schema(value_type = Vec<u32>)]
    pub retry_days: RetryDays,
    /// `{"kind": "none"|"fixed"|"percent", "amount_cents"|"percent", "after_days": [...]}`.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub late_fees: LateFees,
    /// The org's other accounts (IBANs) whose bank statements it imports, beside `bank.iban`.
    #[serde(default)]
    pub bank_accounts: Vec<String>,
}

/// The org as the API shows it: its id, name and time zone, and what `PATCH` changes.
#[derive(Debug, Serialize, ToSchema)]
pub struct Org {
    pub id: uuid::Uuid,
    pub name: String,
    pub time_zone: String,
    pub legal_name: String,
    pub address: Address,
    pub vat_id: String,
    pub tax_registration_id: String,
    pub email: String,
    pub phone: String,
    pub peppol_id: String,
    pub bank: OrgBank,
    pub einvoicing: bool,
    pub locale: model::Locale,
    #[schema(value_type = Vec<u32>)]
    pub retry_days: RetryDays,
    #[schema(value_type = Object)]
    pub late_fees: LateFees,
    pub bank_accounts: Vec<String>,
}

impl Org {
    fn new(id: uuid::Uuid, name: String, time_zone: String, s: OrgEditable) -> Org {
        Org {
            id,
            name,
            time_zone,
            legal_name: s.legal_name,
            address: s.address,
            vat_id: s.vat_id,
            tax_registration_id: s.tax_registration_id,
            email: s.email,
            phone: s.phone,
            peppol_id: s.peppol_id,
            bank: s.bank,
            einvoicing: s.einvoicing,
            locale: s.locale,
            retry_days: s.retry_days,
            late_fees: s.late_fees,
            bank_accounts: s.bank_accounts,
        }
    }

    fn editable(&self) -> OrgEditable {
        OrgEditable {
            legal_name: self.legal_name.clone(),
            address: self.address.clone(),
            vat_id: self.vat_id.clone(),
            tax_registration_id: self.tax_registration_id.clone(),
            email: self.email.clone(),
            phone: self.phone.clone(),
            peppol_id: self.peppol_id.clone(),
            bank: self.bank.clone(),
            einvoicing: self.einvoicing,
            locale: self.locale,
            retry_days: self.retry_days.clone(),
            late_fees: self.late_fees.clone(),
            bank_accounts: self.bank_accounts.clone(),
        }
    }
}

impl OrgEditable {
    fn of(
        details: OrgDetails,
        bank: BankDetails,
        (retry_days, late_fees): (RetryDays, LateFees),
        bank_accounts: Vec<String>,
    ) -> OrgEditable {
        OrgEditable {
            retry_days,
            late_fees,
            bank_accounts,
            legal_name: details.legal_name,
            address: details.address,
            vat_id: details.vat_id,
            tax_registration_id: details.tax_registration_id,
            email: details.email,
            phone: details.phone,
            peppol_id: details.peppol_id,
            einvoicing: details.einvoicing,
            locale: details.locale,
            bank: OrgBank {
                holder: bank.holder,
                iban: bank.iban,
                bic: bank.bic,
                text: bank.other,
                reference: bank.reference,
            },
        }
    }

    fn split(&self) -> (OrgDetails, BankDetails) {
        let details = OrgDetails {
            legal_name: self.legal_name.clone(),
            address: self.address.clone(),
            vat_id: self.vat_id.clone(),
            tax_registration_id: self.tax_registration_id.clone(),
            email: self.email.clone(),
            phone: self.phone.clone(),
            peppol_id: self.peppol_id.clone(),
            einvoicing: self.einvoicing,
            locale: self.locale,
        };
        let bank = BankDetails {
            holder: self.bank.holder.clone(),
            iban: self.bank.iban.clone(),
            bic: self.bank.bic.clone(),
            other: self.bank.text.clone(),
            reference: self.bank.reference.clone(),
        };
        (details.normalized(), bank.normalized())
    }
}

async fn current(state: &AppState, org: model::OrgId) -> Result<Org, ProblemResponse> {
    let (name, time_zone) = name_and_zone(&mut *state.pool.acquire().await?, org).await?;
    let details = orgs::details(&state.pool, org).await?;
    let bank = orgs::bank_details(&state.pool, org).await?;
    let mut conn = state.pool.acquire().await?;
    let collection = orgs::collection(&mut conn, org).await?;
    let accounts = orgs::bank_accounts(&mut conn, org).await?;
    Ok(Org::new(
        org.uuid(),
        name,
        time_zone,
        OrgEditable::of(details, bank, collection, accounts),
    ))
}

/// The key's org: its legal details, bank details and e-invoicing.
#[utoipa::path(
    get, path = "/api/v1/org", tag = "org",
    responses(
        (status = 200, body = Org),
        Unauthorized,
    ),
)]
pub(super) async fn get_org(
    State(state): State<AppState>,
    Client(client): Client,
) -> Result<Json<Org>, ProblemResponse> {
    Ok(Json(current(&state, client.org_id).await?))
}

/// Change the org's legal details, bank details or e-invoicing: a JSON merge patch (RFC 7396) of
/// `legal_name`, `address`, `vat_id`, `tax_registration_id`, `email`, `phone`, `bank` and
/// `einvoicing` and `locale`, once per `Idempotency-Key`, with an owner's key. Invoices already finalized keep
/// the seller they were finalized with.
#[utoipa::path(
    patch, path = "/api/v1/org", tag = "org",
    request_body(content = OrgEditable, description = "A JSON merge patch of the org's fields", content_type = "application/merge-patch+json"),
    params(New),
    responses(
        (status = 200, description = "Updated; replays return the stored response with `Idempotent-Replayed: true`", body = Org),
        (status = 400, description = "Missing or malformed Idempotency-Key, or a body that is not a JSON object", body = Problem, content_type = "application/problem+json"),
        Unauthorized,
        (status = 403, description = "The API key's role is not owner", body = Problem, content_type = "application/problem+json"),
        InFlight,
        (status = 422, description = "The result is invalid (the key stays usable), or the key was used with a different request", body = Problem, content_type = "application/problem+json"),
    ),
)]
pub(super) async fn patch_org(write: Write) -> Result<Response, ProblemResponse> {
    write.require(model::Action::ManageOrg)?;
    write
        .run(async |req, body| {
            let org = req.org();
            let patch = write::patch_body(body, "the org")?;
            let now = current(req.state(), org).await?;
            let edited = invoicer_core::patch::patched(&now.editable(), &patch)
                .map_err(|reason| write::unreadable("org", reason))?;
            let (details, bank) = edited.split();
            let mut fields = details.check().err().unwrap_or_default();
            if let Err(bad) = bank.check() {
                fields.extend(bad.into_iter().map(|(f, m)| {
                    let f = if f == "other" { "text".to_owned() } else { f };
                    (format!("bank.{f}"), m)
                }));
            }
            if let Err(bad) = edited.retry_days.check() {
                fields.extend(bad);
            }
            if let Err(bad) = edited.late_fees.check() {
                fields.extend(bad.into_iter().map(|(f, m)| (format!("late_fees.{f}"), m)));
            }
            let accounts = match model::check_bank_accounts(&edited.bank_accounts) {
                Ok(accounts) => accounts,
                Err(bad) => {
                    fields.extend(bad);
                    Vec::new()
                }
            };
            if let Some(rate) = edited.late_fees.tax_rate_id {
                let pool = &req.state().pool;
                if !invoicer_core::invoicing::tax_rates::is_active(pool, org, rate).await? {
                    let why = "Choose one of your tax rates that is not archived.".to_owned();
                    fields.insert("late_fees.tax_rate_id".into(), why);
                }
            }
            if orgs::peppol_id_taken(&req.state().pool, org, &details.peppol_id).await? {
                fields.insert("peppol_id".into(), orgs::PEPPOL_ID_TAKEN.into());
            }
            if !fields.is_empty() {
                return Err(write::invalid("org", fields));
            }
            let collection = (edited.retry_days.clone(), edited.late_fees.clone());
            let key = req.client().key_id;
            req.once(&patch, || {
                async |tx| {
                    let actor = invoicer_core::accounts::api_keys::actor(tx, key).await?;
                    orgs::save_details(tx, org, &actor, &details).await?;
                    orgs::save_bank_details(tx, org, &actor, &bank).await?;
                    orgs::save_collection(tx, org, &collection.0, &collection.1).await?;
                    orgs::save_bank_accounts(tx, org, &accounts).await?;
                    let (name, time_zone) = name_and_zone(tx, org).await?;
                    let saved = OrgEditable::of(
                        details.clone(),
                        bank.clone(),
                        collection.clone(),
                        accounts.clone(),
                    );
                    let body = Org::new(org.uuid(), name, time_zone, saved);
                    Ok((api::ok(&body), None))
                }
            })
            .await
        })
        .await
}

async fn name_and_zone(
    tx: &mut sqlx::PgConnection,
    org: model::OrgId,
) -> sqlx::Result<(String, String)> {
    // language=PostgreSQL
    let row = sqlx::query!("select name, time_zone from orgs where id = $1", org as _)
        .fetch_one(&mut *tx)
        .await?;
    Ok((row.name, row.time_zone))
}
