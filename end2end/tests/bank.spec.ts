import { test, expect } from "@playwright/test";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import AxeBuilder from "@axe-core/playwright";
import { hydrated, signUp, openForm, fillInvoice, submitButton, submitTwice, INVOICE_URL } from "./helpers";

/** What zbarimg (Debian's zbar-tools: a decoder nobody here wrote) reads from a PNG. */
function zbar(png: Buffer): string[] {
  const file = path.join(mkdtempSync(path.join(tmpdir(), "invoicer-qr-")), "qr.png");
  writeFileSync(file, png);
  return execFileSync("zbarimg", ["--raw", "-q", file], { encoding: "utf8" }).trimEnd().split("\n");
}

test("a euro invoice's page shows its structured reference and a payment QR code a banking app reads", async ({ page, browser }) => {
  await signUp(page, "qr");
  await page.goto("/settings/org");
  await hydrated(page);
  const bank = page.locator("form.bank-details");
  await bank.locator('input[name="bank[holder]"]').fill("Acme B.V.");
  await bank.locator('input[name="bank[iban]"]').fill("NL91 ABNA 0417 1643 00");
  await bank.locator('input[name="bank[bic]"]').fill("ABNANL2A");
  const saved = page.waitForResponse((r) => r.url().includes("/rpc/save_bank_details"));
  await bank.locator("button.save-bank").click();
  expect((await saved).status()).toBe(302);

  await openForm(page);
  await fillInvoice(page, { quantity: "2", price: "61.25" });
  await page.selectOption('select[name="input[currency]"]', "eur");
  await submitButton(page).click();
  await expect(page).toHaveURL(INVOICE_URL);
  const publicUrl = (await page.locator(".public-link a").first().getAttribute("href"))!;

  const context = await browser.newContext();
  const customer = await context.newPage();
  await customer.goto(publicUrl);
  const transfer = customer.locator("section.transfer");
  const reference = (await transfer.locator("dt:text-is('Structured reference') + dd").textContent())!.trim();
  expect(reference, "printed in groups of four").toMatch(/^RF\d\d( [A-Z0-9]{1,4})+$/);
  const qr = transfer.locator("figure.payment-qr svg");
  await expect(qr).toBeVisible();
  expect(zbar(await qr.screenshot())).toEqual([
    "BCD", "002", "1", "SCT", "ABNANL2A", "Acme B.V.", "NL91ABNA0417164300", "EUR122.50", "", reference.replaceAll(" ", ""),
  ]);
  // Drawn by the server: the customer's page still runs no script.
  await expect(customer.locator("script")).toHaveCount(0);
  await context.close();
});

/** A CAMT.053 statement of account NL91ABNA0417164300 with `entries` (date, amount, remittance, the bank's reference). */
function camt(entries: [string, number, string, string][]): string {
  const rows = entries.map(([date, amount, remittance, reference]) => `<Ntry><Amt Ccy="EUR">${Math.abs(amount).toFixed(2)}</Amt>\
<CdtDbtInd>${amount > 0 ? "CRDT" : "DBIT"}</CdtDbtInd><Sts><Cd>BOOK</Cd></Sts><BookgDt><Dt>${date}</Dt></BookgDt>\
<AcctSvcrRef>${reference}</AcctSvcrRef><NtryDtls><TxDtls><RltdPties><Dbtr><Pty><Nm>Ada Lovelace</Nm></Pty></Dbtr></RltdPties>\
<RmtInf><Ustrd>${remittance}</Ustrd></RmtInf></TxDtls></NtryDtls></Ntry>`);
  return `<?xml version="1.0" encoding="UTF-8"?>
<Document xmlns="urn:iso:std:iso:20022:tech:xsd:camt.053.001.08"><BkToCstmrStmt>
<GrpHdr><MsgId>M1</MsgId><CreDtTm>2026-12-03T18:00:00+01:00</CreDtTm></GrpHdr>
<Stmt><Id>S1</Id><Acct><Id><IBAN>NL91ABNA0417164300</IBAN></Id><Ccy>EUR</Ccy></Acct>${rows.join("")}</Stmt></BkToCstmrStmt></Document>`;
}

test("a bank statement uploaded on the bank page pays the invoice it names, and the owner confirms a suggestion once", async ({ page }) => {
  await signUp(page, "bankloop");
  await page.goto("/settings/org");
  await hydrated(page);
  const bank = page.locator("form.bank-details");
  await bank.locator('input[name="bank[holder]"]').fill("Acme B.V.");
  await bank.locator('input[name="bank[iban]"]').fill("NL91ABNA0417164300");
  const saved = page.waitForResponse((r) => r.url().includes("/rpc/save_bank_details"));
  await bank.locator("button.save-bank").click();
  expect((await saved).status()).toBe(302);
  // Two euro invoices to Ada Lovelace: 122.50 and 80.00.
  const invoices: { url: string; number: string }[] = [];
  for (const price of ["61.25", "40.00"]) {
    await openForm(page);
    await fillInvoice(page, { quantity: "2", price });
    await page.selectOption('select[name="input[currency]"]', "eur");
    await submitButton(page).click();
    await expect(page).toHaveURL(INVOICE_URL);
    invoices.push({ url: page.url(), number: (await page.locator("h1.number").textContent())!.trim() });
  }
  const [first, second] = invoices;

  await page.getByRole("link", { name: "Bank", exact: true }).click();
  await expect(page).toHaveURL(/\/payments\/bank$/);
  await hydrated(page);
  const axe = async () => {
    const bad = (await new AxeBuilder({ page }).analyze()).violations.filter((v) => v.impact === "serious" || v.impact === "critical");
    expect(bad.map((v) => `${v.id}: ${v.help}`)).toEqual([]);
  };
  await axe();
  await page.setInputFiles('input[name="file"]', {
    name: "statement.xml",
    mimeType: "application/xml",
    buffer: Buffer.from(camt([
      ["2026-12-01", 122.5, `Invoice ${first.number}`, "BANK-1"],
      ["2026-12-02", 80, "thank you", "BANK-2"],
      ["2026-12-02", -4.5, "account fee", "BANK-3"],
    ])),
  });
  await page.getByRole("button", { name: "Import" }).click();
  await expect(page).toHaveURL(/\/payments\/bank\?imported=[0-9a-f-]{36}$/);
  await expect(page.locator(".bank-imported")).toHaveText("CAMT.053 of NL91ABNA0417164300: 3 entries, 3 new, 1 matched to invoices.");
  await expect(page.locator("tr.bank-entry")).toHaveCount(2);
  await axe();
  // The unreferenced 80.00 from Ada Lovelace: the second invoice suggested, confirmed by two presses.
  const suggestion = page.getByRole("button", { name: `Confirm ${second.number} (Ada Lovelace, €80.00 due; same amount and payer)` });
  await expect(suggestion).toBeVisible();
  await hydrated(page);
  const { answers } = await submitTwice(page, suggestion, "/rpc/match_bank_entry");
  expect(answers.map((a) => a.status)).toEqual([302, 302]);
  await expect(page.locator("tr.bank-entry")).toHaveCount(1);
  await page.locator("tr.bank-entry.debit").getByRole("button", { name: "Dismiss" }).click();
  await expect(page.locator("p.empty")).toContainText("Nothing to match");

  // Both invoices paid, each by one bank payment with its booking date and the bank's reference.
  for (const [invoice, booked, reference] of [[first, "2026-12-01", "BANK-1"], [second, "2026-12-02", "BANK-2"]] as const) {
    await page.goto(invoice.url);
    const rows = page.locator("tr.payment.bank");
    await expect(rows).toHaveCount(1);
    await expect(rows).toContainText(`booked ${booked}`);
    await expect(rows).toContainText(reference);
  }
});
