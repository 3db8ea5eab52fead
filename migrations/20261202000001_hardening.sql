-- What the open internet needs of the schema: every table that grows with traffic has an index its
-- retention sweep can use, the metrics read only what is pending or dead (never the sent history),
-- and the activity page pages by key and searches by index.

-- Metrics and retention of the outbox: dead rows and sent rows each have their own partial index;
-- pending rows already have outbox_due_idx.
create index outbox_dead_idx on outbox (dead_at) where dead_at is not null;
create index outbox_sent_idx on outbox (sent_at) where sent_at is not null;

-- Retention of attempts across orgs.
create index attempts_created_idx on attempts (created_at);
-- Activity search by key: exact or prefix, within an org (text_pattern_ops serves `like 'abc%'`).
create index attempts_org_key_idx on attempts (org_id, key text_pattern_ops);

-- Retention of refunds whose payment never arrived.
create index pending_refunds_received_idx on pending_refunds (received_at);
