-- API keys: the API client is the key. Stored as a SHA-256 hash (the keys are long and random, so a
-- fast hash is enough) with a short visible prefix for the settings page.
create table api_keys (
    id uuid primary key,
    org_id uuid not null references orgs (id) on delete cascade,
    created_by uuid references users (id) on delete set null,
    name text not null check (length(name) between 1 and 100),
    prefix text not null,
    hash bytea not null,
    created_at timestamptz not null default now(),
    last_used_at timestamptz,
    revoked_at timestamptz,
    constraint api_keys_hash_key unique (hash)
);
create index api_keys_org_idx on api_keys (org_id, created_at desc);
