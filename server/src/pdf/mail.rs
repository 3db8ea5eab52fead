//! The invoice's PDF as its email attaches it: drawn like the customer's `/i/{token}/pdf` (a
//! Factur-X PDF for an e-invoicing org, in the org's look), on the same bounded renderers.

use std::sync::Arc;

use app::ssr::mail::InvoicePdf;
use sqlx::PgPool;
use uuid::Uuid;

use super::{Brand, Paper};

/// The renderer the workers hand to the invoice email.
pub fn renderer() -> InvoicePdf {
    InvoicePdf(Arc::new(|pool: PgPool, invoice: Uuid| {
        Box::pin(async move { draw(&pool, invoice).await })
    }))
}

async fn draw(pool: &PgPool, invoice: Uuid) -> Result<Option<(String, Vec<u8>)>, String> {
    let found = app::ssr::public::by_id(pool, invoice, "")
        .await
        .map_err(|e| e.to_string())?;
    let Some(found) = found else {
        return Ok(None);
    };
    let Some(number) = found.invoice.number.clone() else {
        return Ok(None);
    };
    let mut conn = pool.acquire().await.map_err(|e| e.to_string())?;
    let cii = if found.einvoicing {
        use app::ssr::einvoice::{invoice_document, InvoiceDocumentError, Syntax};
        match invoice_document(&mut conn, found.org_id, found.invoice.id).await {
            Ok(d) if d.problems().is_empty() => Some(d.xml(Syntax::Cii)),
            Err(InvoiceDocumentError::Db(e)) => return Err(e.to_string()),
            _ => None,
        }
    } else {
        None
    };
    let brand = Brand::of(&mut conn, found.org_id, &found.branding)
        .await
        .map_err(|e| e.to_string())?;
    drop(conn);
    let wait = std::time::Duration::from_secs(30);
    let bytes = app::ssr::throttle::bounded(&crate::public::RENDERS, wait, move || {
        super::render(&found, Paper::A4, cii, brand)
    })
    .await
    .map_err(|_| "every renderer is busy".to_owned())?;
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
