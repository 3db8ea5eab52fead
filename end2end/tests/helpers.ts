import { expect, Page, Request } from "@playwright/test";

let counter = 0;
export const PASSWORD = "correct horse battery";

export function uniqueEmail(tag: string): string {
  counter += 1;
  return `${tag}-${Date.now()}-${counter}@example.com`;
}

/** Signs up a new org (plain form post, works with or without JavaScript) and lands on /invoices. */
export async function signUp(page: Page, tag: string): Promise<string> {
  const email = uniqueEmail(tag);
  await page.goto("/signup");
  await page.fill('input[name="org_name"]', `Org ${tag}`);
  await page.fill('input[name="email"]', email);
  await page.fill('input[name="password"]', PASSWORD);
  await page.click('button[type="submit"]');
  await expect(page).toHaveURL(/\/invoices$/);
  return email;
}

/** The app marks <body data-hydrated> once the browser crate has taken over the page. */
export async function hydrated(page: Page): Promise<void> {
  await expect(page.locator("body")).toHaveAttribute("data-hydrated", "true");
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
