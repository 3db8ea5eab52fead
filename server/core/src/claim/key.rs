//! What a claim is keyed by: the surface, the owner (an org's form, a provider, an API key, a job
//! queue) and the key that names the attempt.

use uuid::Uuid;

/// Where an attempt arrives: names claims, log events, metrics and the activity page alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    /// A form or button of the web app: `(org/form, key minted at render)`.
    Form,
    /// A Stripe webhook delivery: `(stripe account, event id)`.
    Webhook,
    /// The JSON API: `(api client id, Idempotency-Key)`.
    Api,
    /// A background job: `(queue, run id)`.
    Job,
    /// A call out to a third party: `(service/call, the attempt's stable key)`.
    Outbound,
}

impl Surface {
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Form => "form",
            Surface::Webhook => "webhook",
            Surface::Api => "api",
            Surface::Job => "job",
            Surface::Outbound => "outbound",
        }
    }
}

/// The forms whose keys are claimed. Each has its own namespace: a key minted for one form can never
/// be answered with another form's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    CreateInvoice,
    SendInvoice,
    /// A lifecycle button (finalize, void, ...), by the name its caller gives it: this module
    /// knows the buttons only by name.
    InvoiceAction(&'static str),
    /// A button on a customer's page (new statement link, archive, unarchive), by its name.
    CustomerAction(&'static str),
    DuplicateInvoice,
    EditDraft,
    CreateCustomer,
    EditCustomer,
    EditOrgSettings,
    EditOrgDetails,
    AddTaxRate,
    ArchiveTaxRate,
    InviteMember,
    ResendInvitation,
    RevokeInvitation,
    ChangeRole,
    RemoveMember,
    LeaveOrg,
    CreateApiKey,
    /// "Revoke them all" on the account page: every live key the account made.
    RevokeOwnApiKeys,
    RecordPayment,
    DeletePayment,
    EditBankDetails,
    CreditInvoice,
    ApplyCredit,
    CreateSchedule,
    PauseSchedule,
    EditSchedule,
    EditReminders,
    ToggleReminders,
    CreateQuote,
    EditQuote,
    SendQuote,
    /// The customer's Accept button on a quote's public page.
    AcceptQuote,
    /// The customer's Decline button on a quote's public page.
    DeclineQuote,
    EditBranding,
    UploadLogo,
    RemoveLogo,
    CreateWebhookEndpoint,
    DeleteWebhookEndpoint,
    RotateWebhookSecret,
    EnableWebhookEndpoint,
    RedeliverWebhook,
    ApplyCustomerImport,
}

impl Form {
    pub fn as_str(self) -> &'static str {
        match self {
            Form::CreateInvoice => "create_invoice",
            Form::SendInvoice => "send_invoice",
            Form::InvoiceAction(name) | Form::CustomerAction(name) => name,
            Form::DuplicateInvoice => "duplicate_invoice",
            Form::EditDraft => "edit_draft",
            Form::CreateCustomer => "create_customer",
            Form::EditCustomer => "edit_customer",
            Form::EditOrgSettings => "edit_org_settings",
            Form::EditOrgDetails => "edit_org_details",
            Form::AddTaxRate => "add_tax_rate",
            Form::ArchiveTaxRate => "archive_tax_rate",
            Form::InviteMember => "invite_member",
            Form::ResendInvitation => "resend_invitation",
            Form::RevokeInvitation => "revoke_invitation",
            Form::ChangeRole => "change_role",
            Form::RemoveMember => "remove_member",
            Form::LeaveOrg => "leave_org",
            Form::CreateApiKey => "create_api_key",
            Form::RevokeOwnApiKeys => "revoke_own_api_keys",
            Form::RecordPayment => "record_payment",
            Form::DeletePayment => "delete_payment",
            Form::EditBankDetails => "edit_bank_details",
            Form::CreditInvoice => "credit_invoice",
            Form::ApplyCredit => "apply_credit",
            Form::CreateSchedule => "create_schedule",
            Form::PauseSchedule => "pause_schedule",
            Form::EditSchedule => "edit_schedule",
            Form::EditReminders => "edit_reminders",
            Form::ToggleReminders => "toggle_reminders",
            Form::CreateQuote => "create_quote",
            Form::EditQuote => "edit_quote",
            Form::SendQuote => "send_quote",
            Form::AcceptQuote => "accept_quote",
            Form::DeclineQuote => "decline_quote",
            Form::EditBranding => "edit_branding",
            Form::UploadLogo => "upload_logo",
            Form::RemoveLogo => "remove_logo",
            Form::CreateWebhookEndpoint => "create_webhook_endpoint",
            Form::DeleteWebhookEndpoint => "delete_webhook_endpoint",
            Form::RotateWebhookSecret => "rotate_webhook_secret",
            Form::EnableWebhookEndpoint => "enable_webhook_endpoint",
            Form::RedeliverWebhook => "redeliver_webhook",
            Form::ApplyCustomerImport => "apply_customer_import",
        }
    }
}

/// Names one attempt, scoped to its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimKey {
    pub surface: Surface,
    pub owner: String,
    pub key: String,
}

impl ClaimKey {
    /// A form of `org`, keyed by the UUID minted when it was rendered.
    pub fn form(org: Uuid, form: Form, key: Uuid) -> Self {
        ClaimKey {
            surface: Surface::Form,
            owner: format!("{org}/{}", form.as_str()),
            key: key.to_string(),
        }
    }

    /// A Stripe event, keyed by its event id (never the object id: one charge has several events).
    pub fn webhook(account: &str, event_id: &str) -> Self {
        ClaimKey {
            surface: Surface::Webhook,
            owner: account.to_owned(),
            key: event_id.to_owned(),
        }
    }

    /// An API client's request, keyed by its `Idempotency-Key`.
    pub fn api(api_key_id: Uuid, idempotency_key: &str) -> Self {
        ClaimKey {
            surface: Surface::Api,
            owner: api_key_id.to_string(),
            key: idempotency_key.to_owned(),
        }
    }

    /// A call out to a third party (`stripe/checkout`), keyed by what names the attempt there (the
    /// invoice, the amount due and the session's generation).
    pub fn outbound(call: &str, key: &str) -> Self {
        ClaimKey {
            surface: Surface::Outbound,
            owner: call.to_owned(),
            key: key.to_owned(),
        }
    }

    /// A job run, keyed by its stable run id (an outbox row id, a retention period).
    pub fn job(queue: &str, run_id: &str) -> Self {
        ClaimKey {
            surface: Surface::Job,
            owner: queue.to_owned(),
            key: run_id.to_owned(),
        }
    }
}
