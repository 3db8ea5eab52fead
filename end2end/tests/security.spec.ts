import { test, expect, Page } from "@playwright/test";
import { signUp, openForm, fillInvoice, submitButton, hydrated, INVOICE_URL, PASSWORD } from "./helpers";

/** Collects every Content-Security-Policy violation the page reports, from its first script on. */
async function watchCsp(page: Page): Promise<string[]> {
  const violations: string[] = [];
  await page.exposeFunction("reportCspViolation", (v: string) => violations.push(v));
  await page.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      // @ts-expect-error exposed by the test
      window.reportCspViolation(`${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  page.on("console", (m) => {
    if (m.text().includes("Content Security Policy")) violations.push(m.text());
  });
  return violations;
}

test("the app hydrates and works under its Content-Security-Policy", async ({ page }) => {
  const violations = await watchCsp(page);
  await signUp(page, "csp");
  await openForm(page);
  await hydrated(page);
  await fillInvoice(page, { customer: "Csp Customer" });
  // Client-side behaviour (adding a line) needs the hydrated wasm.
  await page.getByRole("link", { name: /add line/i }).click();
  await expect(page.locator('input[name="input[lines][1][description]"]')).toBeVisible();
  await page.locator('input[name="input[lines][1][description]"]').fill("Extra");
  await page.locator('input[name="input[lines][1][quantity]"]').fill("1");
  await page.locator('input[name="input[lines][1][unit_amount]"]').fill("10.00");
  await submitButton(page).click();
  await expect(page).toHaveURL(INVOICE_URL);
  await expect(page.getByText("Csp Customer")).toBeVisible();
  expect(violations).toEqual([]);
});

test("without JavaScript the forms work and a wrong password shows the server's message", async ({ browser }) => {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  const email = await signUp(page, "nojs-sec");
  await page.getByRole("button", { name: "Log out" }).click();
  await expect(page).toHaveURL(/\/login$/);
  await page.fill('input[name="email"]', email);
  await page.fill('input[name="password"]', "wrong password");
  await page.click('button[type="submit"]');
  await expect(page.getByText("Wrong email or password.")).toBeVisible();
  expect(page.url()).toContain("__sig=");
  await page.fill('input[name="email"]', email);
  await page.fill('input[name="password"]', PASSWORD);
  await page.click('button[type="submit"]');
  await expect(page).toHaveURL(/\/dashboard$/);
  await context.close();
});

test("a crafted error link shows nothing the server did not say", async ({ page }) => {
  const forged = Buffer.from(JSON.stringify({ BadRequest: "Your account is locked. Call +1 555 0100." }))
    .toString("base64url");
  await page.goto(`/login?__path=%2Frpc%2Flogin&__err=${forged}`);
  await expect(page).toHaveURL(/\/login$/);
  await expect(page.getByText("Your account is locked")).toHaveCount(0);
});
