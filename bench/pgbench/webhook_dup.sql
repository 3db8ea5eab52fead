-- POST /webhooks/stripe with an event processed before (a Stripe retry), as the database sees it:
-- the claim collides and reads the done row, the transaction rolls back, the handler looks up what
-- the event concerned, and observe::record writes the attempt row.
-- Variables: -D tag, dups (the events bench http delivered before measuring).
\set n random(1, :dups)
BEGIN;
insert into claims (scope, owner, key, fingerprint, locked_until)
values ('stripe', 'default', 'evt_dup_' || :tag::text || '_' || :n::text, null, now() + make_interval(secs => 30))
on conflict do nothing
returning true;
select status, fingerprint, result_id, response_status, response_headers, response_body,
       extract(epoch from greatest(locked_until - now(), interval '0'))::float8,
       coalesce(created_at < now() - make_interval(secs => null::float8), false)
from claims
where scope = 'stripe' and owner = 'default' and key = 'evt_dup_' || :tag::text || '_' || :n::text;
ROLLBACK;
select org_id, invoice_id from stripe_events where account = 'default' and id = 'evt_dup_' || :tag::text || '_' || :n::text;
insert into attempts (org_id, surface, owner, key, outcome, invoice_id, request_id, duration_ms)
values (:org::uuid, 'webhook', 'stripe/default', 'evt_dup_' || :tag::text || '_' || :n::text, 'replay', null,
        gen_random_uuid()::text, 1.0);
