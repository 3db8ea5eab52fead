import { test, expect } from "@playwright/test";
import { performance } from "node:perf_hooks";

// From a click on a link of the owner's menu to the next page shown (its URL and its heading), and
// to the page settled (a full load's `load` event; a client-side navigation has none, so both
// clocks stop together there). NAVIGATIONS of them (default 50) round the menu after a warm-up round,
// then p50 and p95 in milliseconds of each, printed as lines scripts/bench-nav reads.
const stops: { link: string; path: string; heading: RegExp }[] = [
  { link: "Invoices", path: "/invoices", heading: /^Invoices$/ },
  { link: "Customers", path: "/customers", heading: /^Customers$/ },
  { link: "Quotes", path: "/quotes", heading: /^Quotes$/ },
  { link: "Dashboard", path: "/dashboard", heading: /Dashboard/ },
  { link: "Activity", path: "/activity", heading: /Activity/ },
];

test("click to the next owner page", async ({ page }) => {
  await page.goto("/login");
  await page.fill('input[name="email"]', process.env.OWNER_EMAIL!);
  await page.fill('input[name="password"]', process.env.OWNER_PASSWORD!);
  await page.click('button[type="submit"]');
  await expect(page).toHaveURL(/\/dashboard$/);

  const count = Number(process.env.NAVIGATIONS ?? 50);
  const shown: number[] = [];
  const loaded: number[] = [];
  for (let i = 0; i < count + stops.length; i++) {
    const stop = stops[i % stops.length];
    const link = page.locator("nav").getByRole("link", { name: stop.link, exact: true });
    const start = performance.now();
    await link.click();
    await page.waitForURL((url) => url.pathname === stop.path);
    await expect(page.locator("main h1").first()).toHaveText(stop.heading);
    const seen = performance.now() - start;
    await page.waitForLoadState("load");
    const settled = performance.now() - start;
    if (i >= stops.length) {
      shown.push(seen);
      loaded.push(settled);
    }
  }
  for (const [what, times] of [["shown", shown], ["loaded", loaded]] as const) {
    times.sort((a, b) => a - b);
    const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))];
    console.log(`navigation (${what}): ${times.length} clicks, p50 ${at(0.5).toFixed(1)} ms, p95 ${at(0.95).toFixed(1)} ms`);
  }
});
