//! The read paths: the SQL each sends (its pgbench script), the credentials it needs, and the paths
//! themselves over the generated org.

use uuid::Uuid;

use crate::pgbench;

/// The SQL each path sends, as pgbench scripts (see their headers for where each statement comes
/// from).
pub(super) const SCRIPTS: [(&str, &str); 14] = [
    (
        "read_list_first.sql",
        include_str!("../../../bench/pgbench/read_list_first.sql"),
    ),
    (
        "read_list_deep.sql",
        include_str!("../../../bench/pgbench/read_list_deep.sql"),
    ),
    (
        "read_list_overdue.sql",
        include_str!("../../../bench/pgbench/read_list_overdue.sql"),
    ),
    (
        "read_list_search_number.sql",
        include_str!("../../../bench/pgbench/read_list_search_number.sql"),
    ),
    (
        "read_list_search_customer.sql",
        include_str!("../../../bench/pgbench/read_list_search_customer.sql"),
    ),
    (
        "read_invoice_page.sql",
        include_str!("../../../bench/pgbench/read_invoice_page.sql"),
    ),
    (
        "read_public_page.sql",
        include_str!("../../../bench/pgbench/read_public_page.sql"),
    ),
    (
        "read_public_pdf.sql",
        include_str!("../../../bench/pgbench/read_public_pdf.sql"),
    ),
    (
        "read_activity_first.sql",
        include_str!("../../../bench/pgbench/read_activity_first.sql"),
    ),
    (
        "read_activity_webhook.sql",
        include_str!("../../../bench/pgbench/read_activity_webhook.sql"),
    ),
    (
        "read_activity_search.sql",
        include_str!("../../../bench/pgbench/read_activity_search.sql"),
    ),
    (
        "read_api_list.sql",
        include_str!("../../../bench/pgbench/read_api_list.sql"),
    ),
    (
        "read_metrics.sql",
        include_str!("../../../bench/pgbench/read_metrics.sql"),
    ),
    (
        "read_dashboard.sql",
        include_str!("../../../bench/pgbench/read_dashboard.sql"),
    ),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Auth {
    /// The signed-in owner's session cookie.
    Session,
    /// The API key, as a bearer token.
    ApiKey,
    /// `METRICS_TOKEN` as a bearer token when given (production), nothing otherwise (dev: open).
    Metrics,
}

/// A path to read, with the credentials it needs.
pub(super) struct Read {
    pub(super) name: &'static str,
    pub(super) path: String,
    /// What the request carries.
    pub(super) auth: Auth,
    /// Its pgbench script (one of [`SCRIPTS`]).
    pub(super) script: &'static str,
}

impl Read {
    /// Paths that sum a whole org's open invoices by design (the dashboard's aging: its buckets
    /// are relative to today), read at most once per 10 s per big org through the server's cache
    /// (docs/performance.md, "The dashboard at the large size"): their plans are written out, but
    /// not held to a page's row bound.
    pub(super) fn sums_everything(&self) -> bool {
        self.script == "read_dashboard.sql"
    }

    /// Paths whose main statement the server sends unprepared (the activity search: planned with
    /// its `like` pattern each time) are run by pgbench the same way; the others prepared, as sqlx's
    /// statement cache sends them.
    pub(super) fn mode(&self) -> pgbench::Mode {
        if self.script == "read_activity_search.sql" {
            pgbench::Mode::Extended
        } else {
            pgbench::Mode::Prepared
        }
    }
}

/// The paths, naming the big org's deep `cursor`, a number `prefix`, a `customer`, an invoice
/// (`id`, its public `token`) and an API attempt's key.
pub(super) fn reads(
    cursor: &str,
    prefix: &str,
    customer: &str,
    id: Uuid,
    token: &str,
    api_key: &str,
) -> [Read; 14] {
    [
        Read {
            name: "list, first page",
            path: "/invoices".into(),
            auth: Auth::Session,
            script: "read_list_first.sql",
        },
        Read {
            name: "list, a page 90 % deep",
            path: format!("/invoices?before={cursor}"),
            auth: Auth::Session,
            script: "read_list_deep.sql",
        },
        Read {
            name: "list, overdue",
            path: "/invoices?status=overdue".into(),
            auth: Auth::Session,
            script: "read_list_overdue.sql",
        },
        Read {
            name: "list, search a number",
            path: format!("/invoices?q={prefix}"),
            auth: Auth::Session,
            script: "read_list_search_number.sql",
        },
        Read {
            name: "list, search a customer",
            path: format!("/invoices?q={}", customer.replace(' ', "%20")),
            auth: Auth::Session,
            script: "read_list_search_customer.sql",
        },
        Read {
            name: "invoice page",
            path: format!("/invoices/{id}"),
            auth: Auth::Session,
            script: "read_invoice_page.sql",
        },
        Read {
            name: "public page",
            path: format!("/i/{token}"),
            auth: Auth::Session,
            script: "read_public_page.sql",
        },
        Read {
            name: "public PDF",
            path: format!("/i/{token}/pdf"),
            auth: Auth::Session,
            script: "read_public_pdf.sql",
        },
        Read {
            name: "activity, first page",
            path: "/activity".into(),
            auth: Auth::Session,
            script: "read_activity_first.sql",
        },
        Read {
            name: "activity, webhook only",
            path: "/activity?surface=webhook".into(),
            auth: Auth::Session,
            script: "read_activity_webhook.sql",
        },
        Read {
            name: "activity, search a key",
            path: format!("/activity?q={api_key}"),
            auth: Auth::Session,
            script: "read_activity_search.sql",
        },
        Read {
            name: "API list, a cursor",
            path: format!("/api/v1/invoices?limit=20&cursor={cursor}"),
            auth: Auth::ApiKey,
            script: "read_api_list.sql",
        },
        Read {
            name: "dashboard",
            path: "/dashboard".into(),
            auth: Auth::Session,
            script: "read_dashboard.sql",
        },
        Read {
            name: "/metrics",
            path: "/metrics".into(),
            auth: Auth::Metrics,
            script: "read_metrics.sql",
        },
    ]
}
