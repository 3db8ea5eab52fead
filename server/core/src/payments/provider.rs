//! What collecting by itself asks of a payment provider: a customer of ours made at the provider,
//! the page where that customer saves a card or a debit mandate, the saved method as the provider
//! describes it, an off-session charge of it, and letting it go. Every call carries a key that
//! names its attempt, so a repeat is the same call at the provider.
//!
//! Stripe answers in `stripe::collect`. A second provider (GoCardless, Mollie) is a new file
//! implementing [`Provider`]: what invoicer stores and decides (customers, methods, attempts and
//! their states, payments) does not change, and is stored under [`Provider::name`].

use std::future::Future;

use model::collection::ChargeState;
use model::OrgId;
use uuid::Uuid;

/// A provider's call that did not give an answer about its object.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ProviderError {
    /// Not reached, or it failed on its side: the same call under the same key may be made again.
    #[error("the payment provider could not be reached: {0}")]
    Unreachable(String),
    /// It refused the call itself (a bad parameter, an object it does not know): the same call would
    /// be refused again. The provider's own words.
    #[error("the payment provider refused the call: {0}")]
    Refused(String),
    #[error("no payment provider is configured")]
    NotConfigured,
}

impl ProviderError {
    /// Worth another try under the same key.
    pub fn retryable(&self) -> bool {
        matches!(self, ProviderError::Unreachable(_))
    }
}

/// A customer of ours, to be made at the provider.
#[derive(Debug, Clone)]
pub struct NewCustomer<'a> {
    pub org: OrgId,
    pub customer: Uuid,
    pub email: &'a str,
    pub name: &'a str,
}

/// The provider's customer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderCustomer {
    pub id: String,
    pub livemode: bool,
}

/// A page where a customer (the provider's, made for ours) saves a method.
#[derive(Debug, Clone)]
pub struct NewSetup<'a> {
    pub org: OrgId,
    pub customer_id: Uuid,
    /// The provider's customer.
    pub customer: &'a str,
    /// The currency the methods will be charged in (a debit mandate is for one).
    pub currency: &'a str,
    pub success_url: &'a str,
    pub cancel_url: &'a str,
}

/// An off-session charge of a saved method: attempt `attempt` of `invoice`.
#[derive(Debug, Clone)]
pub struct NewCharge<'a> {
    pub org: OrgId,
    pub invoice: Uuid,
    pub attempt: i16,
    /// In the provider's units of `currency`.
    pub amount: i64,
    pub currency: &'a str,
    /// The provider's customer and method.
    pub customer: &'a str,
    pub payment_method: &'a str,
    pub description: &'a str,
}

/// The provider's answer about a charge: what it made and how far it got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChargeAnswer {
    /// The provider's id of the payment (Stripe's PaymentIntent).
    pub id: String,
    pub state: ChargeState,
    /// The provider's words for a failure.
    pub reason: Option<String>,
    /// Where the customer confirms a charge that needs them.
    pub action_url: Option<String>,
}

/// A saved method as the provider describes it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MethodDetails {
    /// `card` or `sepa_debit`.
    pub kind: String,
    pub brand: Option<String>,
    pub last4: Option<String>,
    pub mandate_reference: Option<String>,
    /// A debit mandate's status at the provider (`active`, `pending`, `inactive`).
    pub mandate_status: Option<String>,
}

/// A payment provider that collects by itself.
pub trait Provider: Sync {
    /// What its customers, methods and payments are stored under.
    fn name(&self) -> &'static str;

    /// Whether it has what it needs to be called (a key).
    fn configured(&self) -> bool;

    /// A place for one call, if one is free now (held until the call is over): beyond its calls at
    /// once, a customer's or owner's request is refused before anything is claimed.
    fn call_slot(&self) -> Option<tokio::sync::OwnedSemaphorePermit>;

    /// Makes `new` at the provider, under `key`: a repeat gets the same customer.
    fn create_customer(
        &self,
        new: &NewCustomer<'_>,
        key: &str,
    ) -> impl Future<Output = Result<ProviderCustomer, ProviderError>> + Send;

    /// The page's address, under `key`: a repeat gets the same page.
    fn setup_page(
        &self,
        new: &NewSetup<'_>,
        key: &str,
    ) -> impl Future<Output = Result<String, ProviderError>> + Send;

    /// Method `method` (with its debit mandate `mandate`, when it has one), as the provider has it.
    fn describe_method(
        &self,
        method: &str,
        mandate: Option<&str>,
    ) -> impl Future<Output = Result<MethodDetails, ProviderError>> + Send;

    /// Charges `new` under `key`: a repeat gets the same payment back, never a second one. A
    /// declined charge is an answer (its state `failed`), not an error.
    fn charge(
        &self,
        new: &NewCharge<'_>,
        key: &str,
    ) -> impl Future<Output = Result<ChargeAnswer, ProviderError>> + Send;

    /// Lets method `method` go (the customer removed it): it can no longer be charged.
    fn detach(
        &self,
        method: &str,
        key: &str,
    ) -> impl Future<Output = Result<(), ProviderError>> + Send;
}
