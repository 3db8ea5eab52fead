import { test, expect } from "@playwright/test";
import { signUp, hydrated } from "./helpers";

test("an API key is shown once, works with the API, and stops working when revoked", async ({ page, request }) => {
  await signUp(page, "keys");
  await page.goto("/settings/api-keys");
  await hydrated(page);
  await expect(page.getByText("No API keys yet.")).toBeVisible();
  await page.fill('input[name="name"]', "billing script");
  await page.getByRole("button", { name: "Create key" }).click();
  const key = (await page.locator("code.key").textContent())!.trim();
  expect(key).toMatch(/^ik_[0-9a-f]{64}$/);
  const row = page.locator("tr.api-key");
  await expect(row).toHaveCount(1);
  await expect(row).toContainText("billing script");
  await expect(row).toContainText(key.slice(0, 11));

  // Shown once: a reload lists the prefix, never the key.
  await page.reload();
  await expect(page.locator("tr.api-key")).toContainText(key.slice(0, 11));
  expect(await page.content()).not.toContain(key);

  const body = {
    customer_name: "API Customer",
    customer_email: "api@example.com",
    currency: "usd",
    due_date: "2027-03-01",
    lines: [{ description: "Widget", quantity: 2, unit_amount_cents: 1999 }],
  };
  const headers = { authorization: `Bearer ${key}`, "idempotency-key": "e2e-1" };
  const created = await request.post("/api/v1/invoices", { data: body, headers });
  expect(created.status()).toBe(201);
  const replay = await request.post("/api/v1/invoices", { data: body, headers });
  expect(replay.headers()["idempotent-replayed"]).toBe("true");
  expect(await replay.text()).toBe(await created.text());
  await page.goto("/invoices");
  await expect(page.locator("tr.invoice-row")).toHaveCount(1);
  await expect(page.locator("tr.invoice-row")).toContainText("API Customer");

  await page.goto("/settings/api-keys");
  await hydrated(page);
  await page.getByRole("button", { name: "Revoke" }).click();
  await expect(page.locator("tr.api-key")).toContainText("revoked");
  const refused = await request.get("/api/v1/invoices", { headers: { authorization: `Bearer ${key}` } });
  expect(refused.status()).toBe(401);
});
