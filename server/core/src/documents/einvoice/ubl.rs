//! A document as OASIS UBL 2.1, for EN 16931 alone, Peppol BIS Billing 3.0 or XRechnung 3.0 (its
//! profile): `Invoice` or `CreditNote`, the elements in the order the UBL schema sets.

use super::xml::Xml;
use super::{exemption, milli, Document, Kind, Party, BILLING_PROCESS};
use model::TaxCategory;

const CAC: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2";
const CBC: &str = "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2";

fn money(x: &mut Xml, d: &Document, element: &str, minor: i64) {
    x.leaf(element, &[("currencyID", &d.currency)], &d.amount(minor));
}

fn tax_category(x: &mut Xml, element: &str, category: TaxCategory, percent_milli: i64) {
    x.open(element, &[]);
    x.text("cbc:ID", category.code());
    if category != TaxCategory::O {
        x.text("cbc:Percent", &milli(percent_milli));
    }
    x.open("cac:TaxScheme", &[]);
    x.text("cbc:ID", "VAT");
    x.close("cac:TaxScheme");
    x.close(element);
}

fn party(x: &mut Xml, d: &Document, element: &str, p: &Party, ids: (&str, &str), seller: bool) {
    let (identifier, vat_id) = ids;
    x.open(element, &[]);
    x.open("cac:Party", &[]);
    if let Some((scheme, value)) = d.endpoint(p) {
        x.leaf("cbc:EndpointID", &[("schemeID", scheme)], value);
    }
    if !identifier.is_empty() {
        x.open("cac:PartyIdentification", &[]);
        x.text("cbc:ID", identifier);
        x.close("cac:PartyIdentification");
    }
    if !p.trading_name.is_empty() {
        x.open("cac:PartyName", &[]);
        x.text("cbc:Name", &p.trading_name);
        x.close("cac:PartyName");
    }
    let a = &p.address;
    x.open("cac:PostalAddress", &[]);
    x.text("cbc:StreetName", &a.line1);
    x.text("cbc:AdditionalStreetName", &a.line2);
    x.text("cbc:CityName", &a.city);
    x.text("cbc:PostalZone", &a.postal_code);
    x.text("cbc:CountrySubentity", &a.region);
    x.open("cac:Country", &[]);
    x.text("cbc:IdentificationCode", &a.country);
    x.close("cac:Country");
    x.close("cac:PostalAddress");
    if !vat_id.is_empty() {
        x.open("cac:PartyTaxScheme", &[]);
        x.text("cbc:CompanyID", vat_id);
        x.open("cac:TaxScheme", &[]);
        x.text("cbc:ID", "VAT");
        x.close("cac:TaxScheme");
        x.close("cac:PartyTaxScheme");
    }
    if seller && !p.tax_registration_id.is_empty() && identifier.is_empty() {
        x.open("cac:PartyTaxScheme", &[]);
        x.text("cbc:CompanyID", &p.tax_registration_id);
        x.open("cac:TaxScheme", &[]);
        x.text("cbc:ID", "FC");
        x.close("cac:TaxScheme");
        x.close("cac:PartyTaxScheme");
    }
    x.open("cac:PartyLegalEntity", &[]);
    x.text("cbc:RegistrationName", &p.name);
    x.close("cac:PartyLegalEntity");
    if seller && (!p.email.is_empty() || !p.phone.is_empty()) {
        x.open("cac:Contact", &[]);
        x.text("cbc:Name", &p.name);
        x.text("cbc:Telephone", &p.phone);
        x.text("cbc:ElectronicMail", &p.email);
        x.close("cac:Contact");
    }
    x.close("cac:Party");
    x.close(element);
}

pub fn write(d: &Document) -> Vec<u8> {
    let (root, namespace, type_code, line, quantity) = match d.kind {
        Kind::Invoice => (
            "Invoice",
            "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2",
            "cbc:InvoiceTypeCode",
            "cac:InvoiceLine",
            "cbc:InvoicedQuantity",
        ),
        Kind::CreditNote => (
            "CreditNote",
            "urn:oasis:names:specification:ubl:schema:xsd:CreditNote-2",
            "cbc:CreditNoteTypeCode",
            "cac:CreditNoteLine",
            "cbc:CreditedQuantity",
        ),
    };
    let mut x = Xml::new();
    x.open(
        root,
        &[("xmlns", namespace), ("xmlns:cac", CAC), ("xmlns:cbc", CBC)],
    );
    x.text("cbc:CustomizationID", d.profile.customization());
    x.text("cbc:ProfileID", BILLING_PROCESS);
    x.text("cbc:ID", &d.number);
    x.text("cbc:IssueDate", &d.issued.to_string());
    if let (Kind::Invoice, Some(due)) = (d.kind, d.due) {
        x.text("cbc:DueDate", &due.to_string());
    }
    x.text(type_code, d.kind.code());
    x.text("cbc:Note", &d.note);
    x.text("cbc:DocumentCurrencyCode", &d.currency);
    x.text("cbc:BuyerReference", d.buyer_reference());
    if let Some((number, issued)) = &d.preceding {
        x.open("cac:BillingReference", &[]);
        x.open("cac:InvoiceDocumentReference", &[]);
        x.text("cbc:ID", number);
        x.text("cbc:IssueDate", &issued.to_string());
        x.close("cac:InvoiceDocumentReference");
        x.close("cac:BillingReference");
    }
    party(
        &mut x,
        d,
        "cac:AccountingSupplierParty",
        &d.seller,
        (d.seller_identifier(), d.seller_vat_id()),
        true,
    );
    party(
        &mut x,
        d,
        "cac:AccountingCustomerParty",
        &d.buyer,
        ("", d.buyer_vat_id()),
        false,
    );
    if d.delivered_abroad() || d.profile == super::Profile::Xrechnung {
        // BT-72: the supply is dated the invoice's date (XRechnung asks for a date of supply).
        x.open("cac:Delivery", &[]);
        x.text("cbc:ActualDeliveryDate", &d.issued.to_string());
        if d.delivered_abroad() {
            x.open("cac:DeliveryLocation", &[]);
            x.open("cac:Address", &[]);
            x.open("cac:Country", &[]);
            x.text("cbc:IdentificationCode", &d.buyer.address.country);
            x.close("cac:Country");
            x.close("cac:Address");
            x.close("cac:DeliveryLocation");
        }
        x.close("cac:Delivery");
    }
    if let Some(t) = d.payment_means() {
        x.open("cac:PaymentMeans", &[]);
        x.text("cbc:PaymentMeansCode", "58");
        if let (Kind::CreditNote, Some(due)) = (d.kind, d.due) {
            x.text("cbc:PaymentDueDate", &due.to_string());
        }
        x.text("cbc:PaymentID", &d.payment_reference);
        x.open("cac:PayeeFinancialAccount", &[]);
        x.text("cbc:ID", &t.iban);
        x.text("cbc:Name", &t.holder);
        if !t.bic.is_empty() {
            x.open("cac:FinancialInstitutionBranch", &[]);
            x.text("cbc:ID", &t.bic);
            x.close("cac:FinancialInstitutionBranch");
        }
        x.close("cac:PayeeFinancialAccount");
        x.close("cac:PaymentMeans");
    }
    if !d.terms.is_empty() {
        x.open("cac:PaymentTerms", &[]);
        x.text("cbc:Note", &d.terms);
        x.close("cac:PaymentTerms");
    }
    for (group, amounts) in d.groups.iter().filter(|(_, a)| a.discount != 0) {
        x.open("cac:AllowanceCharge", &[]);
        x.text("cbc:ChargeIndicator", "false");
        x.text("cbc:AllowanceChargeReason", "Discount");
        money(&mut x, d, "cbc:Amount", amounts.discount);
        tax_category(
            &mut x,
            "cac:TaxCategory",
            group.category,
            group.percent_milli,
        );
        x.close("cac:AllowanceCharge");
    }
    x.open("cac:TaxTotal", &[]);
    money(&mut x, d, "cbc:TaxAmount", d.tax_total());
    for (group, amounts) in &d.groups {
        x.open("cac:TaxSubtotal", &[]);
        money(&mut x, d, "cbc:TaxableAmount", amounts.taxable());
        money(&mut x, d, "cbc:TaxAmount", amounts.tax);
        x.open("cac:TaxCategory", &[]);
        x.text("cbc:ID", group.category.code());
        if group.category != TaxCategory::O {
            x.text("cbc:Percent", &milli(group.percent_milli));
        }
        if let Some((text, code)) = exemption(group) {
            x.text("cbc:TaxExemptionReasonCode", code);
            x.text("cbc:TaxExemptionReason", &text);
        }
        x.open("cac:TaxScheme", &[]);
        x.text("cbc:ID", "VAT");
        x.close("cac:TaxScheme");
        x.close("cac:TaxCategory");
        x.close("cac:TaxSubtotal");
    }
    x.close("cac:TaxTotal");
    x.open("cac:LegalMonetaryTotal", &[]);
    money(&mut x, d, "cbc:LineExtensionAmount", d.line_total());
    money(&mut x, d, "cbc:TaxExclusiveAmount", d.tax_exclusive());
    money(&mut x, d, "cbc:TaxInclusiveAmount", d.grand_total());
    money(&mut x, d, "cbc:AllowanceTotalAmount", d.allowance_total());
    money(&mut x, d, "cbc:ChargeTotalAmount", 0);
    money(&mut x, d, "cbc:PrepaidAmount", d.prepaid);
    money(&mut x, d, "cbc:PayableAmount", d.due_amount());
    x.close("cac:LegalMonetaryTotal");
    for l in &d.lines {
        x.open(line, &[]);
        x.text("cbc:ID", &l.id.to_string());
        x.leaf(quantity, &[("unitCode", "C62")], &milli(l.quantity_milli));
        money(&mut x, d, "cbc:LineExtensionAmount", l.net);
        x.open("cac:Item", &[]);
        x.text("cbc:Name", &l.name);
        tax_category(
            &mut x,
            "cac:ClassifiedTaxCategory",
            l.category,
            l.percent_milli,
        );
        x.close("cac:Item");
        x.open("cac:Price", &[]);
        x.leaf(
            "cbc:PriceAmount",
            &[("currencyID", &d.currency)],
            &d.price(l.unit_price),
        );
        x.close("cac:Price");
        x.close(line);
    }
    x.close(root);
    x.finish()
}
