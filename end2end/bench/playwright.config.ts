import { defineConfig } from "@playwright/test";

// The navigation benchmark (scripts/bench-nav), apart from the test suite: it measures, it does not
// test. BASE_URL is the release server scripts/bench-nav started.
export default defineConfig({
  testDir: ".",
  timeout: 300_000,
  workers: 1,
  retries: 0,
  reporter: [["list"]],
  use: {
    baseURL: process.env.BASE_URL,
    trace: "off",
    launchOptions: {
      executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
      args: ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"],
    },
  },
});
