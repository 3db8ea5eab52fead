-- POST /api/v1/invoices with a new Idempotency-Key, as the database sees it: the key lookup
-- (api_keys::authenticate; last_used_at is written at most once a minute, so not here), then
-- surfaces::api::invoice_from_request's transaction: the claim with its fingerprint behind the key's
-- advisory try-lock (one statement), the org's number, invoice and lines (one statement), then
-- claim::finish (the stored response and the won attempt's row, one statement).
-- Variables: -D org, apikeyhash (hex), apikeyid, response (a real 201 body).
-- Ids the server mints (UUIDv7, time-ordered) are minted here the same way, in the first statement.
\set r random(1, 1000000000000)
select k.id, k.org_id, k.role as key_role, m.role as member_role,
       k.last_used_at is null or k.last_used_at < now() - interval '1 minute' as "stale!" /*bench*/,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as inv /*end*/
from api_keys k
join memberships m on m.user_id = k.created_by and m.org_id = k.org_id
where k.hash = decode(:apikeyhash, 'hex') and k.revoked_at is null and (k.expires_at is null or k.expires_at > now()) \gset
BEGIN;
with lock as (
    select case when true::bool then pg_try_advisory_xact_lock(hashtextextended('api' || '/' || :apikeyid::text || '/' || ('pgb-' || :client_id::text || '-' || :r::text), 0))
                else true end as free
), won as (
    insert into claims (scope, owner, key, fingerprint, status, result_id, completed_at)
    select 'api', :apikeyid::text, 'pgb-' || :client_id::text || '-' || :r::text, sha256(convert_to('pgb-' || :r::text, 'UTF8'))::bytea, 'done', null::uuid, now() from lock where free
    on conflict do nothing
    returning true
)
select free as "free!", exists (select from won) as "won!" from lock;
with org as (
    select number_format, number_reset, time_zone,
           extract(year from now() at time zone time_zone)::int as yr,
           (now() at time zone time_zone)::date as today
    from orgs where id = :org::uuid
), counter as (
    insert into invoice_counters (org_id, period, last_number)
    select :org::uuid, case when number_reset = 'yearly' then yr else 0 end, 1 from org
    where (md5(random()::text) || md5(random()::text))::text is not null
    on conflict (org_id, period) do update set last_number = invoice_counters.last_number + 1
    returning period, last_number
), invoice as (
    insert into invoices (id, org_id, status, number, number_period, number_text, public_token,
                          finalized_at, customer_id, customer_name, customer_email,
                          customer_address, customer_tax_id, currency, due_date, total_cents,
                          source_key, subtotal_cents, discount_percent_milli,
                          discount_amount_cents, discount_cents, tax_cents, notes,
                          payment_terms_days)
    select :inv::uuid, :org::uuid, case when c.last_number is null then 'draft' else 'open' end,
           c.last_number, c.period, invoice_number_text(org.number_format, c.last_number, org.yr),
           (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19) || md5(random()::text))::text,
           case when c.last_number is not null then now() end,
           cu.id, h.customer_name, h.customer_email, coalesce(cu.billing_address, ''), cu.tax_id,
           h.currency, coalesce(org.today + h.payment_terms_days, h.due_date), h.total_cents,
           h.source_key, h.subtotal_cents, h.discount_percent_milli, h.discount_amount_cents,
           h.discount_cents, h.tax_cents, h.notes, h.payment_terms_days
    from jsonb_populate_record(null::invoices, '{"customer_id":null,"customer_name":"Load Client","customer_email":"billing@example.com","currency":"usd","due_date":"2030-01-31","payment_terms_days":null,"subtotal_cents":30000,"discount_percent_milli":null,"discount_amount_cents":null,"discount_cents":0,"tax_cents":0,"total_cents":30000,"notes":"","source_key":null}'::jsonb) h
    left join counter c on true left join org on true
    left join customers cu on cu.id = h.customer_id and cu.org_id = :org::uuid
    returning status, due_date, number_text, finalized_at, created_at, customer_id,
              customer_address, customer_tax_id
), lines as (
    insert into invoice_lines (invoice_id, position, description, quantity_milli,
                               unit_amount_cents, amount_cents, tax_rate_id, tax_name,
                               tax_percent_milli, discount_cents, tax_cents)
    select :inv::uuid, l.position, l.description, l.quantity_milli, l.unit_amount_cents,
           l.amount_cents, l.tax_rate_id, l.tax_name, l.tax_percent_milli, l.discount_cents,
           l.tax_cents
    from jsonb_populate_recordset(null::invoice_lines, '[{"position":1,"description":"Consulting","quantity_milli":2000,"unit_amount_cents":15000,"amount_cents":30000,"tax_rate_id":null,"tax_name":null,"tax_percent_milli":null,"discount_cents":0,"tax_cents":0}]'::jsonb) l
)
select number_text, finalized_at as "finalized_at: DateTime<Utc>",
       created_at as "created_at!: DateTime<Utc>", customer_id,
       customer_address as "customer_address!", customer_tax_id,
       due_date as "due_date!: NaiveDate",
       invoice_overdue(invoice.status, invoice.due_date, org.time_zone) as "overdue!"
from invoice, org;
with finished as (
    update claims
    set result_id = :inv::uuid, response_status = 201,
        response_headers = '{"content-type": "application/json", "location": "/api/v1/invoices/x"}'::jsonb,
        response_body = convert_to(:response, 'UTF8')
    where true and scope = 'api' and owner = :apikeyid::text and key = 'pgb-' || :client_id::text || '-' || :r::text and status = 'done'
    returning 1
)
insert into attempts (org_id, surface, owner, key, outcome, invoice_id, request_id, duration_ms)
values (:org::uuid, 'api', :apikeyid::text, 'pgb-' || :client_id::text || '-' || :r::text, 'won',
        :inv::uuid, gen_random_uuid()::text, 1.0)
returning (select count(*) from finished) as "finished!";
COMMIT;
