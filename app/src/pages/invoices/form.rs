//! The new-invoice and edit-draft forms and the fields they share.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::pages::layout::{error_banner, route_resource, Head, NotFound};
use crate::rpc::customers::list_customers;
use crate::rpc::invoices::{get_draft, CreateInvoice, UpdateDraft};
use crate::rpc::settings::list_tax_rates;
use model::error::{AppError, FieldErrors};
use model::{format_money, InvoiceForm, LineForm, COMMON_CURRENCIES, MAX_LINES, PAYMENT_TERMS};

/// The create form. Its `idempotency_key` is minted once, on the server, when the form is rendered,
/// and carried into the browser by `SharedValue` so hydration keeps the same value: every submit of
/// this rendered form is the same attempt.
#[component]
pub fn NewInvoicePage() -> impl IntoView {
    let action = ServerAction::<CreateInvoice>::new();
    // Positional hydration id: create it first, outside any Suspense.
    let minted = SharedValue::new_str(crate::pages::rendered_form_key).into_inner();

    // Without JavaScript a refused submit comes back through the URL; reuse its key and values so
    // the corrected resubmit is the same attempt and nothing typed is lost.
    let refused = match action.value().get_untracked() {
        Some(Err(e)) => Some(e),
        _ => None,
    };
    let key = (refused.as_ref())
        .and_then(|e| e.error.attempt()?.idempotency_key.clone())
        .unwrap_or_else(|| minted.to_string());
    let values = refused.and_then(|e| e.values).unwrap_or_default();

    let errors = Signal::derive(move || match action.value().get() {
        Some(Err(e)) => e.error.field_errors().cloned().unwrap_or_default(),
        _ => FieldErrors::new(),
    });
    let pending = action.pending();

    view! {
        <section class="card">
            <h1>"New invoice"</h1>
            {move || action.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e.error))}
            <ActionForm action>
                <input type="hidden" name="idempotency_key" value=key />
                <InvoiceFields values errors more_lines="/invoices/new".to_owned() offer_save_customer=true />
                <button type="submit" class="primary" disabled=move || pending.get()>
                    {move || if pending.get() { "Creating…" } else { "Create invoice" }}
                </button>
                " "
                <button type="submit" class="secondary save-draft" name="input[draft]" value="true" disabled=move || pending.get()>
                    "Save draft"
                </button>
            </ActionForm>
        </section>
    }
}

/// A draft's edit form. Its key comes with the draft (minted by the server when it rendered the page,
/// and carried through hydration with the resource), and so does the version it edits: a double
/// click saves once, and a save from a page someone else has saved since is refused, the typed values
/// kept on the page.
#[component]
pub fn EditInvoicePage() -> impl IntoView {
    let action = ServerAction::<UpdateDraft>::new();
    let draft = route_resource(|| 0, get_draft);
    // Without JavaScript a refused save comes back through the URL with its key and values.
    let rejected = match action.value().get_untracked() {
        Some(Err(e)) => Some(e),
        _ => None,
    };
    let errors = Signal::derive(move || match action.value().get() {
        Some(Err(e)) => e.error.field_errors().cloned().unwrap_or_default(),
        _ => FieldErrors::new(),
    });
    let pending = action.pending();
    view! {
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || {
                let rejected = rejected.clone();
                Suspend::new(async move {
                    match draft.await {
                        Ok(model::DraftEdit { id, version, key, form }) => {
                            let key = (rejected.as_ref())
                                .and_then(|e| e.error.attempt()?.idempotency_key.clone())
                                .unwrap_or_else(|| key.to_string());
                            let values = rejected.and_then(|e| e.values).unwrap_or(form);
                            view! {
                                <section class="card">
                                    <h1>"Edit draft"</h1>
                                    {move || action.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e.error))}
                                    <ActionForm action>
                                        <input type="hidden" name="invoice_id" value=id.to_string() />
                                        <input type="hidden" name="idempotency_key" value=key />
                                        <input type="hidden" name="version" value=version.to_string() />
                                        <InvoiceFields values errors more_lines=format!("/invoices/{id}/edit") />
                                        <button type="submit" class="primary save" disabled=move || pending.get()>
                                            {move || if pending.get() { "Saving…" } else { "Save draft" }}
                                        </button>
                                        " "
                                        <a href=format!("/invoices/{id}")>"Cancel"</a>
                                    </ActionForm>
                                </section>
                            }
                                .into_any()
                        }
                        Err(AppError::NotFound) => view! { <NotFound /> }.into_any(),
                        Err(e) => error_banner(&e).into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

/// The invoice's fields and line rows, shared by the new-invoice, edit-draft and schedule template
/// forms. Spare rows come from `?lines=N` (so "+ Add line" works without JavaScript: `more_lines`
/// is the page's path).
#[component]
pub(crate) fn InvoiceFields(
    values: InvoiceForm,
    errors: Signal<FieldErrors>,
    more_lines: String,
    /// The create form offers "Save as a new customer"; a draft's edit form does not.
    #[prop(optional)]
    offer_save_customer: bool,
    /// A schedule's template: each run has its own due date, from the payment terms.
    #[prop(optional)]
    recurring: bool,
) -> impl IntoView {
    let wanted_rows = use_query_map()
        .with_untracked(|q| q.get("lines").and_then(|n| n.parse::<usize>().ok()))
        .unwrap_or(1);
    let row_count = wanted_rows.max(values.lines.len()).clamp(1, MAX_LINES);
    let rows = RwSignal::new(
        (0..row_count)
            .map(|i| (i, values.lines.get(i).cloned().unwrap_or_default()))
            .collect::<Vec<(usize, LineForm)>>(),
    );
    let next_row_id = StoredValue::new(row_count);

    let errors = move || errors.get();
    let error_for = move |field: String| {
        move || {
            errors()
                .get(&field)
                .cloned()
                .map(|m| view! { <span class="error">{m}</span> })
        }
    };
    let InvoiceForm {
        customer_name,
        customer_email,
        currency,
        due_date,
        customer_id,
        save_customer,
        payment_terms_days,
        discount_kind,
        discount,
        notes,
        ..
    } = values;
    let customers = Resource::new(|| (), |_| list_customers(None));
    // Archived rates too: a draft saved with one keeps it; new picks see only the active ones.
    let tax_rates = Resource::new(|| (), |_| list_tax_rates(true));
    let picked = customer_id.unwrap_or_default();
    let currency = if currency.is_empty() {
        "usd".to_owned()
    } else {
        currency
    };
    // What the user has typed so far into the fields the totals depend on (the line rows keep
    // theirs in `rows`): the totals panel follows them.
    let typed_currency = RwSignal::new(currency.clone());
    let typed_discount = RwSignal::new(discount.clone());
    let typed_kind = RwSignal::new(discount_kind.clone());
    let set_line = move |id: usize, field: fn(&mut LineForm) -> &mut String, value: String| {
        rows.update(|r| {
            if let Some((_, line)) = r.iter_mut().find(|(i, _)| *i == id) {
                *field(line) = value;
            }
        })
    };
    // A row's quantity × unit price, rounded as the server rounds it; empty until both parse.
    let row_amount = move |id: usize| {
        let currency = typed_currency.get();
        let step = model::currency(&currency).map_or(1, |c| c.step);
        rows.with(|r| {
            let (_, line) = r.iter().find(|(i, _)| *i == id)?;
            let quantity = model::Thousandths::parse(line.quantity.trim())?;
            let unit = model::parse_amount(line.unit_amount.trim(), &currency).ok()?;
            Some(format_money(
                model::line_amount(quantity, unit, step),
                &currency,
            ))
        })
    };
    let add_row = move |ev: leptos::ev::MouseEvent| {
        ev.prevent_default();
        if rows.with(|r| r.len()) < MAX_LINES {
            let id = next_row_id.get_value();
            next_row_id.set_value(id + 1);
            rows.update(|r| r.push((id, LineForm::default())));
        }
    };

    view! {
        <label>
            "Customer"
            <Suspense fallback=|| view! { <select disabled=true><option>"Loading…"</option></select> }>
                {move || {
                    let picked = picked.clone();
                    Suspend::new(async move {
                        let list = customers.await.unwrap_or_default();
                        view! {
                            <select name="input[customer_id]">
                                <option value="">"None: type the customer's name and email below"</option>
                                {list
                                    .into_iter()
                                    .map(|c| {
                                        let id = c.id.to_string();
                                        let selected = id == picked;
                                        view! { <option value=id selected=selected>{format!("{} <{}>", c.name, c.email)}</option> }
                                    })
                                    .collect_view()}
                            </select>
                        }
                    })
                }}
            </Suspense>
            <span class="hint">"A picked customer's name, email, address and tax id go on the invoice."</span>
            {error_for("customer_id".into())}
        </label>
                <div class="grid">
            <label>
                "Customer name"
                <input type="text" name="input[customer_name]" value=customer_name maxlength="200" />
                {error_for("customer_name".into())}
            </label>
            <label>
                "Customer email"
                // Text, not type=email: the server's message, not the browser's, explains what is wrong.
                <input
                    type="text"
                    inputmode="email"
                    autocomplete="off"
                    name="input[customer_email]"
                    value=customer_email
                />
                {error_for("customer_email".into())}
            </label>
            <label>
                "Currency"
                <select name="input[currency]" on:change=move |ev| typed_currency.set(event_target_value(&ev))>
                    {COMMON_CURRENCIES
                        .iter()
                        .map(|c| {
                            view! {
                                <option value=*c selected=*c == currency>
                                    {c.to_ascii_uppercase()}
                                </option>
                            }
                        })
                        .collect_view()}
                </select>
                {error_for("currency".into())}
            </label>
            {(!recurring).then(|| view! {
                <label>
                    "Due date"
                    <input type="date" name="input[due_date]" value=due_date />
                    {error_for("due_date".into())}
                </label>
            })}
            <label>
                "Payment terms"
                <select name="input[payment_terms_days]">
                    {(!recurring).then(|| view! { <option value="" selected=payment_terms_days.is_empty()>"Due on the date above"</option> })}
                    {PAYMENT_TERMS
                        .iter()
                        .map(|days| {
                            let value = days.to_string();
                            let selected = value == payment_terms_days;
                            let label = if *days == 0 { "Due on receipt".to_owned() } else { format!("Net {days}") };
                            view! { <option value=value selected=selected>{label}</option> }
                        })
                        .collect_view()}
                </select>
                <span class="hint">
                    {if recurring { "Each run's invoice is due this long after it is issued." } else { "Terms set the due date when the invoice is issued." }}
                </span>
                {error_for("payment_terms_days".into())}
            </label>
        </div>
        {offer_save_customer
            .then(|| {
                view! {
                    <label class="checkbox">
                        <input type="checkbox" name="input[save_customer]" value="true" checked=save_customer.is_some() />
                        "Save as a new customer (name and email above)"
                    </label>
                }
            })}
        <table class="lines">
            <Head cols=&["Description", "Quantity", "Unit price", "Tax", "Amount", ""] num=&["Amount"]/>
            <tbody>
                <For
                    each=move || rows.get()
                    key=|(id, _)| *id
                    children=move |(id, line)| {
                        let index = move || rows.with(|r| r.iter().position(|(i, _)| *i == id).unwrap_or(0));
                        let name = move |field: &'static str| move || format!("input[lines][{}][{field}]", index());
                        let line_error = move |field: &'static str| {
                            move || {
                                let key = format!("lines[{}].{field}", index());
                                errors().get(&key).cloned().map(|m| view! { <span class="error">{m}</span> })
                            }
                        };
                        view! {
                            <tr class="line">
                                <td>
                                    <input type="text" name=name("description") value=line.description maxlength="500" aria-label=move || format!("Line {} description", index() + 1)
                                        on:input=move |ev| set_line(id, |l| &mut l.description, event_target_value(&ev)) />
                                    {line_error("description")}
                                </td>
                                <td>
                                    <input type="text" inputmode="decimal" name=name("quantity") value=line.quantity placeholder="1" aria-label=move || format!("Line {} quantity", index() + 1)
                                        on:input=move |ev| set_line(id, |l| &mut l.quantity, event_target_value(&ev)) />
                                    {line_error("quantity")}
                                </td>
                                <td>
                                    <input type="text" inputmode="decimal" name=name("unit_amount") value=line.unit_amount placeholder="0.00" aria-label=move || format!("Line {} unit price", index() + 1)
                                        on:input=move |ev| set_line(id, |l| &mut l.unit_amount, event_target_value(&ev)) />
                                    {line_error("unit_amount_cents")}
                                </td>
                                <td>
                                    <Suspense fallback=|| view! { <select disabled=true aria-label="Tax"><option>"…"</option></select> }>
                                        {move || {
                                            let picked = line.tax_rate_id.clone();
                                            Suspend::new(async move {
                                                let rates = tax_rates.await.unwrap_or_default();
                                                view! {
                                                    <select name=name("tax_rate_id") aria-label=move || format!("Line {} tax", index() + 1)
                                                        on:change=move |ev| set_line(id, |l| &mut l.tax_rate_id, event_target_value(&ev))>
                                                        <option value="">"No tax"</option>
                                                        {rates
                                                            .into_iter()
                                                            // An archived rate is offered only to the line that has it.
                                                            .filter(|r| !r.archived || r.id.to_string() == picked)
                                                            .map(|r| {
                                                                let id = r.id.to_string();
                                                                let selected = id == picked;
                                                                view! { <option value=id selected=selected>{format!("{} {}%", r.name, r.percent)}</option> }
                                                            })
                                                            .collect_view()}
                                                    </select>
                                                }
                                            })
                                        }}
                                    </Suspense>
                                    {line_error("tax_rate_id")}
                                </td>
                                <td class="num line-amount">{move || row_amount(id)}</td>
                                <td>
                                    <button
                                        type="button"
                                        class="link remove-line"
                                        on:click=move |_| rows.update(|r| if r.len() > 1 { r.retain(|(i, _)| *i != id) })
                                    >
                                        "Remove"
                                    </button>
                                </td>
                            </tr>
                        }
                    }
                />
            </tbody>
        </table>
        {move || errors().get("lines").cloned().map(|m| view! { <p class="error">{m}</p> })}
        // Works without JavaScript too: the link re-renders the form with one more row.
        <p>
            <a class="add-line" href=move || format!("{more_lines}?lines={}", rows.with(|r| r.len()) + 1) on:click=add_row>
                "+ Add line"
            </a>
        </p>
        <div class="grid">
            <label>
                "Discount"
                <input type="text" inputmode="decimal" name="input[discount]" value=discount placeholder="none"
                    on:input=move |ev| typed_discount.set(event_target_value(&ev)) />
                {error_for("discount".into())}
            </label>
            <label>
                "Discount is"
                <select name="input[discount_kind]" on:change=move |ev| typed_kind.set(event_target_value(&ev))>
                    <option value="percent" selected=discount_kind != "amount">"a percentage of the subtotal"</option>
                    <option value="amount" selected=discount_kind == "amount">"an amount"</option>
                </select>
            </label>
        </div>
        <label>
            "Notes (shown on the invoice)"
            <textarea name="input[notes]" maxlength="2000" rows="3">{notes}</textarea>
            {error_for("notes".into())}
        </label>
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                let rates = StoredValue::new(tax_rates.await.unwrap_or_default());
                let totals = move || {
                    let form = InvoiceForm {
                        currency: typed_currency.get(),
                        discount: typed_discount.get(),
                        discount_kind: typed_kind.get(),
                        lines: rows.get().into_iter().map(|(_, l)| l).collect(),
                        ..InvoiceForm::default()
                    };
                    rates.with_value(|r| form.preview(r))
                };
                view! { <LiveTotals totals=Signal::derive(totals) currency=typed_currency /> }
            })}
        </Transition>
        <p class="hint">"The totals follow what you type, by the rule the server stores them with."</p>
    }
}

/// The totals of what is typed: subtotal, discount, each tax and the total, or a hint while a line
/// does not parse. Announced politely to screen readers as they change.
#[component]
fn LiveTotals(totals: Signal<Option<model::Totals>>, currency: RwSignal<String>) -> impl IntoView {
    let money = move |cents: i64| format_money(cents, &currency.get());
    view! {
        <table class="live-totals" aria-live="polite">
            <caption>"Totals"</caption>
            <tbody>
                {move || match totals.get() {
                    Some(t) => view! {
                        <tr><th scope="row">"Subtotal"</th><td class="num live-subtotal">{money(t.subtotal_cents)}</td></tr>
                        {(t.discount_cents > 0).then(|| view! {
                            <tr><th scope="row">"Discount"</th><td class="num live-discount">{format!("−{}", money(t.discount_cents))}</td></tr>
                        })}
                        {t.taxes.iter().map(|tax| view! {
                            <tr><th scope="row">{format!("{} {}%", tax.name, tax.percent)}</th><td class="num live-tax">{money(tax.amount_cents)}</td></tr>
                        }).collect_view()}
                        <tr><th scope="row">"Total"</th><td class="num live-total">{money(t.total_cents)}</td></tr>
                    }.into_any(),
                    None => view! {
                        <tr><td colspan="2" class="hint">"Totals show once each line has a quantity and a price."</td></tr>
                    }.into_any(),
                }}
            </tbody>
        </table>
    }
}
