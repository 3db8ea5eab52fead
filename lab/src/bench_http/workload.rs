//! The workloads: each surface's request mix, and the pgbench scripts that send its SQL.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Workload {
    Webhook,
    WebhookDup50,
    WebhookDup100,
    Api,
    Form,
    FormOneOrg,
}

impl Workload {
    pub(super) const ALL: [Workload; 6] = [
        Workload::Webhook,
        Workload::WebhookDup50,
        Workload::WebhookDup100,
        Workload::Api,
        Workload::Form,
        Workload::FormOneOrg,
    ];

    pub(super) fn name(self) -> &'static str {
        match self {
            Workload::Webhook => "webhook",
            Workload::WebhookDup50 => "webhook-dup50",
            Workload::WebhookDup100 => "webhook-dup100",
            Workload::Api => "api",
            Workload::Form => "form",
            Workload::FormOneOrg => "form-1org",
        }
    }

    /// pgbench scripts and their weights: the surface's SQL for this mix.
    pub(super) fn scripts(self) -> &'static [(&'static str, u32)] {
        match self {
            Workload::Webhook => &[("webhook_new.sql", 1)],
            Workload::WebhookDup50 => &[("webhook_new.sql", 1), ("webhook_dup.sql", 1)],
            Workload::WebhookDup100 => &[("webhook_dup.sql", 1)],
            Workload::Api => &[("api_create.sql", 1)],
            Workload::Form => &[("form_create.sql", 1)],
            Workload::FormOneOrg => &[("form_create_one_org.sql", 1)],
        }
    }

    /// The least SQL any design must send for this surface's guarantee (see the scripts' headers).
    pub(super) fn floor(self) -> Option<&'static [(&'static str, u32)]> {
        match self {
            Workload::Webhook => Some(&[("webhook_floor.sql", 1)]),
            Workload::Api => Some(&[("api_floor.sql", 1)]),
            Workload::Form => Some(&[("form_floor.sql", 1)]),
            Workload::WebhookDup50 | Workload::WebhookDup100 | Workload::FormOneOrg => None,
        }
    }
}

pub(super) const SCRIPTS: [(&str, &str); 8] = [
    (
        "webhook_new.sql",
        include_str!("../../../bench/pgbench/webhook_new.sql"),
    ),
    (
        "webhook_dup.sql",
        include_str!("../../../bench/pgbench/webhook_dup.sql"),
    ),
    (
        "api_create.sql",
        include_str!("../../../bench/pgbench/api_create.sql"),
    ),
    (
        "form_create.sql",
        include_str!("../../../bench/pgbench/form_create.sql"),
    ),
    (
        "form_create_one_org.sql",
        include_str!("../../../bench/pgbench/form_create_one_org.sql"),
    ),
    (
        "webhook_floor.sql",
        include_str!("../../../bench/pgbench/webhook_floor.sql"),
    ),
    (
        "api_floor.sql",
        include_str!("../../../bench/pgbench/api_floor.sql"),
    ),
    (
        "form_floor.sql",
        include_str!("../../../bench/pgbench/form_floor.sql"),
    ),
];
