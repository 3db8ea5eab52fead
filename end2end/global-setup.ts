// `cargo leptos end-to-end` starts the server and the tests together: wait until it answers.
// Where every suite must run (CI, scripts/test), a missing mail sink is a failure, not a skip.
export default async function globalSetup() {
  const required = Boolean(process.env.CI || process.env.INVOICER_REQUIRE_ALL);
  if (required && !process.env.E2E_MAIL_DIR) {
    throw new Error("E2E_MAIL_DIR is unset: the specs that read mail would be skipped (scripts/test starts the sink)");
  }
  const base = process.env.BASE_URL ?? "http://127.0.0.1:3000";
  const deadline = Date.now() + 180_000;
  let last = "";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${base}/readyz`);
      if (res.ok) return;
      last = `status ${res.status}`;
    } catch (e) {
      last = String(e);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`server at ${base} not ready after 180 s: ${last}`);
}
