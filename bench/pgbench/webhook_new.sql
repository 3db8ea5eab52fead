-- POST /webhooks/stripe with a new checkout.session.completed, as the database sees it: the statements
-- surfaces::webhook::apply_delivery sends in its one transaction: the claim, then
-- payments::record_session (the payment intent's lock and the invoice's row in one statement, the
-- checkout session's binding, the payment and its receipt in the outbox in one statement, the
-- invoice's status derived from its payments), the stored event, and surfaces::record::finish (the won
-- attempt's row; a webhook claim records nothing more).
-- Variables: -D org, invoices, payload (a real event's bytes); :client_id is pgbench's own.
\set n random(1, :invoices)
-- Ids the server mints (UUIDv7, time-ordered) are minted here the same way, in the first statement.
\set r random(1, 1000000000000)
BEGIN;
-- include: parts/claim_done.sql serialize=false scope='webhook' owner='default' key='evt_pgb_'||:client_id::text||'_'||:r::text fingerprint=null::bytea result=null::uuid
/*bench*/ select org_id, currency, pay, outbox_id from ( /*end*/
select org_id, currency, status as "status: InvoiceStatus" /*bench*/,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as pay,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as outbox_id /*end*/
from invoices
where id = md5('bench/' || :org::uuid || '/' || :n)::uuid
  and (select true from (select pg_advisory_xact_lock(hashtextextended('stripe' || '/' || ('pi_pgb_' || :client_id::text || '_' || :r::text), 0))) l)
for update /*bench*/ ) s /*end*/ \gset
update checkout_sessions set completed_at = coalesce(completed_at, now())
where id = 'cs_test_sim_' || replace(md5('bench/' || :org::uuid || '/' || :n)::uuid::text, '-', '')
  and org_id = :org::uuid and invoice_id = md5('bench/' || :org::uuid || '/' || :n)::uuid
  and lower(currency) = lower('usd') and livemode = false
returning true as "bound!";
with payment as (
    insert into payments (id, org_id, invoice_id, provider, provider_payment_id, amount_cents,
                          currency, event_id, status, failure)
    values (:pay::uuid, :org::uuid, md5('bench/' || :org::uuid || '/' || :n)::uuid,
            'stripe', 'pi_pgb_' || :client_id::text || '_' || :r::text, 1, 'usd',
            'evt_pgb_' || :client_id::text || '_' || :r::text, 'succeeded', null)
    on conflict (provider, provider_payment_id) do update
        set status = excluded.status, failure = excluded.failure, event_id = excluded.event_id
        where array_position(array['pending', 'failed', 'succeeded'], excluded.status)
            > array_position(array['pending', 'failed', 'succeeded'], payments.status)
    returning id, invoice_id
), receipt as (
    insert into outbox (id, org_id, invoice_id, kind, payload)
    select :outbox_id::uuid, :org::uuid, md5('bench/' || :org::uuid || '/' || :n)::uuid, 'payment_receipt',
           jsonb_build_object('payment_id', p.id)
    from payment p
    where true and p.invoice_id = md5('bench/' || :org::uuid || '/' || :n)::uuid
    on conflict do nothing
)
select id as "id!", invoice_id as "invoice_id!" from payment;
update invoices i
set (status, payment_state, amount_paid_cents) =
        (select m.new_status, m.new_payment_state, m.kept_cents from invoice_money(i.id) m),
    updated_at = now()
where i.id = md5('bench/' || :org::uuid || '/' || :n)::uuid
returning i.status as "status: InvoiceStatus", i.payment_state as "payment_state: PaymentState", i.amount_paid_cents, i.total_cents - i.amount_credited_cents as "asked!";
insert into stripe_events (account, id, type, payload, outcome, detail, org_id, invoice_id)
values ('default', 'evt_pgb_' || :client_id::text || '_' || :r::text, 'checkout.session.completed', :payload,
        'applied', 'payment pi_pgb recorded; invoice open', :org::uuid, md5('bench/' || :org::uuid || '/' || :n)::uuid)
on conflict do nothing;
with finished as (
    update claims
    set result_id = null, response_status = null, response_headers = null, response_body = null
    where false and scope = 'webhook' and owner = 'default' and key = 'evt_pgb_' || :client_id::text || '_' || :r::text and status = 'done'
    returning 1
)
insert into attempts (org_id, surface, owner, key, outcome, invoice_id, request_id, duration_ms)
select a.org_id, a.surface, a.owner, a.key, 'won', a.invoice_id, a.request_id, a.duration_ms
from jsonb_populate_record(null::attempts, jsonb_build_object('org_id', :org::uuid, 'surface', 'webhook', 'owner', 'stripe/default',
        'key', 'evt_pgb_' || :client_id::text || '_' || :r::text, 'invoice_id', md5('bench/' || :org::uuid || '/' || :n)::uuid, 'request_id', gen_random_uuid()::text, 'duration_ms', 1.0)) a
returning (select count(*) from finished) as "finished!";
COMMIT;
