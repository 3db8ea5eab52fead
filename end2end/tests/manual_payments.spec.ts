import { test, expect, Page } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { hydrated, signUpAndCreateInvoice, submitTwice } from "./helpers";

async function noAxeViolations(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id}: ${v.help}`)).toEqual([]);
}

const recordForm = (page: Page) => page.locator("form.record-payment");

test("a bank transfer submitted twice is one payment, and the rest makes the invoice paid", async ({ page }) => {
  await signUpAndCreateInvoice(page, "transfer", { quantity: "1", price: "100.00" });
  await hydrated(page);
  await expect(recordForm(page).locator('input[name="form[amount]"]')).toHaveValue("100.00");
  await noAxeViolations(page);

  const form = recordForm(page);
  await form.locator('input[name="form[amount]"]').fill("40.00");
  await form.locator('select[name="form[method]"]').selectOption("bank_transfer");
  await form.locator('input[name="form[reference]"]').fill("SEPA 2026-001");
  // Both requests leave the browser with the same rendered key: one payment.
  await submitTwice(page, form.locator("button.record"), "/rpc/record_payment");
  await expect(page.locator(".heading .payment-state")).toHaveText("partially paid");
  await page.reload();
  const manual = page.locator("table.payments tr.payment.manual");
  await expect(manual).toHaveCount(1);
  await expect(manual).toContainText("Bank transfer");
  await expect(manual).toContainText("SEPA 2026-001");
  await expect(manual).toContainText("$40.00");

  // The form now offers what is still due; recording it pays the invoice.
  await hydrated(page);
  await expect(recordForm(page).locator('input[name="form[amount]"]')).toHaveValue("60.00");
  await recordForm(page).locator('select[name="form[method]"]').selectOption("cash");
  await recordForm(page).locator("button.record").click();
  await expect(page.locator(".heading .status")).toHaveText("paid");
  await expect(page.locator(".heading .payment-state")).toHaveText("paid");
  await expect(page.locator("table.payments tr.payment.manual")).toHaveCount(2);

  // The owner deletes the cash payment: open again, partially paid.
  await page.locator("table.payments tr.payment.manual").filter({ hasText: "Cash" }).locator("button.delete-payment").click();
  await expect(page.locator("table.payments tr.payment.manual")).toHaveCount(1);
  await expect(page.locator(".heading .status")).toHaveText("open");
  await expect(page.locator(".heading .payment-state")).toHaveText("partially paid");
  await noAxeViolations(page);
});

test("a payment dated in the future is refused with the field's message and records nothing", async ({ page }) => {
  await signUpAndCreateInvoice(page, "future", { quantity: "1", price: "10.00" });
  await hydrated(page);
  const form = recordForm(page);
  // The date input's max is today; a typed-in date beyond it reaches the server only without the
  // browser's own check, as a crafted request would.
  await form.locator('input[name="form[paid_on]"]').evaluate((i: HTMLInputElement) => {
    i.removeAttribute("max");
    i.value = "2999-01-01";
  });
  await form.locator("button.record").click();
  await expect(form.locator(".error")).toContainText("to today");
  await expect(page.locator("table.payments")).toHaveCount(0);
  await expect(page.locator(".heading .payment-state")).toHaveText("unpaid");
});

test("bank details saved in settings show on the customer's page, on a phone too", async ({ page, browser }) => {
  await signUpAndCreateInvoice(page, "bank", { quantity: "1", price: "80.00" });
  const number = (await page.locator(".heading .number").textContent())!.trim();
  const publicUrl = (await page.locator(".public-link a").first().getAttribute("href"))!;

  await page.goto("/settings/org");
  await hydrated(page);
  const form = page.locator("form.bank-details");
  await form.locator('input[name="bank[holder]"]').fill("Acme B.V.");
  // One digit off: the check digits refuse it.
  await form.locator('input[name="bank[iban]"]').fill("NL91 ABNA 0417 1643 01");
  await form.locator("button.save-bank").click();
  await expect(form.locator(".error")).toContainText("not a valid IBAN");
  await form.locator('input[name="bank[iban]"]').fill("nl91abna0417164300");
  await form.locator('input[name="bank[bic]"]').fill("abnanl2a");
  const saved = page.waitForResponse((r) => r.url().includes("/rpc/save_bank_details"));
  await form.locator("button.save-bank").click();
  // Saved, and the browser sent back to the page (a plain form post).
  expect((await saved).status()).toBe(302);
  await expect(form.locator(".error")).toHaveCount(0);
  // Stored compact and upper case, shown in groups of four.
  await page.reload();
  await expect(page.locator('form.bank-details input[name="bank[iban]"]')).toHaveValue("NL91 ABNA 0417 1643 00");
  await noAxeViolations(page);

  // The customer, on a phone: the transfer details with the invoice's number as the reference, and
  // nothing wider than the screen.
  const phone = await browser.newContext({ viewport: { width: 375, height: 740 } });
  const customer = await phone.newPage();
  await customer.goto(publicUrl);
  const transfer = customer.locator("section.transfer");
  await expect(transfer).toContainText("NL91 ABNA 0417 1643 00");
  await expect(transfer).toContainText("ABNANL2A");
  await expect(transfer).toContainText(number);
  const width = await customer.evaluate(() => document.documentElement.scrollWidth);
  expect(width).toBeLessThanOrEqual(375);
  await noAxeViolations(customer);
  await phone.close();
});
