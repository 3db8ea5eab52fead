-- The floor of the create form: the least SQL any design must send for its guarantee. The signed-in
-- user's session and the user in one statement (so a removed member or a changed password stops
-- working at once), then one transaction: the claim of the form key, and the invoice (its number,
-- the invoice, its lines: one statement). What the form sends beyond this is the activity row (form_create.sql).
\set r random(1, 1000000000000)
select c.org, x.expiry_date,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as form_key,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as inv
from bench_form_clients c left join lateral (
-- include: parts/session.sql session=c.session
) x on true where c.client_id = :client_id \gset
BEGIN;
insert into claims (scope, owner, key, fingerprint, status, result_id, completed_at)
values ('form', :org::text || '/create_invoice', :form_key::uuid::text,
        sha256(convert_to('form-' || :r::text, 'UTF8')), 'done', :inv::uuid, now())
on conflict do nothing
returning true;
-- include: parts/invoice_insert_head.sql
    from jsonb_populate_record(null::invoices, ('{"customer_id": null,"customer_name": "Load Client","customer_email": "billing@example.com","currency": "usd","due_date": "2030-01-31","payment_terms_days": null,"subtotal_cents": 30000,"discount_percent_milli": null,"discount_amount_cents": null,"discount_cents": 0,"tax_cents": 0,"total_cents": 30000,"notes": "","source_key": "form:' || :form_key::uuid::text || '","collection_method": "send_invoice"}')::jsonb) h
-- include: parts/invoice_insert_tail.sql
COMMIT;
