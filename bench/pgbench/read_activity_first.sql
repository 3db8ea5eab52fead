-- GET /activity (lab bench read), as the database sees it: the activity page's server function
-- (app/src/api.rs activity, rendered by app/src/pages/activity.rs) -> app/src/ssr/activity.rs
-- list: one page of 50 attempts (+1), each with its webhook payload or API response, then the
-- last 24 hours' counts for the whole org.
-- The session load (server/src/session_store.rs PgSessions::load -> app/src/ssr/auth.rs
-- load_cookie_session: the cookie's session and, in the same statement, the user, org and role its
-- login names) comes first: the auth layer of server/src/web.rs router runs it on every request that
-- carries the session cookie.
-- Prepared in the server (sqlx's statement cache: with no `like` pattern, the statement's generic
-- plan reads the same index); pgbench -M prepared sends it the same way.
-- Variables: -D org, user, sid, session.
-- include: parts/session.sql session=:session
;
-- include: parts/activity_page.sql
where a.org_id = :org::uuid order by a.created_at desc, a.id desc limit 51;
-- include: parts/activity_counts.sql
