-- Read paths with years of data: the invoice page's anomalies (and void's "no Stripe event" check)
-- look Stripe's events up by invoice; without this they scanned the org's events.
create index stripe_events_invoice_idx on stripe_events (invoice_id, received_at)
    where invoice_id is not null;
