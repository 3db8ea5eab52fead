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
