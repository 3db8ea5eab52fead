//! SMTP_* and MAIL_*: how emails leave, and from whom.

use std::path::PathBuf;
use std::time::Duration;

use invoicer_core::mail::{self, Mailer};
use invoicer_core::secret::Secret;

use super::{present, present_secret};

#[derive(clap::Args, Debug, Clone)]
pub struct Mail {
    /// `smtp://[user:pass@]host:port` (STARTTLS when the server offers it, required with
    /// credentials) or `smtps://...` (TLS from the start); unset: emails are written as files to
    /// MAIL_DIR.
    #[arg(long, env = "SMTP_URL", global = true, hide_env_values = true)]
    pub smtp_url: Option<Secret>,
    /// A PEM file with the CA that signed the SMTP server's certificate, for a relay with a private
    /// CA (public CAs are trusted without it).
    #[arg(long, env = "SMTP_CA_FILE", global = true)]
    pub smtp_ca_file: Option<PathBuf>,
    /// How long one SMTP conversation may take, in milliseconds; WORKER_LEASE_SECS must be longer.
    #[arg(long, env = "SMTP_TIMEOUT_MS", default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(100..=600_000), global = true)]
    pub smtp_timeout_ms: u64,
    /// The sender of every email, `Name <address>`. Required in production.
    #[arg(long, env = "MAIL_FROM", global = true)]
    pub mail_from: Option<String>,
    /// Where emails go without SMTP_URL.
    #[arg(long, env = "MAIL_DIR", default_value = "target/mail", global = true)]
    pub mail_dir: PathBuf,
}

/// [`Mail`] with its defaults filled in and its addresses parsed once.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub smtp_url: Option<Secret>,
    pub smtp_ca_file: Option<PathBuf>,
    pub timeout: Duration,
    /// MAIL_FROM, or its default.
    pub from: String,
    pub dir: PathBuf,
}

impl Mail {
    /// `dev`: the dev sender may fill in MAIL_FROM; production mails from `public_url`'s host.
    pub(super) fn check(self, dev: bool, public_url: &str) -> anyhow::Result<Outgoing> {
        let from = present(self.mail_from).unwrap_or_else(|| {
            // Production mails from the public host (the operator's own domain), never from the
            // dev sender's `.invalid` one.
            let host = url::Url::parse(public_url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_owned));
            match host {
                Some(host) if !dev && host.contains('.') => format!("invoicer <billing@{host}>"),
                _ => mail::DEV_FROM.to_owned(),
            }
        });
        mail::parse_from(&from).map_err(|e| anyhow::anyhow!("MAIL_FROM: {e}"))?;
        let smtp_url = present_secret(self.smtp_url);
        if let Some(url) = &smtp_url {
            mail::SmtpTarget::parse(url.expose()).map_err(|e| anyhow::anyhow!("SMTP_URL: {e}"))?;
        }
        Ok(Outgoing {
            smtp_url,
            smtp_ca_file: self.smtp_ca_file,
            timeout: Duration::from_millis(self.smtp_timeout_ms),
            from,
            dir: self.mail_dir,
        })
    }
}

impl Outgoing {
    /// SMTP per SMTP_URL, or files in MAIL_DIR; reads SMTP_CA_FILE.
    pub fn mailer(&self) -> Result<Mailer, String> {
        Mailer::new(
            self.smtp_url.as_ref().map(Secret::expose),
            self.smtp_ca_file.as_deref(),
            &self.dir,
            self.timeout,
            &self.from,
        )
    }
}
