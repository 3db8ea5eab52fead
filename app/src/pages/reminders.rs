//! The settings page's "Payment reminders": up to five steps relative to the due date, each with
//! its message, saved once per rendered form.

use leptos::prelude::*;

use crate::pages::layout::{error_banner, field_error, field_errors, refused};
use crate::rpc::settings::SaveReminders;
use model::ReminderStep;

/// Rows the form offers (the saved steps, then empty ones up to this many).
const ROWS: usize = 5;

#[component]
pub fn ReminderSettings(
    steps: Vec<ReminderStep>,
    key: uuid::Uuid,
    can_manage: bool,
) -> impl IntoView {
    let save = ServerAction::<SaveReminders>::new();
    let errors = field_errors(save.value());
    let saved = crate::pages::filters::query_param()("saved").as_deref() == Some("reminders");
    // Without JavaScript a refused save comes back through the URL: its key and what was typed.
    let (typed_key, typed) = refused(save.value().get_untracked());
    let key = typed_key.unwrap_or_else(|| key.to_string());
    let steps: Vec<(String, String)> = match typed {
        Some(rows) => rows
            .into_iter()
            .map(|r| (r.offset_days, r.message))
            .collect(),
        None => steps
            .into_iter()
            .map(|s| (s.offset_days.to_string(), s.message))
            .collect(),
    };
    let rows = (0..ROWS.max(steps.len()))
        .map(|i| {
            let (days, message) = steps.get(i).cloned().unwrap_or_default();
            let days_error = format!("steps[{i}].offset_days");
            let message_error = format!("steps[{i}].message");
            view! {
                <tr class="reminder-step">
                    <td>
                        <input type="number" name=format!("steps[{i}][offset_days]") value=days min="-60" max="365"
                            aria-label=format!("Reminder {} days after the due date", i + 1) />
                        {move || errors.get().get(&days_error).cloned().map(|m| view! { <span class="error">{m}</span> })}
                    </td>
                    <td>
                        <input type="text" name=format!("steps[{i}][message]") value=message maxlength="2000"
                            aria-label=format!("Reminder {} message", i + 1) />
                        {move || errors.get().get(&message_error).cloned().map(|m| view! { <span class="error">{m}</span> })}
                    </td>
                </tr>
            }
        })
        .collect_view();
    view! {
        <section class="card" aria-labelledby="reminders-heading">
            <h2 id="reminders-heading">"Payment reminders"</h2>
            <p class="hint">
                "Emailed to the customer of an open invoice that is not fully paid, once per step, from 09:00 in your time zone: "
                "days after the due date (-3 is three days before). Leave the days empty to drop a step."
            </p>
            {move || save.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
            // The save sends the browser back here with `?saved=reminders`.
            {saved.then(|| view! { <p class="saved" role="status">"Reminders saved."</p> })}
            <ActionForm action=save attr:class="reminders">
                <fieldset disabled=!can_manage class="plain">
                    <input type="hidden" name="idempotency_key" value=key.to_string() />
                    <table class="reminder-steps">
                        <thead><tr><th scope="col">"Days after due"</th><th scope="col">"Message"</th></tr></thead>
                        <tbody>{rows}</tbody>
                    </table>
                    {field_error(errors, "steps")}
                    <button type="submit" class="primary save-reminders">
                        "Save reminders"
                    </button>
                </fieldset>
            </ActionForm>
        </section>
    }
}

/// "Stop reminders" / "Send reminders again" for one invoice or one customer, once per rendering.
#[component]
pub fn RemindersToggle(
    what: &'static str,
    id: uuid::Uuid,
    off: bool,
    key: uuid::Uuid,
) -> impl IntoView {
    let toggle = ServerAction::<crate::rpc::schedules::SetReminders>::new();
    // After a click the server sends the browser back here, and the page shows the other button.
    view! {
        {move || toggle.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
        <ActionForm action=toggle attr:class=format!("reminders-toggle {what}")>
            <input type="hidden" name="what" value=what />
            <input type="hidden" name="id" value=id.to_string() />
            <input type="hidden" name="idempotency_key" value=key.to_string() />
            <input type="hidden" name="off" value=(!off).to_string() />
            <span class="reminders-state">{if off { "Payment reminders: off. " } else { "Payment reminders: on. " }}</span>
            <button type="submit" class="secondary">
                {if off { "Send reminders again" } else { "Stop reminders" }}
            </button>
        </ActionForm>
    }
}
