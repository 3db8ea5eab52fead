-- POST /webhooks/stripe with a new checkout.session.completed, as the database sees it: the statements
-- surfaces::webhook::apply_delivery (claim, payments::record_payment, the stored event, claim
-- completion, the won attempt's row) sends in its one transaction.
-- Variables: -D org, invoices, payload (a real event's bytes); :client_id is pgbench's own.
\set n random(1, :invoices)
-- Ids the server mints (UUIDv7, time-ordered) are minted here the same way, in the first statement.
\set r random(1, 1000000000000)
BEGIN;
insert into claims (scope, owner, key, fingerprint, status, result_id, completed_at)
values ('webhook', 'default', 'evt_pgb_' || :client_id::text || '_' || :r::text, null, 'done', null::uuid, now())
on conflict do nothing
returning true;
select 1 from (select pg_advisory_xact_lock(hashtextextended('stripe' || '/' || ('pi_pgb_' || :client_id::text || '_' || :r::text), 0))) l;
select org_id, currency,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as pay,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as outbox_id
from invoices where id = md5('bench/' || :org::uuid || '/' || :n)::uuid for update \gset
insert into payments (id, org_id, invoice_id, provider, provider_payment_id, amount_cents, currency, event_id)
values (:pay::uuid, :org::uuid, md5('bench/' || :org::uuid || '/' || :n)::uuid,
        'stripe', 'pi_pgb_' || :client_id::text || '_' || :r::text, 1, 'usd', 'evt_pgb_' || :client_id::text || '_' || :r::text)
on conflict (provider, provider_payment_id) do nothing
returning id;
insert into outbox (id, org_id, invoice_id, kind, payload)
values (:outbox_id::uuid, :org::uuid, md5('bench/' || :org::uuid || '/' || :n)::uuid, 'payment_receipt',
        jsonb_build_object('payment_id', :pay::uuid))
on conflict do nothing
returning id;
delete from pending_refunds where provider = 'stripe' and provider_payment_id = 'pi_pgb_' || :client_id::text || '_' || :r::text
returning event_id;
update invoices
set amount_paid_cents = amount_paid_cents + case when false then 0 else 1::int8 end,
    status = case
        when status = 'open' and amount_paid_cents + 1 >= total_cents
            then case when false then 'refunded' else 'paid' end
        else status
    end,
    updated_at = now()
where id = md5('bench/' || :org::uuid || '/' || :n)::uuid
returning status;
insert into stripe_events (account, id, type, payload, outcome, detail, org_id, invoice_id)
values ('default', 'evt_pgb_' || :client_id::text || '_' || :r::text, 'checkout.session.completed', :payload,
        'applied', 'payment pi_pgb recorded; invoice open', :org::uuid, md5('bench/' || :org::uuid || '/' || :n)::uuid)
on conflict do nothing;
update claims
set result_id = :pay::uuid, response_status = null,
    response_headers = null, response_body = null
where scope = 'webhook' and owner = 'default' and key = 'evt_pgb_' || :client_id::text || '_' || :r::text and status = 'done';
insert into attempts (org_id, surface, owner, key, outcome, invoice_id, request_id, duration_ms)
values (:org::uuid, 'webhook', 'stripe/default', 'evt_pgb_' || :client_id::text || '_' || :r::text, 'won',
        md5('bench/' || :org::uuid || '/' || :n)::uuid, gen_random_uuid()::text, 1.0);
COMMIT;
