// `cargo leptos end-to-end` starts the server and the tests together: wait until it answers.
export default async function globalSetup() {
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
