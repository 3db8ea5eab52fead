//! The guard's checks: which addresses and URLs each policy refuses, a resolver answer refused
//! whole, and the delivery client's lookups, connections and proxy settings.

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
