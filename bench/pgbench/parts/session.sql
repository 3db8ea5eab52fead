select data from "tower_sessions"."session"
where id = :session and expiry_date > now();
select u.id, u.email, u.password_hash, u.email_verified_at is not null as "verified!",
       o.id as org_id, o.name as org_name, o.einvoicing, m.role,
       s.last_seen_at < now() - interval '1 minute' as "stale!"
from user_sessions s
join users u on u.id = s.user_id
join memberships m on m.user_id = s.user_id and m.org_id = s.org_id
join orgs o on o.id = s.org_id
where s.id = :sid::uuid and s.user_id = :user::uuid and s.ended_at is null;
