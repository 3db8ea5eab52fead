//! invoicer's UI and server functions, compiled for the server (`ssr`) and the browser (`hydrate`).

#![recursion_limit = "256"]

mod pages;
pub mod rpc;

/// The invoice's due line and totals rows, for the customer's page rendered outside the app.
pub use pages::invoices::{due_text, line_rows, totals_rows};
/// A customer's statement as tables, for the customer's page rendered outside the app.
pub use pages::statement::{pdf_url as statement_pdf_url, statement_tables};

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, HashedStylesheet, MetaTags, Title};
use leptos_router::components::{Redirect, Route, Router, Routes};
use leptos_router::location::RequestUrl;
use leptos_router::{path, SsrMode};

use pages::activity::ActivityPage;
use pages::auth::{LoginPage, SignupPage};
use pages::bank::BankStatementsPage;
use pages::customers::{CustomerPage, CustomersPage, NewCustomerPage};
use pages::dashboard::DashboardPage;
use pages::imports::{CustomerImportPage, CustomerImportStatusPage};
use pages::inbox::{InboxPageView, ReceivedDocumentView};
use pages::invoices::{EditInvoicePage, InvoiceListPage, InvoicePage, NewInvoicePage};
use pages::layout::{Nav, NotFound};
use pages::quotes::{EditQuotePage, NewQuotePage, QuotePage, QuotesPage};
use pages::reports::{AgingReportPage, ExportsPage, TaxReportPage};
use pages::schedules::{EditSchedulePage, NewSchedulePage, SchedulePage, SchedulesPage};
use pages::settings::{ApiKeysPage, OrgSettingsPage};
use pages::statement::StatementPage;
use pages::team::{
    AccountSettingsPage, AuditPage, ForgotPasswordPage, InvitationPage, MembersSettingsPage,
    OrgsPage, ResetPasswordPage, SessionsPage, VerifyEmailPage,
};
use pages::webhooks::{WebhookEndpointPageView, WebhooksPage};

pub fn shell(options: LeptosOptions) -> impl IntoView {
    // Nothing outside an island is hydrated, so nothing outside one is sent along for it: the pages'
    // resources stay on the server (an island turns this back on for what it creates itself).
    if let Some(shared) = Owner::current_shared_context() {
        shared.set_is_hydrating(false);
    }
    let islands = use_context::<RequestUrl>()
        .and_then(|url| url.parse().ok())
        .is_some_and(|url| has_islands(url.path()));
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                // No icon: the browser does not ask for /favicon.ico (a 404 in every page's console).
                <link rel="icon" href="data:," />
                <AutoReload options=options.clone() />
                <HashedStylesheet options=options.clone() id="leptos" />
                {islands.then(|| view! { <HydrationScripts options islands=true /> })}
                <MetaTags />
            </head>
            // A page without an island is settled as it arrives: nothing on it waits for script.
            <body data-hydrated=(!islands).then_some("true")>
                <App />
                {islands.then(|| view! { <HydrationMarker /> })}
            </body>
        </html>
    }
}

/// The pages of [`App`]'s route table that a visitor without a session may open, written as the
/// table writes them. Every other page is a signed-in user's: the server guards each one it finds in
/// the table, so a new page is guarded unless it is listed here.
pub const VISITOR_PAGES: &[&str] = &[
    "/",
    "/signup",
    "/login",
    "/invite/:token",
    "/verify-email/:token",
    "/forgot-password",
    "/reset-password/:token",
];

/// The pages that carry an island, as the route table writes them: the invoice form's (an invoice,
/// a quote and a schedule's template, new and edited) and the API keys'. Only these load the
/// hydration script and the wasm module; every other page is HTML and CSS alone.
pub const ISLAND_PAGES: &[&str] = &[
    "/invoices/new",
    "/invoices/:id/edit",
    "/quotes/new",
    "/quotes/:id/edit",
    "/schedules/new",
    "/schedules/:id/edit",
    "/settings/api-keys",
];

/// Whether the request path `path` is one of [`ISLAND_PAGES`] (`:id` stands for any one segment).
pub fn has_islands(path: &str) -> bool {
    ISLAND_PAGES.iter().any(|page| {
        let mut written = page.split('/');
        path.split('/').all(|segment| {
            written
                .next()
                .is_some_and(|w| w == segment || (w.starts_with(':') && !segment.is_empty()))
        }) && written.next().is_none()
    })
}

/// Marks `<body data-hydrated>` once the page's islands are interactive: the browser hydrates
/// islands in document order, and this one is last (tests wait for it instead of guessing with
/// sleeps).
#[island]
fn HydrationMarker() -> impl IntoView {
    Effect::new(|_| {
        if let Some(body) = document().body() {
            let _ = body.set_attribute("data-hydrated", "true");
        }
    });
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    // Every route renders with SsrMode::Async: the whole page, data included, arrives as plain HTML, so
    // it works without JavaScript and a 404 can set its status before anything is sent.
    view! {
        <Title text="invoicer" />
        <Router>
            <Nav />
            <main>
                <Routes fallback=|| view! { <NotFound /> }>
                    <Route path=path!("/") view=|| view! { <Redirect path="/invoices" /> } />
                    <Route path=path!("/signup") view=SignupPage ssr=SsrMode::Async />
                    <Route path=path!("/login") view=LoginPage ssr=SsrMode::Async />
                    <Route path=path!("/invoices") view=InvoiceListPage ssr=SsrMode::Async />
                    <Route path=path!("/invoices/new") view=NewInvoicePage ssr=SsrMode::Async />
                    <Route path=path!("/invoices/:id") view=InvoicePage ssr=SsrMode::Async />
                    <Route path=path!("/invoices/:id/edit") view=EditInvoicePage ssr=SsrMode::Async />
                    <Route path=path!("/dashboard") view=DashboardPage ssr=SsrMode::Async />
                    <Route path=path!("/reports/aging") view=AgingReportPage ssr=SsrMode::Async />
                    <Route path=path!("/reports/tax") view=TaxReportPage ssr=SsrMode::Async />
                    <Route path=path!("/reports/exports") view=ExportsPage />
                    <Route path=path!("/quotes") view=QuotesPage ssr=SsrMode::Async />
                    <Route path=path!("/quotes/new") view=NewQuotePage ssr=SsrMode::Async />
                    <Route path=path!("/quotes/:id") view=QuotePage ssr=SsrMode::Async />
                    <Route path=path!("/quotes/:id/edit") view=EditQuotePage ssr=SsrMode::Async />
                    <Route path=path!("/payments/bank") view=BankStatementsPage ssr=SsrMode::Async />
                    <Route path=path!("/inbox") view=InboxPageView ssr=SsrMode::Async />
                    <Route path=path!("/inbox/:id") view=ReceivedDocumentView ssr=SsrMode::Async />
                    <Route path=path!("/schedules") view=SchedulesPage ssr=SsrMode::Async />
                    <Route path=path!("/schedules/new") view=NewSchedulePage ssr=SsrMode::Async />
                    <Route path=path!("/schedules/:id") view=SchedulePage ssr=SsrMode::Async />
                    <Route path=path!("/schedules/:id/edit") view=EditSchedulePage ssr=SsrMode::Async />
                    <Route path=path!("/customers") view=CustomersPage ssr=SsrMode::Async />
                    <Route path=path!("/customers/new") view=NewCustomerPage ssr=SsrMode::Async />
                    <Route path=path!("/customers/import") view=CustomerImportPage ssr=SsrMode::Async />
                    <Route path=path!("/customers/import/:id") view=CustomerImportStatusPage ssr=SsrMode::Async />
                    <Route path=path!("/customers/:id") view=CustomerPage ssr=SsrMode::Async />
                    <Route path=path!("/customers/:id/statement") view=StatementPage ssr=SsrMode::Async />
                    <Route path=path!("/settings/api-keys") view=ApiKeysPage ssr=SsrMode::Async />
                    <Route path=path!("/settings/webhooks") view=WebhooksPage ssr=SsrMode::Async />
                    <Route path=path!("/settings/webhooks/:id") view=WebhookEndpointPageView ssr=SsrMode::Async />
                    <Route path=path!("/settings/org") view=OrgSettingsPage ssr=SsrMode::Async />
                    <Route path=path!("/activity") view=ActivityPage ssr=SsrMode::Async />
                    <Route path=path!("/settings/members") view=MembersSettingsPage ssr=SsrMode::Async />
                    <Route path=path!("/settings/account") view=AccountSettingsPage ssr=SsrMode::Async />
                    <Route path=path!("/settings/sessions") view=SessionsPage ssr=SsrMode::Async />
                    <Route path=path!("/settings/orgs") view=OrgsPage ssr=SsrMode::Async />
                    <Route path=path!("/settings/audit") view=AuditPage ssr=SsrMode::Async />
                    <Route path=path!("/invite/:token") view=InvitationPage ssr=SsrMode::Async />
                    <Route path=path!("/verify-email/:token") view=VerifyEmailPage ssr=SsrMode::Async />
                    <Route path=path!("/forgot-password") view=ForgotPasswordPage ssr=SsrMode::Async />
                    <Route path=path!("/reset-password/:token") view=ResetPasswordPage ssr=SsrMode::Async />
                </Routes>
            </main>
        </Router>
    }
}

#[cfg(test)]
mod tests {
    use super::has_islands;

    #[test]
    fn the_island_pages_are_matched_by_their_route() {
        for path in [
            "/invoices/new",
            "/invoices/0194f3a2-7b1c-7d00-8000-000000000001/edit",
            "/quotes/new",
            "/quotes/abc/edit",
            "/schedules/new",
            "/schedules/abc/edit",
            "/settings/api-keys",
        ] {
            assert!(has_islands(path), "{path}");
        }
        for path in [
            "/",
            "/invoices",
            "/invoices/abc",
            "/invoices//edit",
            "/invoices/abc/edit/more",
            "/invoices/new/",
            "/settings/org",
            "/settings/api-keys/x",
            "/customers/new",
        ] {
            assert!(!has_islands(path), "{path}");
        }
    }
}
