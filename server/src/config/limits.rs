//! The throttles' allowances: per client, per account or link, and ceilings over all clients.

use invoicer_core::throttle::{Ceilings, Limits as Allowances};

const DEFAULTS: Allowances = Allowances::DEFAULT;
const CEILINGS: Ceilings = Ceilings::DEFAULT;

#[derive(clap::Args, Debug, Clone)]
pub struct Limits {
    /// Login attempts per minute for one account from one client address.
    #[arg(long, env = "LOGINS_PER_ACCOUNT_MINUTE", default_value_t = DEFAULTS.logins_per_account_minute, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub logins_per_account_minute: u32,
    /// Login attempts per minute from one client address.
    #[arg(long, env = "LOGINS_PER_ADDRESS_MINUTE", default_value_t = DEFAULTS.logins_per_address_minute, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub logins_per_address_minute: u32,
    /// Sign-ups per hour from one client address.
    #[arg(long, env = "SIGNUPS_PER_ADDRESS_HOUR", default_value_t = DEFAULTS.signups_per_address_hour, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub signups_per_address_hour: u32,
    /// Emails one org may send per hour in its name (invoices, quotes, reminders, invitations).
    #[arg(long, env = "EMAILS_PER_ORG_HOUR", default_value_t = DEFAULTS.emails_per_org_hour, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub emails_per_org_hour: u32,
    /// Emails one address may receive per hour from all orgs together.
    #[arg(long, env = "EMAILS_PER_RECIPIENT_HOUR", default_value_t = DEFAULTS.emails_per_recipient_hour, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub emails_per_recipient_hour: u32,
    /// Account emails (password reset, verification, invitations) asked for per hour from one
    /// client address.
    #[arg(long, env = "ACCOUNT_EMAILS_PER_ADDRESS_HOUR", default_value_t = DEFAULTS.account_emails_per_address_hour, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub account_emails_per_address_hour: u32,
    /// Account emails per hour to one recipient address.
    #[arg(long, env = "ACCOUNT_EMAILS_PER_RECIPIENT_HOUR", default_value_t = DEFAULTS.account_emails_per_recipient_hour, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub account_emails_per_recipient_hour: u32,
    /// Password resets (a reset link followed) per hour from one client address.
    #[arg(long, env = "RESETS_PER_ADDRESS_HOUR", default_value_t = DEFAULTS.resets_per_address_hour, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub resets_per_address_hour: u32,
    /// Tries of one reset link per hour, from anywhere.
    #[arg(long, env = "RESETS_PER_TOKEN_HOUR", default_value_t = DEFAULTS.resets_per_token_hour, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub resets_per_token_hour: u32,
    /// Customer pages (`/i/{token}` and Pay) per minute from one client address.
    #[arg(long, env = "PUBLIC_PAGES_PER_ADDRESS_MINUTE", default_value_t = DEFAULTS.public_pages_per_address_minute, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub public_pages_per_address_minute: u32,
    /// Customer pages per minute of one invoice link.
    #[arg(long, env = "PUBLIC_PAGES_PER_TOKEN_MINUTE", default_value_t = DEFAULTS.public_pages_per_token_minute, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub public_pages_per_token_minute: u32,
    /// Customer PDFs per minute from one client address.
    #[arg(long, env = "PDFS_PER_ADDRESS_MINUTE", default_value_t = DEFAULTS.pdfs_per_address_minute, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub pdfs_per_address_minute: u32,
    /// Customer PDFs per minute of one invoice link.
    #[arg(long, env = "PDFS_PER_TOKEN_MINUTE", default_value_t = DEFAULTS.pdfs_per_token_minute, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub pdfs_per_token_minute: u32,
    /// Ceiling: login attempts per hour from all clients together.
    #[arg(long, env = "LOGINS_PER_HOUR", default_value_t = CEILINGS.logins, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub logins_per_hour: u32,
    /// Ceiling: sign-ups per hour from all clients together.
    #[arg(long, env = "SIGNUPS_PER_HOUR", default_value_t = CEILINGS.signups, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub signups_per_hour: u32,
    /// Ceiling: account emails asked for per hour from all clients together.
    #[arg(long, env = "ACCOUNT_EMAILS_PER_HOUR", default_value_t = CEILINGS.account_emails, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub account_emails_per_hour: u32,
    /// Ceiling: password resets per hour from all clients together.
    #[arg(long, env = "RESETS_PER_HOUR", default_value_t = CEILINGS.resets, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub resets_per_hour: u32,
    /// Ceiling: customer pages per hour from all clients together.
    #[arg(long, env = "PUBLIC_PAGES_PER_HOUR", default_value_t = CEILINGS.public_pages, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub public_pages_per_hour: u32,
    /// Ceiling: customer PDFs per hour from all clients together.
    #[arg(long, env = "PDFS_PER_HOUR", default_value_t = CEILINGS.pdfs, value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub pdfs_per_hour: u32,
}

impl Limits {
    /// The throttles' allowances.
    pub fn allowances(&self) -> Allowances {
        Allowances {
            logins_per_account_minute: self.logins_per_account_minute,
            logins_per_address_minute: self.logins_per_address_minute,
            signups_per_address_hour: self.signups_per_address_hour,
            emails_per_org_hour: self.emails_per_org_hour,
            emails_per_recipient_hour: self.emails_per_recipient_hour,
            account_emails_per_address_hour: self.account_emails_per_address_hour,
            account_emails_per_recipient_hour: self.account_emails_per_recipient_hour,
            resets_per_address_hour: self.resets_per_address_hour,
            resets_per_token_hour: self.resets_per_token_hour,
            public_pages_per_address_minute: self.public_pages_per_address_minute,
            public_pages_per_token_minute: self.public_pages_per_token_minute,
            pdfs_per_address_minute: self.pdfs_per_address_minute,
            pdfs_per_token_minute: self.pdfs_per_token_minute,
            ceilings: Ceilings {
                logins: self.logins_per_hour,
                signups: self.signups_per_hour,
                account_emails: self.account_emails_per_hour,
                resets: self.resets_per_hour,
                public_pages: self.public_pages_per_hour,
                pdfs: self.pdfs_per_hour,
            },
        }
    }
}
