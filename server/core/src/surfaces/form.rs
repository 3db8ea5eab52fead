//! The web app's forms and buttons as a surface: a key minted at render in a hidden field, claimed as
//! `(form, <org>/<form name>, key)` in the transaction that does the work.

use model::InvoiceId;
use model::OrgId;
use sqlx::PgPool;
use uuid::Uuid;

use crate::claim::{Outcome, Terms};
use crate::invoicing::error::InvoiceError;
use crate::invoicing::lifecycle::{self, Action, Edited, Moved};
use crate::observe::{Attempt, AttemptOutcome, Concerns, Tracked};
use crate::surfaces::forms::Form;
use crate::surfaces::{busy, once, Once, Work};
use crate::{invoicing::invoices, outbox};
use model::error::AppError;
use model::InvoiceInput;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormOutcome {
    /// This submission created the invoice.
    Created(Uuid),
    /// An earlier submission of the same form, with the same content, did; here is its invoice.
    Replayed(Uuid),
    /// This rendered form already created an invoice with other content (edited after Back):
    /// not a repeat, and not a new attempt either; the user opens a new form.
    KeyReused,
}

impl FormOutcome {
    pub fn invoice_id(self) -> Option<Uuid> {
        match self {
            FormOutcome::Created(id) | FormOutcome::Replayed(id) => Some(id),
            FormOutcome::KeyReused => None,
        }
    }
}

impl Tracked for FormOutcome {
    fn outcome(&self) -> AttemptOutcome {
        match self {
            FormOutcome::Created(_) => AttemptOutcome::Won,
            FormOutcome::Replayed(_) => AttemptOutcome::Replay,
            FormOutcome::KeyReused => AttemptOutcome::Mismatch,
        }
    }

    fn concerns(&self) -> Concerns {
        Concerns {
            org: None,
            invoice: self.invoice_id(),
        }
    }
}

/// What was submitted, hashed: a resubmit must match it to be a replay.
fn fingerprint(input: &InvoiceInput) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    Sha256::digest(serde_json::to_vec(input).expect("an invoice input serialises")).to_vec()
}

/// The create-invoice form: creates the invoice at most once per rendered form, however often it is
/// submitted, through the one command ([`invoices::create`]); `input` has passed the form's own
/// checks, and what the org's rules refuse rolls back with the claim (the key stays usable).
pub async fn invoice_from_form(
    pool: &PgPool,
    attempt: &Attempt,
    org: OrgId,
    form_key: Uuid,
    input: &InvoiceInput,
) -> Result<FormOutcome, AppError> {
    let key = Form::CreateInvoice.claim_key(org, form_key);
    let source_key = format!("form:{form_key}");
    let fingerprint = fingerprint(input);
    // The invoice's id is minted first, so the claim is written with it: no statement to finish.
    let invoice_id = Uuid::now_v7();
    let terms = Terms {
        fingerprint: Some(&fingerprint),
        result_id: Some(invoice_id),
        ..Terms::default()
    };
    let ran = once(pool, attempt, &key, &terms, || {
        async |tx| {
            let new = invoices::NewInvoice {
                id: InvoiceId::from(invoice_id),
                org,
                source_key: Some(&source_key),
                public_base: "",
            };
            match invoices::create(tx, new, input).await {
                Ok(invoice) => Ok(Work::Commit {
                    answer: Some(invoice.id),
                    outcome: Outcome::result(invoice.id),
                    concerns: Concerns {
                        org: Some(org),
                        invoice: Some(invoice.id),
                    },
                }),
                // The claim row is an optimisation: if it was ever lost (retention), the invoice's own
                // unique source key still refuses the duplicate, and we answer with the original invoice.
                Err(InvoiceError::Db(sqlx::Error::Database(e)))
                    if e.constraint() == Some("invoices_org_source_key") =>
                {
                    Ok(Work::RollBack(None))
                }
                Err(e) => Err(AppError::from(e)),
            }
        }
    })
    .await?;
    match ran {
        Once::Ran(Some(id)) => Ok(FormOutcome::Created(id)),
        Once::Ran(None) => Ok(FormOutcome::Replayed(
            invoices::id_by_source_key(pool, org, &source_key).await?,
        )),
        Once::Done(Outcome {
            result_id: Some(id),
            ..
        }) => Ok(FormOutcome::Replayed(id)),
        Once::Done(outcome) => Err(AppError::internal(
            "form claim done without an invoice",
            format!("{key:?} {outcome:?}"),
        )),
        Once::Mismatch => Ok(FormOutcome::KeyReused),
        Once::Busy { retry_after } => Err(busy("This form is still being processed.", retry_after)),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOutcome {
    /// This click queued the email (the outbox row id).
    Queued(Uuid),
    /// An earlier click of the same rendered button did.
    AlreadyQueued(Uuid),
}

impl Tracked for SendOutcome {
    fn outcome(&self) -> AttemptOutcome {
        match self {
            SendOutcome::Queued(_) => AttemptOutcome::Won,
            SendOutcome::AlreadyQueued(_) => AttemptOutcome::Replay,
        }
    }
}

/// "Send invoice": queues the invoice email at most once per rendered button, through the mail
/// `gate`. The claim and the outbox row commit together; the worker's lease then makes the SMTP
/// send happen once.
pub async fn queue_invoice_email(
    pool: &PgPool,
    attempt: &Attempt,
    org: OrgId,
    form_key: Uuid,
    invoice: InvoiceId,
    gate: crate::mail::gate::Gate,
) -> Result<SendOutcome, AppError> {
    let key = Form::SendInvoice.claim_key(org, form_key);
    let ran = once(pool, attempt, &key, &Terms::default(), || {
        async |tx| {
            let Some(to) = invoices::recipient(tx, org, invoice).await? else {
                return Err(AppError::NotFound);
            };
            let permit = gate.permit(tx, org, &to).await??;
            let id = outbox::enqueue_email(
                tx,
                permit,
                Some(invoice.uuid()),
                outbox::MailKind::InvoiceEmail,
                serde_json::json!({ "invoice_id": invoice }),
            )
            .await?
            .ok_or_else(|| AppError::internal("send invoice", "outbox insert conflicted"))?;
            Ok(Work::Commit {
                answer: id,
                outcome: Outcome::result(id),
                concerns: Concerns {
                    org: Some(org),
                    invoice: Some(invoice.uuid()),
                },
            })
        }
    })
    .await?;
    match ran {
        Once::Ran(id) => Ok(SendOutcome::Queued(id)),
        Once::Done(Outcome {
            result_id: Some(id),
            ..
        }) => Ok(SendOutcome::AlreadyQueued(id)),
        Once::Done(_) | Once::Mismatch => Err(AppError::internal(
            "send claim",
            format!("{key:?} has no outbox row"),
        )),
        Once::Busy { retry_after } => Err(busy("This invoice is being sent.", retry_after)),
    }
}

impl Tracked for Moved {
    fn outcome(&self) -> AttemptOutcome {
        match self {
            Moved::Now => AttemptOutcome::Won,
            Moved::Already => AttemptOutcome::Replay,
            Moved::Refused(..) | Moved::NotFound => AttemptOutcome::Rejected,
        }
    }
}

/// A lifecycle button (finalize, void, mark uncollectible, delete): applied at most once per rendered
/// button, and as a conditional move, so a repeat or a lost race answers where the invoice is now.
pub async fn invoice_action(
    pool: &PgPool,
    attempt: &Attempt,
    org: OrgId,
    form_key: Uuid,
    invoice: InvoiceId,
    action: Action,
) -> Result<Moved, AppError> {
    if action == Action::Finalize {
        // An e-invoicing org finalizes only what makes a valid e-invoice: asked before claiming.
        let problems =
            crate::documents::einvoice::finalize_problems(pool, org, invoice.uuid()).await?;
        if !problems.is_empty() {
            return Err(AppError::BadRequest(crate::documents::einvoice::sentence(
                &problems,
            )));
        }
    }
    let key = Form::InvoiceAction(action.form_name()).claim_key(org, form_key);
    let terms = Terms {
        result_id: Some(invoice.uuid()),
        ..Terms::default()
    };
    let ran = once(pool, attempt, &key, &terms, || {
        async |tx| {
            let moved = lifecycle::apply(tx, org, invoice, action).await?;
            if moved != Moved::Now {
                // Nothing moved: nothing to record, the claim goes back with the rest, and a
                // repeat is judged again against the invoice as it will be then.
                return Ok::<_, AppError>(Work::RollBack(moved));
            }
            Ok(Work::Commit {
                answer: moved,
                outcome: Outcome::result(invoice.uuid()),
                concerns: Concerns {
                    org: Some(org),
                    invoice: (action != Action::DeleteDraft).then_some(invoice.uuid()),
                },
            })
        }
    })
    .await?;
    match ran {
        Once::Ran(moved) => Ok(moved),
        Once::Done(_) => Ok(Moved::Already),
        Once::Mismatch => Ok(Moved::Already),
        Once::Busy { retry_after } => {
            Err(busy("This action is still being processed.", retry_after))
        }
    }
}

/// "Duplicate": a new draft from any invoice, at most once per rendered button.
pub async fn duplicate_invoice(
    pool: &PgPool,
    attempt: &Attempt,
    org: OrgId,
    form_key: Uuid,
    invoice: InvoiceId,
) -> Result<FormOutcome, AppError> {
    let key = Form::DuplicateInvoice.claim_key(org, form_key);
    let new_id = Uuid::now_v7();
    let source_key = format!("duplicate:{form_key}");
    let terms = Terms {
        result_id: Some(new_id),
        ..Terms::default()
    };
    let ran = once(pool, attempt, &key, &terms, || {
        async |tx| match lifecycle::duplicate(tx, org, invoice, new_id, &source_key).await? {
            Some(_) => Ok::<_, AppError>(Work::Commit {
                answer: new_id,
                outcome: Outcome::result(new_id),
                concerns: Concerns {
                    org: Some(org),
                    invoice: Some(new_id),
                },
            }),
            None => Err(AppError::NotFound),
        }
    })
    .await?;
    match ran {
        Once::Ran(id) => Ok(FormOutcome::Created(id)),
        Once::Done(Outcome {
            result_id: Some(id),
            ..
        }) => Ok(FormOutcome::Replayed(id)),
        Once::Done(_) | Once::Mismatch => Err(AppError::internal(
            "duplicate claim",
            format!("{key:?} has no draft"),
        )),
        Once::Busy { retry_after } => Err(busy("This invoice is being duplicated.", retry_after)),
    }
}

/// How a draft's edit form ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DraftSave {
    /// This submit saved the draft.
    Saved,
    /// A repeat of a submit that saved it (a double click): nothing saved twice.
    Replayed,
    /// Not saved: the edit was made from `Stale`'s version, someone saved since, or it is no longer a
    /// draft, or it is gone.
    Refused(Edited),
    /// This rendered form already saved other content (Back, edit, submit).
    KeyReused,
}

impl Tracked for DraftSave {
    fn outcome(&self) -> AttemptOutcome {
        match self {
            DraftSave::Saved => AttemptOutcome::Won,
            DraftSave::Replayed => AttemptOutcome::Replay,
            DraftSave::Refused(_) => AttemptOutcome::Rejected,
            DraftSave::KeyReused => AttemptOutcome::Mismatch,
        }
    }
}

/// A draft's edit form: saved at most once per rendered form (its key), and only if the draft is
/// still at the version the form was rendered from, so an edit from a stale page never overwrites
/// someone else's.
#[allow(clippy::too_many_arguments)]
pub async fn edit_draft(
    pool: &PgPool,
    attempt: &Attempt,
    org: OrgId,
    form_key: Uuid,
    invoice: InvoiceId,
    version: i32,
    input: &InvoiceInput,
) -> Result<DraftSave, AppError> {
    let key = Form::EditDraft.claim_key(org, form_key);
    let fingerprint = {
        use sha2::{Digest, Sha256};
        let mut hash = Sha256::new();
        hash.update(invoice.uuid().as_bytes());
        hash.update(version.to_be_bytes());
        hash.update(fingerprint(input));
        hash.finalize().to_vec()
    };
    let terms = Terms {
        fingerprint: Some(&fingerprint),
        result_id: Some(invoice.uuid()),
        ..Terms::default()
    };
    let ran = once(pool, attempt, &key, &terms, || {
        async |tx| match lifecycle::edit_draft(tx, org, invoice, version, input).await? {
            Edited::Now(_) => Ok::<_, AppError>(Work::Commit {
                answer: DraftSave::Saved,
                outcome: Outcome::result(invoice.uuid()),
                concerns: Concerns {
                    org: Some(org),
                    invoice: Some(invoice.uuid()),
                },
            }),
            refused => Ok(Work::RollBack(DraftSave::Refused(refused))),
        }
    })
    .await?;
    Ok(match ran {
        Once::Ran(save) => save,
        Once::Done(_) => DraftSave::Replayed,
        Once::Mismatch => DraftSave::KeyReused,
        Once::Busy { retry_after } => return Err(busy("This draft is being saved.", retry_after)),
    })
}

/// How a form that saves one thing ended (a customer, a setting, a tax rate: not an invoice).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    /// This submit saved it.
    Created(Uuid),
    /// A repeat of the submit that did.
    Replayed(Uuid),
    /// This rendered form already saved other content.
    KeyReused,
}

impl Tracked for Saved {
    fn outcome(&self) -> AttemptOutcome {
        match self {
            Saved::Created(_) => AttemptOutcome::Won,
            Saved::Replayed(_) => AttemptOutcome::Replay,
            Saved::KeyReused => AttemptOutcome::Mismatch,
        }
    }
}

/// A settings form, at most once per rendered form: `save` writes the change in the claim's
/// transaction and names what it saved. A new settings form costs these few lines at its call site.
pub async fn setting_once<F, W>(
    pool: &PgPool,
    attempt: &Attempt,
    org: OrgId,
    form: Form,
    form_key: Uuid,
    content: &impl serde::Serialize,
    mut save: F,
) -> Result<Saved, AppError>
where
    F: FnMut() -> W,
    W: AsyncFnOnce(&mut sqlx::PgConnection) -> Result<Uuid, AppError>,
{
    use sha2::{Digest, Sha256};

    let key = form.claim_key(org, form_key);
    let fingerprint =
        Sha256::digest(serde_json::to_vec(content).expect("form content serialises")).to_vec();
    let terms = Terms {
        fingerprint: Some(&fingerprint),
        ..Terms::default()
    };
    let ran = once(pool, attempt, &key, &terms, || {
        let save = save();
        async move |tx: &mut sqlx::PgConnection| {
            let id = save(tx).await?;
            Ok::<_, AppError>(Work::Commit {
                answer: id,
                outcome: Outcome::result(id),
                concerns: Concerns {
                    org: Some(org),
                    invoice: None,
                },
            })
        }
    })
    .await?;
    match ran {
        Once::Ran(id) => Ok(Saved::Created(id)),
        Once::Done(Outcome {
            result_id: Some(id),
            ..
        }) => Ok(Saved::Replayed(id)),
        Once::Done(outcome) => Err(AppError::internal(
            "settings claim done without a result",
            format!("{key:?} {outcome:?}"),
        )),
        Once::Mismatch => Ok(Saved::KeyReused),
        Once::Busy { retry_after } => Err(busy("This form is still being processed.", retry_after)),
    }
}
