//! The languages a customer's documents speak, and the words they are made of.
//!
//! Pages and documents both sides render (the invoice's line and total rows) take their words from
//! a [`Words`]: the owner's app speaks [`English`] (no translation data reaches the browser), the
//! customer's pages, PDFs and emails speak the customer's language through the server's
//! translations (`ssr::i18n`). Each label is named by its message id and carries its English text,
//! which the English messages file must repeat (a test checks both ways).

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

use super::{format_money, Thousandths};

/// A language of the customer's documents.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Locale {
    #[default]
    En,
    De,
    Fr,
    Es,
    Nl,
}

impl Locale {
    pub const ALL: [Locale; 5] = [Locale::En, Locale::De, Locale::Fr, Locale::Es, Locale::Nl];

    pub fn as_str(self) -> &'static str {
        match self {
            Locale::En => "en",
            Locale::De => "de",
            Locale::Fr => "fr",
            Locale::Es => "es",
            Locale::Nl => "nl",
        }
    }

    /// `de`, `de-AT`, `DE_ch` → German; anything else none.
    pub fn parse(text: &str) -> Option<Locale> {
        let language = text.trim().split(['-', '_']).next()?.to_ascii_lowercase();
        Locale::ALL.into_iter().find(|l| l.as_str() == language)
    }

    /// The language's own name, for pickers.
    pub fn name(self) -> &'static str {
        match self {
            Locale::En => "English",
            Locale::De => "Deutsch",
            Locale::Fr => "Français",
            Locale::Es => "Español",
            Locale::Nl => "Nederlands",
        }
    }
}

/// Where a document's words and formats come from.
pub trait Words {
    /// The message `id`; `english` is its English text.
    fn label(&self, id: &str, english: &str) -> String {
        self.phrase(id, english, &[])
    }
    /// The message `id` with its arguments filled in; `english` is its English text, with each
    /// argument written `{ $name }` as in the messages files.
    fn phrase(&self, id: &str, english: &str, args: &[(&str, &str)]) -> String;
    fn money(&self, minor: i64, currency: &str) -> String;
    /// A quantity or a percentage: `1.5` or `1,5`.
    fn number(&self, value: Thousandths) -> String;
    fn date(&self, date: NaiveDate) -> String;
}

/// The owner's app: English words, the app's own formats.
pub struct English;

impl Words for English {
    fn phrase(&self, _id: &str, english: &str, args: &[(&str, &str)]) -> String {
        fill(english, args)
    }

    fn money(&self, minor: i64, currency: &str) -> String {
        format_money(minor, currency)
    }

    fn number(&self, value: Thousandths) -> String {
        value.to_string()
    }

    fn date(&self, date: NaiveDate) -> String {
        date.to_string()
    }
}

/// `template` with each `{ $name }` replaced by its argument.
pub fn fill(template: &str, args: &[(&str, &str)]) -> String {
    let mut out = template.to_owned();
    for (name, value) in args {
        out = out.replace(&format!("{{ ${name} }}"), value);
    }
    out
}

/// An optional locale as a form or a JSON body sends it: empty or null is none; anything else must
/// be one of ours.
pub fn optional<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Locale>, D::Error> {
    let text: Option<String> = Option::deserialize(d)?;
    match text.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(code) => Locale::parse(code)
            .filter(|l| l.as_str() == code)
            .map(Some)
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "`{code:.20}` is not a language we write: en, de, fr, es or nl"
                ))
            }),
    }
}
