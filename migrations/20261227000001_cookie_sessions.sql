-- The cookie's sessions (tower-sessions records: the cookie's id, the session's data as a JSON
-- object, its expiry), kept as jsonb so the statement that loads a session also reads the user its
-- login names (app/src/ssr/auth.rs load_cookie_session). A session of the store this replaces
-- (tower_sessions.session, MessagePack) is moved here when its cookie is next seen
-- (server/src/session_store.rs PgSessions::adopt), so nobody is signed out by the upgrade.
create table cookie_sessions (
    id text primary key,
    data jsonb not null check (jsonb_typeof(data) = 'object'),
    expiry_date timestamptz not null
);
create index cookie_sessions_expiry_idx on cookie_sessions (expiry_date);
