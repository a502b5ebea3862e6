//! Which host names a domain allowlist lets through: the one matcher the
//! sandbox's network proxy (`sandbox_allowed_domains`) and `web_fetch`
//! (`web_allowed_domains`) share.
//!
//! An entry is a name (`crates.io`: that name only) or `*.` and a name
//! (`*.crates.io`: every name below it, never the name itself). Names
//! compare case-insensitively, and a trailing dot (the DNS root) is
//! ignored on both sides. An IP literal is an exact entry like a name.

use std::fmt;
use std::str::FromStr;

/// One entry of an allowlist.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Pattern {
    /// This name only (lowercase, no trailing dot).
    Exact(String),
    /// Every name ending in `.` and this (lowercase, no trailing dot).
    Below(String),
}

/// A list of allowed domains, parsed once.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct DomainList {
    patterns: Vec<Pattern>,
}

/// A host name as the list compares it: lowercase, without the root's
/// trailing dot, an IPv6 literal without its brackets.
pub fn normalize(host: &str) -> String {
    let host = host.trim();
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

/// Whether `name` can be a DNS name or an IP literal: letters, digits,
/// `-`, `.`, `_` (and `:` for IPv6), no empty label.
fn plausible(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':'))
        && (name.contains(':') || name.split('.').all(|label| !label.is_empty()))
}

impl FromStr for Pattern {
    type Err = String;

    fn from_str(text: &str) -> Result<Pattern, String> {
        let bad = |why: &str| format!("`{text}` is not a domain or *.domain: {why}");
        let (below, name) = match text.trim().strip_prefix("*.") {
            Some(rest) => (true, normalize(rest)),
            None => (false, normalize(text)),
        };
        if name.contains('*') {
            return Err(bad(
                "`*` is allowed only as the whole first label (`*.example.com`)",
            ));
        }
        if !plausible(&name) {
            return Err(bad("a name is letters, digits, `-` and `.`"));
        }
        Ok(if below {
            Pattern::Below(name)
        } else {
            Pattern::Exact(name)
        })
    }
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Pattern::Exact(name) => write!(f, "{name}"),
            Pattern::Below(name) => write!(f, "*.{name}"),
        }
    }
}

impl DomainList {
    /// Parses every entry; the error names the first bad one.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<DomainList, String> {
        let mut patterns = entries
            .iter()
            .map(|e| e.as_ref().parse())
            .collect::<Result<Vec<Pattern>, String>>()?;
        patterns.sort();
        patterns.dedup();
        Ok(DomainList { patterns })
    }

    /// Whether `host` (a name or an IP literal, as a URL or a `CONNECT`
    /// line gives it) is allowed.
    pub fn allows(&self, host: &str) -> bool {
        let host = normalize(host);
        if host.is_empty() {
            return false;
        }
        self.patterns.iter().any(|p| match p {
            Pattern::Exact(name) => *name == host,
            Pattern::Below(name) => host
                .strip_suffix(name.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
        })
    }

    /// Whether the list has no entry (it then allows nothing).
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The entries as written back (`crates.io`, `*.crates.io`).
    pub fn entries(&self) -> Vec<String> {
        self.patterns.iter().map(ToString::to_string).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_names_match_only_themselves_and_stars_only_what_is_below() {
        let list = DomainList::parse(&["crates.io", "*.crates.io", "*.npmjs.org"]).unwrap();
        for (host, allowed) in [
            ("crates.io", true),
            ("CRATES.IO", true),
            ("crates.io.", true),
            ("static.crates.io", true),
            ("a.b.crates.io", true),
            ("Static.Crates.Io.", true),
            ("registry.npmjs.org", true),
            // `*.x` is what is below x, never x itself.
            ("npmjs.org", false),
            // Suffixes that are not whole labels.
            ("evilcrates.io", false),
            ("crates.io.evil.com", false),
            ("xcrates.io", false),
            (".crates.io", false),
            ("", false),
            ("io", false),
        ] {
            assert_eq!(list.allows(host), allowed, "{host}");
        }
    }

    #[test]
    fn an_empty_list_allows_nothing() {
        let list = DomainList::parse::<&str>(&[]).unwrap();
        assert!(list.is_empty() && !list.allows("example.com"));
    }

    #[test]
    fn ip_literals_are_exact_entries() {
        let list = DomainList::parse(&["127.0.0.1", "[::1]"]).unwrap();
        assert!(list.allows("127.0.0.1") && list.allows("[::1]") && list.allows("::1"));
        assert!(!list.allows("127.0.0.2"));
    }

    #[test]
    fn bad_entries_are_refused_by_name() {
        for bad in [
            "",
            "*",
            "*.",
            "a.*.b",
            "ex ample.com",
            "http://x.com",
            "a..b",
            "x.com/p",
        ] {
            let err = DomainList::parse(&[bad]).unwrap_err();
            assert!(err.contains(&format!("`{bad}`")), "{bad}: {err}");
        }
        assert_eq!(
            DomainList::parse(&["B.com.", "*.a.com", "b.com"])
                .unwrap()
                .entries(),
            ["b.com", "*.a.com"]
        );
    }
}
