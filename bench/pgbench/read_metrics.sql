-- GET /metrics (lab bench read sends METRICS_TOKEN as a bearer token, or nothing in dev mode where
-- the route is open; no session cookie), as the database sees it: server/src/web.rs metrics_text ->
-- app/src/ssr/outbox.rs gauges: GAUGES_SQL (each count at most 1,001 rows), over the whole outbox (every org),
-- each part through its partial index. The statements are prepared (sqlx statement cache).
select (select count(*) from (select from outbox where sent_at is null and dead_at is null limit 1001) p), coalesce(extract(epoch from now() - (select min(next_attempt_at) from outbox where sent_at is null and dead_at is null and next_attempt_at <= now())), 0)::float8, (select count(*) from (select from outbox where dead_at is not null limit 1001) d);
-- app/src/ssr/schedules/run.rs backlog: the schedule periods due and not run, and the oldest's age
-- ($1, the clock: here now()), through the partial index of schedules with a next run.
select count(*) as "due!",
       coalesce(extract(epoch from now()::timestamptz - min(s.next_run_on::timestamp at time zone o.time_zone)), 0)::float8
       as "age!"
from schedules s join orgs o on o.id = s.org_id
where s.paused_at is null and s.next_run_on is not null
  and s.next_run_on <= (now()::timestamptz at time zone 'UTC')::date + 1
  and s.next_run_on <= (now()::timestamptz at time zone o.time_zone)::date;
-- app/src/ssr/reminders.rs backlog: reminders due and not queued (at most 1,000), per org with
-- steps through the index of its open invoices by due date ($2: the local hour, $3: catch-up days).
select count(*) as "due!" from (
    select 1
    from (select org_id, min(offset_days) as first, max(offset_days) as last
          from reminder_steps group by org_id) p
    join orgs o on o.id = p.org_id
    join invoices i on i.org_id = p.org_id
    join lateral (
        select st.offset_days from reminder_steps st
        where st.org_id = i.org_id
          and i.due_date + st.offset_days <= (now()::timestamptz at time zone o.time_zone)::date
        order by st.offset_days desc
        limit 1
    ) s on true
    where i.status = 'open' and not i.reminders_off and i.collection_method = 'send_invoice'
      and i.due_date <= (now()::timestamptz at time zone o.time_zone)::date - p.first
      and i.due_date >= (now()::timestamptz at time zone o.time_zone)::date - p.last - 30::int
      and i.payment_state in ('unpaid', 'partially_paid')
      and i.amount_paid_cents < i.total_cents - i.amount_credited_cents
      and extract(hour from now()::timestamptz at time zone o.time_zone)::int >= 9
      and not exists (select 1 from customers c where c.id = i.customer_id and c.reminders_off)
      and not exists (select 1 from reminders r where r.invoice_id = i.id and r.offset_days = s.offset_days)
    limit 1000
) due;
