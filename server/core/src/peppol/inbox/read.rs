//! A received e-invoice read as EN 16931's business terms, from UBL (`Invoice`, `CreditNote`) or
//! CII (`CrossIndustryInvoice`), bare or inside the SBD an access point forwards.

pub use model::peppol::{Received, ReceivedLine, ReceivedTax};

use super::tree::{Element, Unreadable};

/// The document an SBD carries, or the root itself.
pub fn document(root: &Element) -> &Element {
    if root.name == "StandardBusinessDocument" {
        if let Some(inner) = root
            .children
            .iter()
            .find(|c| c.name != "StandardBusinessDocumentHeader")
        {
            return inner;
        }
    }
    root
}

/// `text` (a decimal such as `-1234.5`) in minor units of a currency with `exponent` decimals,
/// rounded half away from zero; None when it is no decimal or is out of range.
pub fn minor_units(text: &str, exponent: u32) -> Option<i64> {
    let text = text.trim();
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    if (whole.is_empty() && fraction.is_empty())
        || !whole.bytes().all(|b| b.is_ascii_digit())
        || !fraction.bytes().all(|b| b.is_ascii_digit())
        || whole.len() > 15
    {
        return None;
    }
    let mut value: i64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let exp = exponent as usize;
    let mut kept = fraction
        .get(..exp.min(fraction.len()))
        .unwrap_or("")
        .to_owned();
    while kept.len() < exp {
        kept.push('0');
    }
    value = value.checked_mul(10_i64.pow(exponent))?;
    if !kept.is_empty() {
        value = value.checked_add(kept.parse::<i64>().ok()?)?;
    }
    if fraction.len() > exp && fraction.as_bytes()[exp] >= b'5' {
        value = value.checked_add(1)?;
    }
    Some(if negative { -value } else { value })
}

struct Amounts<'a> {
    exponent: u32,
    unreadable: &'a mut Vec<String>,
}

impl Amounts<'_> {
    /// The amount at `path` under `e` (0 when absent; recorded as unreadable when not a decimal).
    fn at(&mut self, e: Option<&Element>, path: &str, term: &str) -> i64 {
        let Some(text) = e.map(|e| e.text_at(path)).filter(|t| !t.is_empty()) else {
            return 0;
        };
        minor_units(&text, self.exponent).unwrap_or_else(|| {
            self.unreadable.push(term.to_owned());
            0
        })
    }
}

fn endpoint(e: Option<&Element>) -> String {
    match e {
        Some(e) if !e.text.trim().is_empty() => match e.attribute("schemeID") {
            Some(scheme) => format!("{scheme}:{}", e.text.trim()),
            None => e.text.trim().to_owned(),
        },
        _ => String::new(),
    }
}

/// `20261208` as `2026-12-08`; anything else as it is.
fn cii_date(text: &str) -> String {
    if text.len() == 8 && text.bytes().all(|b| b.is_ascii_digit()) {
        format!("{}-{}-{}", &text[..4], &text[4..6], &text[6..])
    } else {
        text.to_owned()
    }
}

/// Reads a UBL or CII document (the root, or the SBD around it).
pub fn read(root: &Element) -> Result<Received, Unreadable> {
    let doc = document(root);
    match doc.name.as_str() {
        "Invoice" | "CreditNote" => Ok(ubl(doc)),
        "CrossIndustryInvoice" => Ok(cii(doc)),
        other => Err(Unreadable(format!(
            "neither UBL (Invoice, CreditNote) nor CII (CrossIndustryInvoice): the root is {other}"
        ))),
    }
}

fn ubl(doc: &Element) -> Received {
    let credit_note = doc.name == "CreditNote";
    let currency = doc.text_at("DocumentCurrencyCode").to_ascii_uppercase();
    let exponent = model::currency_exponent(&currency.to_ascii_lowercase()).unwrap_or(2);
    let mut unreadable = Vec::new();
    let mut amounts = Amounts {
        exponent,
        unreadable: &mut unreadable,
    };
    let seller = doc.at("AccountingSupplierParty/Party");
    let buyer = doc.at("AccountingCustomerParty/Party");
    let name_of = |p: Option<&Element>| {
        p.map(|p| {
            let legal = p.text_at("PartyLegalEntity/RegistrationName");
            if legal.is_empty() {
                p.text_at("PartyName/Name")
            } else {
                legal
            }
        })
        .unwrap_or_default()
    };
    let (line_name, quantity_name) = if credit_note {
        ("CreditNoteLine", "CreditedQuantity")
    } else {
        ("InvoiceLine", "InvoicedQuantity")
    };
    let mut lines = Vec::new();
    for l in doc.children_named(line_name) {
        lines.push(ReceivedLine {
            id: l.text_at("ID"),
            name: l.text_at("Item/Name"),
            quantity: l.text_at(quantity_name),
            unit_price: l.text_at("Price/PriceAmount"),
            net_cents: amounts.at(Some(l), "LineExtensionAmount", "BT-131"),
            category: l.text_at("Item/ClassifiedTaxCategory/ID"),
            percent: l.text_at("Item/ClassifiedTaxCategory/Percent"),
        });
    }
    let mut taxes = Vec::new();
    let mut tax_total = 0;
    // The tax total in the document's currency (a second one is in the accounting currency).
    let tax_totals: Vec<&Element> = doc.children_named("TaxTotal").collect();
    let main = tax_totals
        .iter()
        .find(|t| t.child("TaxSubtotal").is_some())
        .or(tax_totals.first());
    if let Some(t) = main {
        tax_total = amounts.at(Some(t), "TaxAmount", "BT-110");
        for s in t.children_named("TaxSubtotal") {
            taxes.push(ReceivedTax {
                category: s.text_at("TaxCategory/ID"),
                percent: s.text_at("TaxCategory/Percent"),
                taxable_cents: amounts.at(Some(s), "TaxableAmount", "BT-116"),
                tax_cents: amounts.at(Some(s), "TaxAmount", "BT-117"),
            });
        }
    }
    let totals = doc.child("LegalMonetaryTotal");
    let means = doc.child("PaymentMeans");
    let due_date = {
        let due = doc.text_at("DueDate");
        if due.is_empty() {
            means
                .map(|m| m.text_at("PaymentDueDate"))
                .unwrap_or_default()
        } else {
            due
        }
    };
    let received = Received {
        syntax: "ubl".into(),
        customization: doc.text_at("CustomizationID"),
        profile: doc.text_at("ProfileID"),
        type_code: if credit_note {
            doc.text_at("CreditNoteTypeCode")
        } else {
            doc.text_at("InvoiceTypeCode")
        },
        credit_note,
        number: doc.text_at("ID"),
        issue_date: doc.text_at("IssueDate"),
        due_date,
        buyer_reference: doc.text_at("BuyerReference"),
        order_reference: doc.text_at("OrderReference/ID"),
        seller_name: name_of(seller),
        seller_vat_id: seller
            .and_then(|p| {
                p.children_named("PartyTaxScheme")
                    .find(|t| t.text_at("TaxScheme/ID") == "VAT")
            })
            .map(|t| t.text_at("CompanyID"))
            .unwrap_or_default(),
        seller_endpoint: endpoint(seller.and_then(|p| p.child("EndpointID"))),
        seller_country: seller
            .map(|p| p.text_at("PostalAddress/Country/IdentificationCode"))
            .unwrap_or_default(),
        seller_city: seller
            .map(|p| p.text_at("PostalAddress/CityName"))
            .unwrap_or_default(),
        buyer_name: name_of(buyer),
        buyer_endpoint: endpoint(buyer.and_then(|p| p.child("EndpointID"))),
        buyer_country: buyer
            .map(|p| p.text_at("PostalAddress/Country/IdentificationCode"))
            .unwrap_or_default(),
        lines,
        taxes,
        line_total_cents: amounts.at(totals, "LineExtensionAmount", "BT-106"),
        allowance_total_cents: amounts.at(totals, "AllowanceTotalAmount", "BT-107"),
        charge_total_cents: amounts.at(totals, "ChargeTotalAmount", "BT-108"),
        tax_exclusive_cents: amounts.at(totals, "TaxExclusiveAmount", "BT-109"),
        tax_total_cents: tax_total,
        total_cents: amounts.at(totals, "TaxInclusiveAmount", "BT-112"),
        prepaid_cents: amounts.at(totals, "PrepaidAmount", "BT-113"),
        due_cents: amounts.at(totals, "PayableAmount", "BT-115"),
        iban: means
            .map(|m| m.text_at("PayeeFinancialAccount/ID"))
            .unwrap_or_default(),
        bic: means
            .map(|m| m.text_at("PayeeFinancialAccount/FinancialInstitutionBranch/ID"))
            .unwrap_or_default(),
        payment_reference: means.map(|m| m.text_at("PaymentID")).unwrap_or_default(),
        terms: doc.text_at("PaymentTerms/Note"),
        currency,
        unreadable: Vec::new(),
    };
    Received {
        unreadable,
        ..received
    }
}

fn cii(doc: &Element) -> Received {
    let transaction = doc.child("SupplyChainTradeTransaction");
    let agreement = transaction.and_then(|t| t.child("ApplicableHeaderTradeAgreement"));
    let settlement = transaction.and_then(|t| t.child("ApplicableHeaderTradeSettlement"));
    let currency = settlement
        .map(|s| s.text_at("InvoiceCurrencyCode"))
        .unwrap_or_default()
        .to_ascii_uppercase();
    let exponent = model::currency_exponent(&currency.to_ascii_lowercase()).unwrap_or(2);
    let mut unreadable = Vec::new();
    let mut amounts = Amounts {
        exponent,
        unreadable: &mut unreadable,
    };
    let seller = agreement.and_then(|a| a.child("SellerTradeParty"));
    let buyer = agreement.and_then(|a| a.child("BuyerTradeParty"));
    let mut lines = Vec::new();
    if let Some(t) = transaction {
        for l in t.children_named("IncludedSupplyChainTradeLineItem") {
            let tax = l.at("SpecifiedLineTradeSettlement/ApplicableTradeTax");
            lines.push(ReceivedLine {
                id: l.text_at("AssociatedDocumentLineDocument/LineID"),
                name: l.text_at("SpecifiedTradeProduct/Name"),
                quantity: l.text_at("SpecifiedLineTradeDelivery/BilledQuantity"),
                unit_price: l
                    .text_at("SpecifiedLineTradeAgreement/NetPriceProductTradePrice/ChargeAmount"),
                net_cents: amounts.at(
                    Some(l),
                    "SpecifiedLineTradeSettlement/SpecifiedTradeSettlementLineMonetarySummation/LineTotalAmount",
                    "BT-131",
                ),
                category: tax.map(|t| t.text_at("CategoryCode")).unwrap_or_default(),
                percent: tax
                    .map(|t| t.text_at("RateApplicablePercent"))
                    .unwrap_or_default(),
            });
        }
    }
    let mut taxes = Vec::new();
    if let Some(s) = settlement {
        for t in s.children_named("ApplicableTradeTax") {
            taxes.push(ReceivedTax {
                category: t.text_at("CategoryCode"),
                percent: t.text_at("RateApplicablePercent"),
                taxable_cents: amounts.at(Some(t), "BasisAmount", "BT-116"),
                tax_cents: amounts.at(Some(t), "CalculatedAmount", "BT-117"),
            });
        }
    }
    let sums = settlement.and_then(|s| s.child("SpecifiedTradeSettlementHeaderMonetarySummation"));
    // BT-110 is the tax total in the document's currency (a second one may be in the accounting
    // currency).
    let tax_total = sums
        .map(|s| {
            s.children_named("TaxTotalAmount")
                .find(|t| t.attribute("currencyID").is_none_or(|c| c == currency))
                .map(|t| t.text.trim().to_owned())
                .unwrap_or_default()
        })
        .filter(|t| !t.is_empty())
        .map(|t| {
            minor_units(&t, exponent).unwrap_or_else(|| {
                amounts.unreadable.push("BT-110".into());
                0
            })
        })
        .unwrap_or(0);
    let means = settlement.and_then(|s| s.child("SpecifiedTradeSettlementPaymentMeans"));
    let endpoint_of =
        |p: Option<&Element>| endpoint(p.and_then(|p| p.at("URIUniversalCommunication/URIID")));
    let type_code = doc.text_at("ExchangedDocument/TypeCode");
    let received = Received {
        syntax: "cii".into(),
        customization: doc
            .text_at("ExchangedDocumentContext/GuidelineSpecifiedDocumentContextParameter/ID"),
        profile: doc.text_at(
            "ExchangedDocumentContext/BusinessProcessSpecifiedDocumentContextParameter/ID",
        ),
        credit_note: type_code == "381",
        type_code,
        number: doc.text_at("ExchangedDocument/ID"),
        issue_date: cii_date(&doc.text_at("ExchangedDocument/IssueDateTime/DateTimeString")),
        due_date: cii_date(
            &settlement
                .map(|s| s.text_at("SpecifiedTradePaymentTerms/DueDateDateTime/DateTimeString"))
                .unwrap_or_default(),
        ),
        buyer_reference: agreement
            .map(|a| a.text_at("BuyerReference"))
            .unwrap_or_default(),
        order_reference: agreement
            .map(|a| a.text_at("BuyerOrderReferencedDocument/IssuerAssignedID"))
            .unwrap_or_default(),
        seller_name: seller.map(|p| p.text_at("Name")).unwrap_or_default(),
        seller_vat_id: seller
            .and_then(|p| {
                p.children_named("SpecifiedTaxRegistration")
                    .find(|t| t.at("ID").and_then(|i| i.attribute("schemeID")) == Some("VA"))
            })
            .map(|t| t.text_at("ID"))
            .unwrap_or_default(),
        seller_endpoint: endpoint_of(seller),
        seller_country: seller
            .map(|p| p.text_at("PostalTradeAddress/CountryID"))
            .unwrap_or_default(),
        seller_city: seller
            .map(|p| p.text_at("PostalTradeAddress/CityName"))
            .unwrap_or_default(),
        buyer_name: buyer.map(|p| p.text_at("Name")).unwrap_or_default(),
        buyer_endpoint: endpoint_of(buyer),
        buyer_country: buyer
            .map(|p| p.text_at("PostalTradeAddress/CountryID"))
            .unwrap_or_default(),
        lines,
        taxes,
        line_total_cents: amounts.at(sums, "LineTotalAmount", "BT-106"),
        allowance_total_cents: amounts.at(sums, "AllowanceTotalAmount", "BT-107"),
        charge_total_cents: amounts.at(sums, "ChargeTotalAmount", "BT-108"),
        tax_exclusive_cents: amounts.at(sums, "TaxBasisTotalAmount", "BT-109"),
        tax_total_cents: tax_total,
        total_cents: amounts.at(sums, "GrandTotalAmount", "BT-112"),
        prepaid_cents: amounts.at(sums, "TotalPrepaidAmount", "BT-113"),
        due_cents: amounts.at(sums, "DuePayableAmount", "BT-115"),
        iban: means
            .map(|m| m.text_at("PayeePartyCreditorFinancialAccount/IBANID"))
            .unwrap_or_default(),
        bic: means
            .map(|m| m.text_at("PayeeSpecifiedCreditorFinancialInstitution/BICID"))
            .unwrap_or_default(),
        payment_reference: settlement
            .map(|s| s.text_at("PaymentReference"))
            .unwrap_or_default(),
        terms: settlement
            .map(|s| s.text_at("SpecifiedTradePaymentTerms/Description"))
            .unwrap_or_default(),
        currency,
        unreadable: Vec::new(),
    };
    Received {
        unreadable,
        ..received
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn decimals_become_minor_units() {
        use super::minor_units;
        assert_eq!(minor_units("1656.25", 2), Some(165_625));
        assert_eq!(minor_units("-0.5", 2), Some(-50));
        assert_eq!(minor_units("1000", 0), Some(1000));
        assert_eq!(minor_units("12.345", 2), Some(1235));
        assert_eq!(minor_units("7.5", 3), Some(7500));
        assert_eq!(minor_units("abc", 2), None);
        assert_eq!(minor_units("1e5", 2), None);
        assert_eq!(minor_units("", 2), None);
    }
}
