//! The rules a received document is checked against, by the rule set its specification identifier
//! (BT-24) names: EN 16931's mandatory terms and calculation rules (BR-01 to BR-16, BR-CO-10 to
//! BR-CO-16, the VAT breakdown), and for Peppol BIS and XRechnung their own mandatory addresses and
//! references. The rule ids are the official artefacts'; the artefacts themselves (Schematron as
//! XSLT) need an XSLT 3 processor the server does not carry, so these are the rules whose failure a
//! reader of the document would act on, not all of them.

use super::read::Received;

/// A failed rule: its id and what it says.
pub type Failed = (String, String);

/// Which rule set a document asks for.
pub fn rule_set(r: &Received) -> &'static str {
    if r.customization.contains("peppol.eu") {
        "peppol"
    } else if r.customization.contains("xrechnung") {
        "xrechnung"
    } else {
        "cen"
    }
}

/// The rules `r` fails, in order.
pub fn check(r: &Received) -> Vec<Failed> {
    let mut failed: Vec<Failed> = Vec::new();
    let mut rule = |ok: bool, id: &str, text: &str| {
        if !ok {
            failed.push((id.to_owned(), text.to_owned()));
        }
    };
    rule(
        !r.customization.is_empty(),
        "BR-01",
        "An Invoice shall have a Specification identifier (BT-24).",
    );
    rule(
        !r.number.is_empty(),
        "BR-02",
        "An Invoice shall have an Invoice number (BT-1).",
    );
    rule(
        !r.issue_date.is_empty(),
        "BR-03",
        "An Invoice shall have an Invoice issue date (BT-2).",
    );
    rule(
        !r.type_code.is_empty(),
        "BR-04",
        "An Invoice shall have an Invoice type code (BT-3).",
    );
    rule(
        r.currency.len() == 3
            && model::currency_exponent(&r.currency.to_ascii_lowercase()).is_some(),
        "BR-05",
        "An Invoice shall have an Invoice currency code (BT-5) from ISO 4217.",
    );
    rule(
        !r.seller_name.is_empty(),
        "BR-06",
        "An Invoice shall contain the Seller name (BT-27).",
    );
    rule(
        !r.buyer_name.is_empty(),
        "BR-07",
        "An Invoice shall contain the Buyer name (BT-44).",
    );
    rule(
        !r.seller_country.is_empty(),
        "BR-09",
        "The Seller postal address (BG-5) shall contain a Seller country code (BT-40).",
    );
    rule(
        !r.buyer_country.is_empty(),
        "BR-11",
        "The Buyer postal address shall contain a Buyer country code (BT-55).",
    );
    rule(
        !r.lines.is_empty(),
        "BR-16",
        "An Invoice shall have at least one Invoice line (BG-25).",
    );
    for term in &r.unreadable {
        failed.push(("BR-DEC".into(), format!("{term} is not a decimal amount.")));
    }
    let mut rule = |ok: bool, id: &str, text: &str| {
        if !ok {
            failed.push((id.to_owned(), text.to_owned()));
        }
    };
    let lines: i64 = r.lines.iter().map(|l| l.net_cents).sum();
    rule(
        lines == r.line_total_cents,
        "BR-CO-10",
        "Sum of Invoice line net amount (BT-106) = Σ Invoice line net amount (BT-131).",
    );
    rule(
        r.tax_exclusive_cents
            == r.line_total_cents - r.allowance_total_cents + r.charge_total_cents,
        "BR-CO-13",
        "Invoice total amount without VAT (BT-109) = Σ Invoice line net amount (BT-131) - Sum of allowances on document level (BT-107) + Sum of charges on document level (BT-108).",
    );
    let breakdown: i64 = r.taxes.iter().map(|t| t.tax_cents).sum();
    rule(
        breakdown == r.tax_total_cents,
        "BR-CO-14",
        "Invoice total VAT amount (BT-110) = Σ VAT category tax amount (BT-117).",
    );
    rule(
        r.total_cents == r.tax_exclusive_cents + r.tax_total_cents,
        "BR-CO-15",
        "Invoice total amount with VAT (BT-112) = Invoice total amount without VAT (BT-109) + Invoice total VAT amount (BT-110).",
    );
    rule(
        r.due_cents == r.total_cents - r.prepaid_cents,
        "BR-CO-16",
        "Amount due for payment (BT-115) = Invoice total amount with VAT (BT-112) - Paid amount (BT-113) + Rounding amount (BT-114).",
    );
    rule(
        !r.taxes.is_empty(),
        "BR-CO-18",
        "An Invoice shall at least have one VAT breakdown group (BG-23).",
    );
    match rule_set(r) {
        "peppol" => {
            rule(
                r.profile
                    .starts_with("urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"),
                "PEPPOL-EN16931-R001",
                "Business process MUST be provided.",
            );
            rule(
                !r.buyer_reference.is_empty() || !r.order_reference.is_empty(),
                "PEPPOL-EN16931-R003",
                "A buyer reference or purchase order reference MUST be provided.",
            );
            rule(
                !r.buyer_endpoint.is_empty(),
                "PEPPOL-EN16931-R010",
                "Buyer electronic address MUST be provided",
            );
            rule(
                !r.seller_endpoint.is_empty(),
                "PEPPOL-EN16931-R020",
                "Seller electronic address MUST be provided",
            );
        }
        "xrechnung" => {
            rule(
                !r.iban.is_empty() || r.credit_note,
                "BR-DE-1",
                "An invoice must contain payment instructions (BG-16).",
            );
            rule(
                !r.seller_city.is_empty(),
                "BR-DE-3",
                "The seller's city (BT-37) must be given.",
            );
            rule(
                !r.buyer_reference.is_empty(),
                "BR-DE-15",
                "The Buyer reference (BT-10) must be given.",
            );
        }
        _ => {}
    }
    failed
}
