//! The network guard: which hosts a fetch may reach, checked twice so that
//! neither a literal address nor a DNS answer gets past it.
//!
//! - Names are checked where they become addresses: [`GuardedResolver`] is
//!   reqwest's DNS resolver, so the addresses it checks are the addresses
//!   reqwest connects to (no window for DNS rebinding between the two).
//! - IP literals never reach a resolver, so [`NetworkGuard::check_url`]
//!   judges them before the first request and on every redirect hop. The
//!   `url` crate has already turned every IPv4 spelling (`2130706433`,
//!   `0177.0.0.1`, `0x7f.1`, `127.1`) into dotted form by then.
//!
//! Exceptions: `allow_private_network` lets everything through, and each
//! [`AllowedHost`] lets one host (on one port, if it names one) through.
//!
//! A domain allowlist (`web_allowed_domains`, the kit's [`DomainList`],
//! the same matcher as the sandbox's `sandbox_allowed_domains`) narrows
//! all of it: with one, a URL whose host is not listed is refused first,
//! on every hop, whatever its address.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::sync::Arc;

use mcp_tools::net::DomainList;
use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::address::{NotPublic, not_public};

/// A host the user lets `web_fetch` reach although it is not public:
/// `HOST[:PORT]`, where HOST is a name or an IP address (IPv6 in brackets
/// when a port follows). Without a port, every port of the host is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedHost {
    host: UrlHost,
    port: Option<u16>,
}

impl AllowedHost {
    /// The host as a URL would name it (IPv4 in dotted form, names lowercase).
    pub fn host(&self) -> String {
        self.host.to_string()
    }

    /// The port, or `None` for every port.
    pub fn port(&self) -> Option<u16> {
        self.port
    }

    /// Allows exactly `addr` (its IP and port); what tests use for their
    /// loopback servers.
    pub fn socket(addr: SocketAddr) -> Self {
        Self {
            host: UrlHost::Ip(addr.ip()),
            port: Some(addr.port()),
        }
    }
}

impl FromStr for AllowedHost {
    type Err = String;

    /// Parses `HOST[:PORT]` the way a URL's authority is parsed, so
    /// `127.1:80` means `127.0.0.1:80` here as it would in a URL.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let bad = || format!("`{text}` is not HOST or HOST:PORT (IPv6 as [ADDR]:PORT)");
        if text.is_empty() || text.contains(['/', '@', '?', '#']) {
            return Err(bad());
        }
        // A bare IPv6 address has colons but no port.
        let authority = match text.parse::<std::net::Ipv6Addr>() {
            Ok(v6) => format!("[{v6}]"),
            Err(_) => text.to_string(),
        };
        // An explicit port equal to the scheme default would vanish from
        // the parsed URL; a scheme without a default keeps every port.
        let url = Url::parse(&format!("nanohermes-allow://{authority}/")).map_err(|_| bad())?;
        let host = UrlHost::of(&url).ok_or_else(bad)?;
        Ok(Self {
            host,
            port: url.port(),
        })
    }
}

impl fmt::Display for AllowedHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.host, self.port) {
            (UrlHost::Ip(IpAddr::V6(v6)), Some(port)) => write!(f, "[{v6}]:{port}"),
            (host, Some(port)) => write!(f, "{host}:{port}"),
            (host, None) => write!(f, "{host}"),
        }
    }
}

/// Which hosts are reachable: public ones always, private ones only by an
/// exception. Cheap to clone; the resolver holds one too.
#[derive(Debug, Clone, Default)]
pub struct NetworkGuard {
    allow_private_network: bool,
    allowed_hosts: Arc<[AllowedHost]>,
    /// With a list, only its hosts are reached (`web_allowed_domains`).
    allowed_domains: Option<Arc<DomainList>>,
}

/// Why a URL or name was refused, for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A literal address in the URL is not public.
    #[error("{0}")]
    Literal(NotPublic),
    /// Every address a name resolved to is not public.
    #[error("{name} resolves to {}{}", .first.apposition(), more(*.others))]
    Resolved {
        /// The name looked up.
        name: String,
        /// The first address refused, with its class.
        first: NotPublic,
        /// How many more addresses were refused too.
        others: usize,
    },
    /// A host the user's domain allowlist does not name.
    #[error(
        "{host} is not in web_allowed_domains, so web_fetch cannot reach it; only the user can \
         add it (web_allowed_domains in ~/.nanohermes/config.toml): ask them rather than trying \
         another way"
    )]
    NotListed {
        /// The URL's host.
        host: String,
    },
    /// A host the user allowed, but on another port.
    #[error(
        "{host} is allowed to reach private addresses only on port {allowed} (--allow-fetch-host {host}:{allowed}), not on port {port}"
    )]
    OtherPort {
        /// The allowed host.
        host: String,
        /// The port the user allowed.
        allowed: u16,
        /// The port asked for.
        port: u16,
    },
}

fn more(others: usize) -> String {
    match others {
        0 => String::new(),
        1 => " (and 1 more address, none of them public)".to_string(),
        n => format!(" (and {n} more addresses, none of them public)"),
    }
}

impl NetworkGuard {
    /// A guard with the given exceptions.
    pub fn new(allow_private_network: bool, allowed_hosts: Vec<AllowedHost>) -> Self {
        Self {
            allow_private_network,
            allowed_hosts: allowed_hosts.into(),
            allowed_domains: None,
        }
    }

    /// The same guard reaching only the hosts of `domains` (`None`: every
    /// host the rest of the guard lets through).
    pub fn with_domains(self, domains: Option<DomainList>) -> Self {
        Self {
            allowed_domains: domains.map(Arc::new),
            ..self
        }
    }

    /// Checks what can be known from the URL alone: a literal address, or a
    /// name the user allowed on another port. Names otherwise pass here and
    /// are judged by [`GuardedResolver`] when reqwest looks them up.
    pub fn check_url(&self, url: &Url) -> Result<(), Refusal> {
        let host = UrlHost::of(url);
        if let Some(domains) = &self.allowed_domains {
            let name = host.as_ref().map(ToString::to_string).unwrap_or_default();
            if !domains.allows(&name) {
                return Err(Refusal::NotListed { host: name });
            }
        }
        if self.allow_private_network {
            return Ok(());
        }
        let Some(host) = host else {
            return Ok(());
        };
        let port = url.port_or_known_default();
        let mut same_host = self.allowed_hosts.iter().filter(|a| a.host.same(&host));
        let mut other_port = None;
        for allowed in same_host.by_ref() {
            match allowed.port {
                None => return Ok(()),
                Some(p) if Some(p) == port => return Ok(()),
                Some(p) => other_port = Some(p),
            }
        }
        match host {
            UrlHost::Ip(ip) => not_public(ip).map_or(Ok(()), |n| Err(Refusal::Literal(n))),
            // The resolver lets an allowed name through on any port (it
            // never sees the port), so the port is enforced here.
            UrlHost::Name(name) => match (other_port, port) {
                (Some(allowed), Some(port)) => Err(Refusal::OtherPort {
                    host: name,
                    allowed,
                    port,
                }),
                _ => Ok(()),
            },
        }
    }

    /// Keeps the addresses `name` may reach; an error when none is left.
    pub fn filter_resolved(
        &self,
        name: &str,
        addresses: Vec<SocketAddr>,
    ) -> Result<Vec<SocketAddr>, Refusal> {
        if self.allow_private_network || self.name_is_allowed(name) {
            return Ok(addresses);
        }
        let mut refused = Vec::new();
        let mut kept = Vec::new();
        for address in addresses {
            match not_public(address.ip()) {
                Some(reason) => refused.push(reason),
                None => kept.push(address),
            }
        }
        if kept.is_empty() && !refused.is_empty() {
            let others = refused.len() - 1;
            return Err(Refusal::Resolved {
                name: name.to_string(),
                first: refused.swap_remove(0),
                others,
            });
        }
        Ok(kept)
    }

    fn name_is_allowed(&self, name: &str) -> bool {
        let name = name.to_ascii_lowercase();
        self.allowed_hosts
            .iter()
            .any(|a| matches!(&a.host, UrlHost::Name(n) if *n == name))
    }

    /// The resolver to install with `ClientBuilder::dns_resolver`.
    pub fn resolver(&self) -> Arc<GuardedResolver> {
        Arc::new(GuardedResolver {
            guard: self.clone(),
        })
    }
}

/// reqwest's DNS resolver: the system resolver (`getaddrinfo`), then
/// [`NetworkGuard::filter_resolved`]. A refusal is the lookup's error, so
/// reqwest never connects.
#[derive(Debug)]
pub struct GuardedResolver {
    guard: NetworkGuard,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let guard = self.guard.clone();
        let name = name.as_str().to_string();
        Box::pin(async move {
            // Port 0: reqwest puts the URL's port in afterwards.
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let kept = guard.filter_resolved(&name, found)?;
            let addrs: Addrs = Box::new(kept.into_iter());
            Ok(addrs)
        })
    }
}

/// A URL's host: an address, or a (lowercase, IDNA-encoded) name.
#[derive(Debug, Clone, PartialEq, Eq)]
enum UrlHost {
    Ip(IpAddr),
    Name(String),
}

impl UrlHost {
    fn of(url: &Url) -> Option<Self> {
        let host = url.host_str()?;
        if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            return v6.parse().ok().map(Self::Ip);
        }
        // For http(s) the url crate has already normalised every IPv4
        // spelling to dotted form; for the allow-list's own scheme it
        // has not, so parse those spellings the same way here.
        match host.parse::<IpAddr>() {
            Ok(ip) => Some(Self::Ip(ip)),
            Err(_) => Some(
                Url::parse(&format!("http://{host}/"))
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_string))
                    .map(|h| match h.parse::<IpAddr>() {
                        Ok(ip) => Self::Ip(ip),
                        Err(_) => Self::Name(h),
                    })
                    .unwrap_or_else(|| Self::Name(host.to_ascii_lowercase())),
            ),
        }
    }
}

impl UrlHost {
    /// Equal hosts, an IPv4-mapped IPv6 address equal to its IPv4 address.
    fn same(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Ip(a), Self::Ip(b)) => a.to_canonical() == b.to_canonical(),
            (Self::Name(a), Self::Name(b)) => a == b,
            _ => false,
        }
    }
}

impl fmt::Display for UrlHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Ip(ip) => write!(f, "{ip}"),
            Self::Name(name) => write!(f, "{name}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(list: &[&str]) -> Vec<SocketAddr> {
        list.iter()
            .map(|a| SocketAddr::new(a.parse().unwrap(), 0))
            .collect()
    }

    #[test]
    fn a_name_resolving_only_to_private_addresses_is_refused() {
        let guard = NetworkGuard::default();
        let err = guard
            .filter_resolved("intranet.example", addrs(&["10.0.0.5", "fd00::5"]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "intranet.example resolves to 10.0.0.5, a private address (RFC 1918) \
             (and 1 more address, none of them public)"
        );
        let err = guard
            .filter_resolved("meta.example", addrs(&["169.254.169.254"]))
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "meta.example resolves to 169.254.169.254, the cloud metadata address (link-local)"
        );
    }

    #[test]
    fn a_mixed_answer_keeps_only_the_public_addresses() {
        let guard = NetworkGuard::default();
        let kept = guard
            .filter_resolved(
                "rebind.example",
                addrs(&[
                    "127.0.0.1",
                    "93.184.215.14",
                    "::ffff:10.0.0.1",
                    "2606:4700::1",
                ]),
            )
            .unwrap();
        assert_eq!(kept, addrs(&["93.184.215.14", "2606:4700::1"]));
    }

    #[test]
    fn exceptions_let_private_answers_through() {
        let open = NetworkGuard::new(true, Vec::new());
        assert_eq!(
            open.filter_resolved("localhost", addrs(&["127.0.0.1"])),
            Ok(addrs(&["127.0.0.1"]))
        );
        let one = NetworkGuard::new(false, vec!["Intranet:8080".parse().unwrap()]);
        assert_eq!(
            one.filter_resolved("intranet", addrs(&["10.0.0.5"])),
            Ok(addrs(&["10.0.0.5"]))
        );
        assert!(one.filter_resolved("other", addrs(&["10.0.0.5"])).is_err());
    }

    #[test]
    fn allowed_hosts_parse_like_url_authorities() {
        for (text, host, port) in [
            ("localhost", "localhost", None),
            ("LocalHost:8080", "localhost", Some(8080)),
            ("127.0.0.1:80", "127.0.0.1", Some(80)),
            ("127.1:443", "127.0.0.1", Some(443)),
            ("2130706433", "127.0.0.1", None),
            ("[::1]:8080", "::1", Some(8080)),
            ("::1", "::1", None),
            ("[fd00::1]", "fd00::1", None),
        ] {
            let allowed: AllowedHost = text.parse().unwrap();
            assert_eq!(
                (allowed.host().as_str(), allowed.port()),
                (host, port),
                "{text}"
            );
        }
        for bad in ["", "http://x/", "host:port", "a@b", "host:99999"] {
            assert!(bad.parse::<AllowedHost>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_domain_allowlist_refuses_every_unlisted_host_first() {
        let guard = NetworkGuard::new(true, Vec::new()).with_domains(Some(
            DomainList::parse(&["docs.rs", "*.rust-lang.org", "127.0.0.1"]).unwrap(),
        ));
        let check = |u: &str| {
            guard
                .check_url(&Url::parse(u).unwrap())
                .map_err(|e| e.to_string())
        };
        for allowed in [
            "https://docs.rs/x",
            "https://DOC.rust-lang.org./std",
            "http://127.0.0.1:8080/",
        ] {
            assert_eq!(check(allowed), Ok(()), "{allowed}");
        }
        for refused in [
            "https://rust-lang.org/",
            "https://evil.com/",
            "http://127.1.0.1/",
        ] {
            let err = check(refused).unwrap_err();
            assert!(
                err.contains("is not in web_allowed_domains"),
                "{refused}: {err}"
            );
        }
    }

    #[test]
    fn check_url_applies_allowed_ports() {
        let guard = NetworkGuard::new(
            false,
            vec![
                "127.0.0.1:8080".parse().unwrap(),
                "intranet:8080".parse().unwrap(),
            ],
        );
        let check = |u: &str| {
            guard
                .check_url(&Url::parse(u).unwrap())
                .map_err(|e| e.to_string())
        };
        assert_eq!(check("http://127.0.0.1:8080/x"), Ok(()));
        assert_eq!(
            check("http://127.0.0.1:8081/x"),
            Err("127.0.0.1 is a loopback address".to_string())
        );
        assert_eq!(check("http://intranet:8080/"), Ok(()));
        assert_eq!(
            check("http://intranet/"),
            Err(
                "intranet is allowed to reach private addresses only on port 8080 \
                 (--allow-fetch-host intranet:8080), not on port 80"
                    .to_string()
            )
        );
        assert_eq!(check("https://example.com/"), Ok(()));
    }
}
