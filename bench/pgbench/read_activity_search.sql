-- GET /activity?q=<an idempotency key> (lab bench read), as the database sees it: the activity page's server
-- function (app/src/api.rs activity, rendered by app/src/pages/activity.rs) ->
-- app/src/ssr/activity.rs list: one page of 50 attempts (+1), each with its webhook payload or
-- API response, then the last 24 hours' counts for the whole org.
-- The session load (tower-sessions-sqlx-store PostgresStore::load; the app passes its clock as
-- $2, here now()) and the user load (axum-login Backend::get_user -> app/src/ssr/auth.rs
-- find_session, by the session row) come first: the auth layer of server/src/web.rs router runs them on every
-- request that carries the session cookie.
-- Unprepared in the server (QueryBuilder ... .persistent(false): an unnamed statement, described,
-- then parsed and planned with its pattern on every request, so that a `like` prefix can use its
-- index); pgbench -M extended sends it the same way.
-- The server binds the key with % appended as $2.
-- Variables: -D org, user, sid, session, key (e.g. k999: the org's longest API key).
select data from "tower_sessions"."session"
where id = :session and expiry_date > now();
select u.id, u.email, u.password_hash, u.email_verified_at is not null as "verified!",
       o.id as org_id, o.name as org_name, m.role,
       s.last_seen_at < now() - interval '1 minute' as "stale!"
from user_sessions s
join users u on u.id = s.user_id
join memberships m on m.user_id = s.user_id and m.org_id = s.org_id
join orgs o on o.id = s.org_id
where s.id = :sid::uuid and s.user_id = :user::uuid and s.ended_at is null;
select a.id, a.created_at, a.surface, a.key, a.outcome, a.invoice_id,
       (select i.number_text from invoices i where i.id = a.invoice_id) as number_text,
       a.duration_ms, a.request_id,
       case a.surface
           when 'webhook' then (select e.payload::text from stripe_events e
                                -- The attempt's owner is `stripe/<account>`: the
                                -- event's whole key, so its primary key finds it.
                                where e.account = substr(a.owner, 8) and e.id = a.key
                                  and e.org_id = a.org_id)
           when 'api' then (select convert_from(c.response_body, 'UTF8') from claims c
                            where c.scope = 'api' and c.owner = a.owner and c.key = a.key)
       end as detail
from attempts a
where a.org_id = :org::uuid and a.key like (:key::text || '%') order by a.created_at desc, a.id desc limit 51;
select surface, outcome, count(*) as "count!"
from attempts
where org_id = :org::uuid and created_at > now() - interval '24 hours'
group by surface, outcome
order by surface, outcome;
