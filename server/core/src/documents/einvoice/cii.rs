//! A document as UN/CEFACT CII D16B in the Factur-X / ZUGFeRD EN 16931 profile: the elements in
//! the order the Factur-X schema sets.

use super::xml::Xml;
use super::{exemption, milli, Document, Party};

const RSM: &str = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100";
const RAM: &str =
    "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100";
const UDT: &str = "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100";
const QDT: &str = "urn:un:unece:uncefact:data:standard:QualifiedDataType:100";

fn date(x: &mut Xml, element: &str, date: chrono::NaiveDate) {
    x.open(element, &[]);
    x.leaf(
        "udt:DateTimeString",
        &[("format", "102")],
        &date.format("%Y%m%d").to_string(),
    );
    x.close(element);
}

fn party(x: &mut Xml, d: &Document, element: &str, p: &Party, ids: (&str, &str), seller: bool) {
    let (identifier, vat_id) = ids;
    x.open(element, &[]);
    x.text("ram:ID", identifier);
    x.text("ram:Name", &p.name);
    if !p.trading_name.is_empty() {
        x.open("ram:SpecifiedLegalOrganization", &[]);
        x.text("ram:TradingBusinessName", &p.trading_name);
        x.close("ram:SpecifiedLegalOrganization");
    }
    if seller && (!p.email.is_empty() || !p.phone.is_empty()) {
        x.open("ram:DefinedTradeContact", &[]);
        x.text("ram:PersonName", &p.name);
        if !p.phone.is_empty() {
            x.open("ram:TelephoneUniversalCommunication", &[]);
            x.text("ram:CompleteNumber", &p.phone);
            x.close("ram:TelephoneUniversalCommunication");
        }
        if !p.email.is_empty() {
            x.open("ram:EmailURIUniversalCommunication", &[]);
            x.text("ram:URIID", &p.email);
            x.close("ram:EmailURIUniversalCommunication");
        }
        x.close("ram:DefinedTradeContact");
    }
    let a = &p.address;
    x.open("ram:PostalTradeAddress", &[]);
    x.text("ram:PostcodeCode", &a.postal_code);
    x.text("ram:LineOne", &a.line1);
    x.text("ram:LineTwo", &a.line2);
    x.text("ram:CityName", &a.city);
    x.text("ram:CountryID", &a.country);
    x.text("ram:CountrySubDivisionName", &a.region);
    x.close("ram:PostalTradeAddress");
    if let Some((scheme, value)) = d.endpoint(p) {
        x.open("ram:URIUniversalCommunication", &[]);
        x.leaf("ram:URIID", &[("schemeID", scheme)], value);
        x.close("ram:URIUniversalCommunication");
    }
    if !vat_id.is_empty() {
        x.open("ram:SpecifiedTaxRegistration", &[]);
        x.leaf("ram:ID", &[("schemeID", "VA")], vat_id);
        x.close("ram:SpecifiedTaxRegistration");
    }
    if seller && !p.tax_registration_id.is_empty() && identifier.is_empty() {
        x.open("ram:SpecifiedTaxRegistration", &[]);
        x.leaf("ram:ID", &[("schemeID", "FC")], &p.tax_registration_id);
        x.close("ram:SpecifiedTaxRegistration");
    }
    x.close(element);
}

fn category(x: &mut Xml, element: &str, category: &str, percent_milli: Option<i64>) {
    x.open(element, &[]);
    x.text("ram:TypeCode", "VAT");
    x.text("ram:CategoryCode", category);
    if let Some(p) = percent_milli {
        x.text("ram:RateApplicablePercent", &milli(p));
    }
    x.close(element);
}

/// The rate an e-invoice gives a category: none for "not subject to VAT".
fn rate(category: model::TaxCategory, percent_milli: i64) -> Option<i64> {
    (category != model::TaxCategory::O).then_some(percent_milli)
}

pub fn write(d: &Document) -> Vec<u8> {
    let mut x = Xml::new();
    x.open(
        "rsm:CrossIndustryInvoice",
        &[
            ("xmlns:rsm", RSM),
            ("xmlns:ram", RAM),
            ("xmlns:udt", UDT),
            ("xmlns:qdt", QDT),
        ],
    );
    x.open("rsm:ExchangedDocumentContext", &[]);
    x.open("ram:GuidelineSpecifiedDocumentContextParameter", &[]);
    x.text("ram:ID", d.profile.customization());
    x.close("ram:GuidelineSpecifiedDocumentContextParameter");
    x.close("rsm:ExchangedDocumentContext");

    x.open("rsm:ExchangedDocument", &[]);
    x.text("ram:ID", &d.number);
    x.text("ram:TypeCode", d.kind.code());
    date(&mut x, "ram:IssueDateTime", d.issued);
    if !d.note.is_empty() {
        x.open("ram:IncludedNote", &[]);
        x.text("ram:Content", &d.note);
        x.close("ram:IncludedNote");
    }
    x.close("rsm:ExchangedDocument");

    x.open("rsm:SupplyChainTradeTransaction", &[]);
    for line in &d.lines {
        x.open("ram:IncludedSupplyChainTradeLineItem", &[]);
        x.open("ram:AssociatedDocumentLineDocument", &[]);
        x.text("ram:LineID", &line.id.to_string());
        x.close("ram:AssociatedDocumentLineDocument");
        x.open("ram:SpecifiedTradeProduct", &[]);
        x.text("ram:Name", &line.name);
        x.close("ram:SpecifiedTradeProduct");
        x.open("ram:SpecifiedLineTradeAgreement", &[]);
        x.open("ram:NetPriceProductTradePrice", &[]);
        x.text("ram:ChargeAmount", &d.price(line.unit_price));
        x.close("ram:NetPriceProductTradePrice");
        x.close("ram:SpecifiedLineTradeAgreement");
        x.open("ram:SpecifiedLineTradeDelivery", &[]);
        x.leaf(
            "ram:BilledQuantity",
            &[("unitCode", "C62")],
            &milli(line.quantity_milli),
        );
        x.close("ram:SpecifiedLineTradeDelivery");
        x.open("ram:SpecifiedLineTradeSettlement", &[]);
        category(
            &mut x,
            "ram:ApplicableTradeTax",
            line.category.code(),
            rate(line.category, line.percent_milli),
        );
        x.open("ram:SpecifiedTradeSettlementLineMonetarySummation", &[]);
        x.text("ram:LineTotalAmount", &d.amount(line.net));
        x.close("ram:SpecifiedTradeSettlementLineMonetarySummation");
        x.close("ram:SpecifiedLineTradeSettlement");
        x.close("ram:IncludedSupplyChainTradeLineItem");
    }

    x.open("ram:ApplicableHeaderTradeAgreement", &[]);
    x.text("ram:BuyerReference", d.buyer_reference());
    let seller_ids = (d.seller_identifier(), d.seller_vat_id());
    party(
        &mut x,
        d,
        "ram:SellerTradeParty",
        &d.seller,
        seller_ids,
        true,
    );
    party(
        &mut x,
        d,
        "ram:BuyerTradeParty",
        &d.buyer,
        ("", d.buyer_vat_id()),
        false,
    );
    x.close("ram:ApplicableHeaderTradeAgreement");

    x.open("ram:ApplicableHeaderTradeDelivery", &[]);
    if d.delivered_abroad() {
        // Intra-community supply: where it was delivered (BT-80).
        x.open("ram:ShipToTradeParty", &[]);
        x.open("ram:PostalTradeAddress", &[]);
        x.text("ram:CountryID", &d.buyer.address.country);
        x.close("ram:PostalTradeAddress");
        x.close("ram:ShipToTradeParty");
    }
    if d.delivered_abroad() || d.profile == super::Profile::Xrechnung {
        // BT-72: the supply is dated the invoice's date.
        x.open("ram:ActualDeliverySupplyChainEvent", &[]);
        date(&mut x, "ram:OccurrenceDateTime", d.issued);
        x.close("ram:ActualDeliverySupplyChainEvent");
    }
    x.close("ram:ApplicableHeaderTradeDelivery");

    x.open("ram:ApplicableHeaderTradeSettlement", &[]);
    x.text("ram:PaymentReference", &d.payment_reference);
    x.text("ram:InvoiceCurrencyCode", &d.currency);
    if let Some(t) = d.payment_means() {
        x.open("ram:SpecifiedTradeSettlementPaymentMeans", &[]);
        x.text("ram:TypeCode", "58");
        x.open("ram:PayeePartyCreditorFinancialAccount", &[]);
        x.text("ram:IBANID", &t.iban);
        x.text("ram:AccountName", &t.holder);
        x.close("ram:PayeePartyCreditorFinancialAccount");
        if !t.bic.is_empty() {
            x.open("ram:PayeeSpecifiedCreditorFinancialInstitution", &[]);
            x.text("ram:BICID", &t.bic);
            x.close("ram:PayeeSpecifiedCreditorFinancialInstitution");
        }
        x.close("ram:SpecifiedTradeSettlementPaymentMeans");
    }
    for (group, amounts) in &d.groups {
        x.open("ram:ApplicableTradeTax", &[]);
        x.text("ram:CalculatedAmount", &d.amount(amounts.tax));
        x.text("ram:TypeCode", "VAT");
        let why = exemption(group);
        if let Some((text, _)) = &why {
            x.text("ram:ExemptionReason", text);
        }
        x.text("ram:BasisAmount", &d.amount(amounts.taxable()));
        x.text("ram:CategoryCode", group.category.code());
        if let Some((_, code)) = &why {
            x.text("ram:ExemptionReasonCode", code);
        }
        if let Some(p) = rate(group.category, group.percent_milli) {
            x.text("ram:RateApplicablePercent", &milli(p));
        }
        x.close("ram:ApplicableTradeTax");
    }
    for (group, amounts) in d.groups.iter().filter(|(_, a)| a.discount != 0) {
        x.open("ram:SpecifiedTradeAllowanceCharge", &[]);
        x.open("ram:ChargeIndicator", &[]);
        x.text("udt:Indicator", "false");
        x.close("ram:ChargeIndicator");
        x.text("ram:ActualAmount", &d.amount(amounts.discount));
        x.text("ram:Reason", "Discount");
        category(
            &mut x,
            "ram:CategoryTradeTax",
            group.category.code(),
            rate(group.category, group.percent_milli),
        );
        x.close("ram:SpecifiedTradeAllowanceCharge");
    }
    if d.due.is_some() || !d.terms.is_empty() {
        x.open("ram:SpecifiedTradePaymentTerms", &[]);
        x.text("ram:Description", &d.terms);
        if let Some(due) = d.due {
            date(&mut x, "ram:DueDateDateTime", due);
        }
        x.close("ram:SpecifiedTradePaymentTerms");
    }
    x.open("ram:SpecifiedTradeSettlementHeaderMonetarySummation", &[]);
    x.text("ram:LineTotalAmount", &d.amount(d.line_total()));
    x.text("ram:ChargeTotalAmount", &d.amount(0));
    x.text("ram:AllowanceTotalAmount", &d.amount(d.allowance_total()));
    x.text("ram:TaxBasisTotalAmount", &d.amount(d.tax_exclusive()));
    x.leaf(
        "ram:TaxTotalAmount",
        &[("currencyID", &d.currency)],
        &d.amount(d.tax_total()),
    );
    x.text("ram:GrandTotalAmount", &d.amount(d.grand_total()));
    x.text("ram:TotalPrepaidAmount", &d.amount(d.prepaid));
    x.text("ram:DuePayableAmount", &d.amount(d.due_amount()));
    x.close("ram:SpecifiedTradeSettlementHeaderMonetarySummation");
    if let Some((number, issued)) = &d.preceding {
        x.open("ram:InvoiceReferencedDocument", &[]);
        x.text("ram:IssuerAssignedID", number);
        x.open("ram:FormattedIssueDateTime", &[]);
        x.leaf(
            "qdt:DateTimeString",
            &[("format", "102")],
            &issued.format("%Y%m%d").to_string(),
        );
        x.close("ram:FormattedIssueDateTime");
        x.close("ram:InvoiceReferencedDocument");
    }
    x.close("ram:ApplicableHeaderTradeSettlement");
    x.close("rsm:SupplyChainTradeTransaction");
    x.close("rsm:CrossIndustryInvoice");
    x.finish()
}
