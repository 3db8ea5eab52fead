-- Late fees: an invoice of its own, naming the overdue invoice it is charged on and the step; the
-- pair is its business key, so a step is charged once whatever runs it.
alter table invoices
    add column kind text not null default 'standard' check (kind in ('standard', 'late_fee')),
    add column fee_for uuid references invoices (id),
    add column fee_step smallint check (fee_step between 1 and 3),
    add constraint invoices_fee_shape
        check ((kind = 'late_fee') = (fee_for is not null and fee_step is not null));
create unique index invoices_fee_once on invoices (fee_for, fee_step) where fee_for is not null;
