//! A customer's forms as the form surface runs them: the new-customer form and the edit form (once
//! per rendered form), and the buttons on a customer's page (once per rendered button, as a
//! conditional change).

use model::CustomerId;
use model::OrgId;
use sqlx::PgPool;
use uuid::Uuid;

use super::form::Saved;
use super::forms::Form;
use super::{busy, once, Once, Work};
use crate::accounts::audit::Actor;
use crate::claim::{Outcome, Terms};
use crate::customers::{self, CustomerChange, CustomerMoved};
use crate::observe::{Attempt, Concerns};
use model::error::AppError;

/// The new-customer form: creates the customer at most once per rendered form.
pub async fn customer_from_form(
    pool: &PgPool,
    attempt: &Attempt,
    org: OrgId,
    form_key: Uuid,
    input: &model::CustomerInput,
) -> Result<Saved, AppError> {
    use sha2::{Digest, Sha256};

    let key = Form::CreateCustomer.claim_key(org, form_key);
    let source_key = format!("form:{form_key}");
    let fingerprint = Sha256::digest(serde_json::to_vec(input).expect("input serialises")).to_vec();
    let customer_id = Uuid::now_v7();
    let terms = Terms {
        fingerprint: Some(&fingerprint),
        result_id: Some(customer_id),
        ..Terms::default()
    };
    let ran = once(pool, attempt, &key, &terms, || {
        async |tx| {
            match customers::create(
                tx,
                CustomerId::from(customer_id),
                org,
                Some(&source_key),
                input,
            )
            .await
            {
                Ok(_) => Ok(Work::Commit {
                    answer: true,
                    outcome: Outcome::result(customer_id),
                    concerns: Concerns {
                        org: Some(org),
                        invoice: None,
                    },
                }),
                // A lost claim row: the customer's own source key still refuses the duplicate.
                Err(sqlx::Error::Database(e))
                    if e.constraint() == Some("customers_org_source_key") =>
                {
                    Ok(Work::RollBack(false))
                }
                Err(e) => Err(AppError::from(e)),
            }
        }
    })
    .await?;
    match ran {
        Once::Ran(true) => Ok(Saved::Created(customer_id)),
        Once::Ran(false) => Ok(Saved::Replayed(
            customers::id_by_source_key(pool, org, &source_key).await?,
        )),
        Once::Done(Outcome {
            result_id: Some(id),
            ..
        }) => Ok(Saved::Replayed(id)),
        Once::Done(outcome) => Err(AppError::internal(
            "customer claim done without a customer",
            format!("{key:?} {outcome:?}"),
        )),
        Once::Mismatch => Ok(Saved::KeyReused),
        Once::Busy { retry_after } => Err(busy("This form is still being processed.", retry_after)),
    }
}

/// A customer's edit form: applied at most once per rendered form.
pub async fn update_customer(
    pool: &PgPool,
    attempt: &Attempt,
    org: OrgId,
    form_key: Uuid,
    customer: CustomerId,
    input: &model::CustomerInput,
) -> Result<Saved, AppError> {
    use sha2::{Digest, Sha256};

    let key = Form::EditCustomer.claim_key(org, form_key);
    let mut hash = Sha256::new();
    hash.update(customer.uuid().as_bytes());
    hash.update(serde_json::to_vec(input).expect("input serialises"));
    let fingerprint = hash.finalize().to_vec();
    let terms = Terms {
        fingerprint: Some(&fingerprint),
        result_id: Some(customer.uuid()),
        ..Terms::default()
    };
    let ran = once(pool, attempt, &key, &terms, || {
        async |tx| match customers::update(tx, org, customer, input).await? {
            Some(_) => Ok::<_, AppError>(Work::Commit {
                answer: (),
                outcome: Outcome::result(customer.uuid()),
                concerns: Concerns {
                    org: Some(org),
                    invoice: None,
                },
            }),
            None => Err(AppError::NotFound),
        }
    })
    .await?;
    match ran {
        Once::Ran(()) => Ok(Saved::Created(customer.uuid())),
        Once::Done(_) => Ok(Saved::Replayed(customer.uuid())),
        Once::Mismatch => Ok(Saved::KeyReused),
        Once::Busy { retry_after } => Err(busy("This form is still being processed.", retry_after)),
    }
}

/// A button on a customer's page, applied at most once per rendered button (`form_key`) and as a
/// conditional change; a change that applies is written to the audit log in its transaction.
pub async fn customer_action(
    pool: &PgPool,
    attempt: &Attempt,
    org: OrgId,
    actor: &Actor,
    form_key: Uuid,
    customer: CustomerId,
    action: CustomerChange,
) -> Result<CustomerMoved, AppError> {
    let key = Form::CustomerAction(action.form_name()).claim_key(org, form_key);
    let terms = Terms {
        result_id: Some(customer.uuid()),
        ..Terms::default()
    };
    let ran = once(pool, attempt, &key, &terms, || {
        async |tx| {
            let moved = customers::apply(tx, org, customer, action).await?;
            let CustomerMoved::Now(name) = moved.clone() else {
                // Nothing changed: the claim goes back with the rest, and a repeat is judged
                // again against the customer as it will be then.
                return Ok::<_, AppError>(Work::RollBack(moved));
            };
            let detail = serde_json::json!({ "customer_id": customer });
            crate::accounts::audit::record(tx, org, actor, action.audit_name(), &name, detail)
                .await?;
            Ok(Work::Commit {
                answer: moved,
                outcome: Outcome::result(customer.uuid()),
                concerns: Concerns {
                    org: Some(org),
                    invoice: None,
                },
            })
        }
    })
    .await?;
    match ran {
        Once::Ran(moved) => Ok(moved),
        Once::Done(_) | Once::Mismatch => Ok(CustomerMoved::Already),
        Once::Busy { retry_after } => {
            Err(busy("This action is still being processed.", retry_after))
        }
    }
}

/// Whether the owner's link email was queued by this press or an earlier one of the same button.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkSent {
    Now,
    Already,
}

impl crate::observe::Tracked for LinkSent {
    fn outcome(&self) -> crate::observe::AttemptOutcome {
        match self {
            LinkSent::Now => crate::observe::AttemptOutcome::Won,
            LinkSent::Already => crate::observe::AttemptOutcome::Replay,
        }
    }
}

/// What the owner's link email is: to whom, through which provider, back to where, by which gate.
pub struct MethodLink<'a, P> {
    pub customer: CustomerId,
    pub provider: &'a P,
    pub urls: &'a crate::payments::saved::SetupUrls,
    pub gate: crate::mail::gate::Gate,
}

/// "Email a link to save a payment method" on a customer's page: the setup page is asked of the
/// provider under a key named by the rendered button (a repeat gets the same page; the call leaves
/// the database, so it comes before the claim), then the claim `(form, send_payment_method_link)`
/// and the email's outbox row commit together: one email per rendered button, however often it is
/// pressed.
pub async fn send_method_link<P: crate::payments::provider::Provider>(
    pool: &PgPool,
    attempt: &Attempt,
    org: OrgId,
    form_key: Uuid,
    link: MethodLink<'_, P>,
) -> Result<LinkSent, AppError> {
    let MethodLink {
        customer,
        provider,
        urls,
        gate,
    } = link;
    use crate::payments::saved::{setup_link, LinkError};

    let attempt_name = format!("form:{form_key}");
    let page = setup_link(pool, provider, org, customer, "eur", &attempt_name, urls);
    let url = match page.await {
        Ok(Some(url)) => url,
        Ok(None) => return Err(AppError::NotFound),
        Err(LinkError::Db(e)) => return Err(e.into()),
        Err(LinkError::Refused(refused)) => return Err(AppError::BadRequest(refused.to_string())),
        Err(e) => {
            tracing::warn!(error = %e, "a setup page for the owner's link");
            return Err(AppError::BadRequest(
                "The payment provider could not be reached. Nothing was sent: try again in a \
                 minute."
                    .into(),
            ));
        }
    };
    let key = Form::CustomerAction("send_payment_method_link").claim_key(org, form_key);
    let terms = Terms {
        result_id: Some(customer.uuid()),
        ..Terms::default()
    };
    let ran = once(pool, attempt, &key, &terms, || {
        let url = url.clone();
        async move |tx| {
            // language=PostgreSQL
            let to = sqlx::query!(
                r#"select c.email, o.name as org_name from customers c join orgs o on o.id = c.org_id
                   where c.id = $1 and c.org_id = $2"#,
                customer as _,
                org as _
            )
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(AppError::NotFound)?;
            let permit = gate.permit(tx, org, &to.email).await??;
            crate::outbox::enqueue_email(
                tx,
                permit,
                None,
                crate::outbox::MailKind::PaymentMethodLink,
                serde_json::json!({
                    "to": to.email,
                    "org_name": to.org_name,
                    "url": url,
                    "dedupe": format!("payment-method-link/{form_key}"),
                }),
            )
            .await?;
            Ok::<_, AppError>(Work::Commit {
                answer: LinkSent::Now,
                outcome: Outcome::result(customer.uuid()),
                concerns: Concerns {
                    org: Some(org),
                    invoice: None,
                },
            })
        }
    })
    .await?;
    match ran {
        Once::Ran(sent) => Ok(sent),
        Once::Done(_) | Once::Mismatch => Ok(LinkSent::Already),
        Once::Busy { retry_after } => Err(busy("This link is being sent.", retry_after)),
    }
}
