-- Stripe webhooks: every processed event, the payments they record, refunds that came too early.

create table stripe_events (
    account text not null,
    id text not null,
    type text not null,
    -- The raw body as received, so `server stripe resend` can send the same bytes again.
    payload text not null,
    received_at timestamptz not null default now(),
    processed_at timestamptz not null default now(),
    outcome text not null check (outcome in ('applied', 'ignored', 'deferred', 'anomaly')),
    detail text,
    -- What the event concerned, when known (activity pages are org-scoped).
    org_id uuid references orgs (id),
    invoice_id uuid references invoices (id),
    primary key (account, id)
);
create index stripe_events_org_idx on stripe_events (org_id, received_at desc);
create index stripe_events_received_idx on stripe_events (received_at);

create table payments (
    id uuid primary key,
    org_id uuid not null references orgs (id),
    invoice_id uuid not null references invoices (id),
    provider text not null,
    -- Stripe's payment intent: one charge produces several events, so this, not the event id, is
    -- the business key that keeps a payment from being recorded twice.
    provider_payment_id text not null,
    amount_cents bigint not null check (amount_cents >= 0),
    currency text not null,
    event_id text not null,
    refunded_at timestamptz,
    created_at timestamptz not null default now(),
    constraint payments_provider_payment_key unique (provider, provider_payment_id)
);
create index payments_invoice_idx on payments (invoice_id);

-- A refund that arrived before its payment (Stripe does not promise order). Applied, and deleted,
-- when the payment arrives.
create table pending_refunds (
    provider text not null,
    provider_payment_id text not null,
    event_id text not null,
    received_at timestamptz not null default now(),
    primary key (provider, provider_payment_id)
);
