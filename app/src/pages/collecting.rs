//! The settings page's "Collecting automatically": the days a declined charge is tried again and
//! the late fees, saved once per rendered form.

use leptos::prelude::*;

use crate::pages::layout::{error_banner, field_error, field_errors, refused};
use crate::rpc::settings::SaveCollection;
use model::collection::CollectionForm;
use model::TaxRate;

#[component]
pub fn CollectionSettings(
    saved: CollectionForm,
    /// The org's tax rates (archived ones are not offered, unless the fee has one).
    tax_rates: Vec<TaxRate>,
    key: uuid::Uuid,
    can_manage: bool,
) -> impl IntoView {
    let save = ServerAction::<SaveCollection>::new();
    let errors = field_errors(save.value());
    let just_saved = crate::pages::filters::query_param()("saved").as_deref() == Some("collection");
    // Without JavaScript a refused save comes back through the URL: its key and what was typed.
    let (typed_key, typed) = refused(save.value().get_untracked());
    let key = typed_key.unwrap_or_else(|| key.to_string());
    let c = typed.unwrap_or(saved);
    let kind = c.fee_kind.clone();
    let rates = tax_rates
        .into_iter()
        .filter(|r| !r.archived || r.id.to_string() == c.fee_tax_rate_id)
        .map(|r| {
            let id = r.id.to_string();
            let selected = id == c.fee_tax_rate_id;
            view! { <option value=id selected=selected>{format!("{} ({}%)", r.name, r.percent)}</option> }
        })
        .collect_view();
    view! {
        <section class="card" aria-labelledby="collection-heading">
            <h2 id="collection-heading">"Collecting automatically"</h2>
            <p class="hint">
                "For invoices charged to a saved card or SEPA mandate: a declined charge is tried again on these days after the first try, "
                "then the invoice is emailed with its Pay link. Late fees are issued as invoices of their own, once per step."
            </p>
            {move || save.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
            {just_saved.then(|| view! { <p class="saved" role="status">"Collection settings saved."</p> })}
            <ActionForm action=save attr:class="collection-settings">
                <fieldset disabled=!can_manage class="plain">
                    <input type="hidden" name="idempotency_key" value=key />
                    <div class="grid">
                        <label>
                            "Retry a declined charge (days after the first try)"
                            <input type="text" name="collection[retry_days]" value=c.retry_days maxlength="100" placeholder="3, 5, 7" />
                            <span class="hint">"Up to six days, in increasing order; empty: no retry."</span>
                            {field_error(errors, "retry_days")}
                        </label>
                        <label>
                            "Late fee"
                            <select name="collection[fee_kind]">
                                <option value="none" selected=kind.is_empty() || kind == "none">"none"</option>
                                <option value="fixed" selected=kind == "fixed">"a fixed amount"</option>
                                <option value="percent" selected=kind == "percent">"a percent of what is due"</option>
                            </select>
                            {field_error(errors, "fee_kind")}
                        </label>
                        <label>
                            "Fee (amount or percent)"
                            <input type="text" inputmode="decimal" name="collection[fee]" value=c.fee maxlength="20" placeholder="5.00" />
                            <span class="hint">"An amount in the invoice's currency, or a percent such as 1.5."</span>
                            {field_error(errors, "fee")}
                        </label>
                        <label>
                            "Days overdue for each fee"
                            <input type="text" name="collection[fee_after_days]" value=c.fee_after_days maxlength="100" placeholder="15, 30" />
                            <span class="hint">"Up to three steps, each charged once per invoice."</span>
                            {field_error(errors, "fee_after_days")}
                        </label>
                        <label>
                            "Fee's tax rate"
                            <select name="collection[fee_tax_rate_id]">
                                <option value="">"none (untaxed)"</option>
                                {rates}
                            </select>
                            {field_error(errors, "fee_tax_rate_id")}
                        </label>
                    </div>
                    <button type="submit" class="primary save-collection">
                        "Save collection settings"
                    </button>
                </fieldset>
            </ActionForm>
        </section>
    }
}
