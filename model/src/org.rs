//! An org's settings: how invoice numbers look and restart, the time zone dates are reckoned in; and
//! its legal details, printed on invoices and named as the seller of its e-invoices.

use serde::{Deserialize, Serialize};

use super::party::{check_vat_id, normalize_vat_id, Address};
use super::text::refuse_control_chars;
use crate::error::FieldErrors;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OrgSettings {
    /// An IANA zone ("Europe/Amsterdam"): "overdue", "this year" and payment terms count days in it.
    #[serde(default)]
    pub time_zone: String,
    /// `{seq}` or `{seq:N}` (zero-padded to N digits), `{YYYY}`, `{YY}`: `INV-{YYYY}-{seq:4}`.
    #[serde(default)]
    pub number_format: String,
    /// `never` or `yearly` (numbers restart at 1 each year; the format must name the year).
    #[serde(default)]
    pub number_reset: String,
    /// Credit notes' own series, as `number_format`: `CN-{YYYY}-{seq}` (restarting each year when
    /// it names the year). Empty: `CN-{seq:6}`.
    #[serde(default)]
    pub credit_note_format: String,
}

/// Credit notes' series when the org names none.
pub const DEFAULT_CREDIT_NOTE_FORMAT: &str = "CN-{seq:6}";

/// `{seq}` or `{seq:N}` exactly once, 1 to 60 characters.
fn names_the_sequence_once(format: &str) -> bool {
    let seq = format.matches("{seq}").count()
        + (1..=9)
            .filter(|n| format.contains(&format!("{{seq:{n}}}")))
            .count();
    !format.is_empty() && format.chars().count() <= 60 && seq == 1
}

impl OrgSettings {
    /// The checks that need no database (the time zone is checked against Postgres' list).
    pub fn check(&self) -> Result<(), FieldErrors> {
        let mut out = FieldErrors::new();
        let zone = self.time_zone.trim();
        if zone.is_empty()
            || zone.len() > 64
            || !zone
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/_-+".contains(&b))
        {
            out.insert(
                "time_zone".into(),
                "Enter a time zone such as Europe/Amsterdam or UTC.".into(),
            );
        }
        let format = self.number_format.trim();
        let once = "Use 1 to 60 characters with {seq} (or {seq:4} for 0001) exactly once.";
        if !names_the_sequence_once(format) {
            out.insert("number_format".into(), once.into());
        }
        refuse_control_chars(&mut out, "number_format", format);
        let credit = self.credit_note_format.trim();
        if !credit.is_empty() && !names_the_sequence_once(credit) {
            out.insert("credit_note_format".into(), once.into());
        }
        refuse_control_chars(&mut out, "credit_note_format", credit);
        match self.number_reset.as_str() {
            "never" => {}
            "yearly" if format.contains("{YYYY}") || format.contains("{YY}") => {}
            "yearly" => {
                out.insert(
                    "number_reset".into(),
                    "Numbers that restart each year need {YYYY} or {YY} in the format.".into(),
                );
            }
            _ => {
                out.insert("number_reset".into(), "Choose never or yearly.".into());
            }
        }
        crate::error::fields_ok(out)
    }

    /// The number the format gives to `seq` in `year`, as Postgres' `invoice_number_text` does.
    pub fn preview(&self, seq: u32, year: i32) -> String {
        let mut text = self.number_format.trim().to_owned();
        for n in 1..=9 {
            text = text.replace(&format!("{{seq:{n}}}"), &format!("{seq:0n$}"));
        }
        text.replace("{seq}", &seq.to_string())
            .replace("{YYYY}", &year.to_string())
            .replace("{YY}", &format!("{:02}", year % 100))
    }
}

/// Who issues the org's invoices: printed on them, and the seller of its e-invoices.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OrgDetails {
    /// The registered name, when it is not the org's name ("Acme GmbH").
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(max_length = 200))]
    pub legal_name: String,
    #[serde(default)]
    pub address: Address,
    /// With its country prefix: DE123456789.
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(max_length = 30))]
    pub vat_id: String,
    /// A national tax number, when the org has no VAT id (a German Steuernummer).
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(max_length = 50))]
    pub tax_registration_id: String,
    /// The contact for the org's customers.
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(max_length = 254))]
    pub email: String,
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(max_length = 50))]
    pub phone: String,
    /// Its Peppol participant id, `scheme:value` (`0208:0123456749`); empty: none.
    #[serde(default)]
    #[cfg_attr(
        feature = "server",
        schema(max_length = 60, example = "0208:0123456749")
    )]
    pub peppol_id: String,
    /// Invoices are finalized only as valid EN 16931 e-invoices, and PDFs carry `factur-x.xml`.
    #[serde(default)]
    pub einvoicing: bool,
    /// The language of its customers' documents, unless a customer has its own.
    #[serde(default)]
    pub locale: super::Locale,
}

impl OrgDetails {
    /// Trimmed, the VAT id normalized.
    pub fn normalized(&self) -> OrgDetails {
        OrgDetails {
            legal_name: self.legal_name.trim().to_owned(),
            address: self.address.normalized(),
            vat_id: normalize_vat_id(&self.vat_id),
            tax_registration_id: self.tax_registration_id.trim().to_owned(),
            email: self.email.trim().to_owned(),
            phone: self.phone.trim().to_owned(),
            peppol_id: crate::peppol::normalize_participant_id(&self.peppol_id),
            einvoicing: self.einvoicing,
            locale: self.locale,
        }
    }

    /// The checks of a [normalized](Self::normalized) value: lengths, the address, the VAT id's
    /// format, the email's shape; with e-invoicing on, what every e-invoice needs of its seller.
    pub fn check(&self) -> Result<(), FieldErrors> {
        let mut out = FieldErrors::new();
        for (field, value, max) in [
            ("legal_name", &self.legal_name, 200),
            ("tax_registration_id", &self.tax_registration_id, 50),
            ("email", &self.email, 254),
            ("phone", &self.phone, 50),
        ] {
            if value.chars().count() > max {
                out.insert(field.into(), format!("Enter at most {max} characters."));
            }
            refuse_control_chars(&mut out, field, value);
        }
        self.address.check("address", &mut out);
        if !self.vat_id.is_empty() {
            if let Err(message) = check_vat_id(&self.vat_id) {
                out.insert("vat_id".into(), message);
            }
        }
        if self.peppol_id.len() > 60 {
            out.insert("peppol_id".into(), "Enter at most 60 characters.".into());
        } else if !self.peppol_id.is_empty() {
            if let Err(message) = crate::peppol::parse_participant_id(&self.peppol_id) {
                out.insert("peppol_id".into(), message);
            }
        }
        if !self.email.is_empty() && !validator::ValidateEmail::validate_email(&self.email) {
            out.insert("email".into(), "Enter a valid email address.".into());
        }
        if self.einvoicing {
            if self.address.country.is_empty() {
                out.insert(
                    "address.country".into(),
                    "E-invoices name the seller's country: enter it.".into(),
                );
            }
            if self.address.city.is_empty() {
                out.insert(
                    "address.city".into(),
                    "E-invoices name the seller's city.".into(),
                );
            }
            if self.vat_id.is_empty() && self.tax_registration_id.is_empty() {
                out.insert(
                    "vat_id".into(),
                    "E-invoices name the seller's VAT id or tax number: enter one.".into(),
                );
            }
        }
        crate::error::fields_ok(out)
    }
}

/// What the org settings page shows: the settings, the rates, and the keys of this rendering's forms.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrgSettingsPage {
    pub settings: OrgSettings,
    pub settings_key: uuid::Uuid,
    /// Who issues the invoices, and the key of this rendering's form for it.
    pub details: OrgDetails,
    pub details_key: uuid::Uuid,
    /// How the org is paid by transfer, and the key of this rendering's form for it.
    pub bank: super::BankDetails,
    pub bank_key: uuid::Uuid,
    pub tax_rates: Vec<super::TaxRate>,
    /// One per rate, in the same order: each "Archive" button is its own attempt.
    pub archive_keys: Vec<uuid::Uuid>,
    pub tax_rate_key: uuid::Uuid,
    /// The next number as the format would print it this year (a preview).
    pub next_number: String,
    /// The session's role may change them (owners): the page shows its forms.
    pub can_manage: bool,
    /// The payment reminders' steps, earliest first, and the key of this rendering's form for them.
    pub reminders: Vec<super::ReminderStep>,
    pub reminders_key: uuid::Uuid,
    /// The org's look, and the keys of this rendering's branding, logo and remove-logo forms.
    pub branding: Branding,
    pub branding_key: uuid::Uuid,
    pub logo_key: uuid::Uuid,
    pub remove_logo_key: uuid::Uuid,
    /// The retry days and late fees as the form shows them, and the key of this rendering's form.
    pub collection: super::collection::CollectionForm,
    pub collection_key: uuid::Uuid,
}

/// What the org's customers see of its own look.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Branding {
    /// `#rrggbb` (lower case), or none: the app's own.
    pub accent_color: Option<String>,
    /// A line or two under every page, PDF and email (≤ 300 characters).
    pub footer_text: String,
    /// The logo: the token that names its file (`/logos/<token>.png`) and its size in pixels.
    pub logo: Option<Logo>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Logo {
    pub token: String,
    pub width: u32,
    pub height: u32,
}

impl Logo {
    /// Where the logo is served (same origin: the public pages allow no other).
    pub fn path(&self) -> String {
        format!("/logos/{}.png", self.token)
    }
}

impl Branding {
    /// The accent as (r, g, b), darkened where need be until white text on it (and it as text on
    /// white) has a contrast of at least 4.5:1 (WCAG AA): a pale brand colour stays legible.
    pub fn rgb(&self) -> Option<(u8, u8, u8)> {
        let hex = self.accent_color.as_deref()?.strip_prefix('#')?;
        let byte = |i: usize| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok();
        let (mut r, mut g, mut b) = (byte(0)?, byte(2)?, byte(4)?);
        while contrast_with_white(r, g, b) < 4.5 {
            let darker = |c: u8| (f32::from(c) * 0.92) as u8;
            (r, g, b) = (darker(r), darker(g), darker(b));
        }
        Some((r, g, b))
    }

    /// The customer's pages' style for the accent (`--accent`, as the stylesheet uses it).
    pub fn css(&self) -> Option<String> {
        let (r, g, b) = self.rgb()?;
        Some(format!(":root{{--accent:#{r:02x}{g:02x}{b:02x}}}"))
    }
}

/// WCAG 2 contrast ratio of an sRGB colour with white.
fn contrast_with_white(r: u8, g: u8, b: u8) -> f32 {
    let channel = |c: u8| {
        let c = f32::from(c) / 255.0;
        if c <= 0.039_28 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    let luminance = 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
    1.05 / (luminance + 0.05)
}

/// The branding form as typed: the accent colour (`#rrggbb`, empty for none) and the footer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BrandingForm {
    #[serde(default)]
    pub accent_color: String,
    #[serde(default)]
    pub footer_text: String,
}

impl BrandingForm {
    /// The colour in lower case (or none) and the footer trimmed, or the fields' errors.
    pub fn parse(&self) -> Result<(Option<String>, String), FieldErrors> {
        let mut out = FieldErrors::new();
        let colour = self.accent_color.trim().to_ascii_lowercase();
        let colour = if colour.is_empty() {
            None
        } else if colour.len() == 7
            && colour.starts_with('#')
            && colour[1..].bytes().all(|b| b.is_ascii_hexdigit())
        {
            Some(colour)
        } else {
            out.insert(
                "accent_color".into(),
                "A colour as #rrggbb, such as #1d4ed8.".into(),
            );
            None
        };
        let footer = self.footer_text.trim().to_owned();
        if footer.chars().count() > 300 {
            out.insert("footer_text".into(), "At most 300 characters.".into());
        }
        refuse_control_chars(&mut out, "footer_text", &footer);
        if out.is_empty() {
            Ok((colour, footer))
        } else {
            Err(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(format: &str, reset: &str) -> OrgSettings {
        OrgSettings {
            time_zone: "Europe/Amsterdam".into(),
            number_format: format.into(),
            number_reset: reset.into(),
            credit_note_format: String::new(),
        }
    }

    #[test]
    fn formats_name_the_sequence_once_and_yearly_ones_the_year() {
        settings("INV-{YYYY}-{seq:4}", "yearly").check().unwrap();
        settings("{seq}", "never").check().unwrap();
        assert!(settings("INV", "never")
            .check()
            .unwrap_err()
            .contains_key("number_format"));
        assert!(settings("{seq}-{seq}", "never").check().is_err());
        assert!(settings("INV-{seq}", "yearly")
            .check()
            .unwrap_err()
            .contains_key("number_reset"));
        assert!(settings("{seq}", "monthly").check().is_err());
        let mut credit = settings("{seq}", "never");
        credit.credit_note_format = "CN-{YYYY}-{seq:3}".into();
        credit.check().unwrap();
        credit.credit_note_format = "CN-{YYYY}".into();
        assert!(credit
            .check()
            .unwrap_err()
            .contains_key("credit_note_format"));
        let mut bad_zone = settings("{seq}", "never");
        bad_zone.time_zone = "Europe/Amsterdam'; drop".into();
        assert!(bad_zone.check().unwrap_err().contains_key("time_zone"));
    }

    #[test]
    fn the_preview_pads_like_postgres() {
        assert_eq!(
            settings("INV-{YYYY}-{seq:4}", "yearly").preview(7, 2027),
            "INV-2027-0007"
        );
        assert_eq!(
            settings("{YY}/{seq:2}", "yearly").preview(123, 2005),
            "05/123"
        );
        assert_eq!(settings("A{seq}", "never").preview(42, 2027), "A42");
    }
}

#[cfg(test)]
mod branding_tests {
    use super::*;

    #[test]
    fn a_pale_accent_is_darkened_until_it_is_legible_and_a_dark_one_is_kept() {
        let pale = Branding {
            accent_color: Some("#ffee00".into()),
            ..Branding::default()
        };
        let (r, g, b) = pale.rgb().unwrap();
        assert!(contrast_with_white(r, g, b) >= 4.5);
        let dark = Branding {
            accent_color: Some("#1d4ed8".into()),
            ..Branding::default()
        };
        assert_eq!(dark.rgb(), Some((0x1d, 0x4e, 0xd8)));
        assert_eq!(dark.css().unwrap(), ":root{--accent:#1d4ed8}");
    }

    #[test]
    fn the_form_takes_hex_colours_only() {
        let form = |c: &str| BrandingForm {
            accent_color: c.into(),
            footer_text: "Thanks".into(),
        };
        assert_eq!(
            form("#1D4ED8").parse().unwrap().0.as_deref(),
            Some("#1d4ed8")
        );
        assert_eq!(form("").parse().unwrap().0, None);
        for bad in ["red", "#12345", "#1234567", "1d4ed8x", "#gg0000", "#fff;}"] {
            assert!(form(bad).parse().is_err(), "{bad}");
        }
    }
}
