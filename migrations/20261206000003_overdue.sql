-- "Overdue" in one place: open or uncollectible, and due before today in the org's time zone. Never
-- stored; a plain SQL function, so the planner inlines it and the list's indexes still serve it.
create function invoice_overdue(p_status text, p_due date, p_time_zone text)
returns boolean language sql stable as $$
    select p_status in ('open', 'uncollectible') and p_due < (now() at time zone p_time_zone)::date
$$;
