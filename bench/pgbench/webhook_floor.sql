-- The floor of POST /webhooks/stripe with a new payment: the least SQL any design must send for its
-- guarantee, one transaction of four statements: the event's claim, the payment (unique per payment
-- intent), the invoice's paid amount, the receipt in the outbox. What the webhook sends beyond this
-- (webhook_new.sql) is the payment intent's lock (in the invoice's statement), the invoice's row
-- read, the checkout session's binding, the invoice's status derived from all its payments, the
-- stored event (for the activity page and the anomaly review) and the activity row.
-- Variables: -D org, invoices; :client_id is pgbench's own.
\set n random(1, :invoices)
\set r random(1, 1000000000000)
BEGIN;
insert into claims (scope, owner, key, fingerprint, status, result_id, completed_at)
values ('webhook', 'default', 'evt_flr_' || :client_id::text || '_' || :r::text, null, 'done', null::uuid, now())
on conflict do nothing
returning true;
insert into payments (id, org_id, invoice_id, provider, provider_payment_id, amount_cents,
                      currency, event_id, status, failure)
values ((lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid,
        :org::uuid, md5('bench/' || :org::uuid || '/' || :n)::uuid,
        'stripe', 'pi_flr_' || :client_id::text || '_' || :r::text, 1, 'usd',
        'evt_flr_' || :client_id::text || '_' || :r::text, 'succeeded', null)
on conflict (provider, provider_payment_id) do nothing
returning id \gset
update invoices set amount_paid_cents = amount_paid_cents + 1, updated_at = now()
where id = md5('bench/' || :org::uuid || '/' || :n)::uuid;
insert into outbox (id, org_id, invoice_id, kind, payload)
values ((lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid,
        :org::uuid, md5('bench/' || :org::uuid || '/' || :n)::uuid, 'payment_receipt',
        jsonb_build_object('payment_id', :id::uuid))
on conflict do nothing;
COMMIT;
