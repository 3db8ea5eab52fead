//! The client's address: read from a request (the trusted proxy's header, else the connection's
//! peer), and the keys it is limited by (an IPv4 address or an IPv6 /64, its network for ceilings).

use std::net::{IpAddr, Ipv6Addr};

/// The client's address: the last value of `header` (set by a trusted reverse proxy) when one is
/// configured and present, else the connection's peer.
pub fn client_address(parts: &axum::http::request::Parts, header: Option<&str>) -> IpAddr {
    let from_proxy = header.and_then(|name| {
        let last = parts.headers.get_all(name).iter().next_back()?;
        last.to_str().ok()?.rsplit(',').next()?.trim().parse().ok()
    });
    from_proxy
        .or_else(|| {
            parts
                .extensions
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .map(|c| c.0.ip())
        })
        .unwrap_or(IpAddr::from([0, 0, 0, 0]))
}

/// The key a client address is limited by: an IPv4 address as it is, an IPv6 address by its /64
/// (one subscriber's network: every host in it is one client), an IPv4-mapped IPv6 address as the
/// IPv4 address it is.
pub fn client_key(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(Ipv6Addr::from(
                u128::from(v6) & 0xffff_ffff_ffff_ffff_0000_0000_0000_0000,
            )),
        },
    }
}

/// The network a client address is grouped in for the ceilings: an IPv6 address by its /48 (a site:
/// one subscriber may hold many /64s), an IPv4 address by its /24. One network may spend only a
/// tenth of a ceiling, so a block of addresses cannot empty it for everyone else.
pub fn network_key(address: IpAddr) -> IpAddr {
    match client_key(address) {
        IpAddr::V4(v4) => IpAddr::V4((u32::from(v4) & 0xffff_ff00).into()),
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(
            u128::from(v6) & 0xffff_ffff_ffff_0000_0000_0000_0000_0000,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn ceilings_group_ipv6_by_48_and_ipv4_by_24() {
        let v6 = |s: &str| -> IpAddr { s.parse().unwrap() };
        assert_eq!(
            network_key(v6("2001:db8:1:2::1")),
            network_key(v6("2001:db8:1:ffff:1::9"))
        );
        assert_ne!(
            network_key(v6("2001:db8:1::1")),
            network_key(v6("2001:db8:2::1"))
        );
        assert_eq!(network_key(addr(1)), network_key(addr(200)));
        assert_ne!(
            network_key(addr(1)),
            network_key(IpAddr::from([10, 0, 1, 1]))
        );
        assert_eq!(network_key(v6("::ffff:10.0.0.7")), network_key(addr(1)));
        // Per-address limits keep their /64 and /32.
        assert_ne!(client_key(addr(1)), client_key(addr(2)));
    }
}
