import { test, expect, Page, devices } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import { signUp, openForm, fillInvoice, hydrated, INVOICE_URL, submitTwice, unfold } from "./helpers";

/** Fills the new-invoice form and saves it as a draft; returns the draft's page URL. */
async function saveDraft(page: Page, customer = "Ada Lovelace", js = true): Promise<string> {
  await openForm(page, js);
  await fillInvoice(page, { customer });
  await page.getByRole("button", { name: "Save draft" }).click();
  await expect(page).toHaveURL(INVOICE_URL);
  await expect(page.locator("h1.number")).toHaveText("Draft");
  return page.url();
}

async function editVersion(page: Page, invoiceUrl: string): Promise<string> {
  await page.goto(`${invoiceUrl}/edit`);
  return page.locator('input[name="version"]').inputValue();
}

/** No serious or critical accessibility violations on the current page. */
async function accessible(page: Page) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target).join(", ")})`)).toEqual([]);
}

test.describe("the invoice workflow with JavaScript", () => {
  test("draft, edit twice (two submits each), finalize (two submits), open the customer's page", async ({ page, browser }) => {
    await signUp(page, "flow");
    const url = await saveDraft(page);

    // Two edits, each submitted twice: each saves once (one version step each).
    for (const [name, version] of [["Ada Byron", "1"], ["Ada King", "2"]]) {
      expect(await editVersion(page, url)).toBe(version);
      await hydrated(page);
      await accessible(page);
      await page.fill('input[name="input[customer_name]"]', name);
      await submitTwice(page, page.getByRole("button", { name: "Save draft" }), "/rpc/update_draft");
      await expect(page).toHaveURL(url);
      await expect(page.locator(".customer")).toHaveText(name);
    }
    expect(await editVersion(page, url)).toBe("3");

    await page.goto(url);
    await hydrated(page);
    await accessible(page);
    await submitTwice(page, page.getByRole("button", { name: "Finalize" }), "/rpc/invoice_action");
    await expect(page.locator("h1.number")).toHaveText("INV-000001");
    await expect(page.locator(".status.open")).toBeVisible();

    // The next invoice takes the next number: the two submits took one.
    await openForm(page);
    await fillInvoice(page, { customer: "Grace Hopper" });
    await page.getByRole("button", { name: "Create invoice" }).click();
    await expect(page.locator("h1.number")).toHaveText("INV-000002");

    // The customer's page, in a fresh browser with no session, at a phone's size.
    await page.goto(url);
    const link = await page.locator(".public-link a").first().getAttribute("href");
    expect(link).toMatch(/\/i\/[0-9a-f]{64}$/);
    const phone = await browser.newContext({ ...devices["Pixel 5"] });
    const customer = await phone.newPage();
    const response = await customer.goto(link!);
    expect(response!.status()).toBe(200);
    expect(response!.headers()["x-robots-tag"]).toBe("noindex, nofollow");
    await expect(customer.locator('meta[name="robots"]')).toHaveAttribute("content", "noindex, nofollow");
    await expect(customer.locator(".number")).toHaveText("INV-000001");
    await expect(customer.locator(".customer")).toHaveText("Ada King");
    await expect(customer.locator(".amount-due")).toHaveText("$375.00");
    // Nothing wider than the phone's screen.
    const overflow = await customer.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await accessible(customer);
    const pdf = await customer.request.get(`${link}/pdf`);
    expect(pdf.status()).toBe(200);
    expect(pdf.headers()["content-type"]).toBe("application/pdf");
    expect((await pdf.body()).subarray(0, 5).toString()).toBe("%PDF-");
    await phone.close();

    // The owner sees that the customer looked.
    await page.reload();
    await expect(page.locator(".public-link")).toContainText("viewed");
    await expect(page.locator(".public-link")).not.toContainText("not viewed");
  });

  test("an edit from a stale page is refused and keeps what was typed", async ({ page, browser }) => {
    await signUp(page, "stale");
    const url = await saveDraft(page);
    const other = await page.context().newPage();
    await other.goto(`${url}/edit`);
    await hydrated(other);
    await page.goto(`${url}/edit`);
    await hydrated(page);
    await page.fill('input[name="input[customer_name]"]', "Saved first");
    await page.getByRole("button", { name: "Save draft" }).click();
    await expect(page).toHaveURL(url);

    await other.fill('input[name="input[customer_name]"]', "Typed second");
    await other.getByRole("button", { name: "Save draft" }).click();
    await expect(other.locator(".error.banner")).toContainText("Someone else saved this draft");
    await expect(other.locator('input[name="input[customer_name]"]')).toHaveValue("Typed second");
    await page.reload();
    await expect(page.locator(".customer")).toHaveText("Saved first");
  });

  test("void, duplicate and delete", async ({ page }) => {
    await signUp(page, "void");
    await openForm(page);
    await fillInvoice(page, { customer: "Void Me" });
    await page.getByRole("button", { name: "Create invoice" }).click();
    await expect(page.locator("h1.number")).toHaveText("INV-000001");
    await hydrated(page);
    await unfold(page);
    await submitTwice(page, page.getByRole("button", { name: "Void" }), "/rpc/invoice_action");
    await expect(page.locator(".status.void")).toBeVisible();
    await expect(page.locator(".public-link")).toHaveCount(0);
    await unfold(page);
    await expect(page.getByRole("button", { name: "Duplicate" })).toBeVisible();
    await expect(page.getByRole("button", { name: "Void" })).toHaveCount(0);

    await submitTwice(page, page.getByRole("button", { name: "Duplicate" }), "/rpc/duplicate_invoice");
    await expect(page.locator("h1.number")).toHaveText("Draft");
    await expect(page.locator(".customer")).toHaveText("Void Me");
    await hydrated(page);
    await unfold(page);
    await page.getByRole("button", { name: "Delete draft" }).click();
    await expect(page).toHaveURL(/\/invoices$/);
    await expect(page.locator("tr.invoice-row")).toHaveCount(1);
    await accessible(page);
  });
});

test.describe("the invoice workflow without JavaScript", () => {
  test.use({ javaScriptEnabled: false });

  test("save a draft, edit it, finalize it, void another: plain forms", async ({ page }) => {
    await signUp(page, "nojs-flow");
    const url = await saveDraft(page, "Plain Form", false);
    await page.goto(`${url}/edit`);
    await page.fill('input[name="input[customer_name]"]', "Plain Form Edited");
    await page.getByRole("button", { name: "Save draft" }).click();
    await expect(page).toHaveURL(url);
    await expect(page.locator(".customer")).toHaveText("Plain Form Edited");
    await page.getByRole("button", { name: "Finalize" }).click();
    await expect(page.locator("h1.number")).toHaveText("INV-000001");
    await unfold(page);
    await page.getByRole("button", { name: "Void" }).click();
    await expect(page.locator(".status.void")).toBeVisible();
    // A second finalize of the same rendered button would be a replay; the page now offers none.
    await expect(page.getByRole("button", { name: "Finalize" })).toHaveCount(0);
  });
});
