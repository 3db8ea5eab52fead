select s.data as "data: SessionData",
       s.expiry_date,
       (s.data #>> '{axum-login.data,user_id,user}')::uuid as "key_user?",
       (s.data #>> '{axum-login.data,user_id,session}')::uuid as "key_session?",
       l.id as "id?", l.email as "email?", l.password_hash as "password_hash?",
       l.verified as "verified?", l.org_id as "org_id?", l.org_name as "org_name?",
       l.einvoicing as "einvoicing?", l.role as "role?", l.stale as "stale?"
from cookie_sessions s
left join lateral (
    select u.id, u.email, u.password_hash, u.email_verified_at is not null as verified,
           o.id as org_id, o.name as org_name, o.einvoicing, m.role,
           us.last_seen_at < now() - interval '1 minute' as stale
    from user_sessions us
    join users u on u.id = us.user_id
    join memberships m on m.user_id = us.user_id and m.org_id = us.org_id
    join orgs o on o.id = us.org_id
    where us.id = (s.data #>> '{axum-login.data,user_id,session}')::uuid
      and us.user_id = (s.data #>> '{axum-login.data,user_id,user}')::uuid
      and us.ended_at is null
    limit 1
) l on true
where s.id = {session} and s.expiry_date > now()
