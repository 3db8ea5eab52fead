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
