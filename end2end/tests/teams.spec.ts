import { test, expect, Page, Browser } from "@playwright/test";
import { randomUUID } from "node:crypto";
import { signUp, hydrated, submitTwice, uniqueEmail, mailTo, mailedLink, MAIL_DIR, PASSWORD } from "./helpers";

/** Opens the members page and invites `email` with `role`, submitting the rendered form twice. */
async function inviteTwice(page: Page, email: string, role: string): Promise<void> {
  await page.goto("/settings/members");
  await hydrated(page);
  const form = page.locator("form:has(button.send-invitation)");
  await form.locator('input[name="email"]').fill(email);
  await form.locator('select[name="role"]').selectOption(role);
  // A double click: both submits are sent, with one key, and both answered as a success.
  const { bodies, answers } = await submitTwice(page, form.locator("button.send-invitation"), "/rpc/invite_member");
  const key = (body: string) => new URLSearchParams(body).get("idempotency_key");
  expect(key(bodies[0])).toBeTruthy();
  expect(key(bodies[0])).toBe(key(bodies[1]));
  expect(answers.every((a) => a.status < 400)).toBe(true);
  await expect(page.locator(`tr.invitation[data-email="${email}"]`)).toHaveCount(1);
  await page.reload();
}

/** Accepts the invitation emailed to `email` in a fresh browser; returns its page. */
async function acceptInFreshBrowser(browser: Browser, email: string, password: string) {
  const link = await mailedLink(email, /\/invite\/[0-9a-f]{64}/);
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(link);
  await page.fill('input[name="password"]', password);
  await page.click("button.accept-invitation");
  await expect(page).toHaveURL(/\/dashboard$/);
  return { context, page };
}

test.describe("a team", () => {
  test.beforeEach(() => test.skip(!MAIL_DIR, "needs the SMTP sink of scripts/test"));

  test("an invitation clicked twice is one email; the viewer who accepts sees only what a viewer may", async ({ page, browser }) => {
    await signUp(page, "team-owner");
    const invitee = uniqueEmail("viewer");
    await inviteTwice(page, invitee, "viewer");
    await expect(page.locator(`tr.invitation[data-email="${invitee}"]`)).toHaveCount(1);
    // A later invitation's email arrives after any duplicate of the first would have.
    const marker = uniqueEmail("marker");
    await inviteTwice(page, marker, "member");
    await mailedLink(marker, /\/invite\/[0-9a-f]{64}/);
    expect(mailTo(invitee).length).toBe(1);

    const { context, page: viewer } = await acceptInFreshBrowser(browser, invitee, "viewer's own password");
    await expect(viewer.locator("header .who")).toContainText("(viewer)");
    await expect(viewer.locator('header a[href="/invoices/new"]')).toHaveCount(0);
    await viewer.goto("/settings/members");
    await expect(viewer.locator("tr.member")).toHaveCount(2);
    await expect(viewer.locator("button.send-invitation")).toHaveCount(0);
    await expect(viewer.locator("button.change-role")).toHaveCount(0);
    await viewer.goto("/settings/org");
    await expect(viewer.locator("p.only-owners")).toBeVisible();
    await expect(viewer.locator("button.save-settings")).toBeDisabled();
    await expect(viewer.locator("button.add-tax-rate")).toBeHidden();
    await viewer.goto("/settings/api-keys");
    await expect(viewer.locator("h1")).toHaveText("API keys");
    await expect(viewer.getByRole("button", { name: "Create key" })).toHaveCount(0);
    // The server is the authority: the form the page does not show is refused if sent anyway.
    const refused = await viewer.request.post("/rpc/add_tax_rate", {
      form: { idempotency_key: randomUUID(), name: "VAT", percent: "20" },
    });
    expect(refused.status()).toBe(403);
    // The owner sees the invitation accepted.
    await page.goto("/settings/members");
    await expect(page.locator(`tr.invitation[data-email="${invitee}"] .status`)).toHaveText("accepted");
    await context.close();
  });

  test("a password reset from the emailed link ends the old session", async ({ page, browser }) => {
    const email = await signUp(page, "reset");
    const context = await browser.newContext();
    const other = await context.newPage();
    await other.goto("/forgot-password");
    await other.fill('input[name="email"]', email);
    await other.click("button.send-reset");
    await expect(other.locator("p.notice")).toContainText("If an account uses that address");
    const link = await mailedLink(email, /\/reset-password\/[0-9a-f]{64}/);
    await other.goto(link);
    await other.fill('input[name="password"]', "a whole new password");
    await other.click("button.reset-password");
    await expect(other).toHaveURL(/\/dashboard$/);
    // The first browser's session is over.
    await page.goto("/invoices");
    await expect(page).toHaveURL(/\/login/);
    // The link works once.
    await other.goto(link);
    await other.fill('input[name="password"]', "yet another password");
    await other.click("button.reset-password");
    await expect(other.locator("p.error")).toContainText("already used");
    await context.close();
  });

  test("a member of two orgs switches between them", async ({ page, browser }) => {
    const first = await signUp(page, "first-org");
    const otherContext = await browser.newContext();
    const owner = await otherContext.newPage();
    await signUp(owner, "second-org");
    await inviteTwice(owner, first, "member");
    await otherContext.close();

    const link = await mailedLink(first, /\/invite\/[0-9a-f]{64}/);
    await page.goto(link);
    await expect(page.locator("h1")).toContainText("Join Org second-org");
    await page.fill('input[name="password"]', PASSWORD);
    await page.click("button.accept-invitation");
    await expect(page).toHaveURL(/\/dashboard$/);
    await expect(page.locator("header .who")).toContainText("Org second-org");
    await page.goto("/settings/orgs");
    await page.locator('li.org[data-name="Org first-org"] button.switch-org').click();
    await expect(page).toHaveURL(/\/dashboard$/);
    await expect(page.locator("header .who")).toContainText("Org first-org");
    await expect(page.locator("header .who")).toContainText("(owner)");
  });

  test("the sessions page lists each browser and ends one or all others", async ({ page, browser }) => {
    const email = await signUp(page, "sessions");
    const logIn = async () => {
      const context = await browser.newContext({ userAgent: `second-browser-${randomUUID()}` });
      const other = await context.newPage();
      await other.goto("/login");
      await other.fill('input[name="email"]', email);
      await other.fill('input[name="password"]', PASSWORD);
      await other.click('button[type="submit"]');
      await expect(other).toHaveURL(/\/dashboard$/);
      return { context, other };
    };
    const second = await logIn();
    await page.goto("/settings/sessions");
    await hydrated(page);
    await expect(page.locator("tr.session")).toHaveCount(2);
    await expect(page.locator("tr.session.current")).toHaveCount(1);
    const agent = await second.other.evaluate(() => navigator.userAgent);
    const row = page.locator("tr.session", { hasText: agent });
    await row.locator("button.end-session").click();
    await expect(page.locator("tr.session")).toHaveCount(1);
    await second.other.goto("/invoices");
    await expect(second.other).toHaveURL(/\/login/);

    const third = await logIn();
    const fourth = await logIn();
    await page.reload();
    await hydrated(page);
    await expect(page.locator("tr.session")).toHaveCount(3);
    await page.click("button.end-others");
    await expect(page.locator("tr.session")).toHaveCount(1);
    for (const { other } of [third, fourth]) {
      await other.goto("/invoices");
      await expect(other).toHaveURL(/\/login/);
    }
    await page.goto("/invoices");
    await expect(page).toHaveURL(/\/invoices$/);
    for (const { context } of [second, third, fourth]) await context.close();
  });
});
