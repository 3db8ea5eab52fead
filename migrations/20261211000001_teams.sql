-- Teams: members with roles, sessions as rows (the org a session acts for, and a way to end it),
-- invitations and one-time account tokens (stored hashed), API keys that belong to a member and carry
-- a role, and the audit log.

-- owner: everything, members and the org's settings included; member: invoices, customers, payments;
-- viewer: reads only.
alter table memberships drop constraint memberships_role_check;
alter table memberships add constraint memberships_role_check
    check (role in ('owner', 'member', 'viewer'));

-- A user proves the address by following the emailed link. Accounts made before verification
-- existed had no way to prove it; they keep what they could do.
alter table users add column email_verified_at timestamptz;
update users set email_verified_at = created_at;

-- One row per login: the cookie's session carries this row's id, and every request finds its user
-- through it (an ended row is a logged-out session). The row holds the org the session acts for.
create table user_sessions (
    id uuid primary key,
    user_id uuid not null references users (id) on delete cascade,
    org_id uuid not null references orgs (id) on delete cascade,
    created_at timestamptz not null default now(),
    last_seen_at timestamptz not null default now(),
    user_agent text not null default '' check (length(user_agent) <= 512),
    address text not null default '' check (length(address) <= 64),
    ended_at timestamptz
);
create index user_sessions_user_idx on user_sessions (user_id, created_at desc) where ended_at is null;
create index user_sessions_org_idx on user_sessions (org_id, user_id) where ended_at is null;
create index user_sessions_ended_idx on user_sessions (ended_at) where ended_at is not null;
create index user_sessions_idle_idx on user_sessions (last_seen_at) where ended_at is null;

-- An invitation is the invite form's attempt (source_key, unique per org: a double click is one
-- invitation and one email) and a link whose token only the email holds (token_hash).
create table invitations (
    id uuid primary key,
    org_id uuid not null references orgs (id) on delete cascade,
    email text not null check (length(email) between 3 and 254),
    role text not null check (role in ('owner', 'member', 'viewer')),
    token_hash bytea not null,
    invited_by uuid references users (id) on delete set null,
    source_key text not null check (length(source_key) between 1 and 255),
    created_at timestamptz not null default now(),
    expires_at timestamptz not null,
    accepted_at timestamptz,
    accepted_by uuid references users (id) on delete set null,
    revoked_at timestamptz,
    constraint invitations_token_key unique (token_hash),
    constraint invitations_org_source_key unique (org_id, source_key),
    check (accepted_at is null or revoked_at is null)
);
-- One open invitation per address and org: inviting again while one is open is a resend.
create unique index invitations_open_email_key on invitations (org_id, lower(email))
    where accepted_at is null and revoked_at is null;

-- Emailed one-time links of a user: verify an address (email: the address it proves; a change of
-- address takes effect when the new one is verified), reset a password. Used once (used_at, set in
-- the transaction that does the work), valid until expires_at.
create table user_tokens (
    token_hash bytea primary key,
    user_id uuid not null references users (id) on delete cascade,
    purpose text not null check (purpose in ('verify_email', 'reset_password')),
    email text not null check (length(email) between 3 and 254),
    -- The form attempt that asked for it (a double click is one token and one email).
    source_key text check (length(source_key) between 1 and 255),
    created_at timestamptz not null default now(),
    expires_at timestamptz not null,
    used_at timestamptz,
    constraint user_tokens_source_key unique (user_id, purpose, source_key)
);
create index user_tokens_user_idx on user_tokens (user_id, purpose, created_at desc);
create index user_tokens_expires_idx on user_tokens (expires_at);

-- A key acts for its creator with a role no higher than theirs, until it expires or they leave.
alter table api_keys add column role text not null default 'member'
    check (role in ('owner', 'member', 'viewer'));
alter table api_keys add column expires_at timestamptz;
create index api_keys_creator_idx on api_keys (created_by, org_id);

-- Who changed membership, roles, keys, passwords, and when; owners read it.
create table audit_events (
    id uuid primary key,
    org_id uuid not null references orgs (id) on delete cascade,
    actor_id uuid references users (id) on delete set null,
    actor_email text not null,
    action text not null check (length(action) between 1 and 64),
    subject text not null default '' check (length(subject) <= 300),
    detail jsonb not null default '{}',
    created_at timestamptz not null default now()
);
create index audit_events_org_idx on audit_events (org_id, created_at desc, id desc);

-- Account emails go through the outbox too (invitation, verification, password reset); their link
-- is in the payload until the row is sent or dead.
alter table outbox drop constraint outbox_kind_check;
alter table outbox add constraint outbox_kind_check
    check (kind in ('invoice_email', 'payment_receipt', 'invitation', 'verify_email', 'reset_password'));

-- Roles in order, for "no higher than" in SQL.
create function role_rank(role text) returns integer
    language sql immutable strict parallel safe
    return case role when 'owner' then 3 when 'member' then 2 when 'viewer' then 1 end;

-- Keys that name no creator cannot say whose role they carry: they stop.
update api_keys set revoked_at = now() where created_by is null and revoked_at is null;
