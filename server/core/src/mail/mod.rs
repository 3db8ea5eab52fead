//! Email: the message for each outbox row, built from the current data when it is sent (an
//! account email from its payload, an email to a customer in `invoice`); `transport` sends it.
//! Every message's Message-ID is its outbox row id, so a redelivery after a crash is recognisable.

pub mod gate;
mod invoice;
mod transport;

use lettre::message::{Mailbox, MultiPart};
use lettre::Message;
use sqlx::PgPool;

use crate::outbox::Leased;

pub use transport::{parse_from, FailureClass, Mailer, Security, SendError, SmtpTarget, DEV_FROM};

/// Why a row cannot become a message; retrying will not help.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("{0}")]
    Permanent(String),
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// An invoice's PDF as its email attaches it: `(file name, bytes)` for the invoice's id, none when
/// it has none to show (a draft). Made by the server crate, which draws PDFs.
#[derive(Clone)]
pub struct InvoicePdf(
    #[allow(clippy::type_complexity)]
    pub  std::sync::Arc<
        dyn Fn(
                PgPool,
                uuid::Uuid,
            ) -> std::pin::Pin<
                Box<
                    dyn std::future::Future<Output = Result<Option<(String, Vec<u8>)>, String>>
                        + Send,
                >,
            > + Send
            + Sync,
    >,
);

impl std::fmt::Debug for InvoicePdf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InvoicePdf")
    }
}

/// Builds the message for an outbox row from the current data.
pub async fn render(
    pool: &PgPool,
    row: &Leased,
    public_url: &str,
    from: &Mailbox,
    pdf: Option<&InvoicePdf>,
) -> Result<Message, RenderError> {
    if let Some(account_mail) = account_message(row, public_url)? {
        return message(
            row,
            from,
            &account_mail.to,
            account_mail.subject,
            account_mail.text,
        );
    }
    invoice::render(pool, row, public_url, from, pdf).await
}

/// An account email (invitation, address verification, password reset): everything it says is in
/// its payload, its link included until it is sent.
struct AccountMail {
    to: String,
    subject: String,
    text: String,
}

fn account_message(row: &Leased, public_url: &str) -> Result<Option<AccountMail>, RenderError> {
    let field = |name: &str| {
        row.payload[name]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| RenderError::Permanent(format!("payload has no {name}")))
    };
    let base = public_url.trim_end_matches('/');
    let mail = match row.kind.as_str() {
        "invitation" => {
            let (org, role, by) = (field("org_name")?, field("role")?, field("invited_by")?);
            let link = format!("{base}/invite/{}", field("token")?);
            AccountMail {
                to: field("to")?,
                // The org's name is the inviter's words: the subject carries at most 60 of its
                // characters and no address, so it cannot pose as a message from someone else.
                subject: format!(
                    "Invitation to join {} on invoicer",
                    org.chars().take(60).collect::<String>()
                ),
                text: format!(
                    "Hello,\n\n{by} invited you to join {org} on invoicer as {role}.\n\n\
                     Accept the invitation within 7 days:\n{link}\n\n\
                     If you did not expect this, ignore this email.\n"
                ),
            }
        }
        "payment_method_link" => {
            let org = field("org_name")?.chars().take(60).collect::<String>();
            AccountMail {
                to: field("to")?,
                subject: format!("{org}: save a payment method for your invoices"),
                text: format!(
                    "Hello,\n\n{org} invites you to save a card or a SEPA Direct Debit mandate, \
                     so that your next invoices are paid automatically when they are issued:\n{}\n\n\
                     You can remove it at any time from any of your invoice pages.\n",
                    field("url")?
                ),
            }
        }
        "charge_action" => {
            let org = field("org_name")?.chars().take(60).collect::<String>();
            AccountMail {
                to: field("to")?,
                subject: format!("{org}: please confirm your payment"),
                text: format!(
                    "Hello,\n\nYour bank asks you to confirm the payment of invoice {} ({}) to \
                     {org}. Confirm it here:\n{}\n\nUntil you do, nothing is charged.\n",
                    field("number")?,
                    field("amount")?,
                    field("url")?
                ),
            }
        }
        "verify_email" => {
            let link = format!("{base}/verify-email/{}", field("token")?);
            AccountMail {
                to: field("to")?,
                subject: "Confirm your email address".into(),
                text: format!(
                    "Hello,\n\nConfirm that this is your address for invoicer (within 7 days):\n{link}\n\n\
                     If you did not sign up or change your address, ignore this email.\n"
                ),
            }
        }
        "reset_password" => {
            let link = format!("{base}/reset-password/{}", field("token")?);
            AccountMail {
                to: field("to")?,
                subject: "Reset your invoicer password".into(),
                text: format!(
                    "Hello,\n\nSomeone asked to reset the password of your invoicer account. \
                     Choose a new one within an hour:\n{link}\n\n\
                     Resetting signs out every other session. If it was not you, ignore this \
                     email: your password stays as it is.\n"
                ),
            }
        }
        "account_exists" => AccountMail {
            to: field("to")?,
            subject: "Someone tried to sign up with your address".into(),
            text: format!(
                "Hello,\n\nSomeone (perhaps you) tried to create an invoicer account with this \
                 address, which already has one. Nothing was changed.\n\n\
                 If it was you, log in: {base}/login\n\
                 Forgot your password? {base}/forgot-password\n\n\
                 If it was not you, ignore this email.\n"
            ),
        },
        "no_account" => AccountMail {
            to: field("to")?,
            subject: "Password reset requested".into(),
            text: "Hello,\n\nSomeone (perhaps you) asked to reset the invoicer password of this \
                   address, but no account uses it. If you have an account, it is under another \
                   address.\n\nIf it was not you, ignore this email.\n"
                .into(),
        },
        "account_notice" => {
            let (at, client) = (field("at")?, field("client")?);
            let what = match field("event")?.as_str() {
                "password_reset" => "The password of your invoicer account was reset",
                "password_changed" => "The password of your invoicer account was changed",
                "email_changed" => "The email address of your invoicer account was changed",
                other => return Err(RenderError::Permanent(format!("unknown notice {other}"))),
            };
            let keys = row.payload["api_keys"].as_i64().unwrap_or(0);
            let taken = &row.payload["taken_back"];
            let keys = if taken.is_object() {
                let endpoints: Vec<&str> = taken["endpoints"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|u| u.as_str())
                    .collect();
                format!(
                    "\n\nWhoever knew the old password may have left something behind, so it was \
                     taken back: {} API key(s) made by this account revoked, {} open \
                     invitation(s) it sent withdrawn, {} webhook endpoint(s) it registered in \
                     the last 7 days disabled{}. Make new keys where you need them: \
                     {base}/settings/api-keys\n",
                    taken["api_keys"].as_i64().unwrap_or(0),
                    taken["invitations"].as_i64().unwrap_or(0),
                    endpoints.len(),
                    if endpoints.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", endpoints.join(", "))
                    }
                )
            } else if keys > 0 {
                format!(
                    "\n\nThe {keys} API key(s) made by this account still work. If this was not \
                     you, revoke them all from the account page: {base}/settings/account\n"
                )
            } else {
                String::new()
            };
            AccountMail {
                to: field("to")?,
                subject: "Your invoicer account was changed".into(),
                text: format!(
                    "Hello,\n\n{what} at {at}, from the address {client}.{keys}\n\n\
                     If it was you, there is nothing to do. If it was not, reset your password \
                     at once ({base}/forgot-password) and tell the owners of your organisations.\n"
                ),
            }
        }
        "credentials_notice" => {
            let what = match field("event")?.as_str() {
                "password_reset" => "was reset",
                "password_changed" => "was changed",
                other => return Err(RenderError::Permanent(format!("unknown notice {other}"))),
            };
            let endpoints: Vec<String> = row.payload["endpoints"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| {
                    Some(format!(
                        "  {}\n  enable it again: {base}/settings/webhooks/{}\n",
                        e["url"].as_str()?,
                        e["id"].as_str()?
                    ))
                })
                .collect();
            let endpoints = if endpoints.is_empty() {
                String::new()
            } else {
                format!(
                    "\nWebhook endpoints they registered in the last 7 days were disabled; if you \
                     know them, enable them again with one click:\n{}",
                    endpoints.concat()
                )
            };
            let org: String = field("org_name")?.chars().take(60).collect();
            AccountMail {
                to: field("to")?,
                subject: format!("A member's password {what} in {org}"),
                text: format!(
                    "Hello,\n\nThe password of {} {what} at {}, from the address {}.\n\n\
                     In {org}, what the account could have left for whoever held it before was \
                     taken back: {} API key(s) revoked, {} open invitation(s) withdrawn.\n{endpoints}\n\
                     The audit log has each one: {base}/settings/audit\n",
                    field("member")?,
                    field("at")?,
                    field("client")?,
                    row.payload["api_keys"].as_i64().unwrap_or(0),
                    row.payload["invitations"].as_i64().unwrap_or(0),
                ),
            }
        }
        "org_change_notice" => {
            let changes: Vec<String> = row.payload["changes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| {
                    Some(format!(
                        "  {}: {} -> {}\n",
                        c["field"].as_str()?,
                        c["old"].as_str()?,
                        c["new"].as_str()?
                    ))
                })
                .collect();
            let org: String = field("org_name")?.chars().take(60).collect();
            AccountMail {
                to: field("to")?,
                subject: format!("Payment or e-invoicing details of {org} changed"),
                text: format!(
                    "Hello,\n\n{} changed these details of {org} at {}:\n\n{}\n\
                     Customers are told to pay where these say. If you did not expect this, check \
                     the settings at once: {base}/settings/org\n",
                    field("by")?,
                    field("at")?,
                    changes.concat()
                ),
            }
        }
        "webhook_disabled" => AccountMail {
            to: field("to")?,
            subject: "A webhook endpoint of yours was disabled".into(),
            text: format!(
                "Hello,\n\nFor three days every delivery to your webhook endpoint\n{}\nfailed, so \
                 invoicer stopped sending to it. What it answered is in its delivery log: \
                 {base}/settings/webhooks\n\nWhen it works again, register it anew there \
                 (events from now on are delivered to it).\n",
                field("url")?
            ),
        },
        _ => return Ok(None),
    };
    Ok(Some(mail))
}

/// The message for an outbox row: plain text and its HTML twin, with the row id as Message-ID.
fn message(
    row: &Leased,
    from: &Mailbox,
    to: &str,
    subject: String,
    text: String,
) -> Result<Message, RenderError> {
    branded_message(row, from, to, subject, text, &Look::default(), None)
}

/// How an org's email to its customer looks: its accent colour, its logo (inline, referred to by
/// `cid:logo`) and its footer.
#[derive(Debug, Clone, Default)]
pub(crate) struct Look {
    pub accent: Option<(u8, u8, u8)>,
    pub logo_png: Option<Vec<u8>>,
    pub footer: String,
}

/// [`message`] in the org's `look`, with an `attachment` (file name, PDF bytes) when given.
pub(crate) fn branded_message(
    row: &Leased,
    from: &Mailbox,
    to: &str,
    subject: String,
    mut text: String,
    look: &Look,
    attachment: Option<(String, Vec<u8>)>,
) -> Result<Message, RenderError> {
    use lettre::message::{header::ContentType, Attachment};
    let mut html = format!(
        "<p>{}</p>",
        html_escape(&text)
            .replace("\n\n", "</p><p>")
            .replace('\n', "<br>")
    );
    if !look.footer.is_empty() {
        html.push_str(&format!(
            "<hr><p style=\"color:#555;font-size:12px\">{}</p>",
            html_escape(&look.footer).replace('\n', "<br>")
        ));
        text.push_str(&format!("\n--\n{}\n", look.footer));
    }
    if look.logo_png.is_some() {
        html = format!("<p><img src=\"cid:logo\" alt=\"\" style=\"max-height:48px\"></p>{html}");
    }
    if let Some((r, g, b)) = look.accent {
        html = format!(
            "<div style=\"border-top:4px solid #{r:02x}{g:02x}{b:02x};padding-top:8px\">{html}</div>"
        );
    }
    let to: Mailbox = to
        .parse()
        .map_err(|e| RenderError::Permanent(format!("recipient {to}: {e}")))?;
    let body = MultiPart::alternative_plain_html(text, html);
    let body = match &look.logo_png {
        Some(png) => MultiPart::related().multipart(body).singlepart(
            Attachment::new_inline("logo".to_owned()).body(
                png.clone(),
                ContentType::parse("image/png").expect("a MIME type"),
            ),
        ),
        None => body,
    };
    let body = match attachment {
        Some((name, pdf)) => {
            MultiPart::mixed()
                .multipart(body)
                .singlepart(Attachment::new(name).body(
                    pdf,
                    ContentType::parse("application/pdf").expect("a MIME type"),
                ))
        }
        None => body,
    };
    Message::builder()
        .message_id(Some(format!("<{}@invoicer>", row.id)))
        .from(from.clone())
        .to(to)
        .subject(subject)
        .multipart(body)
        .map_err(|e| RenderError::Permanent(e.to_string()))
}

fn html_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
