-- POST /webhooks/stripe with a new checkout.session.completed, as the database sees it: the statements
-- surfaces::webhook::apply_delivery (claim, payments::record_session, the stored event, claim
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
select org_id, currency, status,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as pay,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as outbox_id
from invoices where id = md5('bench/' || :org::uuid || '/' || :n)::uuid for update \gset
update checkout_sessions set completed_at = coalesce(completed_at, now())
where id = 'cs_test_sim_' || replace(md5('bench/' || :org::uuid || '/' || :n)::uuid::text, '-', '')
  and org_id = :org::uuid and invoice_id = md5('bench/' || :org::uuid || '/' || :n)::uuid
  and lower(currency) = lower('usd') and livemode = false
returning true;
insert into payments (id, org_id, invoice_id, provider, provider_payment_id, amount_cents,
                      currency, event_id, status, failure)
values (:pay::uuid, :org::uuid, md5('bench/' || :org::uuid || '/' || :n)::uuid,
        'stripe', 'pi_pgb_' || :client_id::text || '_' || :r::text, 1, 'usd',
        'evt_pgb_' || :client_id::text || '_' || :r::text, 'succeeded', null)
on conflict (provider, provider_payment_id) do update
    set status = excluded.status, failure = excluded.failure, event_id = excluded.event_id
    where array_position(array['pending', 'failed', 'succeeded'], excluded.status)
        > array_position(array['pending', 'failed', 'succeeded'], payments.status)
returning id, invoice_id;
insert into outbox (id, org_id, invoice_id, kind, payload)
values (:outbox_id::uuid, :org::uuid, md5('bench/' || :org::uuid || '/' || :n)::uuid, 'payment_receipt',
        jsonb_build_object('payment_id', :pay::uuid))
on conflict do nothing
returning id;
update invoices i
set (status, payment_state, amount_paid_cents) =
        (select m.new_status, m.new_payment_state, m.kept_cents from invoice_money(i.id) m),
    updated_at = now()
where i.id = md5('bench/' || :org::uuid || '/' || :n)::uuid
returning i.status, i.payment_state, i.amount_paid_cents, i.total_cents;
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
