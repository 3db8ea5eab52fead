-- Peppol: participant ids (scheme:value, checked by the app), how each customer receives its
-- e-invoices, the documents sent through the access point, and the inbox of received ones.
alter table orgs add column peppol_id text check (length(peppol_id) <= 60);
alter table customers
    add column peppol_id text check (length(peppol_id) <= 60),
    add column einvoice_channel text not null default 'email'
        check (einvoice_channel in ('email', 'peppol')),
    add constraint customers_peppol_needs_id check (einvoice_channel = 'email' or peppol_id is not null);

-- The parties as finalization copies them onto the invoice, now with their Peppol ids and the
-- buyer's channel.
create or replace function customer_party(c customers) returns jsonb
language sql immutable strict as $$
    select jsonb_build_object(
        'name', c.name, 'email', c.email, 'vat_id', coalesce(c.vat_id, ''),
        'buyer_reference', c.buyer_reference,
        'peppol_id', coalesce(c.peppol_id, ''), 'einvoice_channel', c.einvoice_channel,
        'address', jsonb_build_object('line1', c.address_line1, 'line2', c.address_line2,
                                      'city', c.city, 'postal_code', c.postal_code,
                                      'region', c.region, 'country', coalesce(c.country, '')))
$$;

create or replace function org_party(o orgs) returns jsonb
language sql immutable strict as $$
    select jsonb_build_object(
        'name', o.name, 'legal_name', o.legal_name, 'vat_id', o.vat_id,
        'tax_registration_id', o.tax_registration_id, 'email', o.contact_email,
        'phone', o.contact_phone, 'peppol_id', coalesce(o.peppol_id, ''),
        'address', jsonb_build_object('line1', o.address_line1, 'line2', o.address_line2,
                                      'city', o.city, 'postal_code', o.postal_code,
                                      'region', o.region, 'country', coalesce(o.country, '')),
        'bank', jsonb_build_object('holder', o.bank_account_holder, 'iban', o.bank_iban,
                                   'bic', o.bank_bic, 'reference', o.payment_reference))
$$;

-- One row per transmission of a document version through the access point. The instance id (the
-- SBDH's) is derived from the document and its version: a retried submission is the same
-- transmission, and the access point recognises it.
create table peppol_transmissions (
    id uuid primary key,
    org_id uuid not null references orgs (id) on delete cascade,
    invoice_id uuid not null references invoices (id) on delete cascade,
    credit_note_id uuid references credit_notes (id) on delete cascade,
    version integer not null default 1 check (version >= 1),
    instance_id uuid not null unique,
    profile text not null check (profile in ('peppol', 'xrechnung')),
    sender text not null,
    receiver text not null,
    state text not null default 'queued' check (state in ('queued', 'sent', 'delivered', 'failed')),
    reason text,
    attempts integer not null default 0,
    created_at timestamptz not null default now(),
    sent_at timestamptz,
    updated_at timestamptz not null default now(),
    -- When its status is next asked of the access point (sent, not yet delivered or failed).
    poll_at timestamptz
);
create unique index peppol_transmissions_document_version
    on peppol_transmissions (org_id, coalesce(credit_note_id, invoice_id), version);
create index peppol_transmissions_invoice on peppol_transmissions (invoice_id);
create index peppol_transmissions_poll on peppol_transmissions (poll_at) where poll_at is not null;

alter table outbox drop constraint outbox_kind_check;
alter table outbox add constraint outbox_kind_check
    check (kind in ('invoice_email', 'payment_receipt', 'invitation', 'verify_email', 'reset_password',
                    'account_notice', 'account_exists', 'no_account', 'expire_checkout',
                    'stripe_refund', 'reminder', 'quote_email', 'webhook', 'webhook_disabled',
                    'customer_import', 'credentials_notice', 'org_change_notice',
                    'payment_method_link', 'charge_action', 'detach_payment_method', 'peppol_send'));

-- E-invoices addressed to the org: uploaded, or delivered by the access point. The same bytes
-- twice are one document; the same seller and number with other bytes are kept and point at the
-- first (`duplicate_of`).
create table received_documents (
    id uuid primary key,
    org_id uuid not null references orgs (id) on delete cascade,
    sha256 bytea not null check (length(sha256) = 32),
    source text not null check (source in ('upload', 'peppol')),
    syntax text not null check (syntax in ('ubl', 'cii')),
    -- The file as it came (XML, or the Factur-X PDF) and the XML read from it.
    original bytea not null,
    original_type text not null check (original_type in ('xml', 'pdf')),
    xml bytea not null,
    seller_name text not null,
    seller_id text not null default '',
    number text not null,
    issue_date date,
    due_date date,
    currency text not null,
    total_cents bigint not null,
    due_cents bigint not null,
    -- The document as read: lines, taxes, payment details (for its page).
    content jsonb not null,
    valid boolean not null,
    failed_rules jsonb not null default '[]',
    duplicate_of uuid references received_documents (id),
    paid_at timestamptz,
    instance_id text,
    created_at timestamptz not null default now(),
    unique (org_id, sha256)
);
create index received_documents_org on received_documents (org_id, created_at desc, id);
create index received_documents_number on received_documents (org_id, number);
-- A delivered document finds its org by the Peppol id it is addressed to.
create unique index orgs_peppol_id on orgs (peppol_id) where peppol_id is not null;

-- A finalized invoice (or a credit note of one) whose buyer receives by Peppol is queued for its
-- access point in the transaction that finalizes it: a transmission row (its instance id derived
-- from the document and version 1) and the outbox job that sends it. A German public buyer (its id
-- a Leitweg-ID, scheme 0204) gets XRechnung, anyone else Peppol BIS Billing 3.0.
create function peppol_queue(p_org uuid, p_invoice uuid, p_credit_note uuid, p_seller jsonb,
                             p_buyer jsonb) returns void
language plpgsql as $$
declare
    transmission uuid;
begin
    if coalesce(p_buyer ->> 'einvoice_channel', 'email') <> 'peppol' then
        return;
    end if;
    insert into peppol_transmissions (id, org_id, invoice_id, credit_note_id, version, instance_id,
                                      profile, sender, receiver)
    values (gen_random_uuid(), p_org, p_invoice, p_credit_note, 1,
            md5('peppol:' || coalesce(p_credit_note, p_invoice) || ':1')::uuid,
            case when p_buyer ->> 'peppol_id' like '0204:%' then 'xrechnung' else 'peppol' end,
            coalesce(p_seller ->> 'peppol_id', ''), coalesce(p_buyer ->> 'peppol_id', ''))
    on conflict do nothing
    returning id into transmission;
    if transmission is not null then
        insert into outbox (id, org_id, invoice_id, kind, payload)
        values (gen_random_uuid(), p_org, p_invoice, 'peppol_send',
                jsonb_build_object('transmission_id', transmission));
    end if;
end
$$;

create function peppol_on_finalize() returns trigger
language plpgsql as $$
begin
    if new.finalized_at is not null and (tg_op = 'INSERT' or old.finalized_at is null) then
        perform peppol_queue(new.org_id, new.id, null, new.seller, new.buyer);
    end if;
    return null;
end $$;
create trigger invoices_peppol_on_finalize
    after insert or update of finalized_at on invoices
    for each row execute function peppol_on_finalize();

create function peppol_on_credit_note() returns trigger
language plpgsql as $$
begin
    perform peppol_queue(new.org_id, new.invoice_id, new.id, i.seller, i.buyer)
    from invoices i where i.id = new.invoice_id;
    return null;
end $$;
create trigger credit_notes_peppol
    after insert on credit_notes
    for each row execute function peppol_on_credit_note();
