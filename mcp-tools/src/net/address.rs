//! Which IP addresses `web_fetch` and the sandbox's network proxy may
//! connect to: a table of the special ranges that are not the public
//! internet, and the reason each is refused.
//!
//! IPv6 forms that carry an IPv4 address (IPv4-mapped, NAT64, 6to4) are
//! judged by the IPv4 address inside, because that is where the packets go.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not public: the class it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotPublic {
    /// The address as the URL or the resolver gave it.
    pub address: IpAddr,
    /// The class, worded to follow "is", e.g. `a loopback address`.
    pub class: &'static str,
    /// For an IPv6 form that embeds an IPv4 address: that address.
    pub embedded: Option<Ipv4Addr>,
}

impl fmt::Display for NotPublic {
    /// `127.0.0.1 is a loopback address`, or for an embedded IPv4 address
    /// `::ffff:127.0.0.1 is an IPv4-mapped form of 127.0.0.1, a loopback address`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.embedded, self.address) {
            (Some(v4), IpAddr::V6(v6)) => {
                write!(f, "{v6} is {} of {v4}, {}", embedding_kind(v6), self.class)
            }
            _ => write!(f, "{} is {}", self.address, self.class),
        }
    }
}

impl NotPublic {
    /// The same facts after a comma instead of "is", for sentences such as
    /// "NAME resolves to 127.0.0.1, a loopback address".
    pub fn apposition(&self) -> String {
        match (self.embedded, self.address) {
            (Some(v4), IpAddr::V6(v6)) => {
                format!("{v6}, {} of {v4}, {}", embedding_kind(v6), self.class)
            }
            _ => format!("{}, {}", self.address, self.class),
        }
    }
}

/// `None` when `address` is public; otherwise the class it falls in.
pub fn not_public(address: IpAddr) -> Option<NotPublic> {
    match address {
        IpAddr::V4(v4) => v4_class(v4).map(|class| NotPublic {
            address,
            class,
            embedded: None,
        }),
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_v4(v6) {
                return v4_class(v4).map(|class| NotPublic {
                    address,
                    class,
                    embedded: Some(v4),
                });
            }
            v6_class(v6).map(|class| NotPublic {
                address,
                class,
                embedded: None,
            })
        }
    }
}

/// The IPv4 ranges refused, most specific first (the metadata address sits
/// inside link-local). Listed in servers/web/README.md; keep the two in step.
const V4_RANGES: &[([u8; 4], u8, &str)] = &[
    (
        [169, 254, 169, 254],
        32,
        "the cloud metadata address (link-local)",
    ),
    ([0, 0, 0, 0], 32, "the unspecified address"),
    ([255, 255, 255, 255], 32, "the broadcast address"),
    ([0, 0, 0, 0], 8, "a \"this network\" address (0.0.0.0/8)"),
    ([10, 0, 0, 0], 8, "a private address (RFC 1918)"),
    (
        [100, 64, 0, 0],
        10,
        "a carrier-grade NAT address (100.64.0.0/10)",
    ),
    ([127, 0, 0, 0], 8, "a loopback address"),
    ([169, 254, 0, 0], 16, "a link-local address"),
    ([172, 16, 0, 0], 12, "a private address (RFC 1918)"),
    (
        [192, 0, 0, 0],
        24,
        "an IETF protocol assignment address (192.0.0.0/24)",
    ),
    ([192, 0, 2, 0], 24, "a documentation address (TEST-NET-1)"),
    ([192, 168, 0, 0], 16, "a private address (RFC 1918)"),
    (
        [198, 18, 0, 0],
        15,
        "a benchmarking address (198.18.0.0/15)",
    ),
    (
        [198, 51, 100, 0],
        24,
        "a documentation address (TEST-NET-2)",
    ),
    ([203, 0, 113, 0], 24, "a documentation address (TEST-NET-3)"),
    ([224, 0, 0, 0], 4, "a multicast address"),
    ([240, 0, 0, 0], 4, "a reserved address (240.0.0.0/4)"),
];

/// The IPv6 ranges refused (after the IPv4-carrying forms are unwrapped),
/// most specific first.
const V6_RANGES: &[(Ipv6Addr, u8, &str)] = &[
    (Ipv6Addr::UNSPECIFIED, 128, "the unspecified address"),
    (Ipv6Addr::LOCALHOST, 128, "a loopback address"),
    (
        Ipv6Addr::UNSPECIFIED,
        96,
        "an IPv4-compatible address (::/96, deprecated and not routed)",
    ),
    (
        Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
        48,
        "a local-use NAT64 address (64:ff9b:1::/48)",
    ),
    (
        Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
        64,
        "a discard-only address (100::/64)",
    ),
    (
        Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
        32,
        "a Teredo address (2001::/32, which hides an IPv4 address)",
    ),
    (
        Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 0),
        48,
        "a benchmarking address (2001:2::/48)",
    ),
    (
        Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
        32,
        "a documentation address (2001:db8::/32)",
    ),
    (
        Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
        20,
        "a documentation address (3fff::/20)",
    ),
    (
        Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
        7,
        "a unique-local address (fc00::/7)",
    ),
    (
        Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
        10,
        "a link-local address (fe80::/10)",
    ),
    (
        Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0),
        10,
        "a site-local address (fec0::/10, deprecated)",
    ),
    (
        Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0),
        8,
        "a multicast address",
    ),
];

fn v4_class(address: Ipv4Addr) -> Option<&'static str> {
    let bits = u32::from(address);
    V4_RANGES
        .iter()
        .find(|(net, len, _)| prefix_matches_v4(bits, u32::from_be_bytes(*net), *len))
        .map(|(_, _, class)| *class)
}

fn v6_class(address: Ipv6Addr) -> Option<&'static str> {
    let bits = u128::from(address);
    V6_RANGES
        .iter()
        .find(|(net, len, _)| prefix_matches_v6(bits, u128::from(*net), *len))
        .map(|(_, _, class)| *class)
}

fn prefix_matches_v4(bits: u32, net: u32, len: u8) -> bool {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    bits & mask == net & mask
}

fn prefix_matches_v6(bits: u128, net: u128, len: u8) -> bool {
    let mask = if len == 0 {
        0
    } else {
        u128::MAX << (128 - len)
    };
    bits & mask == net & mask
}

/// The IPv4 address an IPv6 address delivers to: IPv4-mapped
/// (`::ffff:a.b.c.d`), well-known NAT64 (`64:ff9b::a.b.c.d`) and 6to4
/// (`2002:aabb:ccdd::/48`).
fn embedded_v4(address: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(address);
    if let Some(v4) = address.to_ipv4_mapped() {
        return Some(v4);
    }
    let nat64 = u128::from(Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0));
    if prefix_matches_v6(bits, nat64, 96) {
        return Some(Ipv4Addr::from(bits as u32));
    }
    let six_to_four = u128::from(Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0));
    if prefix_matches_v6(bits, six_to_four, 16) {
        return Some(Ipv4Addr::from((bits >> 80) as u32));
    }
    None
}

fn embedding_kind(address: Ipv6Addr) -> &'static str {
    if address.to_ipv4_mapped().is_some() {
        "an IPv4-mapped form"
    } else if address.segments()[0] == 0x2002 {
        "a 6to4 form"
    } else {
        "a NAT64 form"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(address: &str, expect: Option<&str>) {
        let ip: IpAddr = address.parse().unwrap();
        let got = not_public(ip).map(|n| n.to_string());
        assert_eq!(got.as_deref(), expect, "{address}");
    }

    #[test]
    fn every_refused_ipv4_class_is_named() {
        for (address, expect) in [
            ("127.0.0.1", "127.0.0.1 is a loopback address"),
            ("127.255.255.254", "127.255.255.254 is a loopback address"),
            ("10.1.2.3", "10.1.2.3 is a private address (RFC 1918)"),
            ("172.16.0.1", "172.16.0.1 is a private address (RFC 1918)"),
            (
                "172.31.255.255",
                "172.31.255.255 is a private address (RFC 1918)",
            ),
            ("192.168.1.1", "192.168.1.1 is a private address (RFC 1918)"),
            (
                "100.64.0.1",
                "100.64.0.1 is a carrier-grade NAT address (100.64.0.0/10)",
            ),
            (
                "100.127.255.255",
                "100.127.255.255 is a carrier-grade NAT address (100.64.0.0/10)",
            ),
            ("169.254.1.1", "169.254.1.1 is a link-local address"),
            (
                "169.254.169.254",
                "169.254.169.254 is the cloud metadata address (link-local)",
            ),
            ("0.0.0.0", "0.0.0.0 is the unspecified address"),
            (
                "0.1.2.3",
                "0.1.2.3 is a \"this network\" address (0.0.0.0/8)",
            ),
            ("224.0.0.1", "224.0.0.1 is a multicast address"),
            ("239.255.255.250", "239.255.255.250 is a multicast address"),
            (
                "255.255.255.255",
                "255.255.255.255 is the broadcast address",
            ),
            ("240.0.0.1", "240.0.0.1 is a reserved address (240.0.0.0/4)"),
            (
                "192.0.0.170",
                "192.0.0.170 is an IETF protocol assignment address (192.0.0.0/24)",
            ),
            (
                "192.0.2.1",
                "192.0.2.1 is a documentation address (TEST-NET-1)",
            ),
            (
                "198.51.100.7",
                "198.51.100.7 is a documentation address (TEST-NET-2)",
            ),
            (
                "203.0.113.9",
                "203.0.113.9 is a documentation address (TEST-NET-3)",
            ),
            (
                "198.19.0.1",
                "198.19.0.1 is a benchmarking address (198.18.0.0/15)",
            ),
        ] {
            check(address, Some(expect));
        }
    }

    #[test]
    fn every_refused_ipv6_class_is_named() {
        for (address, expect) in [
            ("::1", "::1 is a loopback address"),
            ("::", ":: is the unspecified address"),
            ("fe80::1", "fe80::1 is a link-local address (fe80::/10)"),
            ("febf::1", "febf::1 is a link-local address (fe80::/10)"),
            ("fc00::1", "fc00::1 is a unique-local address (fc00::/7)"),
            (
                "fd12:3456::1",
                "fd12:3456::1 is a unique-local address (fc00::/7)",
            ),
            ("ff02::1", "ff02::1 is a multicast address"),
            (
                "fec0::1",
                "fec0::1 is a site-local address (fec0::/10, deprecated)",
            ),
            (
                "2001:db8::1",
                "2001:db8::1 is a documentation address (2001:db8::/32)",
            ),
            (
                "::7f00:1",
                "::7f00:1 is an IPv4-compatible address (::/96, deprecated and not routed)",
            ),
            (
                "64:ff9b:1::a00:1",
                "64:ff9b:1::a00:1 is a local-use NAT64 address (64:ff9b:1::/48)",
            ),
            (
                "2001:0:4136:e378::1",
                "2001:0:4136:e378::1 is a Teredo address (2001::/32, which hides an IPv4 address)",
            ),
            ("100::1", "100::1 is a discard-only address (100::/64)"),
        ] {
            check(address, Some(expect));
        }
    }

    #[test]
    fn ipv6_forms_carrying_ipv4_are_judged_by_the_ipv4_inside() {
        check(
            "::ffff:127.0.0.1",
            Some("::ffff:127.0.0.1 is an IPv4-mapped form of 127.0.0.1, a loopback address"),
        );
        check(
            "::ffff:a9fe:a9fe",
            Some(
                "::ffff:169.254.169.254 is an IPv4-mapped form of 169.254.169.254, \
                 the cloud metadata address (link-local)",
            ),
        );
        check(
            "64:ff9b::10.0.0.1",
            Some("64:ff9b::a00:1 is a NAT64 form of 10.0.0.1, a private address (RFC 1918)"),
        );
        check(
            "2002:c0a8:0101::1",
            Some("2002:c0a8:101::1 is a 6to4 form of 192.168.1.1, a private address (RFC 1918)"),
        );
        // The same forms around a public address are public.
        check("::ffff:8.8.8.8", None);
        check("64:ff9b::8.8.8.8", None);
        check("2002:0808:0808::1", None);
    }

    #[test]
    fn public_addresses_pass() {
        for address in [
            "8.8.8.8",
            "1.1.1.1",
            "93.184.215.14",
            "172.32.0.1",
            "100.128.0.1",
            "192.169.0.1",
            "198.20.0.1",
            "223.255.255.255",
            "2606:4700:4700::1111",
            "2a00:1450:4001::200e",
        ] {
            check(address, None);
        }
    }
}
