-- GET /metrics (lab bench read, which sends the session cookie), as the database sees it: the
-- session and user loads of the auth layer (the route is inside it), then server/src/web.rs
-- metrics_text -> app/src/ssr/outbox.rs gauges: PENDING_SQL and DEAD_SQL, over the whole outbox
-- (every org).
-- The session load (tower-sessions-sqlx-store PostgresStore::load; the app passes its clock as
-- $2, here now()) and the user load (axum-login Backend::get_user -> app/src/ssr/auth.rs
-- find_user, by id) come first: the auth layer of server/src/web.rs router runs them on every
-- request that carries the session cookie.
-- All four statements are prepared (sqlx statement cache).
-- Variables: -D user, session.
select data from "tower_sessions"."session"
where id = :session and expiry_date > now();
select u.id, u.email, u.password_hash, o.id as org_id, o.name as org_name
from users u
join memberships m on m.user_id = u.id
join orgs o on o.id = m.org_id
where u.id = :user::uuid
order by m.created_at
limit 1;
select count(*), coalesce(extract(epoch from now() - min(next_attempt_at) filter (where next_attempt_at <= now())), 0)::float8 from outbox where sent_at is null and dead_at is null;
select count(*) from outbox where dead_at is not null;
