//! Sending a message: lettre over SMTP (`SMTP_URL`), or `.eml` files in a folder when no SMTP
//! server is configured, and why a send failed, as a class a tenant may see.

use std::time::Duration;

use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::transport::smtp::client::{AsyncSmtpConnection, Certificate, TlsParameters};
use lettre::transport::smtp::extension::ClientId;
use lettre::{AsyncFileTransport, AsyncTransport, Message, Tokio1Executor};

/// The sender in dev when MAIL_FROM is not set (production requires MAIL_FROM).
pub const DEV_FROM: &str = "invoicer dev <billing@invoicer.invalid>";

/// Checks a MAIL_FROM value (`Name <address>` or `address`).
pub fn parse_from(from: &str) -> Result<Mailbox, String> {
    from.parse::<Mailbox>()
        .map_err(|e| format!("{from:?} is not a mailbox: {e}"))
}

/// How the SMTP server is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// `smtp://host` without credentials: plain SMTP, as local relays and test sinks speak.
    Plain,
    /// `smtp://user:pass@host`: STARTTLS before anything else, required (a password never travels
    /// in clear).
    StartTls,
    /// `smtps://host`: TLS from the first byte.
    Tls,
}

/// An SMTP_URL, parsed.
#[derive(Clone)]
pub struct SmtpTarget {
    pub host: String,
    pub port: u16,
    pub security: Security,
    credentials: Option<Credentials>,
}

impl std::fmt::Debug for SmtpTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} {}:{}", self.security, self.host, self.port)
    }
}

impl SmtpTarget {
    pub fn parse(url: &str) -> Result<SmtpTarget, String> {
        let parsed = url::Url::parse(url).map_err(|e| format!("not a URL: {e}"))?;
        let host = parsed
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or("no host")?
            .to_owned();
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        };
        let credentials = (!parsed.username().is_empty()).then(|| {
            Credentials::new(
                decode(parsed.username()),
                decode(parsed.password().unwrap_or_default()),
            )
        });
        let (security, default_port) = match (parsed.scheme(), &credentials) {
            ("smtp", None) => (Security::Plain, 25),
            ("smtp", Some(_)) => (Security::StartTls, 587),
            ("smtps", _) => (Security::Tls, 465),
            (other, _) => return Err(format!("scheme {other}: use smtp:// or smtps://")),
        };
        Ok(SmtpTarget {
            port: parsed.port().unwrap_or(default_port),
            host,
            security,
            credentials,
        })
    }
}

#[derive(Clone)]
pub enum Mailer {
    /// SMTP, one connection per message.
    Smtp {
        target: SmtpTarget,
        /// Extra trusted root (PEM), for a relay with a private CA.
        ca: Option<Vec<u8>>,
        timeout: Duration,
        from: Mailbox,
    },
    Files {
        transport: AsyncFileTransport<Tokio1Executor>,
        from: Mailbox,
    },
}

/// Why a send failed, as a class a tenant may see; the server's own words go to the log only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureClass {
    /// 5xx: the mail server refused the message for good. Not retried.
    Rejected,
    /// 4xx: refused for now. Retried.
    Deferred,
    /// Could not connect, or no answer in time. Retried.
    Unreachable,
    /// The TLS handshake failed (certificate, protocol). Retried (it may be fixed by the operator).
    Tls,
    /// The mail server did not accept our credentials. Retried (the operator must fix them).
    Authentication,
    /// Anything else on the way. Retried.
    Other,
}

impl FailureClass {
    /// What the invoice page shows.
    pub fn describe(self) -> &'static str {
        match self {
            FailureClass::Rejected => "rejected by the mail server",
            FailureClass::Deferred => "temporarily refused by the mail server",
            FailureClass::Unreachable => "mail server unreachable",
            FailureClass::Tls => "secure connection to the mail server failed",
            FailureClass::Authentication => "the mail server refused our credentials",
            FailureClass::Other => "sending failed",
        }
    }

    /// Trying again cannot help.
    pub fn permanent(self) -> bool {
        self == FailureClass::Rejected
    }
}

#[derive(Debug)]
pub struct SendError {
    pub class: FailureClass,
    /// The whole text, for the log.
    pub detail: String,
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.class.describe(), self.detail)
    }
}

fn classify(stage: &str, e: lettre::transport::smtp::Error) -> SendError {
    let class = if e.is_permanent() {
        match e.status().map(|c| c.to_string()) {
            Some(code) if code == "535" || code == "530" || code == "534" => {
                FailureClass::Authentication
            }
            _ => FailureClass::Rejected,
        }
    } else if e.is_transient() {
        FailureClass::Deferred
    } else if e.is_tls() || tls_handshake(&e) {
        FailureClass::Tls
    } else if e.is_timeout() || stage == "connect" {
        FailureClass::Unreachable
    } else {
        FailureClass::Other
    };
    SendError {
        class,
        detail: format!("{stage}: {e}"),
    }
}

/// lettre reports a failed TLS handshake (an untrusted certificate, say) as a connection error;
/// its cause says what it was.
fn tls_handshake(e: &lettre::transport::smtp::Error) -> bool {
    let mut cause: Option<&dyn std::error::Error> = Some(e);
    while let Some(c) = cause {
        let text = c.to_string().to_ascii_lowercase();
        if ["certificate", "handshake", "tls"]
            .iter()
            .any(|w| text.contains(w))
        {
            return true;
        }
        cause = c.source();
    }
    false
}

impl Mailer {
    /// SMTP per `smtp_url` (see [`SmtpTarget`]), or `.eml` files in `dir` without one.
    pub fn new(
        smtp_url: Option<&str>,
        ca_file: Option<&std::path::Path>,
        dir: &std::path::Path,
        timeout: Duration,
        from: &str,
    ) -> Result<Mailer, String> {
        let from = parse_from(from).map_err(|e| format!("MAIL_FROM: {e}"))?;
        match smtp_url {
            Some(url) => {
                let target = SmtpTarget::parse(url).map_err(|e| format!("SMTP_URL: {e}"))?;
                let ca = ca_file
                    .map(|p| {
                        std::fs::read(p).map_err(|e| format!("SMTP_CA_FILE {}: {e}", p.display()))
                    })
                    .transpose()?;
                if let Some(pem) = &ca {
                    Certificate::from_pem(pem).map_err(|e| format!("SMTP_CA_FILE: {e}"))?;
                }
                Ok(Mailer::Smtp {
                    target,
                    ca,
                    timeout,
                    from,
                })
            }
            None => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| format!("mail folder {}: {e}", dir.display()))?;
                Ok(Mailer::Files {
                    transport: AsyncFileTransport::<Tokio1Executor>::new(dir),
                    from,
                })
            }
        }
    }

    /// The sender of every message.
    pub fn from(&self) -> &Mailbox {
        match self {
            Mailer::Smtp { from, .. } | Mailer::Files { from, .. } => from,
        }
    }

    pub async fn send(&self, message: Message) -> Result<(), SendError> {
        match self {
            Mailer::Smtp {
                target,
                ca,
                timeout,
                ..
            } => tokio::time::timeout(*timeout, smtp_send(target, ca.as_deref(), &message))
                .await
                .map_err(|_| SendError {
                    class: FailureClass::Unreachable,
                    detail: format!("no answer within {timeout:?}"),
                })?,
            Mailer::Files { transport, .. } => {
                transport
                    .send(message)
                    .await
                    .map(drop)
                    .map_err(|e| SendError {
                        class: FailureClass::Other,
                        detail: e.to_string(),
                    })
            }
        }
    }
}

fn tls_parameters(target: &SmtpTarget, ca: Option<&[u8]>) -> Result<TlsParameters, SendError> {
    let mut builder = TlsParameters::builder(target.host.clone());
    if let Some(pem) = ca {
        let cert = Certificate::from_pem(pem).map_err(|e| classify("tls", e))?;
        builder = builder.add_root_certificate(cert);
    }
    builder.build_rustls().map_err(|e| classify("tls", e))
}

/// One SMTP session for one message.
async fn smtp_send(
    target: &SmtpTarget,
    ca: Option<&[u8]>,
    message: &Message,
) -> Result<(), SendError> {
    let hello = ClientId::default();
    let mut connection = match target.security {
        // lettre's own transport leaves Nagle's algorithm on, and it writes the message and its
        // closing `\r\n.\r\n` as two writes before reading the reply: the second then waits for the
        // server's delayed ACK, ~40 ms per email. Our own socket has TCP_NODELAY.
        Security::Plain => {
            let stream = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
                .await
                .map_err(|e| SendError {
                    class: FailureClass::Unreachable,
                    detail: format!("connect to {}:{}: {e}", target.host, target.port),
                })?;
            let _ = stream.set_nodelay(true);
            AsyncSmtpConnection::connect_with_transport(Box::new(stream), &hello)
                .await
                .map_err(|e| classify("connect", e))?
        }
        Security::StartTls => {
            let mut connection = AsyncSmtpConnection::connect_tokio1(
                (target.host.as_str(), target.port),
                None,
                &hello,
                None,
                None,
            )
            .await
            .map_err(|e| classify("connect", e))?;
            if !connection.can_starttls() {
                return Err(SendError {
                    class: FailureClass::Tls,
                    detail:
                        "the server does not offer STARTTLS; credentials are never sent in clear"
                            .into(),
                });
            }
            connection
                .starttls(tls_parameters(target, ca)?, &hello)
                .await
                .map_err(|e| classify("starttls", e))?;
            connection
        }
        Security::Tls => AsyncSmtpConnection::connect_tokio1(
            (target.host.as_str(), target.port),
            None,
            &hello,
            Some(tls_parameters(target, ca)?),
            None,
        )
        .await
        .map_err(|e| classify("connect", e))?,
    };
    if let Some(credentials) = &target.credentials {
        use lettre::transport::smtp::authentication::Mechanism;
        connection
            .auth(&[Mechanism::Plain, Mechanism::Login], credentials)
            .await
            .map_err(|e| classify("auth", e))?;
    }
    connection
        .send(message.envelope(), &message.formatted())
        .await
        .map_err(|e| classify("send", e))?;
    // The message is accepted; a failed QUIT changes nothing about that.
    let _ = connection.quit().await;
    Ok(())
}
