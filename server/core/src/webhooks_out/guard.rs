//! No way into our network: an endpoint's URL is `https` (plain `http` only where private targets
//! are allowed), and its host's addresses are public ones. The check runs when an endpoint is
//! registered and again, inside the delivery client's resolver, on every delivery: the host is
//! resolved once, every address it gave is checked, and the connection goes to those checked
//! addresses and no others (a name that answers a public address to the check and 127.0.0.1 to
//! the connection, DNS rebinding, has no second lookup to answer). A URL naming an address is
//! checked as it is; redirects are never followed, and no proxy from the environment is used.
//!
//! Allowing private targets (`WEBHOOKS_ALLOW_PRIVATE`) lifts the check for loopback and private
//! networks only: link-local addresses, clouds' metadata services (by address and by name), NAT64
//! and the other special ranges stay refused under every policy.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// Where deliveries may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Loopback and private networks allowed too (`WEBHOOKS_ALLOW_PRIVATE=true`; dev mode's
    /// default); never link-local, metadata or the other [`Reach::Never`] addresses.
    pub allow_private: bool,
    /// Only `https` URLs (production).
    pub https_only: bool,
}

impl Policy {
    /// Production's: public addresses, over https.
    pub const STRICT: Policy = Policy {
        allow_private: false,
        https_only: true,
    };
    /// Development's and the tests': public, loopback and private addresses, over http or https.
    pub const OPEN: Policy = Policy {
        allow_private: true,
        https_only: false,
    };

    /// Whether a delivery under this policy may connect to `ip`.
    pub fn allows(self, ip: IpAddr) -> bool {
        match reach(ip) {
            Reach::Public => true,
            Reach::Private => self.allow_private,
            Reach::Never => false,
        }
    }
}

/// What kind of place an address is, for a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// On the public internet.
    Public,
    /// This host (loopback, unspecified) or a private network (10/8, 172.16/12, 192.168/16,
    /// 100.64/10, fc00::/7, fec0::/10): only where private targets are allowed.
    Private,
    /// Never a delivery's: link-local (169.254/16, fe80::/10), a cloud's metadata service, NAT64
    /// (any IPv4 address behind a translator), and ranges no endpoint has (multicast,
    /// documentation, benchmarking, reserved).
    Never,
}

/// Metadata services outside the link-local range: AWS's IPv6 one (inside fc00::/7).
const METADATA_V6: [Ipv6Addr; 1] = [Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254)];
/// Alibaba Cloud's (inside 100.64/10) and Azure's wire server (a public-looking address).
const METADATA_V4: [Ipv4Addr; 2] = [
    Ipv4Addr::new(100, 100, 100, 200),
    Ipv4Addr::new(168, 63, 129, 16),
];

/// Host names of clouds' metadata services (they resolve to a refused address only inside their
/// cloud; refusing the name answers clearly at registration wherever the app runs).
const METADATA_NAMES: [&str; 4] = [
    "metadata",
    "metadata.google.internal",
    "metadata.goog",
    "instance-data",
];

/// Whether `name` is a cloud metadata service's host name (case and a final dot ignored; AWS's
/// `instance-data.<region>.compute.internal` forms included).
pub fn is_metadata_name(name: &str) -> bool {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    METADATA_NAMES.contains(&name.as_str())
        || (name.starts_with("instance-data.") && name.ends_with(".internal"))
}

/// What `ip` is (an IPv4 address mapped into IPv6 is judged as the IPv4 one).
pub fn reach(ip: IpAddr) -> Reach {
    match ip {
        IpAddr::V4(v4) => reach_v4(v4),
        IpAddr::V6(v6) => reach_v6(v6),
    }
}

/// Whether `ip` is an address on the public internet (not loopback, private, link-local, shared,
/// metadata, NAT64, documentation, multicast, reserved or unspecified).
pub fn is_public(ip: IpAddr) -> bool {
    reach(ip) == Reach::Public
}

fn reach_v6(ip: Ipv6Addr) -> Reach {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return reach_v4(v4);
    }
    if ip.is_loopback() || ip.is_unspecified() {
        return Reach::Private;
    }
    let s = ip.segments();
    let never = METADATA_V6.contains(&ip)
        // NAT64, the well-known 64:ff9b::/96 and the local-use 64:ff9b:1::/48: the translator
        // reaches whatever IPv4 address is inside, 127.0.0.1 and 169.254.169.254 included
        || (s[0] == 0x64 && s[1] == 0xff9b && (s[2..6] == [0, 0, 0, 0] || s[2] == 1))
        // link-local fe80::/10
        || (s[0] & 0xffc0) == 0xfe80
        || ip.is_multicast()
        // IPv4-compatible (::a.b.c.d, deprecated) and the discard prefix 100::/64
        || s[0..6] == [0, 0, 0, 0, 0, 0]
        || (s[0] == 0x100 && s[1..4] == [0, 0, 0])
        // documentation 2001:db8::/32
        || (s[0] == 0x2001 && s[1] == 0xdb8);
    // unique local fc00::/7 and the old site-local fec0::/10
    let private = (s[0] & 0xfe00) == 0xfc00 || (s[0] & 0xffc0) == 0xfec0;
    if never {
        Reach::Never
    } else if private {
        Reach::Private
    } else {
        Reach::Public
    }
}

fn reach_v4(ip: Ipv4Addr) -> Reach {
    let [a, b, c, _] = ip.octets();
    let never = METADATA_V4.contains(&ip)
        // link-local 169.254/16: 169.254.169.254 is the metadata service of most clouds
        || ip.is_link_local()
        // "this network" 0/8 (0.0.0.0 itself reaches this host)
        || (a == 0 && !ip.is_unspecified())
        // IETF protocol assignments 192.0.0/24, benchmarking 198.18/15
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b & 0xfe) == 18)
        || ip.is_documentation()
        || ip.is_multicast()
        // reserved 240/4 and the broadcast address
        || a >= 240;
    if never {
        Reach::Never
    } else if ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        // shared address space (carrier-grade NAT) 100.64/10
        || (a == 100 && (b & 0xc0) == 64)
    {
        Reach::Private
    } else {
        Reach::Public
    }
}

/// What is wrong with `url` under `policy` before any lookup (its scheme, its form, an address
/// or a metadata service it names), or the URL parsed.
pub fn check_url(url: &str, policy: Policy) -> Result<url::Url, String> {
    let parsed =
        url::Url::parse(url.trim()).map_err(|_| "Enter a full URL, https://…".to_owned())?;
    match parsed.scheme() {
        "https" => {}
        "http" if !policy.https_only => {}
        "http" => return Err("Use an https:// URL.".into()),
        _ => return Err("Use an https:// URL.".into()),
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err("Put no user name or password in the URL.".into());
    }
    let literal = match parsed.host() {
        None => return Err("The URL has no host.".into()),
        Some(url::Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
        Some(url::Host::Ipv6(v6)) => Some(IpAddr::V6(v6)),
        Some(url::Host::Domain(name)) => {
            if is_metadata_name(name) {
                return Err(never());
            }
            let bare = name.trim_end_matches('.').to_ascii_lowercase();
            let local = bare == "localhost" || bare.ends_with(".localhost");
            if local && !policy.allow_private {
                return Err(refused());
            }
            None
        }
    };
    if let Some(ip) = literal.filter(|ip| !policy.allows(*ip)) {
        return Err(refusal(ip));
    }
    Ok(parsed)
}

/// Why `ip` is refused, in the words the owner sees.
fn refusal(ip: IpAddr) -> String {
    match reach(ip) {
        Reach::Never => never(),
        _ => refused(),
    }
}

fn refused() -> String {
    "That address is not on the public internet: webhooks go to public https endpoints only.".into()
}

fn never() -> String {
    "That address is link-local or a cloud's metadata service (or another special address): \
     webhooks are never sent there."
        .into()
}

/// `url` checked as a delivery will check it: the URL, then every address its host resolves to.
/// Where private targets are allowed, a name that does not resolve (yet) is accepted: its
/// deliveries resolve it again and refuse what it names then.
pub async fn check_reachable(url: &str, policy: Policy) -> Result<url::Url, String> {
    let parsed = check_url(url, policy)?;
    if let Some(url::Host::Domain(name)) = parsed.host() {
        match resolve(name, policy).await {
            Ok(_) => {}
            Err(NoAddress::Unresolved(_)) if policy.allow_private => {}
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(parsed)
}

/// Why a name gave no address to connect to.
#[derive(Debug)]
enum NoAddress {
    /// No address came back (in time).
    Unresolved(String),
    /// An address (or the name itself) the policy refuses.
    Refused(String),
}

impl std::fmt::Display for NoAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoAddress::Unresolved(why) | NoAddress::Refused(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for NoAddress {}

/// `name`'s addresses, every one of them allowed under `policy`; an error when one is not (or
/// none came back).
async fn resolve(name: &str, policy: Policy) -> Result<Vec<SocketAddr>, NoAddress> {
    if is_metadata_name(name) {
        return Err(NoAddress::Refused(never()));
    }
    let lookup =
        tokio::time::timeout(Duration::from_secs(5), tokio::net::lookup_host((name, 0))).await;
    let addrs: Vec<SocketAddr> = match lookup {
        Ok(Ok(addrs)) => addrs.collect(),
        _ => {
            return Err(NoAddress::Unresolved(format!(
                "{name:.100} could not be resolved."
            )))
        }
    };
    if addrs.is_empty() {
        return Err(NoAddress::Unresolved(format!(
            "{name:.100} has no address."
        )));
    }
    check_addrs(&addrs, policy)?;
    Ok(addrs)
}

/// Refuses the whole answer when one address of it is not allowed (a name that answers one good
/// and one bad address could be connected to the bad one).
fn check_addrs(addrs: &[SocketAddr], policy: Policy) -> Result<(), NoAddress> {
    match addrs.iter().find(|a| !policy.allows(a.ip())) {
        Some(bad) => Err(NoAddress::Refused(refusal(bad.ip()))),
        None => Ok(()),
    }
}

/// The delivery client's resolver: every name resolved once and all its addresses checked under
/// the policy; the client connects to exactly what this returns.
struct Guarded(Policy);

impl reqwest::dns::Resolve for Guarded {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let (name, policy) = (name.as_str().to_owned(), self.0);
        Box::pin(async move {
            let addrs = resolve(&name, policy).await?;
            let addrs: reqwest::dns::Addrs = Box::new(addrs.into_iter());
            Ok(addrs)
        })
    }
}

/// Every call out takes at most this long, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The client deliveries use under `policy`: the resolver above, no proxy, redirects not
/// followed, 10 s in all.
pub fn client(policy: Policy) -> reqwest::Client {
    reqwest::Client::builder()
        // HTTP(S)_PROXY and ALL_PROXY ignored: a proxy would make the connection the resolver
        // checks, to whatever address it resolves itself.
        .no_proxy()
        .dns_resolver(Arc::new(Guarded(policy)))
        .redirect(reqwest::redirect::Policy::none())
        .timeout(TIMEOUT)
        .connect_timeout(TIMEOUT)
        .pool_max_idle_per_host(2)
        .user_agent("invoicer-webhooks/1")
        .build()
        .expect("a client with a resolver builds")
}

#[cfg(test)]
mod tests;
