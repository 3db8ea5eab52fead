-- The attempt that created a customer ('form:<uuid>'), unique per org: the business write's own
-- second line of defence behind the claim, as for invoices.
alter table customers add column source_key text;
alter table customers add constraint customers_org_source_key unique (org_id, source_key);
