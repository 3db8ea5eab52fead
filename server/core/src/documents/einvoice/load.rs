//! A finalized invoice read back as an EN 16931 document.

use model::OrgId;
use std::collections::BTreeMap;

use chrono::NaiveDate;
use sqlx::PgConnection;
use uuid::Uuid;

use super::{Document, Group, GroupAmounts, Kind, Line, Party, Transfer};
use model::{currency_exponent, Address, TaxCategory};

#[derive(Debug, thiserror::Error)]
pub enum InvoiceDocumentError {
    #[error("no such invoice")]
    NotFound,
    /// A draft has no number, date or seller yet.
    #[error("a draft is not a document yet")]
    Draft,
    /// Finalized before invoices recorded their seller and buyer.
    #[error("finalized before the parties were recorded on invoices")]
    NoParties,
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

fn text(value: &serde_json::Value, key: &str) -> String {
    value
        .get(key)
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_owned()
}

fn address(value: &serde_json::Value) -> Address {
    let a = value.get("address").cloned().unwrap_or_default();
    Address {
        line1: text(&a, "line1"),
        line2: text(&a, "line2"),
        city: text(&a, "city"),
        postal_code: text(&a, "postal_code"),
        region: text(&a, "region"),
        country: text(&a, "country"),
    }
}

/// The seller as copied onto the invoice at finalization (`org_party()`).
fn seller(value: &serde_json::Value) -> Party {
    let (name, legal) = (text(value, "name"), text(value, "legal_name"));
    let (name, trading_name) = if legal.is_empty() || legal == name {
        (name, String::new())
    } else {
        (legal, name)
    };
    Party {
        name,
        trading_name,
        vat_id: text(value, "vat_id"),
        tax_registration_id: text(value, "tax_registration_id"),
        email: text(value, "email"),
        phone: text(value, "phone"),
        address: address(value),
        peppol_id: text(value, "peppol_id"),
    }
}

/// The buyer as copied at finalization (`customer_party()`), or the typed name and email alone.
fn buyer(value: Option<&serde_json::Value>, name: &str, email: &str) -> Party {
    match value {
        Some(v) => Party {
            name: text(v, "name"),
            trading_name: String::new(),
            vat_id: text(v, "vat_id"),
            tax_registration_id: String::new(),
            email: text(v, "email"),
            phone: String::new(),
            address: address(v),
            peppol_id: text(v, "peppol_id"),
        },
        None => Party {
            name: name.to_owned(),
            email: email.to_owned(),
            ..Party::default()
        },
    }
}

/// `org`'s finalized invoice `id` as a document. Lines without a tax rate are left out of the
/// VAT groups and make [`Document::problems`] name them.
pub async fn invoice_document(
    conn: &mut PgConnection,
    org: OrgId,
    id: Uuid,
) -> Result<Document, InvoiceDocumentError> {
    // language=PostgreSQL
    let r = sqlx::query!(
        r#"
        select i.status, i.number_text, (i.finalized_at at time zone o.time_zone)::date as "issued: NaiveDate",
               i.due_date as "due_date: NaiveDate", i.currency, i.notes, i.payment_terms_days,
               least(i.amount_paid_cents, i.total_cents) as "prepaid!", i.seller, i.buyer,
               i.customer_name, i.customer_email, f.number_text as "fee_for_number?",
               i.payment_reference,
               (f.finalized_at at time zone o.time_zone)::date as "fee_for_issued?: NaiveDate"
        from invoices i join orgs o on o.id = i.org_id
        -- A late fee names the overdue invoice it is charged on (BG-3).
        left join invoices f on f.id = i.fee_for and f.org_id = i.org_id
        where i.id = $1 and i.org_id = $2
        "#,
        id,
        org as _
    )
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(InvoiceDocumentError::NotFound)?;
    let (Some(number), Some(issued)) = (r.number_text, r.issued) else {
        return Err(InvoiceDocumentError::Draft);
    };
    if r.status == "draft" {
        return Err(InvoiceDocumentError::Draft);
    }
    let Some(seller_value) = r.seller else {
        return Err(InvoiceDocumentError::NoParties);
    };
    // language=PostgreSQL
    let rows = sqlx::query!(
        r#"
        select l.position, l.description, l.quantity_milli, l.unit_amount_cents, l.amount_cents,
               l.discount_cents, l.tax_cents, coalesce(l.tax_percent_milli, 0) as "percent!",
               tr.category as "category?", tr.exemption_reason as "exemption_reason?"
        from invoice_lines l left join tax_rates tr on tr.id = l.tax_rate_id
        where l.invoice_id = $1
        order by l.position
        "#,
        id
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut lines = Vec::with_capacity(rows.len());
    let mut groups: BTreeMap<Group, GroupAmounts> = BTreeMap::new();
    let mut untaxed = false;
    for l in rows {
        let category = l.category.as_deref().and_then(TaxCategory::parse);
        untaxed |= category.is_none();
        let category = category.unwrap_or(TaxCategory::O);
        let percent = i64::from(l.percent);
        lines.push(Line {
            id: l.position as u32,
            name: l.description,
            quantity_milli: l.quantity_milli,
            unit_price: l.unit_amount_cents,
            net: l.amount_cents,
            category,
            percent_milli: percent,
        });
        let group = groups
            .entry(Group {
                category,
                percent_milli: percent,
                exemption_reason: l.exemption_reason.unwrap_or_default(),
            })
            .or_default();
        group.lines += l.amount_cents;
        group.discount += l.discount_cents;
        group.tax += l.tax_cents;
    }
    let seller_party = seller(&seller_value);
    let bank = seller_value.get("bank").cloned().unwrap_or_default();
    let iban = text(&bank, "iban");
    let transfer = (!iban.is_empty()).then(|| Transfer {
        iban,
        bic: text(&bank, "bic"),
        holder: text(&bank, "holder"),
    });
    let reference = text(&bank, "reference").replace("{number}", &number);
    let buyer_value = r.buyer.as_ref();
    Ok(Document {
        kind: Kind::Invoice,
        issued,
        due: Some(r.due_date),
        terms: r
            .payment_terms_days
            .map(|d| {
                if d == 0 {
                    "Due on receipt".to_owned()
                } else {
                    format!("Net {d} days")
                }
            })
            .unwrap_or_default(),
        exponent: currency_exponent(&r.currency).unwrap_or(2),
        currency: r.currency.to_ascii_uppercase(),
        note: r.notes.trim().to_owned(),
        buyer_reference: buyer_value
            .map(|b| text(b, "buyer_reference"))
            .unwrap_or_default(),
        // The structured reference a bank statement is matched by; the org's own words for an
        // invoice numbered before there was one.
        payment_reference: match r.payment_reference {
            Some(rf) => rf,
            None if reference.is_empty() => number.clone(),
            None => reference,
        },
        seller: seller_party,
        buyer: buyer(buyer_value, &r.customer_name, &r.customer_email),
        lines,
        groups,
        prepaid: r.prepaid,
        transfer,
        preceding: r.fee_for_number.zip(r.fee_for_issued),
        untaxed_lines: untaxed,
        buyer_by_peppol: buyer_value.is_some_and(|b| text(b, "einvoice_channel") == "peppol"),
        profile: super::Profile::En16931,
        number,
    })
}

/// `org`'s credit note `id` as an EN 16931 credit note (381) of its invoice's document: the same
/// parties, the invoice as the preceding invoice (BG-3), and what it credits, tax included, split
/// back into each VAT rate's net and tax. Credited lines keep their invoice line's rate; an amount
/// is spread over the invoice's rates in proportion to what each came to, the last taking what is
/// left.
pub async fn credit_note_document(
    conn: &mut PgConnection,
    org: OrgId,
    id: Uuid,
) -> Result<Document, InvoiceDocumentError> {
    // language=PostgreSQL
    let c = sqlx::query!(
        r#"
        select c.invoice_id, c.number_text, c.total_cents, c.reason,
               (c.created_at at time zone o.time_zone)::date as "issued!: NaiveDate"
        from credit_notes c join orgs o on o.id = c.org_id
        where c.id = $1 and c.org_id = $2
        "#,
        id,
        org as _
    )
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(InvoiceDocumentError::NotFound)?;
    let invoice = invoice_document(conn, org, c.invoice_id).await?;
    // language=PostgreSQL
    let credited = sqlx::query!(
        r#"
        select l.position, il.description, l.quantity_milli, l.amount_cents
        from credit_note_lines l
        join invoice_lines il on il.invoice_id = l.invoice_id and il.position = l.position
        where l.credit_note_id = $1
        order by l.position
        "#,
        id
    )
    .fetch_all(&mut *conn)
    .await?;
    // (line name, quantity, gross, the group it is taxed in)
    let mut parts: Vec<(String, i64, i64, Group)> = Vec::new();
    if credited.is_empty() {
        let weights: Vec<i64> = invoice
            .groups
            .values()
            .map(|g| g.taxable() + g.tax)
            .collect();
        let shares = super::spread(c.total_cents, &weights);
        for (group, gross) in invoice.groups.keys().zip(shares) {
            parts.push((c.reason.clone(), 1000, gross, group.clone()));
        }
    } else {
        for l in credited {
            let line = invoice
                .lines
                .iter()
                .find(|x| x.id == l.position as u32)
                .ok_or(InvoiceDocumentError::NotFound)?;
            let group = invoice
                .groups
                .keys()
                .find(|g| g.category == line.category && g.percent_milli == line.percent_milli)
                .cloned()
                .ok_or(InvoiceDocumentError::NotFound)?;
            parts.push((l.description, l.quantity_milli, l.amount_cents, group));
        }
    }
    let mut lines = Vec::with_capacity(parts.len());
    let mut groups: BTreeMap<Group, GroupAmounts> = BTreeMap::new();
    for (n, (name, quantity, gross, group)) in parts.into_iter().enumerate() {
        let net = super::net_of(gross, group.percent_milli);
        let per_unit = if quantity > 0 {
            ((i128::from(net) * 1000 * 2 + i128::from(quantity)) / (i128::from(quantity) * 2))
                as i64
        } else {
            net
        };
        lines.push(Line {
            id: n as u32 + 1,
            name,
            quantity_milli: quantity,
            unit_price: per_unit,
            net,
            category: group.category,
            percent_milli: group.percent_milli,
        });
        let amounts = groups.entry(group).or_default();
        amounts.lines += net;
        amounts.tax += gross - net;
    }
    Ok(Document {
        kind: Kind::CreditNote,
        number: c.number_text,
        issued: c.issued,
        due: None,
        terms: format!(
            "Credited against invoice {}: nothing to pay.",
            invoice.number
        ),
        note: c.reason,
        payment_reference: String::new(),
        lines,
        groups,
        prepaid: 0,
        transfer: invoice.transfer.clone(),
        preceding: Some((invoice.number.clone(), invoice.issued)),
        untaxed_lines: invoice.untaxed_lines,
        ..invoice
    })
}
