//! Email: lettre over SMTP (`SMTP_URL`), or `.eml` files in a folder when no SMTP server is configured.
//! Every message's Message-ID is its outbox row id, so a redelivery after a crash is recognisable.

use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::client::AsyncSmtpConnection;
use lettre::transport::smtp::extension::ClientId;
use lettre::{AsyncFileTransport, AsyncTransport, Message, Tokio1Executor};
use sqlx::PgPool;

use crate::model::format_money;
use crate::ssr::outbox::Leased;

#[derive(Clone)]
pub enum Mailer {
    /// Plain SMTP to `host:port`, one connection per message.
    Smtp {
        host: String,
        port: u16,
    },
    Files(AsyncFileTransport<Tokio1Executor>),
}

impl Mailer {
    /// `smtp://host:port` (plain SMTP, as local relays and test sinks speak), or files in `dir`.
    pub fn new(smtp_url: Option<&str>, dir: &std::path::Path) -> Result<Mailer, String> {
        match smtp_url {
            Some(url) => {
                let parsed = url::Url::parse(url).map_err(|e| format!("SMTP_URL {url}: {e}"))?;
                if parsed.scheme() != "smtp" {
                    return Err(format!("SMTP_URL {url}: only smtp:// is supported"));
                }
                let host = parsed
                    .host_str()
                    .ok_or_else(|| format!("SMTP_URL {url}: no host"))?;
                Ok(Mailer::Smtp {
                    host: host.to_owned(),
                    port: parsed.port().unwrap_or(25),
                })
            }
            None => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("mail folder {}: {e}", dir.display()))?;
                Ok(Mailer::Files(AsyncFileTransport::<Tokio1Executor>::new(
                    dir,
                )))
            }
        }
    }

    pub async fn send(&self, message: Message) -> Result<(), String> {
        match self {
            Mailer::Smtp { host, port } => {
                tokio::time::timeout(SMTP_TIMEOUT, smtp_send(host, *port, &message))
                    .await
                    .map_err(|_| format!("SMTP: no answer within {SMTP_TIMEOUT:?}"))?
            }
            Mailer::Files(t) => t.send(message).await.map(drop).map_err(|e| e.to_string()),
        }
    }
}

const SMTP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// One SMTP session for one message. lettre's own transport leaves Nagle's algorithm on, and it writes
/// the message and its closing `\r\n.\r\n` as two writes before reading the reply: the second then
/// waits for the server's delayed ACK, ~40 ms per email. Our own socket has TCP_NODELAY.
async fn smtp_send(host: &str, port: u16, message: &Message) -> Result<(), String> {
    let stream = tokio::net::TcpStream::connect((host, port))
        .await
        .map_err(|e| format!("SMTP connect to {host}:{port}: {e}"))?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let mut connection =
        AsyncSmtpConnection::connect_with_transport(Box::new(stream), &ClientId::default())
            .await
            .map_err(|e| e.to_string())?;
    connection
        .send(message.envelope(), &message.formatted())
        .await
        .map_err(|e| e.to_string())?;
    // The message is accepted; a failed QUIT changes nothing about that.
    let _ = connection.quit().await;
    Ok(())
}

/// Why a row cannot become a message; retrying will not help.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("{0}")]
    Permanent(String),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

const FROM: &str = "invoicer <billing@invoicer.invalid>";

/// Builds the message for an outbox row from the current data.
pub async fn render(pool: &PgPool, row: &Leased, public_url: &str) -> Result<Message, RenderError> {
    let id = |field: &str| {
        row.payload[field]
            .as_str()
            .and_then(|s| uuid::Uuid::try_parse(s).ok())
            .ok_or_else(|| RenderError::Permanent(format!("payload has no {field}")))
    };
    let (invoice_id, subject_kind) = match row.kind.as_str() {
        "invoice_email" => (id("invoice_id")?, None),
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
            (p.invoice_id, Some((p.amount_cents, p.currency)))
        }
        other => return Err(RenderError::Permanent(format!("unknown kind {other}"))),
    };
    // language=PostgreSQL
    let inv = sqlx::query!(
        r#"
        select i.number, i.customer_name, i.customer_email, i.currency, i.total_cents,
               i.amount_paid_cents, i.due_date::text as "due!", o.name as org_name
        from invoices i join orgs o on o.id = i.org_id
        where i.id = $1
        "#,
        invoice_id
    )
    .fetch_optional(pool)
    .await?
    .ok_or_else(|| RenderError::Permanent(format!("invoice {invoice_id} not found")))?;
    let number = crate::model::invoice_number(inv.number);
    let link = format!("{public_url}/invoices/{invoice_id}");
    let total = format_money(inv.total_cents, &inv.currency);
    let (subject, text) = match subject_kind {
        None => (
            format!("Invoice {number} from {}", inv.org_name),
            format!(
                "Hello {},\n\n{} has sent you invoice {number} for {total}, due {}.\n\n{link}\n",
                inv.customer_name, inv.org_name, inv.due
            ),
        ),
        Some((amount, currency)) => (
            format!("Receipt for {number}"),
            format!(
                "Hello {},\n\nWe received your payment of {} for invoice {number} ({total}).\nThank you!\n\n{link}\n",
                inv.customer_name,
                format_money(amount, &currency)
            ),
        ),
    };
    let html = format!(
        "<p>{}</p>",
        html_escape(&text)
            .replace("\n\n", "</p><p>")
            .replace('\n', "<br>")
    );
    let to: Mailbox = inv
        .customer_email
        .parse()
        .map_err(|e| RenderError::Permanent(format!("recipient {}: {e}", inv.customer_email)))?;
    Message::builder()
        .message_id(Some(format!("<{}@invoicer>", row.id)))
        .from(FROM.parse().expect("a valid sender"))
        .to(to)
        .subject(subject)
        .multipart(MultiPart::alternative_plain_html(text, html))
        .map_err(|e| RenderError::Permanent(e.to_string()))
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
