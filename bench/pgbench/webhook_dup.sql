-- POST /webhooks/stripe with an event processed before (a Stripe retry), as the database sees it:
-- the claim collides and reads the done row, the transaction rolls back, and the attempt row is written
-- with the org and invoice of the stored event (surface::store_replay, one statement).
-- Variables: -D tag, dups (the events bench http delivered before measuring).
\set n random(1, :dups)
BEGIN;
insert into claims (scope, owner, key, fingerprint, status, result_id, completed_at, locked_until)
values ('stripe', 'default', 'evt_dup_' || :tag::text || '_' || :n::text, null,
        case when null::uuid is null then 'in_progress' else 'done' end, null::uuid,
        case when null::uuid is null then null else now() end,
        case when null::uuid is null then now() + make_interval(secs => 30) end)
on conflict do nothing
returning true;
select status, fingerprint, result_id, response_status, response_headers, response_body,
       extract(epoch from greatest(locked_until - now(), interval '0'))::float8,
       coalesce(created_at < now() - make_interval(secs => null::float8), false)
from claims
where scope = 'stripe' and owner = 'default' and key = 'evt_dup_' || :tag::text || '_' || :n::text;
ROLLBACK;
insert into attempts (org_id, surface, owner, key, outcome, invoice_id, request_id, duration_ms)
select e.org_id, 'webhook', 'stripe/default', 'evt_dup_' || :tag::text || '_' || :n::text, 'replay', e.invoice_id,
       gen_random_uuid()::text, 1.0
from (select) one
left join stripe_events e on e.account = 'default' and e.id = 'evt_dup_' || :tag::text || '_' || :n::text;
