-- POST /webhooks/stripe with an event processed before (a Stripe retry), as the database sees it:
-- the claim collides and reads the done row, the transaction rolls back, and the attempt row is written
-- with the org and invoice of the stored event (surfaces::webhook's replay row, one statement).
-- Variables: -D tag, dups (the events bench http delivered before measuring).
\set n random(1, :dups)
BEGIN;
-- include: parts/claim_done.sql serialize=false scope='webhook' owner='default' key='evt_dup_'||:tag::text||'_'||:n::text fingerprint=null::bytea result=null::uuid
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
