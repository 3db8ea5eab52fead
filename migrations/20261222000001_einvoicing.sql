-- What EN 16931 e-invoices need: structured postal addresses with an ISO 3166 country, VAT ids,
-- the seller's legal details, tax categories, and what the parties were when an invoice was
-- finalized (a finalized invoice never changes with its org or customer).

-- The org's legal details. The free-text address becomes the first line.
alter table orgs rename column address to address_line1;
update orgs set address_line1 = regexp_replace(btrim(address_line1), '\s*\n\s*', ', ', 'g');
alter table orgs
    add column legal_name text not null default '' check (length(legal_name) <= 200),
    add column address_line2 text not null default '' check (length(address_line2) <= 200),
    add column city text not null default '' check (length(city) <= 100),
    add column postal_code text not null default '' check (length(postal_code) <= 20),
    add column region text not null default '' check (length(region) <= 100),
    add column country text check (country ~ '^[A-Z]{2}$'),
    add column vat_id text not null default '' check (length(vat_id) <= 30),
    add column tax_registration_id text not null default '' check (length(tax_registration_id) <= 50),
    add column contact_email text not null default '' check (length(contact_email) <= 254),
    add column contact_phone text not null default '' check (length(contact_phone) <= 50),
    -- Invoices are finalized only when they make a valid e-invoice; PDFs carry factur-x.xml.
    add column einvoicing boolean not null default false;

-- The customer's: the billing address becomes the first line, the tax id is the VAT id.
alter table customers rename column billing_address to address_line1;
alter table customers rename column tax_id to vat_id;
update customers set address_line1 = regexp_replace(btrim(address_line1), '\s*\n\s*', ', ', 'g')
where address_line1 ~ '\n';
alter table customers
    add column address_line2 text not null default '' check (length(address_line2) <= 200),
    add column city text not null default '' check (length(city) <= 100),
    add column postal_code text not null default '' check (length(postal_code) <= 20),
    add column region text not null default '' check (length(region) <= 100),
    add column country text check (country ~ '^[A-Z]{2}$'),
    -- BT-10, e.g. a German Leitweg-ID.
    add column buyer_reference text not null default '' check (length(buyer_reference) <= 200);

-- Tax rates: the EN 16931 VAT category (never changes, like the percent). Existing rates are
-- standard-rated, or zero-rated at 0 %.
alter table tax_rates
    add column category text,
    add column exemption_reason text not null default '' check (length(exemption_reason) <= 300);
update tax_rates set category = case when percent_milli > 0 then 'S' else 'Z' end;
alter table tax_rates
    alter column category set not null,
    alter column category set default 'S',
    add constraint tax_rates_category_check check (category in ('S', 'Z', 'E', 'AE', 'K', 'G', 'O')),
    add constraint tax_rates_category_percent check ((category = 'S') = (percent_milli > 0)),
    add constraint tax_rates_exemption_reason check (category <> 'E' or exemption_reason <> '');

-- An address as lines: line 1, line 2, "postal code city", region, country.
create function postal_text(line1 text, line2 text, postal_code text, city text, region text,
                            country text) returns text
language sql immutable as $$
    select concat_ws(E'\n', nullif(line1, ''), nullif(line2, ''),
                     nullif(btrim(coalesce(postal_code, '') || ' ' || coalesce(city, '')), ''),
                     nullif(region, ''), country)
$$;

create function customer_postal(c customers) returns text
language sql immutable strict as $$
    select postal_text(c.address_line1, c.address_line2, c.postal_code, c.city, c.region, c.country)
$$;

-- The parties as an e-invoice names them, copied onto the invoice when it is finalized.
create function customer_party(c customers) returns jsonb
language sql immutable strict as $$
    select jsonb_build_object(
        'name', c.name, 'email', c.email, 'vat_id', coalesce(c.vat_id, ''),
        'buyer_reference', c.buyer_reference,
        'address', jsonb_build_object('line1', c.address_line1, 'line2', c.address_line2,
                                      'city', c.city, 'postal_code', c.postal_code,
                                      'region', c.region, 'country', coalesce(c.country, '')))
$$;

create function org_party(o orgs) returns jsonb
language sql immutable strict as $$
    select jsonb_build_object(
        'name', o.name, 'legal_name', o.legal_name, 'vat_id', o.vat_id,
        'tax_registration_id', o.tax_registration_id, 'email', o.contact_email,
        'phone', o.contact_phone,
        'address', jsonb_build_object('line1', o.address_line1, 'line2', o.address_line2,
                                      'city', o.city, 'postal_code', o.postal_code,
                                      'region', o.region, 'country', coalesce(o.country, '')),
        'bank', jsonb_build_object('holder', o.bank_account_holder, 'iban', o.bank_iban,
                                   'bic', o.bank_bic, 'reference', o.payment_reference))
$$;

alter table invoices
    add column seller jsonb,
    add column buyer jsonb;
