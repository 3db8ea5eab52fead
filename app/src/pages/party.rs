//! The parts of a party's form: a postal address (with its ISO country code), and the org's legal
//! details as e-invoices name the seller.

use leptos::prelude::*;

use super::layout::{error_banner, field_error, refused};
use crate::rpc::settings::SaveOrgDetails;
use model::error::FieldErrors;
use model::{Address, OrgDetails};

/// An address's fields, named `<form>[address][<field>]`; errors are looked up as
/// `address.<field>`.
#[component]
pub fn AddressFields(
    /// The form's name for the party: `input` posts `input[address][line1]`.
    form: &'static str,
    address: Address,
    errors: Signal<FieldErrors>,
) -> impl IntoView {
    let name = move |field: &str| format!("{form}[address][{field}]");
    let error_of = move |field: &'static str| field_error(errors, field);
    view! {
        <fieldset class="address">
            <legend>"Address"</legend>
            <label>
                "Street and number"
                <input type="text" name=name("line1") value=address.line1 maxlength="200" autocomplete="address-line1" />
                {error_of("address.line1")}
            </label>
            <label>
                "More (building, floor)"
                <input type="text" name=name("line2") value=address.line2 maxlength="200" autocomplete="address-line2" />
                {error_of("address.line2")}
            </label>
            <div class="grid">
                <label>
                    "Postal code"
                    <input type="text" name=name("postal_code") value=address.postal_code maxlength="20" autocomplete="postal-code" />
                    {error_of("address.postal_code")}
                </label>
                <label>
                    "City"
                    <input type="text" name=name("city") value=address.city maxlength="100" autocomplete="address-level2" />
                    {error_of("address.city")}
                </label>
                <label>
                    "Region"
                    <input type="text" name=name("region") value=address.region maxlength="100" autocomplete="address-level1" />
                    {error_of("address.region")}
                </label>
                <label>
                    "Country code"
                    <input type="text" name=name("country") value=address.country maxlength="2" size="2" autocomplete="country" placeholder="DE" />
                    <span class="hint">"Two letters (ISO 3166): DE, FR, NL, US…"</span>
                    {error_of("address.country")}
                </label>
            </div>
        </fieldset>
    }
}

/// The org's legal details, saved once per rendered form (`key`).
#[component]
pub fn OrgDetailsForm(
    action: ServerAction<SaveOrgDetails>,
    details: OrgDetails,
    key: uuid::Uuid,
    can_manage: bool,
    errors: Signal<FieldErrors>,
) -> impl IntoView {
    let error_of = move |field: &'static str| field_error(errors, field);
    // Without JavaScript a refused save comes back through the URL: its key and what was typed.
    let (typed_key, typed) = refused(action.value().get_untracked());
    let details = typed.unwrap_or(details);
    let key = typed_key.unwrap_or_else(|| key.to_string());
    view! {
        <section class="card" aria-labelledby="details-heading">
            <h2 id="details-heading">"Business details"</h2>
            <p class="hint">"Printed on your invoices; e-invoices name you with them as the seller."</p>
            {move || action.value().get().and_then(|r| r.err()).and_then(|e| error_banner(&e))}
            <ActionForm action attr:class="org-details">
                <fieldset disabled=!can_manage class="plain">
                    <input type="hidden" name="idempotency_key" value=key />
                    <div class="grid">
                        <label>
                            "Legal name"
                            <input type="text" name="details[legal_name]" value=details.legal_name maxlength="200" />
                            {error_of("legal_name")}
                        </label>
                        <label>
                            "VAT number"
                            <input type="text" name="details[vat_id]" value=details.vat_id maxlength="30" placeholder="DE123456789" />
                            {error_of("vat_id")}
                        </label>
                        <label>
                            "Tax number"
                            <input type="text" name="details[tax_registration_id]" value=details.tax_registration_id maxlength="50" />
                            <span class="hint">"When you have no VAT number."</span>
                            {error_of("tax_registration_id")}
                        </label>
                        <label>
                            "Email"
                            <input type="text" inputmode="email" name="details[email]" value=details.email maxlength="254" />
                            {error_of("email")}
                        </label>
                        <label>
                            "Phone"
                            <input type="text" inputmode="tel" name="details[phone]" value=details.phone maxlength="50" />
                            {error_of("phone")}
                        </label>
                        <label>
                            "Peppol id"
                            <input type="text" name="details[peppol_id]" value=details.peppol_id maxlength="60" placeholder="0208:0123456749" />
                            <span class="hint">"Scheme, colon, value: how customers on Peppol reach you."</span>
                            {error_of("peppol_id")}
                        </label>
                        <label>
                            "Customers' language"
                            <select name="details[locale]">
                                {model::Locale::ALL.into_iter().map(|l| view! {
                                    <option value=l.as_str() selected=l == details.locale>{l.name()}</option>
                                }).collect_view()}
                            </select>
                            <span class="hint">"Their pages, PDFs and emails, unless a customer has its own."</span>
                        </label>
                    </div>
                    <AddressFields form="details" address=details.address errors />
                    <label class="checkbox">
                        <input type="checkbox" name="details[einvoicing]" value="true" checked=details.einvoicing />
                        "E-invoicing: finalize only invoices that make a valid EN 16931 e-invoice, and put factur-x.xml in their PDF"
                    </label>
                    {error_of("einvoicing")}
                    <label>
                        "Your password"
                        <input type="password" name="password" autocomplete="current-password" maxlength="1024" />
                        <span class="hint">"Needed to change the legal name, tax ids, email, Peppol id or e-invoicing when you signed in more than 10 minutes ago."</span>
                        {error_of("password")}
                    </label>
                    <button type="submit" class="primary save-details">
                        "Save business details"
                    </button>
                </fieldset>
            </ActionForm>
        </section>
    }
}
