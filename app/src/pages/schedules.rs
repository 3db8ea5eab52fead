//! Recurring invoices: the list (`/schedules`), the new-schedule form (`/schedules/new`: the invoice
//! every run issues and when, claimed once per rendering) and a schedule's page (`/schedules/{id}`:
//! its next dates, its runs with their invoices, Pause/Resume) and its template's edit form
//! (`/schedules/{id}/edit`: later runs issue the edited invoice).

use leptos::prelude::*;

use crate::pages::invoices::form::{CollectionMethod, InvoiceFields};
use crate::pages::layout::{
    error_banner, field_error, field_errors, loaded, route_resource, NotFound, Table,
};
use crate::rpc::schedules::{
    edit_schedule_form, get_schedule, list_schedules, new_schedule_form, CreateSchedule,
    PauseSchedule, UpdateSchedule,
};
use model::error::{AppError, FieldErrors};
use model::{format_money, Schedule, ScheduleEdit, PAYMENT_TERMS};

/// "Every 2 months on the last day".
fn cadence(s: &Schedule) -> String {
    let unit = s.interval.as_str();
    let every = if s.interval_count == 1 {
        format!("Every {unit}")
    } else {
        format!("Every {} {unit}s", s.interval_count)
    };
    match s.day_of_month {
        Some(model::DayField::Last(_)) => format!("{every} on the last day"),
        Some(model::DayField::Day(d)) => format!("{every} on day {d}"),
        None => every,
    }
}

/// What each run issues: the template's total before tax, in its currency.
fn amount(s: &Schedule) -> String {
    let sum: i64 = s
        .template
        .lines
        .iter()
        .map(|l| l.quantity.0 * l.unit_amount_cents / 1000)
        .sum();
    format_money(sum, &s.template.currency)
}

const RUNS: Table = Table {
    class: "runs",
    label: "Runs",
    cols: &["Period", "Outcome", "Invoice"],
    num: &[],
    empty: "None yet.",
};

const SCHEDULES: Table = Table {
    class: "schedules",
    label: "Recurring invoices",
    cols: &["Customer", "When", "Amount", "Next", "Status"],
    num: &["Amount"],
    empty: "No schedules yet.",
};

#[component]
pub fn SchedulesPage() -> impl IntoView {
    let list = Resource::new(|| (), |_| list_schedules());
    view! {
        <section class="card">
            <div class="heading">
                <h1>"Recurring invoices"</h1>
                <a class="button" href="/schedules/new">"New schedule"</a>
            </div>
            {loaded(list, move |rows| SCHEDULES.rows(rows, |s| view! {
                <tr class="schedule-row">
                    <td><a href=format!("/schedules/{}", s.id)>{s.template.customer_name.clone()}</a></td>
                    <td>{cadence(&s)}</td>
                    <td class="num">{amount(&s)}</td>
                    <td>{s.next_run_on.map(|d| d.to_string()).unwrap_or_else(|| "—".into())}</td>
                    <td class="status">{s.status.clone()}</td>
                </tr>
            }))}
        </section>
    }
}

#[component]
pub fn NewSchedulePage() -> impl IntoView {
    let form = Resource::new(|| (), |_| new_schedule_form());
    let create = ServerAction::<CreateSchedule>::new();
    let errors = field_errors(create.value());
    let error_for = move |field: &'static str| field_error(errors, field);
    view! {
        <section class="card">
            <h1>"New schedule"</h1>
            {loaded(form, move |p| view! {
                            {move || create.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                            <ActionForm action=create attr:class="new-schedule" attr:aria-label="New schedule">
                                <input type="hidden" name="idempotency_key" value=p.key.to_string() />
                                <fieldset>
                                    <legend>"The invoice each run issues"</legend>
                                    <div class="grid">
                                        <label>
                                            "Saved customer"
                                            <select name="input[customer_id]">
                                                <option value="">"— type a name and email instead —"</option>
                                                {p.customers.iter().map(|(id, name)| view! { <option value=id.to_string()>{name.clone()}</option> }).collect_view()}
                                            </select>
                                        </label>
                                        <label>"Customer name" <input type="text" name="input[customer_name]" maxlength="200" />{error_for("customer_name")}</label>
                                        <label>"Customer email" <input type="email" name="input[customer_email]" maxlength="254" />{error_for("customer_email")}</label>
                                        <label>
                                            "Currency"
                                            <select name="input[currency]">
                                                {["usd", "eur", "gbp"].into_iter().map(|c| view! { <option value=c>{c.to_uppercase()}</option> }).collect_view()}
                                            </select>
                                        </label>
                                        <label>
                                            "Payment terms"
                                            <select name="input[payment_terms_days]">
                                                {PAYMENT_TERMS.iter().map(|d| view! { <option value=d.to_string() selected=*d == 14>{format!("Net {d}")}</option> }).collect_view()}
                                            </select>
                                            {error_for("payment_terms_days")}
                                        </label>
                                        <CollectionMethod chosen=String::new() error=None />
                                        {error_for("collection_method")}
                                    </div>
                                    <div class="grid">
                                        <label>"Description" <input type="text" name="input[lines][0][description]" maxlength="500" />{error_for("lines[0].description")}</label>
                                        <label>"Quantity" <input type="text" inputmode="decimal" name="input[lines][0][quantity]" value="1" />{error_for("lines[0].quantity")}</label>
                                        <label>"Unit price" <input type="text" inputmode="decimal" name="input[lines][0][unit_amount]" placeholder="0.00" />{error_for("lines[0].unit_amount_cents")}</label>
                                    </div>
                                    {error_for("lines")}
                                </fieldset>
                                <fieldset>
                                    <legend>"When"</legend>
                                    <div class="grid">
                                        <label>
                                            "Every"
                                            <input type="number" name="schedule[interval_count]" value="1" min="1" max="52" />
                                            {error_for("interval_count")}
                                        </label>
                                        <label>
                                            "Unit"
                                            <select name="schedule[interval]">
                                                <option value="week">"weeks"</option>
                                                <option value="month" selected=true>"months"</option>
                                                <option value="year">"years"</option>
                                            </select>
                                        </label>
                                        <label>"First run" <input type="date" name="schedule[start_date]" value=p.today.to_string() min=p.today.to_string() />{error_for("start_date")}</label>
                                        <label>
                                            "Day of the month"
                                            <input type="text" name="schedule[day_of_month]" placeholder="the first run's, or last" />
                                            {error_for("day_of_month")}
                                        </label>
                                        <label>"End after (invoices)" <input type="number" name="schedule[end_after_count]" min="1" max="1000" />{error_for("end_after_count")}</label>
                                        <label>"End on" <input type="date" name="schedule[end_date]" />{error_for("end_date")}</label>
                                        <label>
                                            "Each run"
                                            <select name="schedule[action]">
                                                <option value="draft">"leaves a draft"</option>
                                                <option value="finalize" selected=true>"finalizes the invoice"</option>
                                                <option value="send">"finalizes and emails it"</option>
                                            </select>
                                        </label>
                                        <label>
                                            "After downtime"
                                            <select name="schedule[missed]">
                                                <option value="each">"issue each missed period"</option>
                                                <option value="latest">"issue only the latest"</option>
                                            </select>
                                        </label>
                                    </div>
                                </fieldset>
                                <button type="submit" class="primary create-schedule">"Create schedule"</button>
                            </ActionForm>
                        }.into_any())}
        </section>
    }
}

#[component]
pub fn SchedulePage() -> impl IntoView {
    let toggle = ServerAction::<PauseSchedule>::new();
    let page = route_resource(get_schedule);
    view! {
        {loaded(page, move |p| {
                        let s = p.schedule;
                        let pausing = s.status == "active";
                        let numbers = p.numbers;
                        let number = move |id: uuid::Uuid| {
                            numbers.iter().find(|(i, _)| *i == id).map(|(_, n)| n.clone()).unwrap_or_default()
                        };
                        view! {
                            <section class="card schedule">
                                <div class="heading">
                                    <h1>{format!("{}: {}", s.template.customer_name, amount(&s))}</h1>
                                    <span class="status">{s.status.clone()}</span>
                                </div>
                                <p class="cadence">{format!("{}, from {}; each run {}.", cadence(&s), s.start_date, s.action.as_str())}</p>
                                {move || toggle.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                                {(p.can_edit && s.status != "ended").then(|| view! {
                                    <a class="edit-schedule" href=format!("/schedules/{}/edit", s.id)>"Edit the invoice"</a>
                                    <ActionForm action=toggle attr:class="toggle-schedule">
                                        <input type="hidden" name="id" value=s.id.to_string() />
                                        <input type="hidden" name="idempotency_key" value=p.toggle_key.to_string() />
                                        <input type="hidden" name="pause" value=pausing.to_string() />
                                        <button type="submit" class="secondary">
                                            {if pausing { "Pause" } else { "Resume" }}
                                        </button>
                                    </ActionForm>
                                })}
                                <h2>"Next runs"</h2>
                                <ul class="next-runs">
                                    {s.next_runs.iter().map(|d| view! { <li>{d.to_string()}</li> }).collect_view()}
                                </ul>
                                <h2>"Runs"</h2>
                                {RUNS.rows(s.runs.iter(), |r| view! {
                                    <tr class=format!("run {}", r.outcome)>
                                        <td>{r.period.to_string()}</td>
                                        <td>{r.outcome.clone()}</td>
                                        <td>{r.invoice_id.map(|id| view! { <a href=format!("/invoices/{id}")>{number(id)}</a> })}</td>
                                    </tr>
                                })}
                            </section>
                        }.into_any()
                    })}
    }
}

/// The template's edit form: the invoice fields of a new invoice, without a due date (each run's
/// is its terms after it). Its key comes with the template: a double click saves once.
#[component]
pub fn EditSchedulePage() -> impl IntoView {
    let action = ServerAction::<UpdateSchedule>::new();
    let edit = route_resource(edit_schedule_form);
    let errors = Signal::derive(move || match action.value().get() {
        Some(Err(e)) => e.field_errors().cloned().unwrap_or_default(),
        _ => FieldErrors::new(),
    });
    view! {
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match edit.await {
                    Ok(ScheduleEdit { id, key, form }) => view! {
                        <section class="card">
                            <h1>"Edit the recurring invoice"</h1>
                            <p class="hint">"Runs from now on issue the edited invoice; invoices already issued stay as they are."</p>
                            {move || action.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                            <ActionForm action attr:class="edit-schedule-form">
                                <input type="hidden" name="schedule_id" value=id.to_string() />
                                <input type="hidden" name="idempotency_key" value=key.to_string() />
                                <InvoiceFields values=form errors more_lines=format!("/schedules/{id}/edit") recurring=true />
                                <button type="submit" class="primary save" data-pending="Saving…">
                                    "Save"
                                </button>
                                " "
                                <a href=format!("/schedules/{id}")>"Cancel"</a>
                            </ActionForm>
                        </section>
                    }
                    .into_any(),
                    Err(AppError::NotFound) => view! { <NotFound /> }.into_any(),
                    Err(e) => error_banner(&e).into_any(),
                }
            })}
        </Suspense>
    }
}
