//! The emails about an invoice, to its customer: the invoice itself, a receipt for a payment, and a
//! payment reminder. Each is built from the current data when it is sent; a draft or a void invoice
//! (no page to link to) is never mailed.

use lettre::message::Mailbox;
use lettre::Message;
use sqlx::PgPool;

use super::{branded_message, InvoicePdf, Look, RenderError};
use crate::model::format_money;
use crate::ssr::outbox::Leased;

/// What the email says beside the invoice: nothing (the invoice), a payment (a receipt), or a
/// reminder's step and message.
enum Kind {
    Invoice,
    Receipt(i64, String),
    Reminder(i64, String),
}

/// `org`'s look in its emails.
async fn look(pool: &PgPool, org: uuid::Uuid) -> Result<Look, RenderError> {
    let mut conn = pool.acquire().await?;
    let branding = crate::ssr::branding::of(&mut conn, org).await?;
    let logo_png = match branding.logo {
        Some(_) => crate::ssr::branding::logo_of(&mut conn, org).await?,
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
               i.total_cents, i.amount_paid_cents, i.amount_credited_cents, i.due_date::text as "due!",
               o.name as org_name,
               o.bank_account_holder, o.bank_iban, o.bank_bic, o.bank_other, o.payment_reference
        from invoices i join orgs o on o.id = i.org_id
        where i.id = $1
        "#,
        invoice_id
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
    let link = crate::ssr::invoices::public_url(public_url, &token);
    let total = format_money(inv.total_cents, &inv.currency);
    let bank = crate::model::BankDetails {
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
                .lines(&number)
                .into_iter()
                .map(|(label, value)| format!("  {label}: {value}"))
                .collect();
            format!("\nPay by bank transfer:\n{}\n", lines.join("\n"))
        } else {
            String::new()
        };
    let due = format_money(
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
    let look = look(pool, inv.org_id).await?;
    let (subject, text) = match kind {
        Kind::Invoice => (
            format!("Invoice {number} from {}", inv.org_name),
            format!(
                "Hello {},\n\n{} has sent you invoice {number} for {total}, due {}.\n\n{link}\n{transfer}",
                inv.customer_name, inv.org_name, inv.due
            ),
        ),
        Kind::Reminder(offset, said) => (
            if offset < 0 {
                format!("Reminder: invoice {number} is due on {}", inv.due)
            } else if offset == 0 {
                format!("Reminder: invoice {number} is due today")
            } else {
                format!("Reminder: invoice {number} was due on {}", inv.due)
            },
            format!(
                "Hello {},\n\n{said}\n\nInvoice {number} from {}: {due} of {total} is still to pay, due {}.\n\n{link}\n{transfer}",
                inv.customer_name, inv.org_name, inv.due
            ),
        ),
        Kind::Receipt(amount, currency) => (
            format!("Receipt for {number}"),
            format!(
                "Hello {},\n\nWe received your payment of {} for invoice {number} ({total}).\nThank you!\n\n{link}\n",
                inv.customer_name,
                format_money(amount, &currency)
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
               q.total_cents, q.expires_on::text as "expires!", o.name as org_name
        from quotes q join orgs o on o.id = q.org_id
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
    let link = crate::ssr::quotes::public_url(public_url, &token);
    let total = format_money(q.total_cents, &q.currency);
    let subject = format!("Quote {number} from {}", q.org_name);
    let text = format!(
        "Hello {},\n\n{} has sent you quote {number} for {total}, valid until {}.\n\n\
         Accept or decline it here:\n{link}\n",
        q.customer_name, q.org_name, q.expires
    );
    let look = look(pool, q.org_id).await?;
    branded_message(row, from, &q.customer_email, subject, text, &look, None)
}
