-- GET /activity?q=<an idempotency key> (lab bench read), as the database sees it: the activity page's server
-- function (app/src/api.rs activity, rendered by app/src/pages/activity.rs) ->
-- app/src/ssr/activity.rs list: one page of 50 attempts (+1), each with its webhook payload or
-- API response, then the last 24 hours' counts for the whole org.
-- The session load (server/src/session_store.rs PgSessions::load -> app/src/ssr/auth.rs
-- load_cookie_session: the cookie's session and, in the same statement, the user, org and role its
-- login names) comes first: the auth layer of server/src/web.rs router runs it on every request that
-- carries the session cookie.
-- Unprepared in the server (QueryBuilder ... .persistent(false): an unnamed statement, described,
-- then parsed and planned with its pattern on every request, so that a `like` prefix can use its
-- index); pgbench -M extended sends it the same way.
-- The server binds the key with % appended as $2.
-- Variables: -D org, user, sid, session, key (e.g. k999: the org's longest API key).
-- include: parts/session.sql session=:session
;
-- include: parts/activity_page.sql
where a.org_id = :org::uuid and a.key like (:key::text || '%') order by a.created_at desc, a.id desc limit 51;
-- include: parts/activity_counts.sql
