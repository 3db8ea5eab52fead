-- The floor of POST /api/v1/invoices: the least SQL any design must send for its guarantee. The
-- key's lookup, then one transaction: the claim (the key, the request's fingerprint and the invoice's
-- id, minted up front), and the invoice (its number, the invoice, its lines: one statement). What the
-- API sends beyond this (api_create.sql) is the in-flight check (a try-lock, in the claim's
-- statement), the stored response and the activity row (one statement).
-- Variables: -D org, apikeyhash (hex), apikeyid.
\set r random(1, 1000000000000)
select id, org_id, last_used_at is null or last_used_at < now() - interval '1 minute' as stale,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as inv
from api_keys
where hash = decode(:apikeyhash, 'hex') and revoked_at is null \gset
BEGIN;
insert into claims (scope, owner, key, fingerprint, status, result_id, completed_at)
values ('api', :apikeyid::text, 'pgb-' || :client_id::text || '-' || :r::text, sha256(convert_to('pgb-' || :r::text, 'UTF8')), 'done', :inv::uuid, now())
on conflict do nothing
returning true;
-- include: parts/invoice_insert_head.sql
    from jsonb_populate_record(null::invoices, '{"customer_id": null,"customer_name": "Load Client","customer_email": "billing@example.com","currency": "usd","due_date": "2030-01-31","payment_terms_days": null,"subtotal_cents": 30000,"discount_percent_milli": null,"discount_amount_cents": null,"discount_cents": 0,"tax_cents": 0,"total_cents": 30000,"notes": "","source_key": null,"collection_method": "send_invoice"}'::jsonb) h
-- include: parts/invoice_insert_tail.sql
COMMIT;
