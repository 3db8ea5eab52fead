-- Who registered a webhook endpoint (the form's user, or the API key's creator), and why one was
-- disabled: a reset or change of that user's password disables what they registered in the last
-- seven days, until an owner enables it again.
alter table webhook_endpoints
    add column created_by uuid references users (id) on delete set null,
    add column disabled_reason text
        check (disabled_reason is null or disabled_reason in ('failing', 'credentials_reset'));
update webhook_endpoints set disabled_reason = 'failing' where disabled_at is not null;
-- Endpoints registered with an API key before: counted to the key's maker.
update webhook_endpoints w set created_by = k.created_by
from api_keys k
where w.created_by is null and w.source_key like 'api:%'
  and k.id::text = split_part(substr(w.source_key, 5), '/', 1);
create index webhook_endpoints_creator_idx on webhook_endpoints (created_by, created_at)
    where deleted_at is null and disabled_at is null;

-- Open invitations by their inviter: a reset of the inviter's password withdraws them.
create index invitations_open_inviter_idx on invitations (invited_by)
    where accepted_at is null and revoked_at is null;

-- When the session last proved the password (its login, or the password asked again): changing
-- where the org is paid, or who it is on its e-invoices, asks for it again after 10 minutes.
alter table user_sessions add column authenticated_at timestamptz not null default now();
update user_sessions set authenticated_at = created_at;

-- The owners' notices: a member's password reset or changed (what was taken back), and a change of
-- where the org is paid or who it is on its e-invoices.
alter table outbox drop constraint outbox_kind_check;
alter table outbox add constraint outbox_kind_check
    check (kind in ('invoice_email', 'payment_receipt', 'invitation', 'verify_email', 'reset_password',
                    'account_notice', 'account_exists', 'no_account', 'expire_checkout',
                    'stripe_refund', 'reminder', 'quote_email', 'webhook', 'webhook_disabled',
                    'customer_import', 'credentials_notice', 'org_change_notice'));

-- The email gate: every email sent in an org's name (invoices, quotes, reminders, invitations)
-- is queued with its recipient and the time it counts against the org's hourly allowance and the
-- recipient's (its send time: an automatic email beyond the allowance waits for its slot).
alter table outbox add column recipient text, add column gated_at timestamptz;
create index outbox_gated_org_idx on outbox (org_id, gated_at desc) where gated_at is not null;
create index outbox_gated_recipient_idx on outbox (lower(recipient), gated_at desc)
    where gated_at is not null;
