import { test, expect } from "@playwright/test";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import AxeBuilder from "@axe-core/playwright";
import { hydrated, signUp, submitTwice } from "./helpers";

/** OpenPEPPOL's own example documents (../shared/einvoicing/examples, or EINVOICING_DIR's). */
const EXAMPLES = path.join(process.env.EINVOICING_DIR ?? path.resolve(__dirname, "../../../shared/einvoicing"), "examples");
/** The local access point of scripts/e2e: it signs deliveries with the app's inbound secret. */
const ACCESS_POINT = process.env.PEPPOL_AP_URL ?? "http://127.0.0.1:12112";
const APP = process.env.BASE_URL ?? "http://127.0.0.1:3000";

/** The text of the first <tag> after `after` in the XML. */
function first(xml: string, after: string, tag: string): string {
  const rest = xml.slice(Math.max(0, xml.indexOf(after)));
  const m = rest.match(new RegExp(`<${tag}(?:\\s[^>]*)?>([^<]*)</${tag}>`));
  if (!m) throw new Error(`${tag} after ${after}`);
  return m[1].trim();
}

/** What the XML says: BT-27, BT-1, BT-112 and BT-115 (in cents, as digits with their sign). */
function says(xml: string) {
  const cents = (text: string) => {
    const [whole, fraction = ""] = text.replace("-", "").split(".");
    const value = BigInt(whole) * 100n + BigInt((fraction + "00").slice(0, 2));
    return (text.startsWith("-") ? -value : value).toString();
  };
  return {
    seller: first(xml, "<cac:AccountingSupplierParty>", "cbc:RegistrationName"),
    number: first(xml, "<cbc:CustomizationID>", "cbc:ID"),
    total: cents(first(xml, "<cac:LegalMonetaryTotal>", "cbc:TaxInclusiveAmount")),
    due: cents(first(xml, "<cac:LegalMonetaryTotal>", "cbc:PayableAmount")),
  };
}

/** An amount as the page prints it ("€1,656.25", "-€1,656.25"), as digits with their sign. */
const digits = (text: string | null) => (text ?? "").replace(/[^0-9-]/g, "").replace(/^(-?)0+(?=\d)/, "$1");

test("OpenPEPPOL's examples received by the access point and by upload read as their XML says, each kept once", async ({ page }) => {
  const files = readdirSync(EXAMPLES).filter((f) => f.endsWith(".xml")).sort();
  expect(files.length, "OpenPEPPOL's examples are present").toBeGreaterThan(0);
  await signUp(page, "inbox");
  // The org receives over Peppol as 0184:12345678 (the examples' Danish buyer).
  await page.goto("/settings/org");
  await hydrated(page);
  const details = page.locator("form.org-details");
  await details.locator('input[name="details[peppol_id]"]').fill("0184:12345678");
  const saved = page.waitForResponse((r) => r.url().includes("/rpc/save_org_details"));
  await details.getByRole("button", { name: "Save business details" }).click();
  expect((await saved).status()).toBe(302);

  // Two documents delivered by the access point, signed, the first one twice.
  const delivered = ["vat-category-E.xml", "vat-category-Z.xml"];
  for (const [i, name] of [...delivered, delivered[0]].entries()) {
    const xml = readFileSync(path.join(EXAMPLES, name), "utf8");
    const res = await fetch(`${ACCESS_POINT}/_deliver`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ url: `${APP}/webhooks/peppol`, xml, instance_id: `e2e-${name}` }),
    });
    expect(res.status, `delivery ${i} of ${name}: ${await res.clone().text()}`).toBe(200);
  }
  await page.getByRole("link", { name: "Inbox", exact: true }).click();
  await expect(page).toHaveURL(/\/inbox$/);
  await hydrated(page);
  await expect(page.locator("tr.received-document")).toHaveCount(2);
  const bad = (await new AxeBuilder({ page }).analyze()).violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id}: ${v.help}`)).toEqual([]);

  // Every example uploaded on the inbox page: its page says what its XML says.
  const pages = new Map<string, string>();
  for (const name of files) {
    const xml = readFileSync(path.join(EXAMPLES, name), "utf8");
    const want = says(xml);
    await page.goto("/inbox");
    await hydrated(page);
    await page.setInputFiles('input[name="file"]', { name, mimeType: "application/xml", buffer: Buffer.from(xml) });
    await page.getByRole("button", { name: "Upload" }).click();
    await expect(page).toHaveURL(/\/inbox\/[0-9a-f-]{36}$/);
    pages.set(name, page.url());
    await expect(page.locator("dd.seller"), name).toHaveText(want.seller);
    await expect(page.locator("dd.number"), name).toHaveText(want.number);
    expect(digits(await page.locator("dd.total").textContent()), `${name} total`).toBe(want.total);
    expect(digits(await page.locator("dd.due").textContent()), `${name} due`).toBe(want.due);
    await expect(page.locator("table.received-lines tbody tr").first(), name).toBeVisible();
  }
  // The delivered ones were the same documents: one row per example.
  for (const name of delivered) {
    await page.goto(pages.get(name)!);
    await expect(page.locator("dd.seller")).toBeVisible();
  }
  await page.goto("/inbox");
  await expect(page.locator("tr.received-document")).toHaveCount(files.length);
  const fromPeppol = page.locator("tr.received-document", { hasText: "Peppol" });
  await expect(fromPeppol).toHaveCount(2);

  // Marked paid once, however often the button is pressed.
  await page.goto(pages.get(files[0])!);
  await hydrated(page);
  const paidPage = page.url();
  const { answers } = await submitTwice(page, page.getByRole("button", { name: "Mark paid" }), "/rpc/mark_received_paid");
  expect(answers.map((a) => a.status)).toEqual([302, 302]);
  await page.goto(paidPage);
  await expect(page.locator("dd.paid")).not.toHaveText("Not yet");
  await expect(page.getByRole("button", { name: "Mark paid" })).toHaveCount(0);
});
