-- Lanes: the workers' queues, one per kind of work, each with its own places, so a backlog of one
-- kind never holds up another (an org's webhook deliveries cannot starve anyone's password reset);
-- and the org a row is served for, inside its lane, round by round (account emails, which have no
-- org, share one key).
alter table outbox
    add column lane text not null generated always as (
        case
            when kind in ('verify_email', 'reset_password', 'account_notice', 'account_exists',
                          'no_account', 'invitation', 'credentials_notice', 'org_change_notice',
                          'webhook_disabled') then 'account'
            when kind in ('invoice_email', 'payment_receipt', 'reminder', 'quote_email') then 'customer'
            when kind = 'webhook' then 'webhooks'
            else 'jobs'
        end) stored,
    add column org_key uuid not null generated always as (
        coalesce(org_id, '00000000-0000-0000-0000-000000000000'::uuid)) stored;
create index outbox_lane_due_idx on outbox (lane, org_key, next_attempt_at)
    where sent_at is null and dead_at is null;
