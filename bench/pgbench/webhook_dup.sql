-- POST /webhooks/stripe with an event processed before (a Stripe retry), as the database sees it:
-- the claim collides and reads the done row, the transaction rolls back, and the attempt row is written
-- with the org and invoice of the stored event (surfaces::webhook's replay row, one statement).
-- Variables: -D tag, dups (the events bench http delivered before measuring).
\set n random(1, :dups)
BEGIN;
with lock as (
    select case when false::bool then pg_try_advisory_xact_lock(hashtextextended('webhook' || '/' || 'default' || '/' || ('evt_dup_' || :tag::text || '_' || :n::text), 0))
                else true end as free
), won as (
    insert into claims (scope, owner, key, fingerprint, status, result_id, completed_at)
    select 'webhook', 'default', 'evt_dup_' || :tag::text || '_' || :n::text, null::bytea, 'done', null::uuid, now() from lock where free
    on conflict do nothing
    returning true
)
select free as "free!", exists (select from won) as "won!" from lock;
select status, fingerprint, result_id, response_status, response_headers, response_body,
       extract(epoch from greatest(locked_until - now(), interval '0'))::float8 as "lease_left!",
       coalesce(created_at < now() - make_interval(secs => null::float8), false) as "expired!"
from claims
where scope = 'webhook' and owner = 'default' and key = 'evt_dup_' || :tag::text || '_' || :n::text;
ROLLBACK;
insert into attempts (org_id, surface, owner, key, outcome, invoice_id, request_id, duration_ms)
select e.org_id, 'webhook', 'stripe/default', 'evt_dup_' || :tag::text || '_' || :n::text, 'replay', e.invoice_id,
       gen_random_uuid()::text, 1.0
from (select) one
left join stripe_events e on e.account = 'default' and e.id = 'evt_dup_' || :tag::text || '_' || :n::text;
