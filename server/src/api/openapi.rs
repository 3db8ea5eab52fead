//! The OpenAPI document (`/api/v1/openapi.json`), generated from the handlers' annotations.

use axum::Json;
use model::schedule::Interval;
use model::{
    ApplyCreditInput, CreditLineInput, CreditNote, CreditNoteInput, CreditNoteLine, CreditRefund,
    Customer, CustomerInput, DayField, Discount, Invoice, InvoiceInput, InvoiceLine, InvoiceStatus,
    LastDay, LineInput, Missed, Payment, PaymentInput, PaymentMethod, PaymentSource, PaymentState,
    Quote, QuoteFields, QuoteInput, QuoteStatus, RunAction, Schedule, ScheduleFields,
    ScheduleInput, ScheduleRun, TaxCategory, TaxRate, TaxRateInput, TaxTotal,
};
use utoipa::OpenApi;

use super::bank::{self, BankEntryList, BankStatement, MatchInput};
use super::collection::{self, ChargeQueued, LinkInput, PaymentMethodLink, PaymentMethodList};
use super::credit_notes;
use super::customers::{self, CustomerList};
use super::einvoice;
use super::exports;
use super::invoices::{self, CheckoutSession, InvoiceList, PaymentList};
use super::org::{self, Org, OrgBank, OrgEditable};
use super::problem::Problem;
use super::quotes::{self, QuoteList};
use super::received;
use super::reports;
use super::schedules::{self, ScheduleList};
use super::tax_rates::{self, TaxRateList};
use super::webhook_endpoints;

#[derive(OpenApi)]
#[openapi(
    info(title = "invoicer API", version = "1", description = "Invoices that never happen twice."),
    paths(
        invoices::post_invoice,
        invoices::list_invoices,
        invoices::get_invoice,
        einvoice::get_invoice_einvoice,
        einvoice::get_credit_note_einvoice,
        invoices::patch_invoice,
        invoices::delete_invoice,
        invoices::duplicate_invoice,
        invoices::finalize_invoice,
        invoices::void_invoice,
        invoices::mark_uncollectible,
        invoices::stop_charges,
        invoices::checkout_invoice,
        collection::charge_invoice,
        collection::post_payment_method_link,
        collection::list_payment_methods,
        bank::post_statement,
        bank::list_entries,
        bank::match_entry,
        bank::ignore_entry,
        received::post_document,
        received::list_documents,
        received::get_document,
        received::get_file,
        received::mark_paid,
        invoices::post_payment,
        invoices::list_payments,
        invoices::get_payment,
        credit_notes::post_credit_note,
        credit_notes::get_credit_note,
        credit_notes::post_apply_credit,
        reports::get_aging,
        reports::get_tax,
        exports::get_export,
        webhook_endpoints::post_endpoint,
        webhook_endpoints::list_endpoints,
        webhook_endpoints::get_endpoint,
        webhook_endpoints::delete_endpoint,
        webhook_endpoints::rotate_secret,
        webhook_endpoints::list_attempts,
        quotes::post_quote,
        quotes::list_quotes,
        quotes::get_quote,
        quotes::send_quote,
        schedules::post_schedule,
        schedules::list_schedules,
        schedules::get_schedule,
        schedules::patch_schedule,
        schedules::pause_schedule,
        schedules::resume_schedule,
        customers::post_customer,
        customers::list_customers,
        customers::get_customer,
        customers::patch_customer,
        tax_rates::post_tax_rate,
        tax_rates::list_tax_rates,
        org::get_org,
        org::patch_org
    ),
    components(schemas(
        InvoiceInput,
        LineInput,
        Invoice,
        InvoiceLine,
        InvoiceStatus,
        PaymentState,
        InvoiceList,
        CheckoutSession,
        ChargeQueued,
        LinkInput,
        PaymentMethodLink,
        PaymentMethodList,
        BankStatement,
        model::BankEntry,
        BankEntryList,
        MatchInput,
        model::collection::SavedMethod,
        model::collection::ChargeAttempt,
        model::collection::ChargeState,
        model::collection::CollectionMethod,
        CreditNote,
        CreditNoteInput,
        CreditLineInput,
        ApplyCreditInput,
        CreditNoteLine,
        CreditRefund,
        model::reports::AgingReport,
        model::reports::AgingRow,
        model::reports::TaxReport,
        model::reports::TaxRow,
        model::reports::TaxNet,
        model::reports::TaxDocuments,
        model::webhooks::WebhookEndpointInput,
        model::webhooks::WebhookEndpoint,
        model::webhooks::WebhookAttempt,
        webhook_endpoints::EndpointList,
        webhook_endpoints::AttemptList,
        Quote,
        QuoteInput,
        QuoteFields,
        QuoteStatus,
        QuoteList,
        Schedule,
        ScheduleInput,
        ScheduleFields,
        ScheduleRun,
        ScheduleList,
        RunAction,
        Missed,
        DayField,
        LastDay,
        Interval,
        Payment,
        PaymentInput,
        PaymentMethod,
        PaymentSource,
        PaymentList,
        CustomerInput,
        Customer,
        CustomerList,
        Discount,
        TaxTotal,
        TaxRateInput,
        TaxRate,
        TaxRateList,
        TaxCategory,
        model::Address,
        Org,
        OrgEditable,
        OrgBank,
        Problem
    )),
    modifiers(&BearerAuth)
)]
pub struct ApiDoc;

/// Every operation takes an API key as a bearer token.
struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{
            HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
        };
        for item in openapi.paths.paths.values_mut() {
            let operations = [
                &mut item.get,
                &mut item.post,
                &mut item.patch,
                &mut item.delete,
            ];
            for operation in operations.into_iter().flatten() {
                let requirement = SecurityRequirement::new("api_key", Vec::<String>::new());
                operation.security = Some(vec![requirement]);
            }
        }
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_key",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("ik_...")
                    .build(),
            ),
        );
    }
}

pub(super) async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}
