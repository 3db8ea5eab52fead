//! PEPPOL_*: the access point documents are sent through, and the secret its deliveries of
//! received documents are signed with.

pub use invoicer_core::peppol::DEV_INBOUND_SECRET;
use invoicer_core::peppol::{PhossAp, LOCAL_ACCESS_POINT, LOCAL_ACCESS_POINT_TOKEN};
use invoicer_core::secret::Secret;

use super::{present, present_secret};

#[derive(clap::Args, Debug, Clone)]
pub struct Peppol {
    /// The access point's REST API (phoss-ap, or one that speaks its API). Unset in production:
    /// documents for buyers by Peppol wait queued. Dev default the local access point,
    /// `http://127.0.0.1:12112` (`scripts/peppol-local`).
    #[arg(long, env = "PEPPOL_AP_URL", global = true)]
    pub peppol_ap_url: Option<String>,
    /// The access point's API token (sent as `X-Token`).
    #[arg(long, env = "PEPPOL_AP_TOKEN", global = true, hide_env_values = true)]
    pub peppol_ap_token: Option<Secret>,
    /// `whsec_...`: received documents delivered to `POST /webhooks/peppol` are signed with it
    /// (Standard Webhooks). Unset in production: the inbound webhook answers 503.
    #[arg(
        long,
        env = "PEPPOL_INBOUND_SECRET",
        global = true,
        hide_env_values = true
    )]
    pub peppol_inbound_secret: Option<Secret>,
}

/// [`Peppol`] with its defaults filled in.
#[derive(Debug, Clone)]
pub struct Checked {
    pub access_point: Option<PhossAp>,
    pub inbound_secret: Option<Secret>,
}

impl Peppol {
    pub(super) fn check(self, dev: bool) -> anyhow::Result<Checked> {
        let mut url = present(self.peppol_ap_url);
        let mut token = present_secret(self.peppol_ap_token);
        let mut inbound_secret = present_secret(self.peppol_inbound_secret);
        if dev {
            url.get_or_insert_with(|| LOCAL_ACCESS_POINT.to_owned());
            token.get_or_insert_with(|| LOCAL_ACCESS_POINT_TOKEN.into());
            inbound_secret.get_or_insert_with(|| DEV_INBOUND_SECRET.into());
        }
        if let Some(url) = &url {
            let parsed = url::Url::parse(url)
                .map_err(|e| anyhow::anyhow!("PEPPOL_AP_URL is not a URL: {e}"))?;
            anyhow::ensure!(
                matches!(parsed.scheme(), "http" | "https"),
                "PEPPOL_AP_URL must be http or https"
            );
        }
        anyhow::ensure!(
            dev || inbound_secret
                .as_ref()
                .is_none_or(|s| s.expose() != DEV_INBOUND_SECRET),
            "PEPPOL_INBOUND_SECRET: the public dev secret is refused in production"
        );
        Ok(Checked {
            access_point: url.map(|u| PhossAp::new(&u, token)),
            inbound_secret,
        })
    }
}
