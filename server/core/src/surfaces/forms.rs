//! The forms whose keys are claimed, and their claim keys: `(form, <org>/<form name>, key minted at
//! render)`. The claim module knows no form; the form surface names them here.

use model::OrgId;
use uuid::Uuid;

use crate::claim::{ClaimKey, Surface};

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
    /// The org's retry days and late fees.
    EditCollection,
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
    /// A bank statement uploaded on `/payments/bank`.
    ImportBankStatement,
    /// "Confirm" of a suggested invoice on an unmatched bank entry.
    MatchBankEntry,
    /// "Dismiss" of an unmatched bank entry.
    IgnoreBankEntry,
    /// An e-invoice uploaded on `/inbox`.
    ReceiveDocument,
    /// "Mark paid" of a received e-invoice.
    MarkReceivedPaid,
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
            Form::EditCollection => "edit_collection",
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
            Form::ImportBankStatement => "import_bank_statement",
            Form::MatchBankEntry => "match_bank_entry",
            Form::IgnoreBankEntry => "ignore_bank_entry",
            Form::ReceiveDocument => "receive_document",
            Form::MarkReceivedPaid => "mark_received_paid",
        }
    }
}

impl Form {
    /// The claim key of a submit of this form of `org`, keyed by the UUID minted when it was
    /// rendered.
    pub fn claim_key(self, org: OrgId, key: Uuid) -> ClaimKey {
        ClaimKey {
            surface: Surface::Form,
            owner: format!("{org}/{}", self.as_str()),
            key: key.to_string(),
        }
    }
}
