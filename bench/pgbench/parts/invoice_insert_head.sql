with org as (
    select number_format, number_reset, time_zone,
           extract(year from now() at time zone time_zone)::int as yr,
           (now() at time zone time_zone)::date as today, org_party(orgs) as seller,
           einvoicing
    from orgs where id = :org::uuid
), counter as (
    insert into invoice_counters (org_id, period, last_number)
    select :org::uuid, case when number_reset = 'yearly' then yr else 0 end, 1 from org
    where (md5(random()::text) || md5(random()::text))::text is not null
    on conflict (org_id, period) do update set last_number = invoice_counters.last_number + 1
    returning period, last_number
), invoice as (
    insert into invoices (id, org_id, status, number, number_period, number_text, public_token,
                          finalized_at, customer_id, customer_name, customer_email,
                          customer_address, customer_tax_id, currency, due_date, total_cents,
                          source_key, subtotal_cents, discount_percent_milli,
                          discount_amount_cents, discount_cents, tax_cents, notes,
                          payment_terms_days, seller, buyer, collection_method)
    select :inv::uuid, :org::uuid, case when c.last_number is null then 'draft' else 'open' end,
           c.last_number, c.period, invoice_number_text(org.number_format, c.last_number, org.yr),
           (lpad(to_hex((extract(epoch from clock_timestamp()) * 1000)::int8), 12, '0') || '7' || substr(md5(random()::text), 1, 19) || md5(random()::text))::text,
           case when c.last_number is not null then now() end,
           cu.id, h.customer_name, h.customer_email, coalesce(customer_postal(cu), ''), cu.vat_id,
           h.currency, coalesce(org.today + h.payment_terms_days, h.due_date), h.total_cents,
           h.source_key, h.subtotal_cents, h.discount_percent_milli, h.discount_amount_cents,
           h.discount_cents, h.tax_cents, h.notes, h.payment_terms_days,
           case when c.last_number is not null then org.seller end, customer_party(cu),
           h.collection_method
