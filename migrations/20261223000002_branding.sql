-- The business's own look on what its customers see: a logo (stored re-encoded as PNG, never as
-- uploaded), an accent colour and a footer, on the public pages, the PDFs and the emails.
create table org_logos (
    org_id uuid primary key references orgs (id) on delete cascade,
    -- Names the served file (/logos/<token>.png); each upload has a new one, so the file can be
    -- cached for good.
    token text not null unique,
    png bytea not null check (length(png) <= 2097152),
    width integer not null check (width between 1 and 4096),
    height integer not null check (height between 1 and 4096),
    updated_at timestamptz not null default now()
);

alter table orgs
    add column accent_color text check (accent_color ~ '^#[0-9a-f]{6}$'),
    add column footer_text text not null default '' check (length(footer_text) <= 300);
