//! The DNS-rebinding guard: which `Host` and `Origin` header values a
//! request may carry.
//!
//! A web page can make a browser send requests to a loopback server: by
//! rebinding its own name to 127.0.0.1 (the browser then sends
//! `Host: evil.example`) or cross-origin (the browser sends
//! `Origin: http://evil.example`). So a request is served only when its
//! `Host` names a loopback host or one the user allowed, and its `Origin`,
//! when present, is a loopback origin or one the user allowed. Clients that
//! are not browsers send no `Origin`, which is fine.
//!
//! Values are parsed strictly (`host[:port]`, no user info, no path): a
//! value that does not parse is refused, never guessed at.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::bind::is_loopback;

/// A host as a header names it: a DNS name (lowercased) or an IP literal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostName {
    /// A DNS name, lowercased.
    Name(String),
    /// An IPv4 literal (dotted quad) or a bracketed IPv6 literal.
    Ip(IpAddr),
}

impl HostName {
    /// `localhost`, or a loopback IP literal (127/8, `::1`).
    pub fn is_loopback(&self) -> bool {
        match self {
            HostName::Name(name) => name == "localhost",
            HostName::Ip(ip) => is_loopback(*ip),
        }
    }
}

impl fmt::Display for HostName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HostName::Name(name) => f.write_str(name),
            HostName::Ip(IpAddr::V4(ip)) => write!(f, "{ip}"),
            HostName::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
        }
    }
}

/// `host[:port]`, as in a `Host` header or an `--allow-host` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authority {
    /// The host part.
    pub host: HostName,
    /// The port, when one is written.
    pub port: Option<u16>,
}

impl Authority {
    /// Parses `name`, `name:port`, `1.2.3.4[:port]` or `[v6][:port]`.
    /// Anything else (user info, a path, an empty port, stray characters)
    /// is `None`.
    pub fn parse(value: &str) -> Option<Self> {
        let (host, port) = if let Some(rest) = value.strip_prefix('[') {
            let (inside, after) = rest.split_once(']')?;
            let ip: Ipv6Addr = inside.parse().ok()?;
            (HostName::Ip(IpAddr::V6(ip)), parse_port_suffix(after)?)
        } else {
            let (host, port) = match value.rsplit_once(':') {
                Some((host, port)) => (host, Some(parse_port(port)?)),
                None => (value, None),
            };
            let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
            if host.is_empty() || !host.chars().all(valid) {
                return None;
            }
            let host = match host.parse::<Ipv4Addr>() {
                Ok(ip) => HostName::Ip(IpAddr::V4(ip)),
                Err(_) => HostName::Name(host.to_ascii_lowercase()),
            };
            (host, port)
        };
        Some(Self { host, port })
    }

    /// Whether a request's `Host` matches this allowed entry: same host,
    /// and the same port when the entry names one.
    fn admits(&self, host: &Authority) -> bool {
        self.host == host.host && self.port.is_none_or(|port| host.port == Some(port))
    }
}

impl fmt::Display for Authority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.port {
            Some(port) => write!(f, "{}:{port}", self.host),
            None => write!(f, "{}", self.host),
        }
    }
}

fn parse_port_suffix(after: &str) -> Option<Option<u16>> {
    match after {
        "" => Some(None),
        _ => Some(Some(parse_port(after.strip_prefix(':')?)?)),
    }
}

fn parse_port(port: &str) -> Option<u16> {
    if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    port.parse().ok()
}

/// A browser origin: `null`, or scheme, host and port (RFC 6454).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// `Origin: null` (sandboxed frames, `file:` pages, some redirects).
    Null,
    /// `http(s)://host[:port]`; the port is the scheme's default when not
    /// written, so `https://a` and `https://a:443` are one origin.
    Tuple {
        /// `https` (true) or `http` (false); other schemes do not parse.
        https: bool,
        /// The host part.
        host: HostName,
        /// The port, explicit or the scheme's default.
        port: u16,
    },
}

impl Origin {
    /// Parses `null` or `http(s)://host[:port]` with nothing after the
    /// authority.
    pub fn parse(value: &str) -> Option<Self> {
        if value == "null" {
            return Some(Origin::Null);
        }
        let (scheme, rest) = value.split_once("://")?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "http" => false,
            "https" => true,
            _ => return None,
        };
        let authority = Authority::parse(rest)?;
        Some(Origin::Tuple {
            https,
            host: authority.host,
            port: authority.port.unwrap_or(if https { 443 } else { 80 }),
        })
    }

    fn is_loopback(&self) -> bool {
        matches!(self, Origin::Tuple { host, .. } if host.is_loopback())
    }
}

/// Why the guard refused a request; the text goes in the 403 body and the
/// server's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal(pub String);

/// The allow-lists beyond loopback, fixed at startup.
#[derive(Debug, Clone, Default)]
pub struct Guard {
    hosts: Vec<Authority>,
    origins: Vec<Origin>,
}

impl Guard {
    /// A guard that admits loopback hosts and origins plus `hosts` and
    /// `origins`.
    pub fn new(hosts: Vec<Authority>, origins: Vec<Origin>) -> Self {
        Self { hosts, origins }
    }

    /// Checks the `Host` the request names (the `Host` header, or the
    /// request target's authority when there is no header). `None` means
    /// the request named no host, which is refused too: every HTTP/1.1
    /// client sends one.
    pub fn check_host(&self, value: Option<&str>) -> Result<(), Refusal> {
        let Some(value) = value else {
            return Err(Refusal("the request has no Host header".into()));
        };
        let Some(host) = Authority::parse(value) else {
            return Err(Refusal(format!("Host {value:?} is not host[:port]")));
        };
        if host.host.is_loopback() || self.hosts.iter().any(|a| a.admits(&host)) {
            Ok(())
        } else {
            Err(Refusal(format!(
                "Host {value:?} is not a loopback host or one allowed by --allow-host"
            )))
        }
    }

    /// Checks the `Origin` header: absent is fine (not a browser), present
    /// must be a loopback origin or one allowed by `--allow-origin`.
    pub fn check_origin(&self, value: Option<&str>) -> Result<(), Refusal> {
        let Some(value) = value else {
            return Ok(());
        };
        let allowed = Origin::parse(value)
            .is_some_and(|origin| origin.is_loopback() || self.origins.contains(&origin));
        if allowed {
            Ok(())
        } else {
            Err(Refusal(format!(
                "Origin {value:?} is not a loopback origin or one allowed by --allow-origin"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(hosts: &[&str], origins: &[&str]) -> Guard {
        Guard::new(
            hosts.iter().map(|h| Authority::parse(h).unwrap()).collect(),
            origins.iter().map(|o| Origin::parse(o).unwrap()).collect(),
        )
    }

    #[test]
    fn loopback_hosts_pass_by_default_and_forged_ones_do_not() {
        let g = Guard::default();
        for ok in [
            "localhost",
            "LOCALHOST:8931",
            "127.0.0.1",
            "127.0.0.1:1",
            "127.3.2.1:65535",
            "[::1]",
            "[::1]:8931",
            "[::ffff:127.0.0.1]:80",
        ] {
            assert_eq!(g.check_host(Some(ok)), Ok(()), "{ok}");
        }
        for forged in [
            "evil.example",
            "127.0.0.1.evil.example",
            "localhost.evil.example:80",
            "localhost:1@evil",
            "user@localhost",
            "localhost:",
            "localhost:99999",
            "localhost:80/x",
            "localhost.",
            "127.1",
            "2130706433",
            "0x7f000001",
            "::1",
            "[::1",
            "[::1]x",
            "[fe80::1%25lo]",
            "0.0.0.0",
            "192.168.1.5",
            "",
            " localhost",
        ] {
            assert!(g.check_host(Some(forged)).is_err(), "{forged:?} passed");
        }
        assert!(g.check_host(None).is_err());
    }

    #[test]
    fn allowed_hosts_match_by_name_and_by_port_when_one_is_given() {
        let g = guard(&["mybox.lan", "10.0.0.7:8931", "[fd00::1]"], &[]);
        assert_eq!(g.check_host(Some("MyBox.LAN:1234")), Ok(()));
        assert_eq!(g.check_host(Some("10.0.0.7:8931")), Ok(()));
        assert!(g.check_host(Some("10.0.0.7:8932")).is_err());
        assert!(g.check_host(Some("10.0.0.7")).is_err());
        assert_eq!(g.check_host(Some("[fd00::1]:9")), Ok(()));
        assert!(g.check_host(Some("mybox.lan.evil.example")).is_err());
        assert_eq!(g.check_host(Some("localhost:1")), Ok(()), "loopback stays");
    }

    #[test]
    fn absent_and_loopback_origins_pass_and_forged_ones_do_not() {
        let g = Guard::default();
        for ok in [
            "http://localhost",
            "http://localhost:6274",
            "https://127.0.0.1:8443",
            "HTTP://LOCALHOST:1",
            "http://[::1]:3000",
        ] {
            assert_eq!(g.check_origin(Some(ok)), Ok(()), "{ok}");
        }
        assert_eq!(g.check_origin(None), Ok(()));
        for forged in [
            "http://evil.example",
            "null",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example",
            "http://localhost@evil.example",
            "http://localhost:80@evil.example",
            "http://localhost/",
            "ws://localhost",
            "file://",
            "localhost",
            "http://",
            "",
        ] {
            assert!(g.check_origin(Some(forged)).is_err(), "{forged:?} passed");
        }
    }

    #[test]
    fn allowed_origins_match_scheme_host_and_effective_port() {
        let g = guard(
            &[],
            &["https://app.example", "http://tool.lan:8080", "null"],
        );
        assert_eq!(g.check_origin(Some("https://app.example")), Ok(()));
        assert_eq!(g.check_origin(Some("https://app.example:443")), Ok(()));
        assert!(g.check_origin(Some("http://app.example")).is_err());
        assert!(g.check_origin(Some("https://app.example:8443")).is_err());
        assert_eq!(g.check_origin(Some("http://tool.lan:8080")), Ok(()));
        assert!(g.check_origin(Some("http://tool.lan")).is_err());
        assert_eq!(g.check_origin(Some("null")), Ok(()), "allowed explicitly");
    }
}
