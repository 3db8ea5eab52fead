-- GET /metrics (lab bench read sends METRICS_TOKEN as a bearer token, or nothing in dev mode where
-- the route is open; no session cookie), as the database sees it: server/src/web.rs metrics_text ->
-- app/src/ssr/outbox.rs gauges: PENDING_SQL and DEAD_SQL (at most 1,001 rows), over the whole outbox (every org),
-- each through its partial index. Both statements are prepared (sqlx statement cache).
select count(*), coalesce(extract(epoch from now() - min(next_attempt_at) filter (where next_attempt_at <= now())), 0)::float8 from outbox where sent_at is null and dead_at is null;
select count(*) from (select from outbox where dead_at is not null limit 1001) dead;
