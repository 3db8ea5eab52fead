-- The language of the customer's pages, PDFs and emails: the customer's own, else the org's.
alter table orgs
    add column locale text not null default 'en' check (locale in ('en', 'de', 'fr', 'es', 'nl'));
alter table customers
    add column locale text check (locale in ('en', 'de', 'fr', 'es', 'nl'));
