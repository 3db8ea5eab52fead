//! EN 16931 e-invoices: an invoice (or a credit note) as the standard's business terms, built from
//! what was finalized (the seller and buyer copied onto the invoice then, the lines with their tax
//! rates' categories, the integer totals), and written as UN/CEFACT CII (the XML inside a
//! Factur-X PDF, EN 16931 profile) or as UBL 2.1 (XRechnung 3). The rules that depend on the data
//! (a country for every party, a VAT id where a category needs one, ...) are [`Document::problems`]:
//! finalizing an e-invoicing org's invoice refuses with them, so no document that fails the
//! standard is ever issued.

mod check;
mod cii;
mod load;
mod ubl;
mod xml;

use std::collections::BTreeMap;

use chrono::NaiveDate;

use model::error::FieldErrors;
use model::{Address, TaxCategory};

pub use check::{enabled, finalize_problems, for_form, problems_of, sentence};
pub use load::{credit_note_document, invoice_document, InvoiceDocumentError};

/// Which syntax a document is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// UN/CEFACT Cross Industry Invoice D16B, the Factur-X / ZUGFeRD EN 16931 profile.
    Cii,
    /// OASIS UBL 2.1 with the XRechnung 3.0 customization.
    Ubl,
}

impl Syntax {
    pub fn parse(text: &str) -> Option<Syntax> {
        match text {
            "cii" => Some(Syntax::Cii),
            "ubl" => Some(Syntax::Ubl),
            _ => None,
        }
    }
}

/// BT-3: 380 a commercial invoice, 381 a credit note.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Invoice,
    CreditNote,
}

impl Kind {
    pub fn code(self) -> &'static str {
        match self {
            Kind::Invoice => "380",
            Kind::CreditNote => "381",
        }
    }
}

/// A seller or buyer (BG-4, BG-7).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Party {
    /// BT-27 / BT-44: the registered name.
    pub name: String,
    /// BT-28: a trading name beside the registered one.
    pub trading_name: String,
    /// BT-31 / BT-48.
    pub vat_id: String,
    /// BT-32 (seller only).
    pub tax_registration_id: String,
    /// BT-34 / BT-49 (as an email address, scheme EM) and the contact's (BT-43).
    pub email: String,
    pub phone: String,
    pub address: Address,
    /// Its Peppol participant id (`scheme:value`), or empty.
    pub peppol_id: String,
}

impl Party {
    /// The Peppol id as (scheme, value), when it has one.
    pub fn peppol(&self) -> Option<(&str, &str)> {
        self.peppol_id.split_once(':')
    }
}

/// The rules a document is written for (BT-24), beyond EN 16931 itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Profile {
    /// EN 16931 alone: the Factur-X EN 16931 profile in CII, plain EN 16931 in UBL.
    #[default]
    En16931,
    /// Peppol BIS Billing 3.0 (UBL): both parties addressed by their Peppol ids.
    Peppol,
    /// XRechnung 3.0, the German CIUS (UBL or CII): the BR-DE rules.
    Xrechnung,
}

impl Profile {
    pub fn parse(text: &str) -> Option<Profile> {
        match text {
            "en16931" => Some(Profile::En16931),
            "peppol" => Some(Profile::Peppol),
            "xrechnung" => Some(Profile::Xrechnung),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Profile::En16931 => "en16931",
            Profile::Peppol => "peppol",
            Profile::Xrechnung => "xrechnung",
        }
    }

    /// BT-24, the specification identifier.
    pub fn customization(self) -> &'static str {
        match self {
            Profile::En16931 => "urn:cen.eu:en16931:2017",
            Profile::Peppol => PEPPOL_BIS,
            Profile::Xrechnung => XRECHNUNG,
        }
    }
}

/// BT-24 of Peppol BIS Billing 3.0.
pub const PEPPOL_BIS: &str =
    "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0";
/// BT-24 of XRechnung 3.0.
pub const XRECHNUNG: &str = "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0";
/// BT-23: the Peppol billing process.
pub const BILLING_PROCESS: &str = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0";

/// One line (BG-25).
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// BT-126: its place on the invoice, from 1.
    pub id: u32,
    pub name: String,
    pub quantity_milli: i64,
    /// BT-146, in minor units.
    pub unit_price: i64,
    /// BT-131: quantity × price, rounded, in minor units.
    pub net: i64,
    pub category: TaxCategory,
    pub percent_milli: i64,
}

/// A VAT category and rate of the document, with what falls in it (BG-23, and the document-level
/// allowance BG-20 the discount is in it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Group {
    pub category: TaxCategory,
    pub percent_milli: i64,
    /// BT-120: the exempt rate's own reason; the other categories' is standard text.
    pub exemption_reason: String,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupAmounts {
    pub lines: i64,
    pub discount: i64,
    pub tax: i64,
}

impl GroupAmounts {
    /// BT-116.
    pub fn taxable(&self) -> i64 {
        self.lines - self.discount
    }
}

/// Bank transfer details (BG-16, BG-17).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transfer {
    pub iban: String,
    pub bic: String,
    pub holder: String,
}

/// A document as EN 16931's business terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub kind: Kind,
    /// BT-1.
    pub number: String,
    /// BT-2.
    pub issued: NaiveDate,
    /// BT-9.
    pub due: Option<NaiveDate>,
    /// BT-20: "Net 30".
    pub terms: String,
    /// BT-5, upper case.
    pub currency: String,
    /// The currency's decimals as invoicer counts its minor units (0, 2 or 3).
    pub exponent: u32,
    /// BT-22.
    pub note: String,
    /// BT-10.
    pub buyer_reference: String,
    /// BT-83.
    pub payment_reference: String,
    pub seller: Party,
    pub buyer: Party,
    pub lines: Vec<Line>,
    pub groups: BTreeMap<Group, GroupAmounts>,
    /// BT-113.
    pub prepaid: i64,
    pub transfer: Option<Transfer>,
    /// BG-3 (a credit note's invoice): BT-25 and BT-26.
    pub preceding: Option<(String, NaiveDate)>,
    /// Some line has no tax rate, so no VAT category.
    pub untaxed_lines: bool,
    /// The rules it is written for.
    pub profile: Profile,
    /// The buyer receives its e-invoices by Peppol (its customer's channel at finalization).
    pub buyer_by_peppol: bool,
}

impl Document {
    /// BT-106: the lines' net amounts.
    pub fn line_total(&self) -> i64 {
        self.lines.iter().map(|l| l.net).sum()
    }

    /// BT-107: the discount, over every group.
    pub fn allowance_total(&self) -> i64 {
        self.groups.values().map(|g| g.discount).sum()
    }

    /// BT-109.
    pub fn tax_exclusive(&self) -> i64 {
        self.line_total() - self.allowance_total()
    }

    /// BT-110.
    pub fn tax_total(&self) -> i64 {
        self.groups.values().map(|g| g.tax).sum()
    }

    /// BT-112.
    pub fn grand_total(&self) -> i64 {
        self.tax_exclusive() + self.tax_total()
    }

    /// BT-115.
    pub fn due_amount(&self) -> i64 {
        self.grand_total() - self.prepaid
    }

    /// An intra-community supply: the document says where and when it was delivered.
    pub fn delivered_abroad(&self) -> bool {
        self.groups.keys().any(|g| g.category == TaxCategory::K)
    }

    /// The same document written for `profile`.
    pub fn with_profile(mut self, profile: Profile) -> Document {
        self.profile = profile;
        self
    }

    /// The profile a buyer who receives by Peppol gets: XRechnung for a German public buyer (its
    /// Peppol id a Leitweg-ID), Peppol BIS Billing 3.0 for anyone else; none for a buyer by email.
    pub fn channel_profile(&self) -> Option<Profile> {
        if !self.buyer_by_peppol {
            return None;
        }
        match self.buyer.peppol() {
            Some(("0204", _)) => Some(Profile::Xrechnung),
            _ => Some(Profile::Peppol),
        }
    }

    /// BT-10 as written: the customer's reference; Peppol and XRechnung need one, so a buyer
    /// addressed by a Leitweg-ID gets it, and any other the invoice's own number.
    pub fn buyer_reference(&self) -> &str {
        if !self.buyer_reference.is_empty() || self.profile == Profile::En16931 {
            return &self.buyer_reference;
        }
        match self.buyer.peppol() {
            Some(("0204", leitweg)) => leitweg,
            _ => &self.number,
        }
    }

    /// A party's electronic address (BT-34, BT-49) as (scheme, value): its Peppol id, or (except
    /// for Peppol BIS, which takes no email) its email address.
    pub fn endpoint<'a>(&self, party: &'a Party) -> Option<(&'a str, &'a str)> {
        party.peppol().or_else(|| {
            (self.profile != Profile::Peppol && !party.email.is_empty())
                .then_some(("EM", party.email.as_str()))
        })
    }

    /// The payment instructions the document gives (BG-16): an invoice's transfer details; a credit
    /// note gives none, except under XRechnung, which asks every document for them (the seller's
    /// account, through which the credit is settled).
    pub fn payment_means(&self) -> Option<&Transfer> {
        match (self.kind, self.profile) {
            (Kind::Invoice, _) | (Kind::CreditNote, Profile::Xrechnung) => self.transfer.as_ref(),
            (Kind::CreditNote, _) => None,
        }
    }

    /// The document in `syntax`, as UTF-8 XML.
    pub fn xml(&self, syntax: Syntax) -> Vec<u8> {
        match syntax {
            Syntax::Cii => cii::write(self),
            Syntax::Ubl => ubl::write(self),
        }
    }

    /// Only "not subject to VAT": then no party shows a VAT id (BR-O-02 to BR-O-04).
    fn outside_vat(&self) -> bool {
        self.groups.keys().all(|g| g.category == TaxCategory::O)
    }

    /// The seller's VAT id as the document shows it (none outside VAT).
    pub fn seller_vat_id(&self) -> &str {
        if self.outside_vat() {
            ""
        } else {
            &self.seller.vat_id
        }
    }

    /// BT-29: outside VAT, where no VAT id may be shown, the seller is named by its tax number.
    pub fn seller_identifier(&self) -> &str {
        if self.outside_vat() {
            &self.seller.tax_registration_id
        } else {
            ""
        }
    }

    /// The buyer's VAT id as the document shows it (none outside VAT).
    pub fn buyer_vat_id(&self) -> &str {
        if self.outside_vat() {
            ""
        } else {
            &self.buyer.vat_id
        }
    }

    /// An amount in major units with at most two decimals, as EN 16931 writes amounts (three-decimal
    /// currencies count in steps of ten, so their amounts have two).
    pub fn amount(&self, minor: i64) -> String {
        decimal(minor, self.exponent, self.exponent.min(2))
    }

    /// A unit price, with all of the currency's decimals.
    pub fn price(&self, minor: i64) -> String {
        decimal(minor, self.exponent, self.exponent)
    }

    /// What the standard's rules need of this document's data, as field → message; empty when
    /// it makes a valid e-invoice.
    pub fn problems(&self) -> FieldErrors {
        let mut out = FieldErrors::new();
        let mut say = |field: &str, message: &str| {
            out.entry(field.to_owned())
                .or_insert_with(|| message.to_owned());
        };
        if self.seller.name.is_empty() {
            say(
                "seller.name",
                "E-invoices name the seller: set the org's name.",
            );
        }
        if self.seller.address.country.is_empty() {
            say(
                "seller.address.country",
                "E-invoices need the seller's country: set it in Settings, Business details.",
            );
        }
        if self.buyer.address.country.is_empty() {
            say(
                "customer_id",
                "E-invoices need the buyer's country: pick a saved customer whose address has a country.",
            );
        }
        if self.lines.is_empty() {
            say("lines", "An e-invoice has at least one line.");
        }
        if self.untaxed_lines {
            say(
                "lines",
                "Each line of an e-invoice needs a tax rate (its VAT category): pick one on every line.",
            );
        }
        let categories: Vec<TaxCategory> = self.groups.keys().map(|g| g.category).collect();
        let seller_id =
            !self.seller.vat_id.is_empty() || !self.seller.tax_registration_id.is_empty();
        for category in &categories {
            match category {
                TaxCategory::S | TaxCategory::Z | TaxCategory::E if !seller_id => say(
                    "seller.vat_id",
                    "E-invoices with VAT name the seller's VAT id or tax number: set one in Settings, Business details.",
                ),
                TaxCategory::AE | TaxCategory::K | TaxCategory::G if self.seller.vat_id.is_empty() => say(
                    "seller.vat_id",
                    "Reverse charge, intra-community supply and export need the seller's VAT id: set it in Settings, Business details.",
                ),
                _ => {}
            }
            if matches!(category, TaxCategory::AE | TaxCategory::K) && self.buyer.vat_id.is_empty()
            {
                say(
                    "customer_id",
                    "Reverse charge and intra-community supply need the buyer's VAT id: add it to the customer.",
                );
            }
        }
        if categories.contains(&TaxCategory::O) && self.seller.tax_registration_id.is_empty() {
            say(
                "seller.tax_registration_id",
                "An e-invoice not subject to VAT names the seller by its tax number: set it in Settings, Business details.",
            );
        }
        if categories.contains(&TaxCategory::O) && categories.len() > 1 {
            say(
                "lines",
                "A line not subject to VAT cannot share an e-invoice with taxed lines: invoice them apart.",
            );
        }
        for (group, _) in self.groups.iter() {
            if group.category == TaxCategory::E && group.exemption_reason.is_empty() {
                say("lines", "An exempt tax rate needs its exemption reason.");
            }
        }
        match self.profile {
            Profile::En16931 => {}
            Profile::Peppol => {
                if self.seller.peppol().is_none() {
                    say(
                        "seller.peppol_id",
                        "Peppol invoices name the seller's Peppol id: set it in Settings, Business details.",
                    );
                }
                if self.buyer.peppol().is_none() {
                    say(
                        "customer_id",
                        "Peppol invoices name the buyer's Peppol id: add it to the customer.",
                    );
                }
            }
            Profile::Xrechnung => {
                if self.buyer_by_peppol && self.seller.peppol().is_none() {
                    say(
                        "seller.peppol_id",
                        "Sending by Peppol needs the seller's Peppol id: set it in Settings, Business details.",
                    );
                }
                let s = &self.seller;
                if s.email.is_empty() || s.phone.is_empty() {
                    say(
                        "seller.email",
                        "XRechnung names the seller's contact with a phone number and an email address: set both in Settings, Business details.",
                    );
                }
                if s.address.city.is_empty() || s.address.postal_code.is_empty() {
                    say(
                        "seller.address.city",
                        "XRechnung needs the seller's city and postal code: set them in Settings, Business details.",
                    );
                }
                let b = &self.buyer;
                if b.address.city.is_empty() || b.address.postal_code.is_empty() {
                    say(
                        "customer_id",
                        "XRechnung needs the buyer's city and postal code: add them to the customer.",
                    );
                }
                if self.endpoint(b).is_none() {
                    say(
                        "customer_id",
                        "XRechnung needs the buyer's electronic address: add a Peppol id or an email to the customer.",
                    );
                }
                if self.transfer.is_none() {
                    say(
                        "seller.bank",
                        "XRechnung says how to pay: set the IBAN in Settings, Bank details.",
                    );
                }
            }
        }
        out
    }
}

/// `minor` (with `exponent` decimals) written with `decimals` decimals (fewer only drops zeros).
fn decimal(minor: i64, exponent: u32, decimals: u32) -> String {
    let scale = 10_i64.pow(exponent - decimals);
    let value = minor / scale;
    let sign = if value < 0 { "-" } else { "" };
    let unit = 10_i64.pow(decimals);
    let (whole, fraction) = (value.abs() / unit, value.abs() % unit);
    if decimals == 0 {
        format!("{sign}{whole}")
    } else {
        format!(
            "{sign}{whole}.{fraction:0width$}",
            width = decimals as usize
        )
    }
}

/// Thousandths as a plain decimal: 2000 → "2", 1500 → "1.5", 8875 → "8.875".
pub fn milli(value: i64) -> String {
    let sign = if value < 0 { "-" } else { "" };
    let (whole, fraction) = (value.abs() / 1000, value.abs() % 1000);
    if fraction == 0 {
        format!("{sign}{whole}")
    } else {
        let digits = format!("{fraction:03}");
        format!("{sign}{whole}.{}", digits.trim_end_matches('0'))
    }
}

/// The standard text and VATEX code of a group's exemption (none for the standard and zero rates).
pub fn exemption(group: &Group) -> Option<(String, &'static str)> {
    let (text, code) = group.category.mention()?;
    if group.category == TaxCategory::E {
        return Some((group.exemption_reason.clone(), ""));
    }
    Some((text.to_owned(), code))
}

/// `gross`, tax at `percent_milli` included, net of that tax: rounded half up (the tax is the
/// rest).
pub fn net_of(gross: i64, percent_milli: i64) -> i64 {
    let scale = 100_000 + i128::from(percent_milli);
    ((i128::from(gross) * 100_000 * 2 + scale) / (scale * 2)) as i64
}

/// `total` spread over parts in proportion to `weights`: each share rounded half up, the last
/// taking what is left (so the shares always add up to `total`).
pub fn spread(total: i64, weights: &[i64]) -> Vec<i64> {
    let sum: i128 = weights.iter().map(|w| i128::from(*w)).sum();
    let mut left = total;
    let mut shares = Vec::with_capacity(weights.len());
    for (n, weight) in weights.iter().enumerate() {
        let share = if n + 1 == weights.len() || sum == 0 {
            left
        } else {
            ((i128::from(total) * i128::from(*weight) + sum / 2) / sum) as i64
        };
        left -= share;
        shares.push(share);
    }
    shares
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_spread_adds_up_and_nets_round_half_up() {
        assert_eq!(super::spread(1_000, &[1, 1, 1]), vec![333, 333, 334]);
        assert_eq!(super::spread(100, &[2_500, 7_500]), vec![25, 75]);
        assert_eq!(super::spread(5, &[0, 0]), vec![5, 0]);
        assert_eq!(super::net_of(11_900, 19_000), 10_000);
        assert_eq!(super::net_of(107, 7_000), 100);
        assert_eq!(super::net_of(1, 0), 1);
    }

    use super::*;

    #[test]
    fn amounts_have_at_most_two_decimals_and_quantities_drop_zeros() {
        assert_eq!(decimal(123_456, 2, 2), "1234.56");
        assert_eq!(decimal(-5, 2, 2), "-0.05");
        assert_eq!(decimal(1_234_560, 3, 2), "1234.56");
        assert_eq!(decimal(1_234_567, 3, 3), "1234.567");
        assert_eq!(decimal(1_500, 0, 0), "1500");
        assert_eq!(milli(2000), "2");
        assert_eq!(milli(1500), "1.5");
        assert_eq!(milli(8875), "8.875");
        assert_eq!(milli(125), "0.125");
    }
}
