//! Bank statements as the benchmark and the pgbench comparison make them: one CAMT.053 file of `n`
//! booked entries whose values follow the formulas `bench/pgbench/bank_import.sql` computes, so
//! both sides insert rows of the same shape. Entry `g` (1-based) is a debit when `g % 10 == 0`,
//! else a credit; it carries the bank's reference `lab-<tag>-<g>` (pgbench's are `pgb-…`) and the remittance
//! `Transfer <g>` (a number token that names no invoice, so the match query runs and finds none).

use std::fmt::Write as _;

use chrono::{Days, NaiveDate};

/// The account the benchmark's org is paid into.
pub const IBAN: &str = "NL91ABNA0417164300";

/// Entry `g`'s signed amount in cents.
pub fn amount_cents(g: u64) -> i64 {
    if g.is_multiple_of(10) {
        -((g * 13 % 5_000) as i64 + 1)
    } else {
        (g * 7 % 90_000) as i64 + 100
    }
}

/// Entry `g`'s booking day, within four weeks before `today`.
pub fn booked_on(g: u64, today: NaiveDate) -> NaiveDate {
    today - Days::new(g % 28)
}

/// A CAMT.053 (001.08) statement of [`IBAN`] with entries 1..=n, references tagged `tag`.
pub fn statement(n: u64, tag: &str, today: NaiveDate) -> String {
    let mut xml = String::with_capacity(n as usize * 420 + 400);
    xml.push_str(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"><BkToCstmrStmt>
<GrpHdr><MsgId>BENCH</MsgId><CreDtTm>2026-12-01T18:00:00+01:00</CreDtTm></GrpHdr>
<Stmt><Id>BENCH</Id><Acct><Id><IBAN>"#,
    );
    xml.push_str(IBAN);
    xml.push_str("</IBAN></Id><Ccy>EUR</Ccy></Acct>\n");
    for g in 1..=n {
        let cents = amount_cents(g);
        let side = if cents > 0 { "CRDT" } else { "DBIT" };
        let _ = writeln!(
            xml,
            "<Ntry><Amt Ccy=\"EUR\">{}.{:02}</Amt><CdtDbtInd>{side}</CdtDbtInd><Sts><Cd>BOOK</Cd></Sts>\
             <BookgDt><Dt>{}</Dt></BookgDt><AcctSvcrRef>lab-{tag}-{g}</AcctSvcrRef><NtryDtls><TxDtls>\
             <RltdPties><Dbtr><Pty><Nm>Payer {g}</Nm></Pty></Dbtr></RltdPties>\
             <RmtInf><Ustrd>Transfer {g}</Ustrd></RmtInf></TxDtls></NtryDtls></Ntry>",
            cents.abs() / 100,
            cents.abs() % 100,
            booked_on(g, today),
        );
    }
    xml.push_str("</Stmt></BkToCstmrStmt></Document>\n");
    xml
}

/// Makes [`IBAN`] `org`'s account.
pub async fn own_account(pool: &sqlx::PgPool, org: model::OrgId) -> sqlx::Result<()> {
    sqlx::query("update orgs set bank_iban = $2 where id = $1")
        .bind(org)
        .bind(IBAN)
        .execute(pool)
        .await?;
    Ok(())
}
