-- Webhooks out: endpoints an org registers, the events its changes make (written by triggers in the
-- transaction of the change, once per change), one outbox row per event and endpoint (delivered by
-- the outbox workers under their leases), and a log of every delivery attempt.

create table webhook_endpoints (
    id uuid primary key,
    org_id uuid not null references orgs (id) on delete cascade,
    url text not null check (length(url) between 1 and 2048),
    description text not null default '' check (length(description) <= 500),
    events text[] not null check (
        cardinality(events) between 1 and 11
        and events <@ array['invoice.finalized', 'invoice.sent', 'invoice.paid',
                            'invoice.partially_paid', 'invoice.voided', 'invoice.overdue',
                            'credit_note.issued', 'payment.recorded', 'payment.refunded',
                            'quote.accepted', 'customer.created']
    ),
    -- whsec_<base64>: signs every delivery; after a rotation the previous one signs too until
    -- previous_secret_until.
    secret text not null,
    previous_secret text,
    previous_secret_until timestamptz,
    -- The attempt that registered it ('form:<key>', 'api:<key id>/<key>').
    source_key text not null,
    -- The first failure of the current run of failures (null after a success).
    failing_since timestamptz,
    disabled_at timestamptz,
    deleted_at timestamptz,
    created_at timestamptz not null default now(),
    constraint webhook_endpoints_org_source_key unique (org_id, source_key)
);
create index webhook_endpoints_org_idx on webhook_endpoints (org_id, created_at)
    where deleted_at is null;

-- One row per change: its id is the webhook-id every delivery of it carries, its body the bytes
-- every delivery signs.
create table webhook_events (
    id uuid primary key,
    org_id uuid not null references orgs (id) on delete cascade,
    type text not null,
    -- The change: '<type>:<id>[:<what changed>]', unique per org, so a change replayed (a retried
    -- transaction, a webhook from Stripe redelivered) makes no second event.
    source_key text not null,
    body text not null,
    created_at timestamptz not null default now(),
    constraint webhook_events_once unique (org_id, source_key)
);
create index webhook_events_created_idx on webhook_events (created_at);

-- What each delivery attempt got: the status (null: no answer), how long, the first 1 KB.
create table webhook_attempts (
    id uuid primary key,
    org_id uuid not null references orgs (id) on delete cascade,
    endpoint_id uuid not null references webhook_endpoints (id) on delete cascade,
    event_id uuid not null references webhook_events (id) on delete cascade,
    outbox_id uuid not null,
    attempted_at timestamptz not null default now(),
    status_code integer,
    latency_ms integer not null,
    response text not null default '' check (octet_length(response) <= 1024),
    error text check (length(error) <= 300)
);
create index webhook_attempts_endpoint_idx on webhook_attempts (endpoint_id, attempted_at desc);
create index webhook_attempts_attempted_idx on webhook_attempts (attempted_at);

alter table outbox drop constraint outbox_kind_check;
alter table outbox add constraint outbox_kind_check
    check (kind in ('invoice_email', 'payment_receipt', 'invitation', 'verify_email', 'reset_password',
                    'account_notice', 'account_exists', 'no_account', 'expire_checkout',
                    'stripe_refund', 'reminder', 'quote_email', 'webhook', 'webhook_disabled'));
create index outbox_webhook_endpoint_idx on outbox ((payload ->> 'endpoint_id'))
    where kind = 'webhook';

-- The event `p_type` of change `p_key` in `p_org`, with `p_data`: written, with a delivery for every
-- endpoint that wants it, when one does and the change made none before. One index probe when no
-- endpoint wants it.
create function webhook_emit(p_org uuid, p_type text, p_key text, p_data jsonb) returns void
language plpgsql as $$
declare
    event uuid;
begin
    perform from webhook_endpoints
    where org_id = p_org and deleted_at is null and disabled_at is null and p_type = any (events)
    limit 1;
    if not found then
        return;
    end if;
    insert into webhook_events (id, org_id, type, source_key, body)
    values (gen_random_uuid(), p_org, p_type, p_key,
            jsonb_build_object(
                'type', p_type,
                'timestamp', to_char(now() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'data', p_data)::text)
    on conflict (org_id, source_key) do nothing
    returning id into event;
    if event is null then
        return;
    end if;
    insert into outbox (id, org_id, kind, payload, max_attempts)
    select gen_random_uuid(), p_org, 'webhook',
           jsonb_build_object('event_id', event, 'endpoint_id', w.id), 1000
    from webhook_endpoints w
    where w.org_id = p_org and w.deleted_at is null and w.disabled_at is null
      and p_type = any (w.events);
end
$$;

create function webhook_invoice(i invoices) returns jsonb
language sql stable as $$
    select jsonb_build_object(
        'object', 'invoice', 'id', i.id, 'number', i.number_text, 'status', i.status,
        'payment_state', i.payment_state, 'currency', i.currency, 'total_cents', i.total_cents,
        'amount_paid_cents', i.amount_paid_cents, 'amount_credited_cents', i.amount_credited_cents,
        'amount_due_cents', greatest(i.total_cents - i.amount_credited_cents - i.amount_paid_cents, 0),
        'due_date', i.due_date, 'customer_id', i.customer_id, 'customer_name', i.customer_name,
        'customer_email', i.customer_email)
$$;

create function webhook_payment(p payments) returns jsonb
language sql stable as $$
    select jsonb_build_object(
        'object', 'payment', 'id', p.id, 'invoice_id', p.invoice_id, 'provider', p.provider,
        'method', p.method, 'reference', p.reference, 'status', p.status, 'currency', p.currency,
        'amount_cents', p.amount_cents, 'paid_on', p.paid_on)
$$;

create function webhook_refund(p payments, amount bigint) returns void
language sql as $$
    select webhook_emit(p.org_id, 'payment.refunded', 'payment.refunded:' || p.id || ':' || amount,
        jsonb_build_object('object', 'refund', 'payment_id', p.id, 'credit_note_id', null,
                           'invoice_id', p.invoice_id, 'provider', p.provider,
                           'amount_refunded_cents', amount, 'currency', p.currency))
$$;

create function invoices_webhooks() returns trigger
language plpgsql as $$
begin
    if new.status <> 'draft' and (tg_op = 'INSERT' or old.status = 'draft') then
        perform webhook_emit(new.org_id, 'invoice.finalized', 'invoice.finalized:' || new.id,
                             webhook_invoice(new));
    end if;
    if tg_op = 'UPDATE' then
        if new.status = 'void' and old.status <> 'void' then
            perform webhook_emit(new.org_id, 'invoice.voided', 'invoice.voided:' || new.id,
                                 webhook_invoice(new));
        end if;
        if new.status = 'paid' and old.status <> 'paid' then
            perform webhook_emit(new.org_id, 'invoice.paid',
                                 'invoice.paid:' || new.id || ':' || new.amount_paid_cents,
                                 webhook_invoice(new));
        elsif new.payment_state = 'partially_paid' and new.amount_paid_cents > old.amount_paid_cents then
            perform webhook_emit(new.org_id, 'invoice.partially_paid',
                                 'invoice.partially_paid:' || new.id || ':' || new.amount_paid_cents,
                                 webhook_invoice(new));
        end if;
    end if;
    return null;
end
$$;
create trigger invoices_webhooks after insert or update of status, amount_paid_cents, payment_state
    on invoices for each row execute function invoices_webhooks();

-- An invoice email is "sent" when the worker marks it sent (the mail server took it).
create function outbox_webhooks() returns trigger
language plpgsql as $$
begin
    if new.kind = 'invoice_email' and old.sent_at is null and new.sent_at is not null then
        perform webhook_emit(i.org_id, 'invoice.sent', 'invoice.sent:' || new.id, webhook_invoice(i))
        from invoices i where i.id = new.invoice_id;
    end if;
    return null;
end
$$;
create trigger outbox_webhooks after update of sent_at on outbox
    for each row execute function outbox_webhooks();

create function payments_webhooks() returns trigger
language plpgsql as $$
begin
    if new.status = 'succeeded' and (tg_op = 'INSERT' or old.status <> 'succeeded') then
        perform webhook_emit(new.org_id, 'payment.recorded', 'payment.recorded:' || new.id,
                             webhook_payment(new));
    end if;
    if tg_op = 'INSERT' then
        -- A refund that arrived before its payment.
        perform webhook_refund(new, r.amount_refunded_cents)
        from refunds r
        where r.provider = new.provider and r.provider_payment_id = new.provider_payment_id;
    end if;
    return null;
end
$$;
create trigger payments_webhooks after insert or update of status on payments
    for each row execute function payments_webhooks();

create function refunds_webhooks() returns trigger
language plpgsql as $$
begin
    perform webhook_refund(p, new.amount_refunded_cents)
    from payments p
    where p.provider = new.provider and p.provider_payment_id = new.provider_payment_id;
    return null;
end
$$;
create trigger refunds_webhooks after insert or update of amount_refunded_cents on refunds
    for each row execute function refunds_webhooks();

create function credit_notes_webhooks() returns trigger
language plpgsql as $$
begin
    perform webhook_emit(new.org_id, 'credit_note.issued', 'credit_note.issued:' || new.id,
        jsonb_build_object('object', 'credit_note', 'id', new.id, 'number', new.number_text,
                           'invoice_id', new.invoice_id, 'currency', new.currency,
                           'total_cents', new.total_cents, 'refund', new.refund,
                           'reason', new.reason));
    -- Money paid back outside the app, recorded with the credit note.
    if new.refunded_cents > 0 and new.refund = 'manual' then
        perform webhook_emit(new.org_id, 'payment.refunded',
            'payment.refunded:credit_note:' || new.id || ':' || new.refunded_cents,
            jsonb_build_object('object', 'refund', 'payment_id', null, 'credit_note_id', new.id,
                               'invoice_id', new.invoice_id, 'provider', 'manual',
                               'amount_refunded_cents', new.refunded_cents,
                               'currency', new.currency));
    end if;
    return null;
end
$$;
create trigger credit_notes_webhooks after insert or update of refunded_cents on credit_notes
    for each row execute function credit_notes_webhooks();

create function quotes_webhooks() returns trigger
language plpgsql as $$
begin
    if new.status = 'accepted' and old.status <> 'accepted' then
        perform webhook_emit(new.org_id, 'quote.accepted', 'quote.accepted:' || new.id,
            jsonb_build_object('object', 'quote', 'id', new.id, 'number', new.number_text,
                               'status', new.status, 'invoice_id', new.invoice_id));
    end if;
    return null;
end
$$;
create trigger quotes_webhooks after update of status on quotes
    for each row execute function quotes_webhooks();

create function customers_webhooks() returns trigger
language plpgsql as $$
begin
    perform webhook_emit(new.org_id, 'customer.created', 'customer.created:' || new.id,
        jsonb_build_object('object', 'customer', 'id', new.id, 'name', new.name,
                           'email', new.email));
    return null;
end
$$;
create trigger customers_webhooks after insert on customers
    for each row execute function customers_webhooks();
