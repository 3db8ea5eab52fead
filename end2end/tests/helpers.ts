import { expect, Locator, Page, Request } from "@playwright/test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** scripts/test runs a real SMTP server (scripts/smtp_sink.py) that writes each message here. */
export const MAIL_DIR = process.env.E2E_MAIL_DIR ?? "";

/** The messages the SMTP server accepted for `to`, with quoted-printable soft line breaks undone. */
export function mailTo(to: string): string[] {
  if (!MAIL_DIR) return [];
  return readdirSync(MAIL_DIR)
    .filter((f) => f.endsWith(".eml"))
    .sort() // <time_ns>-<n>.eml: oldest first
    .map((f) => readFileSync(join(MAIL_DIR, f), "utf8").replace(/=\r?\n/g, ""))
    .filter((m) => m.toLowerCase().includes(`to: ${to.toLowerCase()}`));
}

/** The links matching `path` in the messages to `to`, oldest first. */
function linksTo(to: string, path: RegExp): string[] {
  return mailTo(to)
    .map((m) => m.match(new RegExp(`http://\\S+${path.source}`)))
    .filter((m): m is RegExpMatchArray => m !== null)
    .map((m) => m[0]);
}

/** Waits for a message to `to` carrying a link that matches `path`, and returns the newest such link. */
export async function mailedLink(to: string, path: RegExp): Promise<string> {
  await expect
    .poll(() => linksTo(to, path).length, { message: `a link to ${path} mailed to ${to}`, timeout: 30_000 })
    .toBeGreaterThan(0);
  return linksTo(to, path).pop()!;
}

/** Waits for the first message to `to` whose text contains `subject`, and returns it. */
export async function mailed(to: string, subject: string): Promise<string> {
  const find = () => mailTo(to).find((m) => m.includes(subject));
  await expect.poll(() => find() !== undefined, { message: `"${subject}" mailed to ${to}`, timeout: 30_000 }).toBe(true);
  return find()!;
}

/**
 * Clicks a plain form's button and waits for the page the server answers with (a full load): a
 * reload or a navigation started before it would cancel the post or fail ("not attached").
 */
export async function submitAndLoad(page: Page, button: Locator): Promise<void> {
  const loaded = page.waitForEvent("load", { timeout: 15_000 });
  await button.click();
  await loaded;
}

/**
 * Reloads `page` and reads the text of every element matching `selector`, without waiting for any:
 * the read of a poll (`expect.poll(() => reloadAndRead(...)).toEqual(...)`), whose one deadline is
 * the only wait, for what a worker or a webhook changes behind the page.
 */
export async function reloadAndRead(page: Page, selector: string): Promise<string[]> {
  await page.reload();
  return (await page.locator(selector).allTextContents()).map((t) => t.trim());
}

/** Follows the verification link emailed to `email` (needs the SMTP sink of scripts/test). */
export async function verifyEmail(page: Page, email: string): Promise<void> {
  const link = await mailedLink(email, /\/verify-email\/[0-9a-f]{64}/);
  await page.goto(link);
  await page.click("button.confirm-email");
  await expect(page).toHaveURL(/\/settings\/account\?verified=1$/);
}

let counter = 0;
export const PASSWORD = "correct horse battery";

export function uniqueEmail(tag: string): string {
  counter += 1;
  return `${tag}-${Date.now()}-${counter}@example.com`;
}

/** Signs up a new org (plain form post, works with or without JavaScript), logs in (sign-up answers
 * "check your email" whether or not the address is new, and logs nobody in), confirms the address
 * from the emailed link when the SMTP sink is there (unverified accounts cannot email invoices or
 * make API keys), and lands on the dashboard. */
export async function signUp(page: Page, tag: string, opts: { verify?: boolean } = {}): Promise<string> {
  const email = uniqueEmail(tag);
  await page.goto("/signup");
  await page.fill('input[name="org_name"]', `Org ${tag}`);
  await page.fill('input[name="email"]', email);
  await page.fill('input[name="password"]', PASSWORD);
  await page.click('button[type="submit"]');
  await expect(page).toHaveURL(/\/signup\?sent=1$/);
  await page.goto("/login");
  await page.fill('input[name="email"]', email);
  await page.fill('input[name="password"]', PASSWORD);
  await page.click('button[type="submit"]');
  await expect(page).toHaveURL(/\/dashboard$/);
  if ((opts.verify ?? true) && MAIL_DIR) {
    await verifyEmail(page, email);
  }
  await page.goto("/invoices");
  return email;
}

/**
 * The page is settled: <body data-hydrated> is set by the last island once the page's islands are
 * live, or by the server on a page without one (app::ISLAND_PAGES). A page with an island the server
 * did not list would be marked settled with its island dead: that fails here.
 */
export async function hydrated(page: Page): Promise<void> {
  await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true");
  if ((await page.locator("leptos-island").count()) > 0) {
    expect(await page.locator("script[type=module]").count(), "a page with an island loads its script").toBeGreaterThan(0);
  }
}

/** Unfolds one of the invoice page's disclosures (`more-actions`, or a form's: `credit`, `record`,
 * `apply`): what is folded is not on screen, so a test finds its buttons only after this. Works
 * without JavaScript (a native `<details>`). */
export async function unfold(page: Page, which = "more-actions"): Promise<void> {
  const details = page.locator(`details.${which}`);
  if ((await details.getAttribute("open")) === null) await details.locator("> summary").click();
  await expect(details).toHaveAttribute("open", "");
}

export async function openForm(page: Page, js = true): Promise<void> {
  await page.goto("/invoices/new");
  if (js) await hydrated(page);
}

export const invoiceForm = (page: Page) => page.locator("main form");
export const keyInput = (page: Page) => page.locator('input[name="idempotency_key"]');
export const submitButton = (page: Page) => invoiceForm(page).locator('button[type="submit"].primary');

export interface InvoiceFields {
  customer?: string;
  email?: string;
  due?: string;
  description?: string;
  quantity?: string;
  price?: string;
}

export async function fillInvoice(page: Page, f: InvoiceFields = {}): Promise<void> {
  await page.fill('input[name="input[customer_name]"]', f.customer ?? "Ada Lovelace");
  await page.fill('input[name="input[customer_email]"]', f.email ?? "ada@example.com");
  await page.fill('input[name="input[due_date]"]', f.due ?? "2027-01-31");
  await page.fill('input[name="input[lines][0][description]"]', f.description ?? "Consulting");
  await page.fill('input[name="input[lines][0][quantity]"]', f.quantity ?? "3");
  await page.fill('input[name="input[lines][0][unit_amount]"]', f.price ?? "125.00");
}

export const INVOICE_URL = /\/invoices\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Goes to the list and returns its rows. */
export async function listRows(page: Page) {
  await page.goto("/invoices");
  return page.locator("tr.invoice-row");
}

/** Records the idempotency keys of every create-invoice request the page sends. */
export function recordCreateRequests(page: Page): string[] {
  const keys: string[] = [];
  page.on("request", (req: Request) => {
    if (req.method() === "POST" && req.url().includes("/rpc/create_invoice")) {
      keys.push(new URLSearchParams(req.postData() ?? "").get("idempotency_key") ?? "<none>");
    }
  });
  return keys;
}

/**
 * Submits the form of `button` twice, the way a double click does on a plain HTML form: the first
 * POST reaches the server, the browser abandons its answer and follows the second. Deterministic:
 * the first answer is held until the second request has left the browser (so the page cannot move
 * on in between), then handed back and dropped with the abandoned navigation. Requires both
 * requests to be sent (a test of "twice makes one" that sent one would check nothing). Returns the
 * two request bodies (they carry the same rendered key) and the server's two answers.
 */
export async function submitTwice(
  page: Page,
  button: Locator,
  rpcPath: string,
): Promise<{ bodies: string[]; answers: { status: number; location?: string }[] }> {
  const sent: string[] = [];
  const answers: { status: number; location?: string }[] = [];
  let secondSent!: () => void;
  const second = new Promise<void>((resolve) => (secondSent = resolve));
  const matches = (url: URL) => url.pathname.includes(rpcPath);
  await page.route(matches, async (route) => {
    const index = sent.push(route.request().postData() ?? "");
    if (index === 2) secondSent();
    const response = await route.fetch({ maxRedirects: 0 });
    answers[index - 1] = { status: response.status(), location: response.headers()["location"] };
    if (index === 1) await second;
    // The browser has given up on the first navigation by now: its answer may have nowhere to go.
    await route.fulfill({ response }).catch(() => {});
  });
  // The second press a double click's interval after the first, from the page itself (Playwright's
  // own calls into the page wait while a navigation is pending). Had the browser not sent the first
  // by then, one POST would leave and the poll below would fail, not pass.
  const loaded = page.waitForEvent("load");
  await button.evaluate((b: HTMLButtonElement) => {
    b.form!.requestSubmit(b);
    setTimeout(() => b.form!.requestSubmit(b), 100);
  });
  await expect.poll(() => sent.length, { message: `two POSTs to ${rpcPath}` }).toBe(2);
  await expect.poll(() => answers.filter(Boolean).length, { message: "both answered" }).toBe(2);
  // The page the second answer leads to (not the one the submits left).
  await loaded;
  await page.unroute(matches);
  expect(sent[0], "both submits carry the same form").toBe(sent[1]);
  return { bodies: sent, answers };
}

/**
 * Reloads the payer's page until it says Paid (the webhook that settles it may lag). First the payer
 * is back from the checkout page on the invoice's own page: a reload during that cross-origin
 * navigation fails ("not attached to an active page").
 */
export async function reloadUntilPaid(customer: Page): Promise<void> {
  await expect(customer).toHaveURL(/\/i\/[0-9a-f]{64}\?paid=1$/);
  await expect
    .poll(() => reloadAndRead(customer, ".public-status"), { message: "the payer's page says Paid", timeout: 30_000 })
    .toEqual(["Paid"]);
}

/** Signs up as `tag`, creates an invoice of `f` through the form, and ends on its page. */
export async function signUpAndCreateInvoice(page: Page, tag: string, f: InvoiceFields): Promise<void> {
  await signUp(page, tag);
  await openForm(page);
  await fillInvoice(page, f);
  await submitButton(page).click();
  await expect(page).toHaveURL(INVOICE_URL);
}
