-- One scheduled run (invoicer_core::jobs::schedules::run's run_one), as the database sees it: the
-- next due schedule nobody holds (FOR UPDATE SKIP LOCKED), its row, the claim (job,
-- schedule:<id>, <period>) written done, the check for the period's invoice by its business key, a
-- savepoint (an e-invoicing org's invoice that would not be valid is written again as a draft; not
-- here), the invoice and its lines with the org's next number and whether it issues e-invoices
-- (one statement), the run's row, surfaces::record::finish (the won attempt's row), then the
-- schedule's next date. The benchmark's schedules are monthly, finalize, and due today; each transaction takes
-- one, so a run is `-t <schedules / clients>`.
-- Ids the server mints (UUIDv7, time-ordered) are minted here the same way, in the first statement.
BEGIN;
/*bench*/ select id, org_id as org, "today!: NaiveDate" as today,
       (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid as inv
from ( /*end*/
select s.id, s.org_id, (now()::timestamptz at time zone o.time_zone)::date as "today!: NaiveDate"
from schedules s join orgs o on o.id = s.org_id
where s.paused_at is null and s.next_run_on is not null
  and s.next_run_on <= (now()::timestamptz at time zone 'UTC')::date + 1
  and s.next_run_on <= (now()::timestamptz at time zone o.time_zone)::date
order by s.next_run_on, s.id
limit 1
for update of s skip locked
/*bench*/ ) due /*end*/ \gset
select id, template, interval, interval_count, start_date as "start_date: NaiveDate",
       day_of_month, end_after_count, end_date as "end_date: NaiveDate", action, missed,
       next_index, next_run_on as "next_run_on: NaiveDate", paused_at is not null as "paused!",
       created_at as "created_at: DateTime<Utc>"
from schedules where id = :id::uuid and org_id = :org::uuid;
-- include: parts/claim_done.sql serialize=false scope='job' owner='schedule:'||:id::text key=:today::date::text fingerprint=null::bytea result=null::uuid
select id from invoices where org_id = :org::uuid and source_key = 'schedule:' || :id::text || ':' || :today::date::text;
savepoint issue;
-- include: parts/invoice_insert_head.sql
    from jsonb_populate_record(null::invoices, ('{"customer_id": null,"customer_name": "Retainer Client","customer_email": "billing@example.com","currency": "usd","due_date": null,"payment_terms_days": 30,"subtotal_cents": 30000,"discount_percent_milli": null,"discount_amount_cents": null,"discount_cents": 0,"tax_cents": 0,"total_cents": 30000,"notes": "","source_key": "schedule:' || :id::text || ':' || :today::date::text || '","collection_method": "send_invoice"}')::jsonb) h
-- include: parts/invoice_insert_tail.sql
insert into schedule_runs (schedule_id, period, run_index, invoice_id, outcome)
values (:id::uuid, :today::date, 0, :inv::uuid, 'issued')
on conflict (schedule_id, period) do nothing;
with finished as (
    update claims
    set result_id = :inv::uuid, response_status = null, response_headers = null, response_body = null
    where true and scope = 'job' and owner = 'schedule:' || :id::text and key = :today::date::text and status = 'done'
    returning 1
)
insert into attempts (org_id, surface, owner, key, outcome, invoice_id, request_id, duration_ms)
select a.org_id, a.surface, a.owner, a.key, 'won', a.invoice_id, a.request_id, a.duration_ms
from jsonb_populate_record(null::attempts, jsonb_build_object('org_id', :org::uuid, 'surface', 'job', 'owner', 'schedule:' || :id::text,
        'key', :today::date::text, 'invoice_id', :inv::uuid, 'request_id', gen_random_uuid()::text, 'duration_ms', 1.0)) a
returning (select count(*) from finished) as "finished!";
update schedules set next_index = 1, next_run_on = (:today::date + interval '1 month')::date, updated_at = now() where id = :id::uuid;
COMMIT;
