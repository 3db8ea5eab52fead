-- Every finalized invoice's ISO 11649 structured creditor reference: "RF", two check digits
-- (ISO 7064 MOD 97-10) and the number's letters and digits (its last 21 when longer). Derived
-- from number_text by one immutable function, so that every path that numbers an invoice gives it
-- the same reference as model::payment_reference::for_invoice_number (a test compares the two).
create function rf_reference(number_text text) returns text
language plpgsql immutable strict parallel safe as $$
declare
    body text := right(upper(regexp_replace(number_text, '[^A-Za-z0-9]', '', 'g')), 21);
    rest int := 0;
    c text;
    v int;
begin
    if body = '' then
        return null;
    end if;
    foreach c in array string_to_array(body || 'RF00', null) loop
        v := case when c between '0' and '9' then ascii(c) - 48 else ascii(c) - 55 end;
        rest := case when v < 10 then (rest * 10 + v) % 97 else (rest * 100 + v) % 97 end;
    end loop;
    return 'RF' || lpad((98 - rest)::text, 2, '0') || body;
end $$;

alter table invoices
    add column payment_reference text generated always as (rf_reference(number_text)) stored;

-- A bank entry's remittance text is looked up by the references it carries.
create index invoices_payment_reference_idx on invoices (org_id, payment_reference)
    where payment_reference is not null;
