//! Stripe as the provider that collects by itself: customers, Checkout in `setup` mode, saved
//! PaymentMethods with their SEPA mandates, off-session PaymentIntents.

use model::collection::ChargeState;

use super::client::{Intent, NewSetupSession, Stripe, StripeError};
use crate::payments::provider::{
    ChargeAnswer, MethodDetails, NewCharge, NewCustomer, NewSetup, Provider, ProviderCustomer,
    ProviderError,
};

impl From<StripeError> for ProviderError {
    fn from(e: StripeError) -> Self {
        match e {
            StripeError::NotConfigured => ProviderError::NotConfigured,
            e if e.retryable() => ProviderError::Unreachable(e.to_string()),
            StripeError::Api { message, .. } if !message.is_empty() => {
                ProviderError::Refused(message)
            }
            e => ProviderError::Refused(e.to_string()),
        }
    }
}

/// How far a PaymentIntent got, as an attempt's state.
fn answer(intent: Intent) -> ChargeAnswer {
    let state = match intent.status.as_str() {
        "succeeded" => ChargeState::Succeeded,
        "requires_action" | "requires_confirmation" => ChargeState::RequiresAction,
        "requires_payment_method" | "canceled" => ChargeState::Failed,
        // Anything else is under way: its events say how it ends.
        _ => ChargeState::Processing,
    };
    ChargeAnswer {
        reason: intent.failure(),
        action_url: intent.action_url(),
        id: intent.id,
        state,
    }
}

impl Provider for Stripe {
    fn name(&self) -> &'static str {
        super::PROVIDER
    }

    fn configured(&self) -> bool {
        Stripe::configured(self)
    }

    fn call_slot(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        Stripe::call_slot(self)
    }

    async fn create_customer(
        &self,
        new: &NewCustomer<'_>,
        key: &str,
    ) -> Result<ProviderCustomer, ProviderError> {
        let metadata = [
            ("org_id", new.org.to_string()),
            ("customer_id", new.customer.to_string()),
        ];
        let made = Stripe::create_customer(self, new.email, new.name, &metadata, key).await?;
        Ok(ProviderCustomer {
            id: made.id,
            livemode: made.livemode,
        })
    }

    async fn setup_page(&self, new: &NewSetup<'_>, key: &str) -> Result<String, ProviderError> {
        let session = self
            .create_setup_session(
                &NewSetupSession {
                    org: new.org,
                    customer_id: new.customer_id,
                    customer: new.customer,
                    currency: new.currency,
                    success_url: new.success_url,
                    cancel_url: new.cancel_url,
                },
                key,
            )
            .await?;
        session.url.ok_or_else(|| {
            ProviderError::Refused(format!("setup session {} has no url", session.id))
        })
    }

    async fn describe_method(
        &self,
        method: &str,
        mandate: Option<&str>,
    ) -> Result<MethodDetails, ProviderError> {
        let method = self.retrieve_payment_method(method).await?;
        let mandate = match mandate {
            Some(mandate) if method.kind == "sepa_debit" => {
                Some(self.retrieve_mandate(mandate).await?)
            }
            _ => None,
        };
        let (brand, last4) = match (&method.card, &method.sepa_debit) {
            (Some(card), _) => (card.brand.clone(), card.last4.clone()),
            (None, Some(debit)) => (None, debit.last4.clone()),
            (None, None) => (None, None),
        };
        Ok(MethodDetails {
            kind: method.kind,
            brand,
            last4,
            mandate_reference: mandate.as_ref().and_then(|m| m.reference()),
            mandate_status: mandate.and_then(|m| m.status),
        })
    }

    async fn charge(&self, new: &NewCharge<'_>, key: &str) -> Result<ChargeAnswer, ProviderError> {
        Ok(answer(self.create_charge(new, key).await?))
    }

    async fn detach(&self, method: &str, key: &str) -> Result<(), ProviderError> {
        match self.detach_payment_method(method, key).await {
            Ok(_) => Ok(()),
            // Gone at Stripe: it can be charged no more, which is what was asked.
            Err(StripeError::Api {
                status: 404, code, ..
            }) if code == "resource_missing" => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intent(status: &str) -> Intent {
        serde_json::from_value(serde_json::json!({
            "id": "pi_1", "status": status,
            "last_payment_error": {"code": "card_declined", "message": "Your card was declined."},
            "next_action": {"type": "redirect_to_url", "redirect_to_url": {"url": "https://x/a"}},
        }))
        .unwrap()
    }

    #[test]
    fn an_intents_status_is_an_attempts_state() {
        for (status, state) in [
            ("succeeded", ChargeState::Succeeded),
            ("processing", ChargeState::Processing),
            ("requires_action", ChargeState::RequiresAction),
            ("requires_confirmation", ChargeState::RequiresAction),
            ("requires_payment_method", ChargeState::Failed),
            ("canceled", ChargeState::Failed),
            ("requires_capture", ChargeState::Processing),
        ] {
            assert_eq!(answer(intent(status)).state, state, "{status}");
        }
        let failed = answer(intent("requires_payment_method"));
        assert_eq!(failed.reason.as_deref(), Some("Your card was declined."));
        assert_eq!(failed.action_url.as_deref(), Some("https://x/a"));
    }

    #[test]
    fn only_a_call_that_may_succeed_again_is_retryable() {
        let refused: ProviderError = StripeError::Api {
            status: 400,
            kind: "invalid_request_error".into(),
            code: "resource_missing".into(),
            message: "No such PaymentMethod".into(),
        }
        .into();
        assert_eq!(
            refused.to_string(),
            "the payment provider refused the call: No such PaymentMethod"
        );
        assert!(!refused.retryable());
        let busy: ProviderError = StripeError::Api {
            status: 429,
            kind: "rate_limit".into(),
            code: String::new(),
            message: String::new(),
        }
        .into();
        assert!(busy.retryable());
        assert!(ProviderError::from(StripeError::Network("reset".into())).retryable());
    }
}
