select a.id, a.created_at, a.surface, a.key, a.outcome, a.invoice_id,
       (select i.number_text from invoices i where i.id = a.invoice_id) as number_text,
       a.duration_ms, a.request_id,
       case a.surface
           when 'webhook' then (select e.payload::text from stripe_events e
                                -- The attempt's owner is `stripe/<account>`: the
                                -- event's whole key, so its primary key finds it.
                                where e.account = substr(a.owner, 8) and e.id = a.key
                                  and e.org_id = a.org_id)
           when 'api' then (select convert_from(c.response_body, 'UTF8') from claims c
                            where c.scope = 'api' and c.owner = a.owner and c.key = a.key)
       end as detail
from attempts a
