-- The create form's server function (POST /rpc/create_invoice) with a new form key, as the database
-- sees it: the session and its user loaded by tower-sessions and axum-login, then
-- surfaces::form::invoice_from_form's transaction (claim with the content's fingerprint written done
-- with the invoice id minted up front, the org's number, invoice with its source key and lines in
-- one statement, the won attempt's row).
-- All clients in one org (-D org, session, sid, user): creates take turns on the org's gapless numbering.
-- Ids the server mints (UUIDv7, time-ordered) are minted here the same way, in the first statement.
\set r random(1, 1000000000000)
select data /*bench*/,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as form_key,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as inv /*end*/
from "tower_sessions"."session" where id = :session and expiry_date > now() \gset
select u.id, u.email, u.password_hash, u.email_verified_at is not null as "verified!",
       o.id as org_id, o.name as org_name, m.role, s.last_seen_at < now() - interval '1 minute' as "stale!"
from user_sessions s join users u on u.id = s.user_id
join memberships m on m.user_id = s.user_id and m.org_id = s.org_id join orgs o on o.id = s.org_id
where s.id = :sid::uuid and s.user_id = :user::uuid and s.ended_at is null;
BEGIN;
with lock as (
    select case when false::bool then pg_try_advisory_xact_lock(hashtextextended('form' || '/' || (:org::text || '/create_invoice') || '/' || :form_key::uuid::text, 0))
                else true end as free
), won as (
    insert into claims (scope, owner, key, fingerprint, status, result_id, completed_at)
    select 'form', :org::text || '/create_invoice', :form_key::uuid::text, sha256(convert_to('form-' || :r::text, 'UTF8'))::bytea, 'done', :inv::uuid, now() from lock where free
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
    from jsonb_populate_record(null::invoices, ('{"customer_id":null,"customer_name":"Load Client","customer_email":"billing@example.com","currency":"usd","due_date":"2030-01-31","payment_terms_days":null,"subtotal_cents":30000,"discount_percent_milli":null,"discount_amount_cents":null,"discount_cents":0,"tax_cents":0,"total_cents":30000,"notes":"","source_key":"form:' || :form_key::uuid::text || '"}')::jsonb) h
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
    set result_id = null, response_status = null, response_headers = null, response_body = null
    where false and scope = 'form' and owner = :org::text || '/create_invoice' and key = :form_key::uuid::text and status = 'done'
    returning 1
)
insert into attempts (org_id, surface, owner, key, outcome, invoice_id, request_id, duration_ms)
values (:org::uuid, 'form', :org::text, :form_key::uuid::text, 'won',
        :inv::uuid, gen_random_uuid()::text, 1.0)
returning (select count(*) from finished) as "finished!";
COMMIT;
