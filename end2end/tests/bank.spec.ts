import { test, expect } from "@playwright/test";
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { hydrated, signUp, openForm, fillInvoice, submitButton, INVOICE_URL } from "./helpers";

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
