//! The new-invoice and edit-draft forms and the fields they share.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::pages::layout::{error_banner, route_resource, Head, NotFound};
use crate::rpc::invoices::{get_draft, invoice_form_options, CreateInvoice, UpdateDraft};
use model::error::{AppError, FieldErrors};
use model::{format_money, InvoiceForm, LineForm, COMMON_CURRENCIES, MAX_LINES, PAYMENT_TERMS};

/// The create form. Its `idempotency_key` is minted once, on the server, when the form is rendered
/// (the page is server HTML: the browser submits what was rendered): every submit of
/// this rendered form is the same attempt.
#[component]
pub fn NewInvoicePage() -> impl IntoView {
    let action = ServerAction::<CreateInvoice>::new();
    let minted = crate::pages::rendered_form_key();

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

    view! {
        <section class="card">
            <h1>"New invoice"</h1>
            {move || action.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e.error))}
            <ActionForm action>
                <input type="hidden" name="idempotency_key" value=key />
                <InvoiceFields values errors more_lines="/invoices/new".to_owned() offer_save_customer=true />
                <button type="submit" class="primary" data-pending="Creating…">
                    "Create invoice"
                </button>
                " "
                <button type="submit" class="secondary save-draft" name="input[draft]" value="true" data-pending="Saving…">
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
    let draft = route_resource(get_draft);
    // Without JavaScript a refused save comes back through the URL with its key and values.
    let rejected = match action.value().get_untracked() {
        Some(Err(e)) => Some(e),
        _ => None,
    };
    let errors = Signal::derive(move || match action.value().get() {
        Some(Err(e)) => e.error.field_errors().cloned().unwrap_or_default(),
        _ => FieldErrors::new(),
    });
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
                                        <button type="submit" class="primary save" data-pending="Saving…">
                                            "Save draft"
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

/// The invoice's fields and line rows, shared by the new-invoice, edit-draft, quote and schedule
/// template forms: server HTML around one island ([`InvoiceLines`]) for what follows the typing.
/// Spare rows come from `?lines=N` (so "+ Add line" works without JavaScript: `more_lines` is the
/// page's path).
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
    let options = Resource::new(|| (), |_| invoice_form_options());
    let errors = errors.get_untracked();
    view! {
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || {
                let (values, errors, more_lines) = (values.clone(), errors.clone(), more_lines.clone());
                Suspend::new(async move {
                    let options = options.await.unwrap_or_default();
                    form_fields(values, errors, more_lines, options, wanted_rows, offer_save_customer, recurring)
                })
            }}
        </Suspense>
    }
}

fn form_fields(
    values: InvoiceForm,
    errors: FieldErrors,
    more_lines: String,
    options: model::InvoiceFormOptions,
    wanted_rows: usize,
    offer_save_customer: bool,
    recurring: bool,
) -> impl IntoView {
    let error_for = |field: &str| {
        errors
            .get(field)
            .cloned()
            .map(|m| view! { <span class="error">{m}</span> })
    };
    let picked = values.customer_id.clone().unwrap_or_default();
    let currency = if values.currency.is_empty() {
        options.currencies.for_customer(&picked).to_owned()
    } else {
        values.currency.clone()
    };
    let row_count = wanted_rows.max(values.lines.len()).clamp(1, MAX_LINES);
    let mut lines = values.lines.clone();
    lines.resize(row_count, LineForm::default());
    view! {
        <label>
            "Customer"
            <select name="input[customer_id]">
                <option value="">"None: type the customer's name and email below"</option>
                {options
                    .customers
                    .into_iter()
                    .map(|c| {
                        let id = c.id.to_string();
                        let selected = id == picked;
                        view! { <option value=id selected=selected>{format!("{} <{}>", c.name, c.email)}</option> }
                    })
                    .collect_view()}
            </select>
            <span class="hint">"A picked customer's name, email, address and tax id go on the invoice."</span>
            {error_for("customer_id")}
        </label>
        <div class="grid">
            <label>
                "Customer name"
                <input type="text" name="input[customer_name]" value=values.customer_name maxlength="200" />
                {error_for("customer_name")}
            </label>
            <label>
                "Customer email"
                // Text, not type=email: the server's message, not the browser's, explains what is wrong.
                <input
                    type="text"
                    inputmode="email"
                    autocomplete="off"
                    name="input[customer_email]"
                    value=values.customer_email
                />
                {error_for("customer_email")}
            </label>
            {(!recurring).then(|| view! {
                <label>
                    "Due date"
                    <input type="date" name="input[due_date]" value=values.due_date.clone() />
                    {error_for("due_date")}
                </label>
            })}
            <label>
                "Payment terms"
                <select name="input[payment_terms_days]">
                    {(!recurring).then(|| view! { <option value="" selected=values.payment_terms_days.is_empty()>"Due on the date above"</option> })}
                    {PAYMENT_TERMS
                        .iter()
                        .map(|days| {
                            let value = days.to_string();
                            let selected = value == values.payment_terms_days;
                            let label = if *days == 0 { "Due on receipt".to_owned() } else { format!("Net {days}") };
                            view! { <option value=value selected=selected>{label}</option> }
                        })
                        .collect_view()}
                </select>
                <span class="hint">
                    {if recurring { "Each run's invoice is due this long after it is issued." } else { "Terms set the due date when the invoice is issued." }}
                </span>
                {error_for("payment_terms_days")}
            </label>
        </div>
        {offer_save_customer
            .then(|| {
                view! {
                    <label class="checkbox">
                        <input type="checkbox" name="input[save_customer]" value="true" checked=values.save_customer.is_some() />
                        "Save as a new customer (name and email above)"
                    </label>
                }
            })}
        <InvoiceLines
            currency
            currencies=options.currencies
            lines
            discount=values.discount
            discount_kind=values.discount_kind
            tax_rates=options.tax_rates
            errors=errors.clone()
            more_lines
        />
        <label>
            "Notes (shown on the invoice)"
            <textarea name="input[notes]" maxlength="2000" rows="3">{values.notes}</textarea>
            {error_for("notes")}
        </label>
        <CollectionMethod chosen=values.collection_method.clone() error=errors.get("collection_method").cloned() />
    }
}

/// The island of the invoice forms: the currency, the line rows, the discount and the totals,
/// which follow what is typed by the rule the server stores them with. Rows are added and removed
/// in place; without JavaScript the same fields post as they are, and "+ Add line" is a link.
#[island]
fn InvoiceLines(
    /// The currency the form starts with.
    currency: String,
    /// What picking a customer switches the currency to, until the user picks one.
    currencies: model::CurrencyDefaults,
    /// The rows shown at first, as typed (empty ones for spare rows).
    lines: Vec<LineForm>,
    discount: String,
    discount_kind: String,
    tax_rates: Vec<model::TaxRate>,
    errors: FieldErrors,
    more_lines: String,
) -> impl IntoView {
    let row_count = lines.len();
    let rows = RwSignal::new(
        lines
            .into_iter()
            .enumerate()
            .collect::<Vec<(usize, LineForm)>>(),
    );
    let next_row_id = StoredValue::new(row_count);
    let errors = StoredValue::new(errors);
    let error_for = move |field: &'static str| {
        errors.with_value(|e| {
            e.get(field)
                .cloned()
                .map(|m| view! { <span class="error">{m}</span> })
        })
    };
    // The currencies offered: the common ones, and any other this form starts with or may switch to.
    let mut offered: Vec<String> = COMMON_CURRENCIES.iter().map(|c| (*c).to_owned()).collect();
    for extra in std::iter::once(&currency)
        .chain(std::iter::once(&currencies.org))
        .chain(currencies.by_customer.iter().map(|(_, c)| c))
    {
        if !offered.contains(extra) {
            offered.push(extra.clone());
        }
    }
    // What the user has typed so far into the fields the totals depend on (the line rows keep
    // theirs in `rows`): the totals panel follows them.
    let typed_currency = RwSignal::new(currency);
    let currency_chosen = StoredValue::new(false);
    let typed_discount = RwSignal::new(discount.clone());
    let typed_kind = RwSignal::new(discount_kind.clone());
    // Picking a customer (outside the island: the select is server HTML) switches to the currency
    // of their latest invoice, unless the user has already chosen one.
    let _ = window_event_listener(leptos::ev::change, move |ev| {
        let picked = event_target::<leptos::web_sys::HtmlSelectElement>(&ev);
        if picked.name() == "input[customer_id]" && !currency_chosen.get_value() {
            typed_currency.set(currencies.for_customer(&picked.value()).to_owned());
        }
    });
    // While the form's submit is in flight its buttons are disabled and the pressed one says so
    // (its `data-pending`): a second press does nothing in this browser. The server never relies on
    // it: a second request carries the rendered key and is a replay.
    let _ = window_event_listener(leptos::ev::submit, move |ev| {
        use leptos::wasm_bindgen::JsCast;
        let form = ev
            .target()
            .and_then(|t| t.dyn_into::<leptos::web_sys::HtmlFormElement>().ok());
        if let Some(form) =
            form.filter(|f| f.query_selector("[data-pending]").ok().flatten().is_some())
        {
            let pressed = ev.submitter();
            // Once the browser has read the form: a disabled button's name and value are not sent.
            set_timeout(
                move || busy(&form, pressed.as_ref(), true),
                std::time::Duration::ZERO,
            );
        }
    });
    // Back on a page the browser kept: the buttons this island disabled work again.
    let _ = window_event_listener(leptos::ev::pageshow, move |_| {
        if let Ok(forms) = document().query_selector_all("form") {
            for i in 0..forms.length() {
                use leptos::wasm_bindgen::JsCast;
                let form = (forms.get(i))
                    .and_then(|f| f.dyn_into::<leptos::web_sys::HtmlFormElement>().ok())
                    .filter(|f| f.query_selector("[data-pending]").ok().flatten().is_some());
                if let Some(form) = form {
                    busy(&form, None, false);
                }
            }
        }
    });
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
    let rates = StoredValue::new(tax_rates);
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

    view! {
        <label>
            "Currency"
            <select
                name="input[currency]"
                prop:value=move || typed_currency.get()
                on:change=move |ev| {
                    currency_chosen.set_value(true);
                    typed_currency.set(event_target_value(&ev));
                }
            >
                {offered
                    .into_iter()
                    .map(|c| {
                        let label = c.to_ascii_uppercase();
                        let value = c.clone();
                        let selected = move || typed_currency.with(|t| *t == c);
                        view! { <option value=value selected=selected>{label}</option> }
                    })
                    .collect_view()}
            </select>
            {error_for("currency")}
        </label>
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
                                errors.with_value(|e| e.get(&key).cloned()).map(|m| view! { <span class="error">{m}</span> })
                            }
                        };
                        let picked = line.tax_rate_id.clone();
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
                                    <select name=name("tax_rate_id") aria-label=move || format!("Line {} tax", index() + 1)
                                        on:change=move |ev| set_line(id, |l| &mut l.tax_rate_id, event_target_value(&ev))>
                                        <option value="">"No tax"</option>
                                        {rates.with_value(|rates| rates
                                            .iter()
                                            // An archived rate is offered only to the line that has it.
                                            .filter(|r| !r.archived || r.id.to_string() == picked)
                                            .map(|r| {
                                                let id = r.id.to_string();
                                                let selected = id == picked;
                                                view! { <option value=id selected=selected>{format!("{} {}%", r.name, r.percent)}</option> }
                                            })
                                            .collect_view())}
                                    </select>
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
        {errors.with_value(|e| e.get("lines").cloned()).map(|m| view! { <p class="error">{m}</p> })}
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
                {error_for("discount")}
            </label>
            <label>
                "Discount is"
                <select name="input[discount_kind]" on:change=move |ev| typed_kind.set(event_target_value(&ev))>
                    <option value="percent" selected=discount_kind != "amount">"a percentage of the subtotal"</option>
                    <option value="amount" selected=discount_kind == "amount">"an amount"</option>
                </select>
            </label>
        </div>
        <LiveTotals totals=Signal::derive(totals) currency=typed_currency />
        <p class="hint">"The totals follow what you type, by the rule the server stores them with."</p>
    }
}

/// Disables (or enables again) `form`'s submit buttons; the pressed one shows its `data-pending`
/// text meanwhile.
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
fn busy(
    form: &leptos::web_sys::HtmlFormElement,
    pressed: Option<&leptos::web_sys::HtmlElement>,
    on: bool,
) {
    let Ok(buttons) = form.query_selector_all("button[type=submit]") else {
        return;
    };
    for i in 0..buttons.length() {
        use leptos::wasm_bindgen::JsCast;
        let Some(button) = buttons
            .get(i)
            .and_then(|b| b.dyn_into::<leptos::web_sys::HtmlButtonElement>().ok())
        else {
            continue;
        };
        button.set_disabled(on);
        let was_pressed = pressed.is_some_and(|p| **p == **button);
        match (
            on,
            button.get_attribute("data-pending"),
            button.get_attribute("data-label"),
        ) {
            (true, Some(pending), _) if was_pressed => {
                let _ =
                    button.set_attribute("data-label", &button.text_content().unwrap_or_default());
                button.set_text_content(Some(&pending));
            }
            (false, _, Some(label)) => {
                button.set_text_content(Some(&label));
                let _ = button.remove_attribute("data-label");
            }
            _ => {}
        }
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

/// How an invoice (a schedule's, a quote's) is collected: sent for the customer to pay, or charged
/// to their saved method.
#[component]
pub fn CollectionMethod(chosen: String, error: Option<String>) -> impl IntoView {
    let automatic = chosen == "charge_automatically";
    view! {
        <label>
            "Collection"
            <select name="input[collection_method]">
                <option value="send_invoice" selected=!automatic>
                    "Send it: the customer pays from its page"
                </option>
                <option value="charge_automatically" selected=automatic>
                    "Charge the customer's saved payment method automatically"
                </option>
            </select>
            <span class="hint">"An automatic charge needs a customer who saved a card or a SEPA mandate; without one the invoice is sent."</span>
            {error.map(|m| view! { <span class="error">{m}</span> })}
        </label>
    }
}
