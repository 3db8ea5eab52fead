import { test, expect } from "@playwright/test";
import { signUp, openForm, fillInvoice, submitButton, INVOICE_URL, PASSWORD } from "./helpers";

test("pages below /invoices need a session", async ({ page }) => {
  await page.goto("/invoices/new");
  await expect(page).toHaveURL(/\/login\?next=%2Finvoices%2Fnew$/);
});

test("log out, log in again, land where you were going", async ({ page }) => {
  const email = await signUp(page, "auth");
  await page.click("text=Log out");
  await expect(page).toHaveURL(/\/login$/);
  await page.goto("/invoices/new");
  await page.fill('input[name="email"]', email);
  await page.fill('input[name="password"]', "wrong password");
  await page.click('button[type="submit"]');
  await expect(page.getByText("Wrong email or password.")).toBeVisible();
  await page.fill('input[name="email"]', email);
  await page.fill('input[name="password"]', PASSWORD);
  await page.click('button[type="submit"]');
  await expect(page).toHaveURL(/\/invoices\/new$/);
});

test("another org's invoice is a 404, not a leak", async ({ page, browser }) => {
  await signUp(page, "owner");
  await openForm(page);
  await fillInvoice(page, { customer: "Secret Customer" });
  await submitButton(page).click();
  await expect(page).toHaveURL(INVOICE_URL);
  const url = page.url();

  const other = await browser.newContext();
  const intruder = await other.newPage();
  await signUp(intruder, "intruder");
  const response = await intruder.goto(url);
  expect(response!.status()).toBe(404);
  await expect(intruder.getByRole("heading", { name: "Not found" })).toBeVisible();
  await expect(intruder.getByText("Secret Customer")).toHaveCount(0);
  await other.close();
});
