//! A customer of an org, as the API and the pages take and show it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;
use validator::Validate;

use super::input::not_blank;
use super::party::{check_vat_id, normalize_vat_id, Address};
use super::peppol::{normalize_participant_id, parse_participant_id, EinvoiceChannel};
use super::text::{no_control_chars, refuse_control_chars};

use crate::error::FieldErrors;

/// What a client sends to create a customer.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, Validate)]
pub struct CustomerInput {
    #[validate(
        length(min = 1, max = 200, message = "Enter 1 to 200 characters."),
        custom(function = "not_blank")
    )]
    #[cfg_attr(
        feature = "server",
        schema(
            min_length = 1,
            max_length = 200,
            pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]*[^\s\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff][^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]*$"
        )
    )]
    pub name: String,
    #[validate(
        length(max = 254, message = "Enter at most 254 characters."),
        email(message = "Enter a valid email address.")
    )]
    #[cfg_attr(feature = "server", schema(format = Email, max_length = 254))]
    pub email: String,
    /// The postal address (its country is needed on e-invoices).
    #[serde(default)]
    pub address: Address,
    /// The older name of `address.line1`: when given, it is the first line.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[cfg_attr(
        feature = "server",
        schema(
            max_length = 1000,
            pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]*$"
        )
    )]
    pub billing_address: String,
    /// The VAT identifier with its country prefix: DE123456789.
    #[serde(default)]
    #[cfg_attr(feature = "server", schema(max_length = 30, example = "DE123456789"))]
    pub vat_id: Option<String>,
    /// The older name of `vat_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "server", schema(max_length = 30))]
    pub tax_id: Option<String>,
    /// What the customer asks its invoices to quote (BT-10; a German Leitweg-ID).
    #[serde(default)]
    #[validate(
        length(max = 200, message = "Enter at most 200 characters."),
        custom(function = "no_control_chars")
    )]
    #[cfg_attr(
        feature = "server",
        schema(
            max_length = 200,
            pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]*$"
        )
    )]
    pub buyer_reference: String,
    /// Its Peppol participant id, `scheme:value` (`0208:0123456749`).
    #[serde(default)]
    #[cfg_attr(
        feature = "server",
        schema(max_length = 60, example = "0208:0123456749")
    )]
    pub peppol_id: Option<String>,
    /// How it receives its invoices: `email` (default) or `peppol` (needs `peppol_id`).
    #[serde(default)]
    pub einvoice_channel: EinvoiceChannel,
    /// The language of the customer's pages, PDFs and emails (`en`, `de`, `fr`, `es`, `nl`);
    /// none: the org's.
    #[serde(default, deserialize_with = "super::locale::optional")]
    pub locale: Option<super::Locale>,
    #[serde(default)]
    #[validate(
        length(max = 2000, message = "Enter at most 2000 characters."),
        custom(function = "no_control_chars")
    )]
    #[cfg_attr(
        feature = "server",
        schema(
            max_length = 2000,
            pattern = r"^[^\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffe\uffff]*$"
        )
    )]
    pub notes: String,
}

/// A customer as stored.
#[cfg_attr(feature = "server", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Customer {
    pub id: Uuid,
    pub name: String,
    pub email: String,
    pub address: Address,
    pub vat_id: Option<String>,
    pub buyer_reference: String,
    pub peppol_id: Option<String>,
    pub einvoice_channel: EinvoiceChannel,
    /// The language of its documents; none: the org's.
    pub locale: Option<super::Locale>,
    pub notes: String,
    pub created_at: DateTime<Utc>,
    /// The address on one line (older clients read it).
    pub billing_address: String,
    /// The same as `vat_id` (older clients read it).
    pub tax_id: Option<String>,
}

impl Customer {
    /// Its details as an input, to edit.
    pub fn input(&self) -> CustomerInput {
        CustomerInput {
            name: self.name.clone(),
            email: self.email.clone(),
            address: self.address.clone(),
            billing_address: String::new(),
            vat_id: self.vat_id.clone(),
            tax_id: None,
            buyer_reference: self.buyer_reference.clone(),
            peppol_id: self.peppol_id.clone(),
            einvoice_channel: self.einvoice_channel,
            locale: self.locale,
            notes: self.notes.clone(),
        }
    }
}

impl CustomerInput {
    /// The older fields folded into the current ones (`billing_address` is the first line, `tax_id`
    /// the VAT id), trimmed, the VAT id normalized and none when blank.
    pub fn resolved(&self) -> CustomerInput {
        let mut address = self.address.normalized();
        let legacy = self
            .billing_address
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        if !legacy.is_empty() {
            address.line1 = legacy;
        }
        let vat_id = self
            .vat_id
            .as_deref()
            .or(self.tax_id.as_deref())
            .map(normalize_vat_id)
            .filter(|v| !v.is_empty());
        CustomerInput {
            name: self.name.trim().to_owned(),
            email: self.email.trim().to_owned(),
            address,
            billing_address: String::new(),
            vat_id,
            tax_id: None,
            buyer_reference: self.buyer_reference.trim().to_owned(),
            peppol_id: self
                .peppol_id
                .as_deref()
                .map(normalize_participant_id)
                .filter(|p| !p.is_empty()),
            einvoice_channel: self.einvoice_channel,
            locale: self.locale,
            notes: self.notes.clone(),
        }
    }

    /// The validator rules as `field → message`, on the [resolved](Self::resolved) input.
    pub fn check(&self) -> Result<(), FieldErrors> {
        let mut out = FieldErrors::new();
        if let Err(errors) = self.validate() {
            super::input::flatten_errors("", &errors, &mut out);
        }
        if self.billing_address.chars().count() > 1000 {
            out.insert(
                "billing_address".into(),
                "Enter at most 1000 characters.".into(),
            );
        }
        refuse_control_chars(&mut out, "billing_address", &self.billing_address);
        let resolved = self.resolved();
        resolved.address.check("address", &mut out);
        if let Some(vat_id) = &resolved.vat_id {
            if let Err(message) = check_vat_id(vat_id) {
                let field = if self.vat_id.is_some() {
                    "vat_id"
                } else {
                    "tax_id"
                };
                out.insert(field.into(), message);
            }
        }
        match &resolved.peppol_id {
            Some(id) if id.len() > 60 => {
                out.insert("peppol_id".into(), "Enter at most 60 characters.".into());
            }
            Some(id) => {
                if let Err(message) = parse_participant_id(id) {
                    out.insert("peppol_id".into(), message);
                }
            }
            None if self.einvoice_channel == EinvoiceChannel::Peppol => {
                out.insert(
                    "peppol_id".into(),
                    "A customer who receives by Peppol needs its Peppol id.".into(),
                );
            }
            None => {}
        }
        crate::error::fields_ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ada() -> CustomerInput {
        CustomerInput {
            name: "Ada Lovelace".into(),
            email: "ada@example.com".into(),
            address: Address::default(),
            billing_address: "12 Analytical Row, London".into(),
            vat_id: None,
            tax_id: Some("GB123456789".into()),
            buyer_reference: String::new(),
            peppol_id: None,
            einvoice_channel: EinvoiceChannel::Email,
            locale: None,
            notes: String::new(),
        }
    }

    #[test]
    fn customers_are_checked_and_older_fields_folded_in() {
        ada().check().unwrap();
        let resolved = ada().resolved();
        assert_eq!(resolved.address.line1, "12 Analytical Row, London");
        assert_eq!(resolved.vat_id.as_deref(), Some("GB123456789"));
        let mut bad = ada();
        bad.name = "  ".into();
        bad.email = "nope".into();
        bad.tax_id = Some("x".repeat(51));
        bad.notes = "a\0b".into();
        bad.address.country = "Germany".into();
        let errors = bad.check().unwrap_err();
        for field in ["name", "email", "tax_id", "notes", "address.country"] {
            assert!(errors.contains_key(field), "{field}: {errors:?}");
        }
        let mut peppol = ada();
        peppol.einvoice_channel = EinvoiceChannel::Peppol;
        assert!(peppol.check().unwrap_err().contains_key("peppol_id"));
        peppol.peppol_id = Some(" 0208:0123456789".into());
        assert!(peppol.check().unwrap_err().contains_key("peppol_id"));
        peppol.peppol_id = Some("0208 : 0123456749 ".into());
        peppol.check().unwrap();
        assert_eq!(
            peppol.resolved().peppol_id.as_deref(),
            Some("0208:0123456749")
        );
    }
}
