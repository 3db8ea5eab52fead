//! The emails about an invoice, to its customer: the invoice itself, a receipt for a payment, and a
//! payment reminder. Each is built from the current data when it is sent; a draft or a void invoice
//! (no page to link to) is never mailed.

use lettre::message::Mailbox;
use lettre::Message;
use model::OrgId;
use sqlx::PgPool;

use super::{branded_message, InvoicePdf, Look, RenderError};
use crate::documents::i18n::Tr;
use crate::outbox::Leased;
use model::{Locale, Words};

/// What the email says beside the invoice: nothing (the invoice), a payment (a receipt), or a
/// reminder's step and message.
enum Kind {
    Invoice,
    Receipt(i64, String),
    Reminder(i64, String),
}

/// `org`'s look in its emails.
async fn look(pool: &PgPool, org: OrgId) -> Result<Look, RenderError> {
    let mut conn = pool.acquire().await?;
    let branding = crate::documents::branding::of(&mut conn, org).await?;
    let logo_png = match branding.logo {
        Some(_) => crate::documents::branding::logo_of(&mut conn, org).await?,
        None => None,
    };
    Ok(Look {
        accent: branding.rgb(),
        logo_png,
        footer: branding.footer_text,
    })
}

pub(super) async fn render(
    pool: &PgPool,
    row: &Leased,
    public_url: &str,
    from: &Mailbox,
    pdf: Option<&InvoicePdf>,
) -> Result<Message, RenderError> {
    let id = |field: &str| {
        row.payload[field]
            .as_str()
            .and_then(|s| uuid::Uuid::try_parse(s).ok())
            .ok_or_else(|| RenderError::Permanent(format!("payload has no {field}")))
    };
    let (invoice_id, kind) = match row.kind.as_str() {
        "quote_email" => return quote(pool, row, public_url, from, id("quote_id")?).await,
        "invoice_email" => (id("invoice_id")?, Kind::Invoice),
        "reminder" => (
            id("invoice_id")?,
            Kind::Reminder(
                row.payload["offset_days"].as_i64().unwrap_or(0),
                row.payload["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            ),
        ),
        "payment_receipt" => {
            let payment = id("payment_id")?;
            // language=PostgreSQL
            let p = sqlx::query!(
                "select invoice_id, amount_cents, currency from payments where id = $1",
                payment
            )
            .fetch_optional(pool)
            .await?
            .ok_or_else(|| RenderError::Permanent(format!("payment {payment} not found")))?;
            (p.invoice_id, Kind::Receipt(p.amount_cents, p.currency))
        }
        other => return Err(RenderError::Permanent(format!("unknown kind {other}"))),
    };
    // language=PostgreSQL
    let inv = sqlx::query!(
        r#"
        select i.org_id, i.number_text, i.public_token, i.customer_name, i.customer_email, i.currency,
               i.total_cents, i.amount_paid_cents, i.amount_credited_cents,
               i.due_date as "due_date: chrono::NaiveDate", o.name as org_name,
               o.bank_account_holder, o.bank_iban, o.bank_bic, o.bank_other, o.payment_reference,
               i.payment_reference as creditor_reference,
               coalesce(cu.locale, o.locale) as "locale!"
        from invoices i join orgs o on o.id = i.org_id
        left join customers cu on cu.id = i.customer_id
        where i.id = $1
        "#,
        invoice_id as _
    )
    .fetch_optional(pool)
    .await?
    .ok_or_else(|| RenderError::Permanent(format!("invoice {invoice_id} not found")))?;
    // Emails link to the customer's own page; a draft or a void invoice has none, and is not mailed.
    let (Some(number), Some(token)) = (inv.number_text, inv.public_token) else {
        return Err(RenderError::Permanent(format!(
            "invoice {invoice_id} is a draft or void: it has no page to link to"
        )));
    };
    let link = crate::invoicing::invoices::public_url(public_url, &token);
    let tr = Tr::new(Locale::parse(&inv.locale).unwrap_or_default());
    let total = tr.money(inv.total_cents, &inv.currency);
    let due_on = tr.date(inv.due_date);
    let bank = model::BankDetails {
        holder: inv.bank_account_holder,
        iban: inv.bank_iban,
        bic: inv.bank_bic,
        other: inv.bank_other,
        reference: inv.payment_reference,
    };
    // How to pay by transfer, while something is due.
    let transfer =
        if bank.is_set() && inv.total_cents > inv.amount_credited_cents + inv.amount_paid_cents {
            let lines: Vec<String> = bank
                .lines(&number, inv.creditor_reference.as_deref(), &tr)
                .into_iter()
                .map(|(label, value)| format!("  {label}: {value}"))
                .collect();
            format!("\n{}\n{}\n", tr.t("mail-transfer"), lines.join("\n"))
        } else {
            String::new()
        };
    let left = tr.money(
        inv.total_cents - inv.amount_credited_cents - inv.amount_paid_cents,
        &inv.currency,
    );
    // The invoice itself travels with its email as a PDF (a Factur-X one for an e-invoicing org);
    // a failure to draw it is a failure to retry, not an email without it.
    let attachment = match (&kind, pdf) {
        (Kind::Invoice, Some(pdf)) => (pdf.0)(pool.clone(), invoice_id)
            .await
            .map_err(|e| RenderError::Db(sqlx::Error::Protocol(format!("invoice pdf: {e}"))))?,
        _ => None,
    };
    let look = look(pool, inv.org_id.into()).await?;
    let org = inv.org_name.as_str();
    let customer = inv.customer_name.as_str();
    let (subject, text) = match kind {
        Kind::Invoice => (
            tr.t_args("mail-invoice-subject", &[("number", &number), ("org", org)]),
            format!(
                "{}\n\n{link}\n{transfer}",
                tr.t_args(
                    "mail-invoice-body",
                    &[
                        ("customer", customer),
                        ("org", org),
                        ("number", &number),
                        ("total", &total),
                        ("due", &due_on),
                    ],
                )
            ),
        ),
        Kind::Reminder(offset, said) => {
            let subject = match offset {
                ..0 => "mail-reminder-subject-before",
                0 => "mail-reminder-subject-today",
                _ => "mail-reminder-subject-after",
            };
            let body = tr.t_args(
                "mail-reminder-body",
                &[
                    ("number", &number),
                    ("org", org),
                    ("left", &left),
                    ("total", &total),
                    ("due", &due_on),
                ],
            );
            (
                tr.t_args(subject, &[("number", &number), ("due", &due_on)]),
                format!(
                    "{}\n\n{said}\n\n{body}\n\n{link}\n{transfer}",
                    tr.t_args("mail-hello", &[("customer", customer)])
                ),
            )
        }
        Kind::Receipt(amount, currency) => (
            tr.t_args("mail-receipt-subject", &[("number", &number)]),
            format!(
                "{}\n\n{link}\n",
                tr.t_args(
                    "mail-receipt-body",
                    &[
                        ("customer", customer),
                        ("amount", &tr.money(amount, &currency)),
                        ("number", &number),
                        ("total", &total),
                    ],
                )
            ),
        ),
    };
    branded_message(
        row,
        from,
        &inv.customer_email,
        subject,
        text,
        &look,
        attachment,
    )
}

/// A quote to its customer: the amount, until when it can be accepted, and the page to accept it on.
async fn quote(
    pool: &PgPool,
    row: &Leased,
    public_url: &str,
    from: &Mailbox,
    quote: uuid::Uuid,
) -> Result<Message, RenderError> {
    // language=PostgreSQL
    let q = sqlx::query!(
        r#"
        select q.org_id, q.number_text, q.public_token, q.customer_name, q.customer_email, q.currency,
               q.total_cents, q.expires_on as "expires_on: chrono::NaiveDate", o.name as org_name,
               coalesce(cu.locale, o.locale) as "locale!"
        from quotes q join orgs o on o.id = q.org_id
        left join customers cu on cu.id = q.customer_id
        where q.id = $1
        "#,
        quote
    )
    .fetch_optional(pool)
    .await?
    .ok_or_else(|| RenderError::Permanent(format!("quote {quote} not found")))?;
    let (Some(number), Some(token)) = (q.number_text, q.public_token) else {
        return Err(RenderError::Permanent(format!(
            "quote {quote} is a draft: it has no page to link to"
        )));
    };
    let link = crate::invoicing::quotes::public_url(public_url, &token);
    let tr = Tr::new(Locale::parse(&q.locale).unwrap_or_default());
    let total = tr.money(q.total_cents, &q.currency);
    let subject = tr.t_args(
        "mail-quote-subject",
        &[("number", &number), ("org", &q.org_name)],
    );
    let body = tr.t_args(
        "mail-quote-body",
        &[
            ("customer", &q.customer_name),
            ("org", &q.org_name),
            ("number", &number),
            ("total", &total),
            ("date", &tr.date(q.expires_on)),
        ],
    );
    let text = format!("{body}\n{link}\n");
    let look = look(pool, q.org_id.into()).await?;
    branded_message(row, from, &q.customer_email, subject, text, &look, None)
}
