-- A finalized invoice's or credit note's PDF, drawn once per version and served from here after.
-- `version` is a digest of everything the PDF is drawn from (the document as its customer page reads
-- it, the org's look, the language, the paper, the renderer build), so a payment, the invoice
-- becoming overdue or a new logo draw it again. One row per document and paper: a new version
-- replaces the old one.
create table document_pdfs (
    document_id uuid not null,
    paper text not null check (paper in ('a4', 'letter')),
    org_id uuid not null references orgs (id) on delete cascade,
    version bytea not null check (length(version) = 32),
    pdf bytea not null,
    drawn_at timestamptz not null default now(),
    primary key (document_id, paper)
);
create index document_pdfs_org_idx on document_pdfs (org_id);
-- PDFs are compressed already: stored out of line without a second compression attempt.
alter table document_pdfs alter column pdf set storage external;
