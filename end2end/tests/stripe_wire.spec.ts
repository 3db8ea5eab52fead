import { test, expect } from "@playwright/test";
import Stripe from "stripe";

// The local Stripe (started by scripts/test beside the app) driven by the official Node client,
// which nobody here wrote: where invoicer relies on Stripe's behaviour, the stand-in must match it.
const LOCAL = new URL(process.env.STRIPE_API_BASE ?? "http://127.0.0.1:12111");
const stripe = new Stripe("sk_test_local", {
  host: LOCAL.hostname,
  port: Number(LOCAL.port),
  protocol: LOCAL.protocol.replace(":", "") as "http" | "https",
  maxNetworkRetries: 0,
});

function params(amount: number): Stripe.Checkout.SessionCreateParams {
  return {
    mode: "payment",
    client_reference_id: "00000000-0000-0000-0000-000000000001",
    metadata: { invoice_id: "00000000-0000-0000-0000-000000000001" },
    line_items: [
      { quantity: 1, price_data: { currency: "eur", unit_amount: amount, product_data: { name: "Invoice INV-1" } } },
    ],
    success_url: "http://127.0.0.1:3000/i/x?paid=1",
    cancel_url: "http://127.0.0.1:3000/i/x",
  };
}

test("the official stripe client creates, retrieves and replays sessions, and gets Stripe's errors", async () => {
  const key = `wire-${Date.now()}`;
  const created = await stripe.checkout.sessions.create(params(4200), { idempotencyKey: key });
  expect(created.id).toMatch(/^cs_test_/);
  expect(created.amount_total).toBe(4200);
  expect(created.currency).toBe("eur");
  expect(created.status).toBe("open");
  expect(created.metadata?.invoice_id).toBe("00000000-0000-0000-0000-000000000001");
  expect(created.url).toContain(`/checkout/${created.id}`);

  const again = await stripe.checkout.sessions.retrieve(created.id);
  expect(again.id).toBe(created.id);

  // The same key and parameters: the same session, marked as a replay.
  const replay = await stripe.checkout.sessions.create(params(4200), { idempotencyKey: key });
  expect(replay.id).toBe(created.id);
  expect(replay.lastResponse.headers["idempotent-replayed"]).toBe("true");

  // The same key with other parameters: Stripe's idempotency_error, as the client types it.
  const mismatch = await stripe.checkout.sessions
    .create(params(4300), { idempotencyKey: key })
    .then(() => null, (e: unknown) => e);
  expect(mismatch).toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
  expect((mismatch as Stripe.errors.StripeError).statusCode).toBe(400);

  // An unknown session: resource_missing; a wrong key: an authentication error.
  const missing = await stripe.checkout.sessions.retrieve("cs_test_nope").then(() => null, (e: unknown) => e);
  expect(missing).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
  expect((missing as Stripe.errors.StripeError).code).toBe("resource_missing");
  const intruder = new Stripe("sk_test_wrong", {
    host: LOCAL.hostname,
    port: Number(LOCAL.port),
    protocol: "http",
    maxNetworkRetries: 0,
  });
  const denied = await intruder.checkout.sessions.retrieve(created.id).then(() => null, (e: unknown) => e);
  expect((denied as Stripe.errors.StripeError).statusCode).toBe(401);
});
