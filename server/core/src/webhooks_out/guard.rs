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
mod tests {
    use super::*;

    use std::ffi::OsString;
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Held by the tests that look names up or change the environment: getaddrinfo reads the
    /// environment, and the proxy test sets it.
    static ENV: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    #[test]
    fn private_loopback_link_local_and_metadata_addresses_are_refused() {
        for bad in [
            "127.0.0.1",
            "127.255.0.1",
            "0.0.0.0",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "::1",
            "::",
            "fd00:ec2::254",
            "fc00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2001:db8::1",
        ] {
            assert!(!is_public(bad.parse().unwrap()), "{bad}");
        }
        for good in [
            "93.184.215.14",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "172.32.0.1",
        ] {
            assert!(is_public(good.parse().unwrap()), "{good}");
        }
    }

    #[test]
    fn link_local_metadata_and_nat64_addresses_are_refused_under_every_policy() {
        for never in [
            "169.254.169.254",
            "169.254.0.23",
            "169.254.0.1",
            "fe80::1",
            "fe80::a9fe:a9fe",
            "febf:ffff::1",
            "::ffff:169.254.169.254",
            "fd00:ec2::254",
            "100.100.100.200",
            "168.63.129.16",
            // NAT64 in all of both ranges: loopback, metadata and public IPv4 addresses alike
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::808:808",
            "64:ff9b:1::a9fe:a9fe",
            "64:ff9b:1:ffff:ffff:ffff:ffff:ffff",
            "::a9fe:a9fe",
        ] {
            let ip: IpAddr = never.parse().unwrap();
            assert_eq!(reach(ip), Reach::Never, "{never}");
            assert!(!Policy::OPEN.allows(ip), "{never} under OPEN");
            assert!(!Policy::STRICT.allows(ip), "{never} under STRICT");
            assert!(!is_public(ip), "{never}");
        }
        for private in [
            "127.0.0.1",
            "0.0.0.0",
            "10.0.0.1",
            "172.16.0.1",
            "192.168.1.1",
            "100.64.0.1",
            "::1",
            "::",
            "::ffff:127.0.0.1",
            "fd12::1",
        ] {
            let ip: IpAddr = private.parse().unwrap();
            assert_eq!(reach(ip), Reach::Private, "{private}");
            assert!(Policy::OPEN.allows(ip), "{private} under OPEN");
            assert!(!Policy::STRICT.allows(ip), "{private} under STRICT");
        }
        for public in [
            "1.1.1.1",
            "169.253.255.255",
            "169.255.0.1",
            "2606:4700:4700::1111",
        ] {
            let ip: IpAddr = public.parse().unwrap();
            assert!(
                Policy::OPEN.allows(ip) && Policy::STRICT.allows(ip),
                "{public}"
            );
        }
    }

    #[test]
    fn urls_naming_link_local_or_metadata_addresses_are_refused_where_private_ones_are_allowed() {
        for bad in [
            "http://169.254.169.254/",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::ffff:169.254.169.254]/",
            "http://[::ffff:a9fe:a9fe]/",
            "http://[fe80::1]/hook",
            "http://[64:ff9b::7f00:1]/",
            "http://[64:ff9b::a9fe:a9fe]/",
            "http://[64:ff9b:1::a9fe:a9fe]/",
            "http://[fd00:ec2::254]/latest/meta-data/",
            "http://100.100.100.200/latest/meta-data/",
            "http://metadata.google.internal/computeMetadata/v1/",
            "http://METADATA.Google.Internal./computeMetadata/v1/",
            "http://metadata/computeMetadata/v1/",
            "http://metadata.goog/",
            "http://instance-data/latest/meta-data/",
            "http://instance-data.ec2.internal/latest/meta-data/",
            "http://instance-data.eu-west-1.compute.internal/",
        ] {
            for policy in [Policy::OPEN, Policy::STRICT] {
                let checked = check_url(bad, policy);
                assert!(checked.is_err(), "{bad} under {policy:?}");
            }
            let why = check_url(bad, Policy::OPEN).unwrap_err();
            assert!(why.contains("metadata"), "{bad}: {why}");
        }
        for good in [
            "http://127.0.0.1:9000/hook",
            "http://localhost:3000/hook",
            "http://[::1]:8080/hook",
            "http://10.0.0.8/hook",
            "http://[fd12::1]/hook",
            "http://metadata.example.com/hook",
            "http://instance-data.example.com/hook",
        ] {
            assert!(check_url(good, Policy::OPEN).is_ok(), "{good}");
        }
        assert!(check_url("https://[64:ff9b::808:808]/", Policy::STRICT).is_err());
    }

    #[test]
    fn an_answer_with_one_refused_address_is_refused_whole() {
        let addrs = |list: &[&str]| -> Vec<SocketAddr> {
            list.iter()
                .map(|ip| SocketAddr::new(ip.parse().unwrap(), 0))
                .collect()
        };
        let loopback = addrs(&["127.0.0.1", "::1"]);
        assert!(check_addrs(&loopback, Policy::OPEN).is_ok());
        assert!(check_addrs(&loopback, Policy::STRICT).is_err());
        let refused: [&[&str]; 5] = [
            &["1.1.1.1", "169.254.169.254"],
            &["127.0.0.1", "fe80::1"],
            &["::ffff:169.254.169.254"],
            &["64:ff9b::7f00:1"],
            &["10.0.0.1", "fd00:ec2::254"],
        ];
        for answer in refused {
            let answer = addrs(answer);
            assert!(check_addrs(&answer, Policy::OPEN).is_err(), "{answer:?}");
            assert!(check_addrs(&answer, Policy::STRICT).is_err(), "{answer:?}");
        }
        assert!(check_addrs(&addrs(&["1.1.1.1"]), Policy::STRICT).is_ok());
    }

    #[test]
    fn urls_are_refused_by_scheme_and_by_the_address_they_name() {
        let strict = Policy::STRICT;
        for bad in [
            "http://example.com/hook",
            "ftp://example.com/",
            "https://127.0.0.1/hook",
            "https://10.0.0.8/",
            "https://169.254.169.254/latest/meta-data/",
            "https://[::1]/",
            "https://[fd12::1]/",
            "https://[fe80::1]/",
            "https://localhost/",
            "https://localhost./",
            "https://user:pass@example.com/",
            "not a url",
        ] {
            assert!(check_url(bad, strict).is_err(), "{bad}");
        }
        assert!(check_url("https://example.com/hook", strict).is_ok());
        assert!(check_url("http://127.0.0.1:9000/hook", Policy::OPEN).is_ok());
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused_before_and_at_delivery() {
        let _env = ENV.lock().await;
        let err = check_reachable(
            "https://localhost.localdomain.invalid-not-here/",
            Policy::STRICT,
        )
        .await;
        assert!(err.is_err());
        // "localhost" resolves to 127.0.0.1 through the system resolver: the resolver refuses it.
        let refused = resolve("localhost", Policy::STRICT).await;
        assert!(refused.is_err());
        // A listener that must never be reached: the refusal is the guard's, not a closed port's.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let reached = Arc::new(AtomicUsize::new(0));
        let count = reached.clone();
        std::thread::spawn(move || {
            for _ in listener.incoming().flatten() {
                count.fetch_add(1, Ordering::SeqCst);
            }
        });
        let client = client(Policy::STRICT);
        let sent = client.get(format!("http://localhost:{port}/")).send().await;
        let err = sent.expect_err("the delivery client never connects to it");
        let mut chain = err.to_string();
        let mut source = std::error::Error::source(&err);
        while let Some(cause) = source {
            chain.push_str(&format!(": {cause}"));
            source = cause.source();
        }
        assert!(chain.contains("not on the public internet"), "{chain}");
        // The same listener, where private targets are allowed: reached (it is really there).
        let open = super::client(Policy::OPEN)
            .get(format!("http://localhost:{port}/"))
            .timeout(Duration::from_millis(300))
            .send()
            .await;
        assert!(open.is_err(), "it answers nothing, but was reached");
        assert!(reached.load(Ordering::SeqCst) >= 1, "the listener is live");
        assert_eq!(
            reached.load(Ordering::SeqCst),
            1,
            "only the open client reached it"
        );
    }

    #[tokio::test]
    async fn where_private_targets_are_allowed_names_are_still_resolved_and_checked() {
        let _env = ENV.lock().await;
        assert!(check_reachable("http://localhost:9/hook", Policy::OPEN)
            .await
            .is_ok());
        // Not resolvable yet (a receiver not started): its deliveries will look again.
        assert!(check_reachable("http://hooks.invalid/", Policy::OPEN)
            .await
            .is_ok());
        let metadata = check_reachable("http://metadata.google.internal/", Policy::OPEN).await;
        assert!(metadata.is_err());
        assert!(resolve("metadata.google.internal", Policy::OPEN)
            .await
            .is_err());
    }

    /// Puts back the variables it holds when dropped.
    struct Restore(Vec<(&'static str, Option<OsString>)>);

    impl Drop for Restore {
        fn drop(&mut self) {
            for (name, value) in self.0.drain(..) {
                match value {
                    Some(value) => std::env::set_var(name, value),
                    None => std::env::remove_var(name),
                }
            }
        }
    }

    /// A listener on loopback that answers every request 204; its port.
    fn answering() -> u16 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for mut conn in listener.incoming().flatten() {
                let mut head: Vec<u8> = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = conn.write_all(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n");
            }
        });
        port
    }

    #[tokio::test]
    async fn the_delivery_client_ignores_proxy_variables() {
        let _env = ENV.lock().await;
        // A proxy that counts and drops every connection: a delivery must never reach it.
        let proxy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let proxy_url = format!("http://{}", proxy.local_addr().unwrap());
        let proxied = Arc::new(AtomicUsize::new(0));
        let seen = proxied.clone();
        std::thread::spawn(move || {
            for conn in proxy.incoming() {
                seen.fetch_add(1, Ordering::SeqCst);
                drop(conn);
            }
        });
        let target = answering();
        // The system proxy is read when a client is built: the variables are set only around that.
        let (open, strict) = {
            let names = [
                "HTTP_PROXY",
                "HTTPS_PROXY",
                "ALL_PROXY",
                "NO_PROXY",
                "no_proxy",
                "REQUEST_METHOD",
            ];
            let _restore = Restore(names.iter().map(|n| (*n, std::env::var_os(n))).collect());
            for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
                std::env::set_var(name, &proxy_url);
            }
            for name in ["NO_PROXY", "no_proxy", "REQUEST_METHOD"] {
                std::env::remove_var(name);
            }
            (client(Policy::OPEN), client(Policy::STRICT))
        };
        let direct = open
            .get(format!("http://127.0.0.1:{target}/hook"))
            .send()
            .await;
        assert_eq!(
            direct
                .map(|r| r.status().as_u16())
                .map_err(|e| e.to_string()),
            Ok(204),
            "the delivery goes straight to the endpoint"
        );
        // Through a proxy, a name the resolver refuses would be looked up by the proxy instead.
        let refused = strict
            .get(format!("https://localhost:{target}/hook"))
            .send()
            .await;
        assert!(refused.is_err());
        assert_eq!(
            proxied.load(Ordering::SeqCst),
            0,
            "the proxy was never called"
        );
    }
}
