//! The branding section of `/settings/org`: the logo (a plain multipart form: uploading works
//! without JavaScript), the accent colour and the footer, each form keyed at render.

use leptos::prelude::*;

use super::layout::{error_banner, field_error, refused};
use crate::rpc::settings::{RemoveLogo, SaveBranding};
use model::error::FieldErrors;
use model::Branding;

#[component]
pub fn BrandingSettings(
    branding: Branding,
    key: uuid::Uuid,
    logo_key: uuid::Uuid,
    remove_key: uuid::Uuid,
    can_manage: bool,
    save: ServerAction<SaveBranding>,
    remove: ServerAction<RemoveLogo>,
    errors: Signal<FieldErrors>,
) -> impl IntoView {
    // Without JavaScript a refused save comes back through the URL: its key and what was typed.
    let (typed_key, typed) = refused(save.value().get_untracked());
    let key = typed_key.unwrap_or_else(|| key.to_string());
    let colour = match &typed {
        Some(t) if !t.accent_color.is_empty() => t.accent_color.clone(),
        _ => branding
            .accent_color
            .clone()
            .unwrap_or_else(|| "#1d4ed8".to_owned()),
    };
    let footer = typed.map_or_else(|| branding.footer_text.clone(), |t| t.footer_text);
    view! {
        <section class="card branding" aria-labelledby="branding-heading">
            <h2 id="branding-heading">"Branding"</h2>
            <p class="hint">"Your logo, colour and footer on your customers' pages, PDFs and emails."</p>
            {branding.logo.clone().map(|logo| view! {
                <p class="logo-preview">
                    <img src=logo.path() alt="Your logo" width=logo.width.min(300).to_string() />
                </p>
            })}
            <form method="post" action="/settings/logo" enctype="multipart/form-data" class="upload-logo">
                <fieldset disabled=!can_manage class="plain">
                    <input type="hidden" name="idempotency_key" value=logo_key.to_string() />
                    <label>
                        "Logo (PNG or JPEG, at most 512 KB)"
                        <input type="file" name="logo" accept="image/png,image/jpeg" required />
                    </label>
                    <button type="submit" class="secondary">"Upload logo"</button>
                </fieldset>
            </form>
            {branding.logo.is_some().then(|| view! {
                <ActionForm action=remove attr:class="remove-logo">
                    <fieldset disabled=!can_manage class="plain">
                        <input type="hidden" name="idempotency_key" value=remove_key.to_string() />
                        <button type="submit" class="link">"Remove the logo"</button>
                    </fieldset>
                </ActionForm>
            })}
            {move || save.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
            <ActionForm action=save attr:class="branding-form">
                <fieldset disabled=!can_manage class="plain">
                    <input type="hidden" name="idempotency_key" value=key />
                    <div class="grid">
                        <label>
                            "Accent colour"
                            <input type="color" name="branding[accent_color]" value=colour />
                            {field_error(errors, "accent_color")}
                        </label>
                    </div>
                    <label>
                        "Footer"
                        <textarea name="branding[footer_text]" rows="2" maxlength="300">{footer}</textarea>
                        <span class="hint">"Company registration, a thank-you: at most 300 characters."</span>
                        {field_error(errors, "footer_text")}
                    </label>
                    <button type="submit" class="primary save-branding">"Save branding"</button>
                </fieldset>
            </ActionForm>
        </section>
    }
}
