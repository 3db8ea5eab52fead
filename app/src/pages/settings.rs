//! `/settings/org`: the org's settings and tax rates; `/settings/api-keys`: create (shown once),
//! list, revoke.

use leptos::prelude::*;

use super::layout::{error_banner, field_error, field_errors, refused, Head};
use crate::rpc::api_keys::{list_api_keys, CreateApiKey, RevokeApiKey};
use crate::rpc::auth::current_user;
use crate::rpc::settings::{
    get_org_settings, AddTaxRate, ArchiveTaxRate, RemoveLogo, SaveBankDetails, SaveBranding,
    SaveOrgDetails, SaveOrgSettings,
};
use model::Action;
use model::TaxCategory;

/// The org's settings and its tax rates. Every form carries a key minted when the page was rendered
/// (each "Archive" button its own): a double submit saves once.
#[component]
pub fn OrgSettingsPage() -> impl IntoView {
    let save = ServerAction::<SaveOrgSettings>::new();
    let add = ServerAction::<AddTaxRate>::new();
    let archive = ServerAction::<ArchiveTaxRate>::new();
    let bank = ServerAction::<SaveBankDetails>::new();
    let details = ServerAction::<SaveOrgDetails>::new();
    let branding = ServerAction::<SaveBranding>::new();
    let remove_logo = ServerAction::<RemoveLogo>::new();
    let page = Resource::new(|| (), |_| get_org_settings());
    let save_errors = field_errors(save.value());
    let add_errors = field_errors(add.value());
    let bank_errors = field_errors(bank.value());
    let details_errors = field_errors(details.value());
    let branding_errors = field_errors(branding.value());
    // A field's message from the latest submit of its form, next to the field.
    let error_of = field_error;
    view! {
        <Transition fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match page.await {
                    Ok(p) => {
                        let can_manage = p.can_manage;
                        // Without JavaScript a refused form comes back through the URL: its key
                        // and what was typed.
                        let (save_key, save_typed) = refused(save.value().get_untracked());
                        let (bank_key, bank_typed) = refused(bank.value().get_untracked());
                        let (add_key, add_typed) = refused(add.value().get_untracked());
                        let s = save_typed.unwrap_or(p.settings);
                        let b = bank_typed.unwrap_or(p.bank);
                        let (name, percent, category, reason) = add_typed.unwrap_or_default();
                        view! {
                            <section class="card">
                                <h1>"Settings"</h1>
                                {move || save.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                                {(!can_manage).then(|| view! { <p class="hint only-owners">"Only the org's owners can change its settings."</p> })}
                                <ActionForm action=save>
                                    <fieldset disabled=!can_manage class="plain">
                                    <input type="hidden" name="idempotency_key" value=save_key.unwrap_or_else(|| p.settings_key.to_string()) />
                                    <div class="grid">
                                        <label>
                                            "Time zone"
                                            <input type="text" name="settings[time_zone]" value=s.time_zone maxlength="64" />
                                            <span class="hint">"Due dates and \"overdue\" are counted in it, e.g. Europe/Amsterdam."</span>
                                            {error_of(save_errors, "time_zone")}
                                        </label>
                                        <label>
                                            "Invoice number format"
                                            <input type="text" name="settings[number_format]" value=s.number_format maxlength="60" />
                                            <span class="hint">"{seq:4} is 0001, {YYYY} the year. Next: " <code class="next-number">{p.next_number}</code></span>
                                            {error_of(save_errors, "number_format")}
                                        </label>
                                        <label>
                                            "Credit note number format"
                                            <input type="text" name="settings[credit_note_format]" value=s.credit_note_format.clone() maxlength="60" />
                                            <span class="hint">"Its own series; with {YYYY} it restarts each year."</span>
                                            {error_of(save_errors, "credit_note_format")}
                                        </label>
                                        <label>
                                            "Numbers restart"
                                            <select name="settings[number_reset]">
                                                <option value="never" selected=s.number_reset == "never">"never"</option>
                                                <option value="yearly" selected=s.number_reset == "yearly">"each year"</option>
                                            </select>
                                            {error_of(save_errors, "number_reset")}
                                        </label>
                                    </div>
                                    <button type="submit" class="primary save-settings">
                                        "Save settings"
                                    </button>
                                    </fieldset>
                                </ActionForm>
                            </section>
                            <super::party::OrgDetailsForm action=details details=p.details key=p.details_key can_manage errors=details_errors />
                            <section class="card" aria-labelledby="bank-heading">
                                <h2 id="bank-heading">"How to pay by transfer"</h2>
                                <p class="hint">"Shown on your invoices' page, PDF and email while something is due. Leave the IBAN and the other details empty to show nothing."</p>
                                {move || bank.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                                <ActionForm action=bank attr:class="bank-details">
                                    <fieldset disabled=!can_manage class="plain">
                                    <input type="hidden" name="idempotency_key" value=bank_key.unwrap_or_else(|| p.bank_key.to_string()) />
                                    <div class="grid">
                                        <label>
                                            "Account holder"
                                            <input type="text" name="bank[holder]" value=b.holder.clone() maxlength="200" />
                                            {error_of(bank_errors, "holder")}
                                        </label>
                                        <label>
                                            "IBAN"
                                            <input type="text" name="bank[iban]" value=b.iban_printed() maxlength="50" autocomplete="off" />
                                            {error_of(bank_errors, "iban")}
                                        </label>
                                        <label>
                                            "BIC"
                                            <input type="text" name="bank[bic]" value=b.bic.clone() maxlength="11" />
                                            {error_of(bank_errors, "bic")}
                                        </label>
                                        <label>
                                            "Payment reference"
                                            <input type="text" name="bank[reference]" value=b.reference.clone() maxlength="60" />
                                            <span class="hint">"{number} is the invoice's number."</span>
                                            {error_of(bank_errors, "reference")}
                                        </label>
                                    </div>
                                    <label>
                                        "Other account details (another scheme: routing and account number, sort code…)"
                                        <textarea name="bank[other]" rows="2" maxlength="500">{b.other.clone()}</textarea>
                                        {error_of(bank_errors, "other")}
                                    </label>
                                    <label>
                                        "Your password"
                                        <input type="password" name="password" autocomplete="current-password" maxlength="1024" />
                                        <span class="hint">"Needed to change where you are paid when you signed in more than 10 minutes ago."</span>
                                        {error_of(bank_errors, "password")}
                                    </label>
                                    <button type="submit" class="primary save-bank">
                                        "Save bank details"
                                    </button>
                                    </fieldset>
                                </ActionForm>
                            </section>
                            <super::branding::BrandingSettings
                                branding=p.branding.clone()
                                key=p.branding_key
                                logo_key=p.logo_key
                                remove_key=p.remove_logo_key
                                can_manage
                                save=branding
                                remove=remove_logo
                                errors=branding_errors
                            />
                            <super::reminders::ReminderSettings steps=p.reminders.clone() key=p.reminders_key can_manage />
                            <super::collecting::CollectionSettings saved=p.collection.clone() tax_rates=p.tax_rates.clone() key=p.collection_key can_manage />
                            <section class="card">
                                <h2>"Tax rates"</h2>
                                <p class="hint">"A rate's percent never changes: archive it and add another. Invoices keep the rate they were saved with."</p>
                                {move || add.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
                                <table class="tax-rates">
                                    <tbody>
                                        {p.tax_rates
                                            .into_iter()
                                            .zip(p.archive_keys)
                                            .map(|(r, key)| {
                                                let id = r.id.to_string();
                                                view! {
                                                    <tr class="tax-rate">
                                                        <td>{r.name}</td>
                                                        <td class="num">{format!("{}%", r.percent)}</td>
                                                        <td class="category">
                                                            {r.category.label()}
                                                            {(!r.exemption_reason.is_empty()).then(|| format!(": {}", r.exemption_reason))}
                                                        </td>
                                                        <td>
                                                            {if r.archived {
                                                                view! { <span class="status void">"archived"</span> }.into_any()
                                                            } else if !can_manage {
                                                                ().into_any()
                                                            } else {
                                                                view! {
                                                                    <ActionForm action=archive>
                                                                        <input type="hidden" name="idempotency_key" value=key.to_string() />
                                                                        <input type="hidden" name="id" value=id />
                                                                        <button type="submit" class="link archive">"Archive"</button>
                                                                    </ActionForm>
                                                                }
                                                                    .into_any()
                                                            }}
                                                        </td>
                                                    </tr>
                                                }
                                            })
                                            .collect_view()}
                                    </tbody>
                                </table>
                                <ActionForm action=add attr:hidden=!can_manage>
                                    <input type="hidden" name="idempotency_key" value=add_key.unwrap_or_else(|| p.tax_rate_key.to_string()) />
                                    <div class="grid">
                                        <label>
                                            "Name"
                                            <input type="text" name="name" maxlength="100" placeholder="VAT" value=name />
                                            {error_of(add_errors, "name")}
                                        </label>
                                        <label>
                                            "Percent"
                                            <input type="text" inputmode="decimal" name="percent" placeholder="20" value=percent />
                                            {error_of(add_errors, "percent")}
                                        </label>
                                        <label>
                                            "VAT category"
                                            <select name="category">
                                                <option value="">"Standard rate, or zero rated at 0 %"</option>
                                                {TaxCategory::ALL.into_iter().map(|c| view! { <option value=c.code() selected=c.code() == category>{format!("{} ({})", c.label(), c.code())}</option> }).collect_view()}
                                            </select>
                                            {error_of(add_errors, "category")}
                                        </label>
                                        <label>
                                            "Exemption reason"
                                            <input type="text" name="exemption_reason" maxlength="300" value=reason />
                                            <span class="hint">"For an exempt rate: printed on the invoice."</span>
                                            {error_of(add_errors, "exemption_reason")}
                                        </label>
                                    </div>
                                    <button type="submit" class="primary add-tax-rate">
                                        "Add tax rate"
                                    </button>
                                </ActionForm>
                            </section>
                        }
                            .into_any()
                    }
                    Err(e) => error_banner(&e).into_any(),
                }
            })}
        </Transition>
    }
}

fn new_key_notice(key: String) -> impl IntoView {
    view! {
        <div class="new-key" role="status">
            <p>"Copy this key now: it will not be shown again."</p>
            <code class="key">{key}</code>
        </div>
    }
}

/// `/settings/api-keys`: server HTML around the [`ApiKeys`] island, which shows a new key once to
/// the submit that made it.
#[component]
pub fn ApiKeysPage() -> impl IntoView {
    let me = Resource::new(|| (), |_| current_user());
    let keys = Resource::new(|| (), |_| list_api_keys());
    view! {
        <section class="card">
            <h1>"API keys"</h1>
            <p>
                "Use a key as " <code>"Authorization: Bearer ik_..."</code>
                " with the JSON API; see " <a href="/api/v1/openapi.json">"the OpenAPI document"</a> "."
            </p>
            <Suspense fallback=|| view! { <p>"Loading…"</p> }>
                {move || Suspend::new(async move {
                    let viewer = me.await.ok().flatten();
                    match keys.await {
                        Ok(keys) => view! { <ApiKeys viewer keys /> }.into_any(),
                        Err(e) => error_banner(&e).into_any(),
                    }
                })}
            </Suspense>
        </section>
    }
}

/// The island of the API keys page: the creation form, the new key shown once (a plain page
/// reload could not show it: it is stored hashed), and the list with its "Revoke" buttons, read
/// again after each of them.
#[island]
fn ApiKeys(viewer: Option<model::Viewer>, keys: model::ApiKeysView) -> impl IntoView {
    let create = ServerAction::<CreateApiKey>::new();
    let revoke = ServerAction::<RevokeApiKey>::new();
    let keys = RwSignal::new(keys);
    Effect::watch(
        move || (create.version().get(), revoke.version().get()),
        move |_, _, _| {
            leptos::task::spawn_local(async move {
                if let Ok(now) = list_api_keys().await {
                    keys.set(now);
                }
            })
        },
        false,
    );
    let revealed = RwSignal::new(None::<(uuid::Uuid, String)>);
    let create_errors = field_errors(create.value());
    Effect::new(move || {
        if let Some(Ok(made)) = create.value().get() {
            if let Some(key) = made.plaintext {
                revealed.set(Some((made.id, key)));
            }
        }
    });
    let may_create = viewer
        .as_ref()
        .is_some_and(|v| v.role.may(Action::ManageOwnApiKeys));
    // Owners revoke any key, members their own; the server decides either way.
    let may_revoke = move |creator: Option<&String>| {
        viewer.as_ref().is_some_and(|v| {
            v.role.may(Action::ManageAllApiKeys)
                || (v.role.may(Action::ManageOwnApiKeys) && creator == Some(&v.email))
        })
    };
    view! {
        {may_create.then(|| view! {
            <ActionForm action=create>
                // A new form key with every list: after a key is made, the next submit is a new key.
                <input type="hidden" name="idempotency_key" value=move || keys.with(|k| k.form_key.to_string()) />
                <div class="grid">
                    <label>
                        "Name" <input type="text" name="name" maxlength="100" placeholder="e.g. billing script" />
                    </label>
                    <label>
                        "Role"
                        <select name="role">
                            <option value="member" selected>"member (read and write)"</option>
                            <option value="viewer">"viewer (read only)"</option>
                            <option value="owner">"owner"</option>
                        </select>
                        <span class="hint">"No higher than your own role; it drops with yours."</span>
                    </label>
                    <label>
                        "Expires after (days)"
                        <input type="text" inputmode="numeric" name="expires_in_days" placeholder="never" />
                    </label>
                    <label>
                        "Your password"
                        <input type="password" name="password" autocomplete="current-password" maxlength="1024" />
                        <span class="hint">"Needed when you signed in more than 10 minutes ago."</span>
                        {field_error(create_errors, "password")}
                    </label>
                </div>
                <button type="submit" class="primary">"Create key"</button>
                <noscript><p class="hint">"Creating a key needs JavaScript: the key is shown once, on this page."</p></noscript>
            </ActionForm>
        })}
        {move || {
            // Tracked: the effect above may store the key after this view first ran.
            let revealed = revealed.get();
            match create.value().get() {
                Some(Ok(made)) => {
                    // A repeated submit of the form that made this key answers without the key:
                    // keep showing it if this page received it.
                    let shown = made.plaintext.or_else(|| {
                        revealed.filter(|(id, _)| *id == made.id).map(|(_, k)| k)
                    });
                    match shown {
                        Some(key) => new_key_notice(key).into_any(),
                        None => view! {
                            <div class="new-key" role="status">
                                <p>
                                    "This form already created the key " <code>{made.prefix} "…"</code>
                                    "; it was shown once, to the submit that made it. If it was not copied, revoke it and create another."
                                </p>
                            </div>
                        }
                            .into_any(),
                    }
                }
                // An error for a later submit does not hide a key this page was given.
                Some(Err(e)) => view! {
                    {error_banner(&e)}
                    {revealed.map(|(_, key)| new_key_notice(key))}
                }
                    .into_any(),
                None => ().into_any(),
            }
        }}
        {move || revoke.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
        {move || {
            let list = keys.with(|k| k.keys.clone());
            if list.is_empty() {
                return view! { <p class="empty">"No API keys yet."</p> }.into_any();
            }
            view! {
                <table class="api-keys">
                    <Head cols=&["Name", "Key", "Role", "Created by", "Expires", "Created", "Last used", ""]/>
                    <tbody>
                        {list
                            .into_iter()
                            .map(|k| {
                                let id = k.id.to_string();
                                let revocable = may_revoke(k.creator_email.as_ref());
                                view! {
                                    <tr class="api-key">
                                        <td>{k.name}</td>
                                        <td><code>{k.prefix} "…"</code></td>
                                        <td class="key-role">{k.role.as_str()}</td>
                                        <td>{k.creator_email.unwrap_or_else(|| "—".into())}</td>
                                        <td>
                                            {k.expires_at
                                                .map(|t| t.format("%Y-%m-%d").to_string())
                                                .unwrap_or_else(|| "never".into())}
                                        </td>
                                        <td>{k.created_at.format("%Y-%m-%d %H:%M UTC").to_string()}</td>
                                        <td>
                                            {k.last_used_at
                                                .map(|t| t.format("%Y-%m-%d %H:%M UTC").to_string())
                                                .unwrap_or_else(|| "never".into())}
                                        </td>
                                        <td>
                                            {match k.revoked_at {
                                                Some(_) => view! { <span class="status void">"revoked"</span> }.into_any(),
                                                None if !revocable => ().into_any(),
                                                None => view! {
                                                    <ActionForm action=revoke>
                                                        <input type="hidden" name="id" value=id />
                                                        <button type="submit" class="link">"Revoke"</button>
                                                    </ActionForm>
                                                }
                                                    .into_any(),
                                            }}
                                        </td>
                                    </tr>
                                }
                            })
                            .collect_view()}
                    </tbody>
                </table>
            }
                .into_any()
        }}
    }
}
