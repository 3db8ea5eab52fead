import { test, expect } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import * as http from "node:http";
import { AddressInfo } from "node:net";
import { hydrated, reloadAndRead, signUp, submitAndLoad } from "./helpers";

async function accessible(page: import("@playwright/test").Page) {
  const results = await new AxeBuilder({ page }).analyze();
  const bad = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${v.id}: ${v.help}`)).toEqual([]);
}

type Delivery = { id: string; signature: string; body: string };

/** A receiver on loopback (dev mode allows private targets): records every delivery, answers 200. */
async function receiver(): Promise<{ url: string; got: Delivery[]; close: () => void }> {
  const got: Delivery[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      got.push({ id: String(req.headers["webhook-id"]), signature: String(req.headers["webhook-signature"]), body });
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  return { url: `http://127.0.0.1:${port}/hook`, got, close: () => server.close() };
}

test("an owner registers an endpoint, sees its deliveries and delivers one again, on a phone", async ({ page }) => {
  const hook = await receiver();
  try {
    await signUp(page, "hooks");
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto("/settings/webhooks");
    await hydrated(page);
    await accessible(page);
    await page.fill('input[name="url"]', hook.url);
    await page.getByLabel("customer.created").check();
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const endpoint = page.locator("li.endpoint a");
    await expect(endpoint).toHaveText(hook.url);

    // A change: a customer is created, and the endpoint hears of it.
    await page.goto("/customers/new");
    await hydrated(page);
    await page.fill('input[name="input[name]"]', "Hooked Ltd");
    await page.fill('input[name="input[email]"]', "ap@hooked.example");
    await page.getByRole("button", { name: "Create customer" }).click();
    await expect(page.locator("h1.customer-name")).toHaveText("Hooked Ltd");
    await expect.poll(() => hook.got.length, { timeout: 15_000 }).toBe(1);
    const first = hook.got[0];
    expect(first.id).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(first.signature).toMatch(/^v1,[A-Za-z0-9+/=]+$/);
    expect(JSON.parse(first.body)).toMatchObject({ type: "customer.created", data: { name: "Hooked Ltd" } });

    // The endpoint's page: its secret, the log, and "Deliver again" with the same webhook-id.
    await page.goto("/settings/webhooks");
    await endpoint.click();
    await hydrated(page);
    await expect(page.locator("code.secret")).toHaveText(/^whsec_/);
    const row = page.locator("tr.attempt").first();
    await expect(row).toContainText("customer.created");
    await expect(row).toContainText("200");
    await accessible(page);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await submitAndLoad(page, row.getByRole("button", { name: "Deliver again" }));
    await expect.poll(() => hook.got.length, { timeout: 15_000 }).toBe(2);
    expect(hook.got[1].id).toBe(first.id);
    expect(hook.got[1].body).toBe(first.body);
    // The worker writes the attempt after the receiver answered: wait for its row.
    await expect
      .poll(async () => (await reloadAndRead(page, "tr.attempt")).length, { message: "two attempts listed", timeout: 15_000 })
      .toBe(2);

    // Rotating shows a new secret; deleting takes the endpoint away.
    const before = await page.locator("code.secret").textContent();
    await page.getByRole("button", { name: "Rotate secret" }).click();
    await expect(page.locator("code.secret")).not.toHaveText(before!);
    await page.getByRole("button", { name: "Delete endpoint" }).click();
    await expect(page).toHaveURL(/\/settings\/webhooks$/);
    await expect(page.locator("p.empty")).toHaveText("No endpoints yet.");
  } finally {
    hook.close();
  }
});
