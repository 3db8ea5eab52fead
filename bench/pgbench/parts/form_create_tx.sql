BEGIN;
-- include: parts/claim_done.sql serialize=false scope='form' owner=:org::text||'/create_invoice' key=:form_key::uuid::text fingerprint=sha256(convert_to('form-'||:r::text,'UTF8'))::bytea result=:inv::uuid
-- include: parts/invoice_insert_head.sql
    from jsonb_populate_record(null::invoices, ('{"customer_id": null,"customer_name": "Load Client","customer_email": "billing@example.com","currency": "usd","due_date": "2030-01-31","payment_terms_days": null,"subtotal_cents": 30000,"discount_percent_milli": null,"discount_amount_cents": null,"discount_cents": 0,"tax_cents": 0,"total_cents": 30000,"notes": "","source_key": "form:' || :form_key::uuid::text || '","collection_method": "send_invoice"}')::jsonb) h
-- include: parts/invoice_insert_tail.sql
with finished as (
    update claims
    set result_id = null, response_status = null, response_headers = null, response_body = null
    where false and scope = 'form' and owner = :org::text || '/create_invoice' and key = :form_key::uuid::text and status = 'done'
    returning 1
)
insert into attempts (org_id, surface, owner, key, outcome, invoice_id, request_id, duration_ms)
select a.org_id, a.surface, a.owner, a.key, 'won', a.invoice_id, a.request_id, a.duration_ms
from jsonb_populate_record(null::attempts, jsonb_build_object('org_id', :org::uuid, 'surface', 'form', 'owner', :org::text,
        'key', :form_key::uuid::text, 'invoice_id', :inv::uuid, 'request_id', gen_random_uuid()::text, 'duration_ms', 1.0)) a
returning (select count(*) from finished) as "finished!";
COMMIT;
