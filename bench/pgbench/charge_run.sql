-- One automatic charge (invoicer_core::jobs::charges::run_due and charge), as the database sees
-- it, without the call to Stripe between its two transactions: the next due attempt nobody holds
-- (FOR UPDATE SKIP LOCKED, passing over attempts under a fresh lease) and its lease, the claim
-- (job, charge:<invoice>, <n>) mirrored on the attempt's row, committed; what to charge (the invoice, the customer's default
-- method and Stripe customer) and the amount and method fixed on the attempt; then the answer
-- recorded by the rule the payment_intent.* events follow (payments::charges::record_charge: the
-- payment's lock, the invoice and attempt rows, the attempt's state moved up, the payment and its
-- receipt in one statement, the invoice derived from its payments) with the lease's completion and
-- the charge's row on the activity page (surfaces::record::finish).
-- The benchmark's attempts are first attempts of open invoices due now, each charged in full by a
-- card that succeeds; each transaction takes one, so a run is `-t <invoices / clients>`.
-- The PaymentIntent id Stripe would answer with is minted here; the server's minted UUIDs are
-- gen_random_uuid() in their places.
\set r random(1, 1000000000000)
BEGIN;
select a.invoice_id, a.n from charge_attempts a
where a.state = 'scheduled' and a.due_at <= now()
  and (a.leased_until is null or a.leased_until <= now())
  and not exists (select from claims c
                  where c.scope = 'job' and c.owner = 'charge:' || a.invoice_id
                    and c.key = a.n::text
                    and (c.status = 'done' or c.locked_until > now()))
order by a.due_at, a.invoice_id
limit 1
for update of a skip locked \gset
/*bench*/ with lease as ( /*end*/
insert into claims (scope, owner, key, status, locked_until)
values ('job', 'charge:' || :invoice_id::text, :n::text, 'in_progress', now() + make_interval(secs => 60))
on conflict do nothing
returning claimed_at as "token: LeaseToken"
/*bench*/ ) select "token: LeaseToken" as token from lease /*end*/ \gset
update charge_attempts set leased_until = now() + make_interval(secs => 60)
where invoice_id = :invoice_id::uuid and n = :n::int2;
COMMIT;
/*bench*/ select org_id, "due!" as due, "method_id?" as method_id from ( /*end*/
select a.state, a.org_id, i.status as "status: InvoiceStatus",
       i.payment_state as "payment_state: PaymentState",
       i.collection_method as "collection_method: CollectionMethod",
       i.charge_retries_stopped_at is not null as "stopped!",
       i.currency, i.number_text, coalesce(a.amount_cents,
       i.total_cents - i.amount_credited_cents - i.amount_paid_cents) as "due!",
       m.id as "method_id?", m.provider_method as "method?",
       pc.provider_customer as "customer?"
from charge_attempts a
join invoices i on i.id = a.invoice_id
left join lateral (
    select pm.id, pm.provider_method from payment_methods pm
    where pm.id = a.payment_method_id
       or (a.payment_method_id is null and pm.customer_id = i.customer_id
           and pm.is_default and pm.removed_at is null and pm.provider = 'stripe')
    limit 1
) m on true
left join provider_customers pc on pc.customer_id = i.customer_id and pc.provider = 'stripe'
where a.invoice_id = :invoice_id::uuid and a.n = :n::int2
/*bench*/ ) w /*end*/ \gset
update charge_attempts set amount_cents = coalesce(amount_cents, :due::int8),
                           payment_method_id = coalesce(payment_method_id, :method_id::uuid)
where invoice_id = :invoice_id::uuid and n = :n::int2;
BEGIN;
select 1 as "locked!" from (select pg_advisory_xact_lock(hashtextextended('stripe' || '/' || ('pi_pgb_' || :client_id::text || '_' || :r::text), 0))) l;
select i.org_id, i.currency, i.status as "status: InvoiceStatus", a.payment_intent
from invoices i join charge_attempts a on a.invoice_id = i.id and a.n = :n::int2
where i.id = :invoice_id::uuid
for update of i, a;
update charge_attempts
set state = 'succeeded', reason = coalesce(null::text, case when 'succeeded' = 'succeeded' then null else reason end),
    action_url = coalesce(null::text, action_url), payment_intent = coalesce(payment_intent, 'pi_pgb_' || :client_id::text || '_' || :r::text),
    sent_at = coalesce(sent_at, now()), updated_at = now()
where invoice_id = :invoice_id::uuid and n = :n::int2 and state <> 'canceled'
  and coalesce(array_position(array['scheduled', 'processing', 'requires_action', 'failed', 'succeeded'], state), 0)
    < array_position(array['scheduled', 'processing', 'requires_action', 'failed', 'succeeded'], 'succeeded')
returning true as "moved!";
with payment as (
    insert into payments (id, org_id, invoice_id, provider, provider_payment_id, amount_cents,
                          currency, event_id, status, failure)
    values (gen_random_uuid(), :org_id::uuid, :invoice_id::uuid, 'stripe', 'pi_pgb_' || :client_id::text || '_' || :r::text,
            :due::int8, 'usd', 'answer:' || 'pi_pgb_' || :client_id::text || '_' || :r::text, 'succeeded', null::text)
    on conflict (provider, provider_payment_id) do update
        set status = excluded.status, failure = excluded.failure, event_id = excluded.event_id
        where array_position(array['pending', 'failed', 'succeeded'], excluded.status)
            > array_position(array['pending', 'failed', 'succeeded'], payments.status)
    returning id, invoice_id
), receipt as (
    insert into outbox (id, org_id, invoice_id, kind, payload)
    select gen_random_uuid(), :org_id::uuid, :invoice_id::uuid, 'payment_receipt', jsonb_build_object('payment_id', p.id)
    from payment p
    where true and p.invoice_id = :invoice_id::uuid
    on conflict do nothing
)
select id as "id!", invoice_id as "invoice_id!" from payment;
update invoices i
set (status, payment_state, amount_paid_cents) =
        (select m.new_status, m.new_payment_state, m.kept_cents from invoice_money(i.id) m),
    updated_at = now()
where i.id = :invoice_id::uuid
returning i.status as "status: InvoiceStatus", i.payment_state as "payment_state: PaymentState",
          i.amount_paid_cents, i.total_cents - i.amount_credited_cents as "asked!";
update claims
set status = 'done', completed_at = now(), locked_until = null, result_id = null::uuid
where scope = 'job' and owner = 'charge:' || :invoice_id::text and key = :n::text and status = 'in_progress' and claimed_at = :token::timestamptz;
with finished as (
    update claims
    set result_id = null::uuid, response_status = null::int2, response_headers = null::jsonb, response_body = null::bytea
    where false and scope = 'job' and owner = 'charge:' || :invoice_id::text and key = :n::text and status = 'done'
    returning 1
)
insert into attempts (org_id, surface, owner, key, outcome, invoice_id, request_id, duration_ms)
select a.org_id, a.surface, a.owner, a.key, 'won', a.invoice_id, a.request_id, a.duration_ms
from jsonb_populate_record(null::attempts, jsonb_build_object('org_id', :org_id::uuid, 'surface', 'job', 'owner', 'charge:' || :invoice_id::text,
        'key', :n::text, 'invoice_id', :invoice_id::uuid, 'request_id', null::text, 'duration_ms', 1.0)) a
returning (select count(*) from finished) as "finished!";
COMMIT;
