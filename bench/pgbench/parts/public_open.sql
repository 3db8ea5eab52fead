with seen as (
    update invoices
    set first_viewed_at = coalesce(first_viewed_at, now()), last_viewed_at = now(),
        view_count = view_count + 1
    where public_token = :token
      and (last_viewed_at is null
           or last_viewed_at < now() - make_interval(secs => 60::float8))
)
select i.id, i.org_id, o.name as org_name, postal_text(o.address_line1, o.address_line2, o.postal_code, o.city, o.region, o.country) as org_address, o.payments_enabled,
       o.bank_account_holder, o.bank_iban, o.bank_bic, o.bank_other, o.payment_reference,
       o.einvoicing, o.accent_color, o.footer_text, (select token from org_logos where org_id = o.id) as logo_token,
       (select width from org_logos where org_id = o.id) as logo_width,
               (select height from org_logos where org_id = o.id) as logo_height,
       coalesce(cu.locale, o.locale) as locale
from invoices i join orgs o on o.id = i.org_id
left join customers cu on cu.id = i.customer_id
where i.public_token = :token \gset pub_
-- include: parts/invoices_by_ids.sql ids=array[:pub_id::uuid]::uuid[] org=:pub_org_id::uuid
