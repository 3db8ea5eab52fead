-- POST /api/v1/invoices with a new Idempotency-Key, as the database sees it: the key lookup
-- (api_keys::authenticate; last_used_at is written at most once a minute, so not here), then
-- the transaction of surfaces::api::respond_once around invoices::create: the claim with its
-- fingerprint behind the key's advisory try-lock (one statement), the org's number, invoice and
-- lines, and whether the org issues e-invoices (one statement), then
-- surfaces::record::finish (the stored response and the won attempt's row, one statement).
-- Variables: -D org, apikeyhash (hex), apikeyid, response (a real 201 body).
-- Ids the server mints (UUIDv7, time-ordered) are minted here the same way, in the first statement.
\set r random(1, 1000000000000)
/*bench*/ select id, org_id, key_role, member_role, inv from ( /*end*/
select k.id, k.org_id, k.role as key_role, m.role as member_role, o.einvoicing,
       k.last_used_at is null or k.last_used_at < now() - interval '1 minute' as "stale!" /*bench*/,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as inv /*end*/
from api_keys k
join memberships m on m.user_id = k.created_by and m.org_id = k.org_id
join orgs o on o.id = k.org_id
where k.hash = decode(:apikeyhash, 'hex') and k.revoked_at is null and (k.expires_at is null or k.expires_at > now())
/*bench*/ ) s /*end*/ \gset
BEGIN;
-- include: parts/claim_done.sql serialize=true scope='api' owner=:apikeyid::text key='pgb-'||:client_id::text||'-'||:r::text fingerprint=sha256(convert_to('pgb-'||:r::text,'UTF8'))::bytea result=null::uuid
-- include: parts/invoice_insert_head.sql
    from jsonb_populate_record(null::invoices, '{"customer_id": null,"customer_name": "Load Client","customer_email": "billing@example.com","currency": "usd","due_date": "2030-01-31","payment_terms_days": null,"subtotal_cents": 30000,"discount_percent_milli": null,"discount_amount_cents": null,"discount_cents": 0,"tax_cents": 0,"total_cents": 30000,"notes": "","source_key": null,"collection_method": "send_invoice"}'::jsonb) h
-- include: parts/invoice_insert_tail.sql
with finished as (
    update claims
    set result_id = :inv::uuid, response_status = 201,
        response_headers = '{"content-type": "application/json", "location": "/api/v1/invoices/x"}'::jsonb,
        response_body = convert_to(:response, 'UTF8')
    where true and scope = 'api' and owner = :apikeyid::text and key = 'pgb-' || :client_id::text || '-' || :r::text and status = 'done'
    returning 1
)
insert into attempts (org_id, surface, owner, key, outcome, invoice_id, request_id, duration_ms)
select a.org_id, a.surface, a.owner, a.key, 'won', a.invoice_id, a.request_id, a.duration_ms
from jsonb_populate_record(null::attempts, jsonb_build_object('org_id', :org::uuid, 'surface', 'api', 'owner', :apikeyid::text,
        'key', 'pgb-' || :client_id::text || '-' || :r::text, 'invoice_id', :inv::uuid, 'request_id', gen_random_uuid()::text, 'duration_ms', 1.0)) a
returning (select count(*) from finished) as "finished!";
COMMIT;
