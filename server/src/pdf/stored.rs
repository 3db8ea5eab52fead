//! Finalized documents' PDFs, drawn once per version and served from storage after (the table
//! `document_pdfs`). A document's version is a digest of everything its PDF is drawn from: the
//! document as its customer page reads it, the org's look, the language, the paper and the renderer
//! build (`INVOICER_RENDERER`, a digest of the sources, locales, fonts and lock file). So a payment,
//! the invoice turning overdue, a new logo or a new build draws it again, and nothing has to
//! remember to invalidate anything: a stale version is never asked for.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use invoicer_core::documents::i18n::Tr;
use invoicer_core::invoicing::credit_notes::ByToken;
use invoicer_core::invoicing::public::PublicInvoice;
use invoicer_core::throttle::{bounded, Bounded};
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use tokio::sync::Semaphore;
use uuid::Uuid;

use super::{Brand, Paper};

/// PDFs drawn at once: drawing is CPU work, so a token holder cannot occupy every core. A slot is
/// held by the drawing itself, to its end, however early the client goes away.
pub static RENDERS: LazyLock<Arc<Semaphore>> = LazyLock::new(|| {
    Arc::new(Semaphore::new(
        std::thread::available_parallelism().map_or(2, |n| n.get()),
    ))
});

#[derive(Debug)]
pub enum Error {
    Db(sqlx::Error),
    /// Every renderer stayed busy for as long as the caller would wait.
    Busy,
    /// The drawing panicked.
    Task(tokio::task::JoinError),
}

impl From<sqlx::Error> for Error {
    fn from(e: sqlx::Error) -> Error {
        Error::Db(e)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Db(e) => write!(f, "{e}"),
            Error::Busy => f.write_str("every renderer is busy"),
            Error::Task(e) => write!(f, "drawing a pdf: {e}"),
        }
    }
}

/// One drawing of one document on one paper.
struct Version {
    document: Uuid,
    org: model::OrgId,
    paper: Paper,
    digest: [u8; 32],
}

impl Version {
    fn of(
        org: model::OrgId,
        document: Uuid,
        paper: Paper,
        drawn_from: &impl serde::Serialize,
    ) -> Version {
        let mut hash = Sha256::new();
        hash.update(env!("INVOICER_RENDERER").as_bytes());
        hash.update(paper.name().as_bytes());
        hash.update(serde_json::to_vec(drawn_from).expect("documents serialize"));
        Version {
            document,
            org,
            paper,
            digest: hash.finalize().into(),
        }
    }

    /// The stored PDF of this version, if it was drawn before.
    async fn find(&self, pool: &PgPool) -> sqlx::Result<Option<Vec<u8>>> {
        // language=PostgreSQL
        sqlx::query_scalar!(
            "select pdf from document_pdfs where document_id = $1 and paper = $2 and version = $3",
            self.document,
            self.paper.name(),
            &self.digest[..],
        )
        .fetch_optional(pool)
        .await
    }

    /// Keeps `pdf` as this version, in place of any other version of the document on this paper.
    /// Two requests drawing the same new version both write it; the second changes nothing.
    async fn keep(&self, pool: &PgPool, pdf: &[u8]) -> sqlx::Result<()> {
        // language=PostgreSQL
        sqlx::query!(
            r#"
            insert into document_pdfs (document_id, paper, org_id, version, pdf)
            values ($1, $2, $3, $4, $5)
            on conflict (document_id, paper) do update
                set version = excluded.version, pdf = excluded.pdf, drawn_at = now()
                where document_pdfs.version <> excluded.version
            "#,
            self.document,
            self.paper.name(),
            self.org as _,
            &self.digest[..],
            pdf,
        )
        .execute(pool)
        .await?;
        Ok(())
    }

    /// The stored PDF, else `draw`'s (once `prepare` has read what only drawing needs), kept. A
    /// failure to keep it is logged: the customer still gets the PDF.
    async fn stored_or_drawn<P: Send + 'static>(
        &self,
        pool: &PgPool,
        wait: Duration,
        prepare: impl std::future::Future<Output = sqlx::Result<P>>,
        draw: impl FnOnce(P) -> Vec<u8> + Send + 'static,
    ) -> Result<Vec<u8>, Error> {
        if let Some(pdf) = self.find(pool).await? {
            metrics::counter!("invoicer_pdfs_total", "from" => "storage").increment(1);
            return Ok(pdf);
        }
        let prepared = prepare.await?;
        let pdf = bounded(&RENDERS, wait, move || draw(prepared))
            .await
            .map_err(|e| match e {
                Bounded::Busy => Error::Busy,
                Bounded::Task(e) => Error::Task(e),
            })?;
        metrics::counter!("invoicer_pdfs_total", "from" => "drawn").increment(1);
        if let Err(e) = self.keep(pool, &pdf).await {
            tracing::warn!(error = %e, document = %self.document, "keeping a drawn pdf");
        }
        Ok(pdf)
    }
}

/// A document's CII XML when its data makes a valid e-invoice (a Factur-X PDF carries it), else
/// none (a plain PDF); a database error is the caller's.
fn valid_cii(
    made: Result<
        invoicer_core::documents::einvoice::Document,
        invoicer_core::documents::einvoice::InvoiceDocumentError,
    >,
) -> sqlx::Result<Option<Vec<u8>>> {
    use invoicer_core::documents::einvoice::{InvoiceDocumentError, Syntax};
    match made {
        Ok(d) if d.problems().is_empty() => Ok(Some(d.xml(Syntax::Cii))),
        Err(InvoiceDocumentError::Db(e)) => Err(e),
        _ => Ok(None),
    }
}

/// The invoice's PDF (a Factur-X PDF for an e-invoicing org when its data makes a valid
/// e-invoice), waiting at most `wait` for a renderer when it has to be drawn.
pub async fn invoice(
    pool: &PgPool,
    found: PublicInvoice,
    paper: Paper,
    wait: Duration,
) -> Result<Vec<u8>, Error> {
    let version = {
        let mut drawn_from = found.clone();
        // When the customer last opened it: not drawn.
        drawn_from.invoice.viewed_at = None;
        Version::of(found.org_id.into(), found.invoice.id, paper, &drawn_from)
    };
    // The e-invoice is built from the invoice's snapshots (seller, buyer, lines, payments), which
    // the digest covers through the invoice as read.
    let (org, id, einvoicing, branding) = (
        found.org_id.into(),
        found.invoice.id,
        found.einvoicing,
        found.branding.clone(),
    );
    let prepare = async move {
        let mut conn = pool.acquire().await?;
        let cii = if einvoicing {
            valid_cii(
                invoicer_core::documents::einvoice::invoice_document(&mut conn, org, id).await,
            )?
        } else {
            None
        };
        let brand = Brand::of(&mut conn, org, &branding).await?;
        Ok((cii, brand))
    };
    version
        .stored_or_drawn(pool, wait, prepare, move |(cii, brand)| {
            super::render(&found, paper, cii, brand)
        })
        .await
}

/// The credit note's PDF (Factur-X, type 381, for an e-invoicing org when its data allows).
pub async fn credit_note(
    pool: &PgPool,
    found: ByToken,
    branding: model::Branding,
    locale: model::Locale,
    wait: Duration,
) -> Result<Vec<u8>, Error> {
    let drawn_from = (
        &found.note,
        &found.org_name,
        found.einvoicing,
        &branding,
        locale,
    );
    let version = Version::of(found.org_id.into(), found.note.id, Paper::A4, &drawn_from);
    let (org, id, einvoicing) = (
        model::OrgId::from(found.org_id),
        found.note.id,
        found.einvoicing,
    );
    let prepare = async move {
        let mut conn = pool.acquire().await?;
        let cii = if einvoicing {
            valid_cii(
                invoicer_core::documents::einvoice::credit_note_document(&mut conn, org, id).await,
            )?
        } else {
            None
        };
        let brand = Brand::of(&mut conn, org, &branding).await?;
        Ok((cii, brand))
    };
    let (note, org_name) = (found.note, found.org_name);
    version
        .stored_or_drawn(pool, wait, prepare, move |(cii, brand)| {
            super::credit_note::render(&note, &org_name, Paper::A4, cii, brand, Tr::new(locale))
        })
        .await
}
