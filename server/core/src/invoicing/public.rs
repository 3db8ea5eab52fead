//! The customer's page of an invoice, `/i/{token}`: found by its unguessable token (never the id),
//! with no login. Opening it is recorded for the owner.

use sqlx::PgPool;

use crate::invoicing::invoices;
use model::Invoice;

/// What the customer's page shows.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PublicInvoice {
    pub org_id: uuid::Uuid,
    pub org_name: String,
    pub org_address: String,
    pub invoice: Invoice,
    /// The org may take card payments (the Pay button is shown).
    pub payments_enabled: bool,
    /// How to pay the org by transfer.
    pub bank: model::BankDetails,
    /// The org issues e-invoices: its PDFs are Factur-X.
    pub einvoicing: bool,
    /// The org's logo, accent colour and footer.
    pub branding: model::Branding,
    /// The language of the customer's page and PDF: the customer's, else the org's.
    pub locale: model::Locale,
    /// The payment methods the invoice's customer saved (none without a customer record; read
    /// only for the page, [`crate::payments::saved::of_invoice`]).
    pub saved_methods: Vec<model::collection::SavedMethod>,
}

impl PublicInvoice {
    /// The payment QR code's text (EPC069-12) for what is still due: only for a euro invoice that
    /// is open (or uncollectible) with money due, no debit under way, and an org IBAN to pay to.
    pub fn transfer_qr(&self) -> Option<String> {
        let inv = &self.invoice;
        let payable = matches!(
            inv.status,
            model::InvoiceStatus::Open | model::InvoiceStatus::Uncollectible
        ) && inv.payment_state != model::PaymentState::Processing;
        if !payable || !inv.currency.eq_ignore_ascii_case("eur") || self.bank.iban.is_empty() {
            return None;
        }
        let name = match self.bank.holder.as_str() {
            "" => self.org_name.as_str(),
            holder => holder,
        };
        model::epc_qr::Transfer {
            bic: &self.bank.bic,
            name,
            iban: &self.bank.iban,
            amount_cents: inv.amount_due_cents,
            reference: inv.payment_reference.as_deref().unwrap_or_default(),
        }
        .payload()
    }
}

/// Views closer together than this count once (a reload, a crawler of the customer's mail client):
/// bounds the writes a token can cause.
const VIEW_GAP_SECS: f64 = 60.0;

/// The invoice whose public token is `token`, and the view recorded. None for a malformed, unknown
/// or revoked (void) token alike.
pub async fn open(
    pool: &PgPool,
    token: &str,
    public_base: &str,
) -> sqlx::Result<Option<PublicInvoice>> {
    if !crate::invoicing::link_token::well_formed(token) {
        return Ok(None);
    }
    let mut conn = pool.acquire().await?;
    // language=PostgreSQL
    let found = sqlx::query_as!(
        Row,
        r#"
        with seen as (
            update invoices
            set first_viewed_at = coalesce(first_viewed_at, now()), last_viewed_at = now(),
                view_count = view_count + 1
            where public_token = $1
              and (last_viewed_at is null
                   or last_viewed_at < now() - make_interval(secs => $2))
        )
        select i.id, i.org_id, o.name as org_name, postal_text(o.address_line1, o.address_line2, o.postal_code, o.city, o.region, o.country) as org_address, o.payments_enabled,
               o.bank_account_holder, o.bank_iban, o.bank_bic, o.bank_other, o.payment_reference,
               o.einvoicing, o.accent_color, o.footer_text, (select token from org_logos where org_id = o.id) as logo_token,
               (select width from org_logos where org_id = o.id) as logo_width,
               (select height from org_logos where org_id = o.id) as logo_height,
               coalesce(cu.locale, o.locale) as locale
        from invoices i join orgs o on o.id = i.org_id
        left join customers cu on cu.id = i.customer_id
        where i.public_token = $1
        "#,
        token,
        VIEW_GAP_SECS
    )
    .fetch_optional(&mut *conn)
    .await?;
    with_invoice(&mut conn, found, public_base).await
}

/// Invoice `id` as its customer's page shows it, without counting a view (for its email's PDF).
pub async fn by_id(
    pool: &PgPool,
    id: uuid::Uuid,
    public_base: &str,
) -> sqlx::Result<Option<PublicInvoice>> {
    let mut conn = pool.acquire().await?;
    // language=PostgreSQL
    let found = sqlx::query_as!(
        Row,
        r#"
        select i.id, i.org_id, o.name as org_name, postal_text(o.address_line1, o.address_line2, o.postal_code, o.city, o.region, o.country) as org_address, o.payments_enabled,
               o.bank_account_holder, o.bank_iban, o.bank_bic, o.bank_other, o.payment_reference,
               o.einvoicing, o.accent_color, o.footer_text, (select token from org_logos where org_id = o.id) as logo_token,
               (select width from org_logos where org_id = o.id) as logo_width,
               (select height from org_logos where org_id = o.id) as logo_height,
               coalesce(cu.locale, o.locale) as locale
        from invoices i join orgs o on o.id = i.org_id
        left join customers cu on cu.id = i.customer_id
        where i.id = $1
        "#,
        id
    )
    .fetch_optional(&mut *conn)
    .await?;
    with_invoice(&mut conn, found, public_base).await
}

/// What the customer's page reads of the invoice's org.
struct Row {
    id: uuid::Uuid,
    org_id: uuid::Uuid,
    org_name: String,
    org_address: Option<String>,
    payments_enabled: bool,
    bank_account_holder: String,
    bank_iban: String,
    bank_bic: String,
    bank_other: String,
    payment_reference: String,
    einvoicing: bool,
    accent_color: Option<String>,
    footer_text: String,
    logo_token: Option<String>,
    logo_width: Option<i32>,
    logo_height: Option<i32>,
    locale: Option<String>,
}

impl Row {
    fn with(self, invoice: Invoice) -> PublicInvoice {
        PublicInvoice {
            org_id: self.org_id,
            org_name: self.org_name,
            org_address: self.org_address.unwrap_or_default(),
            invoice,
            payments_enabled: self.payments_enabled,
            bank: model::BankDetails {
                holder: self.bank_account_holder,
                iban: self.bank_iban,
                bic: self.bank_bic,
                other: self.bank_other,
                reference: self.payment_reference,
            },
            einvoicing: self.einvoicing,
            locale: self
                .locale
                .as_deref()
                .and_then(model::Locale::parse)
                .unwrap_or_default(),
            branding: model::Branding {
                accent_color: self.accent_color,
                footer_text: self.footer_text,
                logo: match (self.logo_token, self.logo_width, self.logo_height) {
                    (Some(token), Some(width), Some(height)) => Some(model::Logo {
                        token,
                        width: width as u32,
                        height: height as u32,
                    }),
                    _ => None,
                },
            },
            saved_methods: Vec::new(),
        }
    }
}

/// The page's row with the invoice it names (none when either is gone).
async fn with_invoice(
    conn: &mut sqlx::PgConnection,
    found: Option<Row>,
    public_base: &str,
) -> sqlx::Result<Option<PublicInvoice>> {
    let Some(found) = found else {
        return Ok(None);
    };
    let id = model::InvoiceId::from(found.id);
    let invoice = invoices::get(conn, found.org_id.into(), id, public_base).await?;
    Ok(invoice.map(|invoice| found.with(invoice)))
}
