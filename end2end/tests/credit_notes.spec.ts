import { test, expect, Page } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fillInvoice, hydrated, INVOICE_URL, openForm, reloadAndRead, reloadUntilPaid, signUp, unfold } from "./helpers";

// scripts/test runs the local Stripe on this port; the server's worker makes refunds there.
const STRIPE = process.env.STRIPE_API_BASE ?? "http://127.0.0.1:12111";
const STRIPE_AUTH = { authorization: "Bearer sk_test_local" };

async function noAxeViolations(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id}: ${v.help}`)).toEqual([]);
}

/** A new org's invoice of $100.00 to a saved customer, through the form; returns its id. */
async function invoiceToSavedCustomer(page: Page, tag: string, customer: string): Promise<string> {
  await signUp(page, tag);
  await openForm(page);
  await fillInvoice(page, { customer, quantity: "1", price: "100.00" });
  await page.locator('input[name="input[save_customer]"]').check();
  await page.getByRole("button", { name: "Create invoice" }).click();
  await expect(page).toHaveURL(INVOICE_URL);
  return page.url().split("/").pop()!;
}

/** The text pdftotext reads from the PDF at `url`. */
async function pdfText(page: Page, url: string): Promise<string> {
  const res = await page.request.get(url);
  expect(res.status()).toBe(200);
  expect(res.headers()["content-type"]).toBe("application/pdf");
  const file = join(mkdtempSync(join(tmpdir(), "invoicer-e2e-")), "doc.pdf");
  writeFileSync(file, await res.body());
  return execFileSync("pdftotext", ["-layout", file, "-"], { encoding: "utf8" });
}

test("a paid card invoice credited in full with a refund: one refund at Stripe, the invoice refunded", async ({ page, browser }) => {
  const id = await invoiceToSavedCustomer(page, "refund", "Refund Customer");
  const link = (await page.locator("p.public-link a").first().getAttribute("href"))!;

  // The customer pays by card at the local Stripe.
  const context = await browser.newContext();
  const customer = await context.newPage();
  await customer.goto(link);
  await customer.locator("button.pay").click();
  await expect(customer).toHaveURL(/\/checkout\/cs_test_/);
  await customer.getByRole("button", { name: "Pay by card" }).click();
  await reloadUntilPaid(customer);
  await context.close();

  await page.goto(`/invoices/${id}`);
  await hydrated(page);
  await expect(page.locator(".heading .status")).toHaveText("paid");
  await noAxeViolations(page);
  await unfold(page, "credit");
  const form = page.locator("form.credit-invoice");
  await form.locator('input[name="reason"]').fill("Order cancelled");
  await form.locator('select[name="refund"]').selectOption("stripe");
  await form.locator("button.credit").click();
  await expect(page.locator("table.credit-notes tr.credit-note")).toHaveCount(1);
  // The worker makes the refund; the invoice then kept nothing, and asks for nothing (as Stripe
  // has it: a fully credited invoice is paid, its payment refunded).
  await expect
    .poll(() => reloadAndRead(page, ".heading .payment-state"), { message: "refunded by the worker", timeout: 30_000 })
    .toEqual(["refunded"]);
  await expect(page.locator(".heading .status")).toHaveText("paid");

  const sessions = await (await page.request.get(`${STRIPE}/v1/checkout/sessions`, { headers: STRIPE_AUTH })).json();
  const intent = sessions.data.find((s: { client_reference_id: string }) => s.client_reference_id === id).payment_intent;
  const refunds = await (await page.request.get(`${STRIPE}/v1/refunds?payment_intent=${intent}`, { headers: STRIPE_AUTH })).json();
  expect(refunds.data).toHaveLength(1);
  expect(refunds.data[0].amount).toBe(10000);
});

test("a customer's statement: the balance on the owner's page, the customer's page and the PDF", async ({ page, browser }) => {
  const id = await invoiceToSavedCustomer(page, "statement", "Statement Customer");
  await hydrated(page);
  // $40.00 paid by transfer, $10.00 credited: $50.00 still owed.
  const record = page.locator("form.record-payment");
  await record.locator('input[name="form[amount]"]').fill("40.00");
  await record.locator("button.record").click();
  await expect(page.locator(".heading .payment-state")).toHaveText("partially paid");
  await hydrated(page);
  await unfold(page, "credit");
  const credit = page.locator("form.credit-invoice");
  await credit.locator('input[name="amount"]').fill("10.00");
  await credit.locator('input[name="reason"]').fill("Late delivery");
  await credit.locator("button.credit").click();
  await expect(page.locator("table.credit-notes tr.credit-note")).toHaveCount(1);

  await page.goto("/customers");
  await page.getByRole("link", { name: "Statement Customer" }).first().click();
  await page.getByRole("link", { name: "Statement", exact: true }).click();
  await expect(page.locator("h1")).toHaveText("Statement of Statement Customer");
  await expect(page.locator(".closing-balance")).toHaveText("$50.00");
  await expect(page.locator("tr.entry")).toHaveCount(3);
  await noAxeViolations(page);
  const publicUrl = (await page.locator("a.public-statement").getAttribute("href"))!;
  const pdfUrl = (await page.locator("a.statement-pdf").getAttribute("href"))!;
  expect(await pdfText(page, pdfUrl)).toMatch(/Balance due\s+\$50\.00/);

  // The customer's page of it, on a phone: no script, nothing wider than the screen.
  const phone = await browser.newContext({ viewport: { width: 375, height: 740 } });
  const customer = await phone.newPage();
  const scripts: string[] = [];
  customer.on("request", (r) => {
    if (r.resourceType() === "script") scripts.push(r.url());
  });
  await customer.goto(publicUrl);
  await expect(customer.locator(".closing-balance")).toHaveText("$50.00");
  await expect(customer.locator("tr.entry.payment")).toContainText("$40.00");
  expect(scripts).toEqual([]);
  const width = await customer.evaluate(() => document.documentElement.scrollWidth);
  expect(width).toBeLessThanOrEqual(375);
  await noAxeViolations(customer);
  // The credit note's own page, on the phone too.
  await page.goto(`/invoices/${id}`);
  const notePage = (await page.locator("table.credit-notes a").first().getAttribute("href"))!;
  await customer.goto(notePage);
  await expect(customer.locator(".amount")).toHaveText("$10.00");
  expect(await customer.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
  await noAxeViolations(customer);
  await phone.close();
});
