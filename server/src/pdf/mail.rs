//! The invoice's PDF as its email attaches it: the customer's `/i/{token}/pdf` (a Factur-X PDF for
//! an e-invoicing org, in the org's look), taken from storage or drawn on the same bounded
//! renderers.

use std::sync::Arc;

use invoicer_core::mail::InvoicePdf;
use sqlx::PgPool;
use uuid::Uuid;

use super::Paper;

/// The renderer the workers hand to the invoice email; `public_base`: the customer pages' origin
/// (the invoice is read as its page reads it, so the email and the page share one stored PDF).
pub fn renderer(public_base: &str) -> InvoicePdf {
    let public_base: Arc<str> = public_base.into();
    InvoicePdf(Arc::new(move |pool: PgPool, invoice: Uuid| {
        let public_base = public_base.clone();
        Box::pin(async move { draw(&pool, invoice, &public_base).await })
    }))
}

async fn draw(
    pool: &PgPool,
    invoice: Uuid,
    public_base: &str,
) -> Result<Option<(String, Vec<u8>)>, String> {
    let found = invoicer_core::invoicing::public::by_id(pool, invoice, public_base)
        .await
        .map_err(|e| e.to_string())?;
    let Some(found) = found else {
        return Ok(None);
    };
    let Some(number) = found.invoice.number.clone() else {
        return Ok(None);
    };
    let wait = std::time::Duration::from_secs(30);
    let bytes = super::stored::invoice(pool, found, Paper::A4, wait)
        .await
        .map_err(|e| e.to_string())?;
    let file: String = format!("invoice-{number}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    Ok(Some((format!("{file}.pdf"), bytes)))
}
