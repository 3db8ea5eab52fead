import { test, expect } from "@playwright/test";
import {
  signUp, openForm, fillInvoice, listRows, keyInput, submitButton,
  recordCreateRequests, submitTwice, INVOICE_URL, hydrated,
} from "./helpers";

test.describe("create-invoice form with JavaScript", () => {
  test.beforeEach(async ({ page }) => {
    await signUp(page, "form");
  });

  test("the key the browser submits is the one the server rendered", async ({ page }) => {
    const response = await page.goto("/invoices/new");
    const html = await response!.text();
    const rendered = /name="idempotency_key" value="([0-9a-f-]{36})"/.exec(html)?.[1];
    expect(rendered, "the server-rendered HTML carries a UUID key").toBeTruthy();
    await hydrated(page);
    const sent = recordCreateRequests(page);
    await fillInvoice(page);
    await submitButton(page).click();
    await expect(page).toHaveURL(INVOICE_URL);
    expect(sent).toEqual([rendered]);
  });

  test("double-click on submit makes one invoice", async ({ page }) => {
    await openForm(page);
    await fillInvoice(page);
    await submitButton(page).dblclick();
    await expect(page).toHaveURL(INVOICE_URL);
    await expect(await listRows(page)).toHaveCount(1);
  });

  test("two submits of one rendered form, past the disabled button, make one invoice", async ({ page }) => {
    await openForm(page);
    await fillInvoice(page);
    const sent = recordCreateRequests(page);
    const { answers } = await submitTwice(page, submitButton(page), "/rpc/create_invoice");
    await expect(page).toHaveURL(INVOICE_URL);
    expect(sent.length).toBe(2);
    expect(sent[0]).toBe(sent[1]);
    expect(answers[0].location, "both requests name the same invoice").toMatch(/^\/invoices\/[0-9a-f-]{36}$/);
    expect(answers[0], "both requests name the same invoice").toEqual(answers[1]);
    await expect(await listRows(page)).toHaveCount(1);
  });

  test("pressing Enter twice makes one invoice", async ({ page }) => {
    await openForm(page);
    await fillInvoice(page);
    await page.focus('input[name="input[customer_name]"]');
    await page.keyboard.press("Enter");
    await page.keyboard.press("Enter");
    await expect(page).toHaveURL(INVOICE_URL);
    await expect(await listRows(page)).toHaveCount(1);
  });

  test("a validation error keeps the key; the corrected resubmit makes one invoice", async ({ page }) => {
    await openForm(page);
    const sent = recordCreateRequests(page);
    const key = await keyInput(page).inputValue();
    await fillInvoice(page, { email: "not-an-email" });
    await submitButton(page).click();
    await expect(page.getByText("Enter a valid email address.")).toBeVisible();
    expect(await keyInput(page).inputValue()).toBe(key);
    await page.fill('input[name="input[customer_email]"]', "ada@example.com");
    await submitButton(page).click();
    await expect(page).toHaveURL(INVOICE_URL);
    expect(sent).toEqual([key, key]);
    await expect(await listRows(page)).toHaveCount(1);
  });

  test("two invoices one after another are two invoices, with fresh keys", async ({ page }) => {
    const sent = recordCreateRequests(page);
    await openForm(page);
    await fillInvoice(page, { customer: "First Customer" });
    await submitButton(page).click();
    await expect(page).toHaveURL(INVOICE_URL);
    await expect(page.locator("h1.number")).toHaveText("INV-000001");

    // Client-side navigation to the form: the next form gets a key of its own.
    await page.click('nav a[href="/invoices/new"]');
    await expect(page).toHaveURL(/\/invoices\/new$/);
    await fillInvoice(page, { customer: "Second Customer" });
    await submitButton(page).click();
    await expect(page).toHaveURL(INVOICE_URL);
    await expect(page.locator("h1.number")).toHaveText("INV-000002");

    expect(sent.length).toBe(2);
    expect(sent[0]).not.toBe(sent[1]);
    const rows = await listRows(page);
    await expect(rows).toHaveCount(2);
    await expect(rows.first()).toContainText("Second Customer");
  });

  test("the submit button shows pending state while in flight", async ({ page }) => {
    await openForm(page);
    await fillInvoice(page);
    // Playwright cannot look into a page whose navigation is pending: the page reports its button
    // itself, on the console, in the task after the island's (both run at once on submit, long
    // before the answer can replace the page).
    await page.evaluate(() => {
      window.addEventListener("submit", () =>
        setTimeout(() => {
          const b = document.querySelector('main form button[type="submit"].primary') as HTMLButtonElement;
          console.log(`pending: ${b.disabled} ${b.textContent}`);
        }),
      );
    });
    const seen = page.waitForEvent("console", (m) => m.text().startsWith("pending:"));
    await submitButton(page).click();
    expect((await seen).text()).toBe("pending: true Creating…");
    await expect(page).toHaveURL(INVOICE_URL);
  });

  test("the currency starts as the org's, then follows a picked customer's last invoice", async ({ page }) => {
    await openForm(page);
    // An org with no country yet: US dollars.
    await expect(page.locator('select[name="input[currency]"]')).toHaveValue("usd");
    await fillInvoice(page, { customer: "Pound Ltd", email: "pound@example.com" });
    await page.selectOption('select[name="input[currency]"]', "gbp");
    await page.check('input[name="input[save_customer]"]');
    await submitButton(page).click();
    await expect(page).toHaveURL(INVOICE_URL);

    await openForm(page);
    await page.selectOption('select[name="input[customer_id]"]', { label: "Pound Ltd <pound@example.com>" });
    await expect(page.locator('select[name="input[currency]"]')).toHaveValue("gbp");
    // One chosen by hand stays, whichever customer is picked next.
    await page.selectOption('select[name="input[currency]"]', "chf");
    await page.selectOption('select[name="input[customer_id]"]', "");
    await expect(page.locator('select[name="input[currency]"]')).toHaveValue("chf");
  });

  test("bad input gets a clear message and writes nothing", async ({ page }) => {
    await openForm(page);
    await submitButton(page).click();
    await expect(page.getByText("Enter 1 to 200 characters.")).toBeVisible();
    await expect(page.getByText("Enter a valid email address.")).toBeVisible();
    await expect(page.getByText("Enter a due date or choose payment terms.")).toBeVisible();
    await expect(page.getByText("An invoice has 1 to 100 lines.")).toBeVisible();

    await fillInvoice(page, { price: "-5", quantity: "0" });
    // maxlength stops a person typing more; a script or an old browser can still send it.
    await page.locator('input[name="input[lines][0][description]"]').evaluate((el: HTMLInputElement) => (el.value = "x".repeat(501)));
    await page.locator('input[name="input[customer_name]"]').evaluate((el: HTMLInputElement) => (el.value = "y".repeat(201)));
    await submitButton(page).click();
    await expect(page.getByText("The amount can't be negative.")).toBeVisible();
    await expect(page.getByText("Enter a quantity from 0.001 to 1,000,000 (up to 3 decimals).")).toBeVisible();
    await expect(page.getByText("Enter 1 to 500 characters.")).toBeVisible();
    await expect(page.getByText("Enter 1 to 200 characters.")).toBeVisible();

    await fillInvoice(page);
    await keyInput(page).evaluate((el: HTMLInputElement) => (el.value = "not-a-uuid"));
    await submitButton(page).click();
    await expect(page.getByText("This form has no valid submission key")).toBeVisible();

    await keyInput(page).evaluate((el: HTMLInputElement) => el.remove());
    await submitButton(page).click();
    await expect(page.getByText("This form has no valid submission key")).toBeVisible();

    await page.goto("/invoices");
    await expect(page.getByText("No invoices yet.")).toBeVisible();
  });

  test("a second line can be added and is saved", async ({ page }) => {
    await openForm(page);
    await fillInvoice(page, { quantity: "2", price: "10.00" });
    await page.click("a.add-line");
    await page.fill('input[name="input[lines][1][description]"]', "Travel");
    await page.fill('input[name="input[lines][1][quantity]"]', "1");
    await page.fill('input[name="input[lines][1][unit_amount]"]', "5.50");
    await submitButton(page).click();
    await expect(page).toHaveURL(INVOICE_URL);
    await expect(page.locator("td.total")).toHaveText("$25.50");
  });
});

test.describe("create-invoice form without JavaScript", () => {
  test.use({ javaScriptEnabled: false });

  test("submit, go back, submit again: one invoice", async ({ page }) => {
    await signUp(page, "nojs");
    await openForm(page, false);
    const key = await keyInput(page).inputValue();
    await fillInvoice(page);
    await submitButton(page).click();
    await expect(page).toHaveURL(INVOICE_URL);
    const first = page.url();

    await page.goBack();
    await expect(page).toHaveURL(/\/invoices\/new$/);
    expect(await keyInput(page).inputValue(), "back shows the same rendered form").toBe(key);
    await fillInvoice(page);
    await submitButton(page).click();
    await expect(page).toHaveURL(first);
    await expect(await listRows(page)).toHaveCount(1);
  });

  test("a validation error comes back with the same key and the typed values", async ({ page }) => {
    await signUp(page, "nojs-invalid");
    await openForm(page, false);
    const key = await keyInput(page).inputValue();
    await fillInvoice(page, { customer: "Grace Hopper", price: "abc" });
    await submitButton(page).click();
    await expect(page.getByText("Enter an amount such as 12.50.")).toBeVisible();
    expect(await keyInput(page).inputValue()).toBe(key);
    await expect(page.locator('input[name="input[customer_name]"]')).toHaveValue("Grace Hopper");
    await page.fill('input[name="input[lines][0][unit_amount]"]', "99.99");
    await submitButton(page).click();
    await expect(page).toHaveURL(INVOICE_URL);
    await expect(await listRows(page)).toHaveCount(1);
  });
});
