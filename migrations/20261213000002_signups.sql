-- An org may take card payments through the operator's Stripe account: orgs made by the operator
-- may; an org that signed itself up on an open deployment waits for `server admin allow-payments`.
alter table orgs add column payments_enabled boolean not null default true;
