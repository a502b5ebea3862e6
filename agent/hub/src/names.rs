//! The names the model sees.
//!
//! Providers accept function names matching `^[a-zA-Z0-9_-]{1,64}$`, and
//! some (Gemini) also want a leading letter. Built-in tools keep their plain
//! names (`read_file`); an external server's tools are `SERVER__TOOL`. A name
//! that is too long is cut and gets a short stable hash of the raw name, so
//! `foo.bar` and `foo_bar` stay apart after truncation. Two tools that end up
//! with the same name are never dropped: the later one gets a numeric suffix
//! and a warning says so.

use std::collections::HashSet;

/// The longest name providers accept.
pub const MAX_NAME_LEN: usize = 64;

/// What goes in front of a name that does not start with a letter.
const LETTER_PREFIX: &str = "mcp_";

/// The name the model sees for tool `raw_tool` of a server: plain for a
/// built-in (`prefix == None`), `PREFIX__TOOL` for an external server. The
/// result is sanitised, starts with a letter and is at most 64 bytes, but
/// may still collide with another tool's: see [`NameTable`].
pub fn model_name(prefix: Option<&str>, raw_tool: &str) -> String {
    let raw = match prefix {
        Some(prefix) => format!("{prefix}__{raw_tool}"),
        None => raw_tool.to_string(),
    };
    let mut name: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) {
        name.insert_str(0, LETTER_PREFIX);
    }
    if name.len() > MAX_NAME_LEN {
        let hash = format!("{:08x}", fnv1a_32(raw.as_bytes()));
        // The name is ASCII here, so any byte index is a char boundary.
        name.truncate(MAX_NAME_LEN - hash.len() - 1);
        name.push('_');
        name.push_str(&hash);
    }
    name
}

/// Whether `name` is a valid server name: it becomes the prefix of its
/// tools' names, so it must be non-empty, made of `[A-Za-z0-9_-]` and must
/// not contain `__` (the separator between server and tool).
pub fn is_valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// 32-bit FNV-1a: small, stable across runs and platforms. The hub's one
/// hash: it shortens tool names here and keys the era cache
/// ([`super::era`]). Its output is part of the tool names a model and a
/// user's `allow`/`deny` rules see, so it must never change.
pub fn fnv1a_32(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in bytes {
        hash ^= u32::from(*byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// Hands out unique names in the order tools are registered: the first tool
/// keeps its name, a later one that collides gets `_2`, `_3`, ... (cut to
/// stay within 64 bytes).
#[derive(Debug, Default)]
pub struct NameTable {
    taken: HashSet<String>,
}

impl NameTable {
    /// Registers `wanted` and returns the name to use: `wanted` itself when
    /// it is free, otherwise the first free suffixed variant. The caller
    /// warns when the two differ.
    pub fn claim(&mut self, wanted: &str) -> String {
        if self.taken.insert(wanted.to_string()) {
            return wanted.to_string();
        }
        let mut n = 2usize;
        loop {
            let suffix = format!("_{n}");
            let keep = wanted.len().min(MAX_NAME_LEN - suffix.len());
            let candidate = format!("{}{suffix}", &wanted[..keep]);
            if self.taken.insert(candidate.clone()) {
                return candidate;
            }
            n += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_valid(name: &str) -> bool {
        (1..=MAX_NAME_LEN).contains(&name.len())
            && name.starts_with(|c: char| c.is_ascii_alphabetic())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn builtin_tools_keep_plain_names() {
        assert_eq!(model_name(None, "read_file"), "read_file");
    }

    #[test]
    fn external_tools_are_prefixed_with_the_server_name() {
        assert_eq!(
            model_name(Some("github"), "search_issues"),
            "github__search_issues"
        );
    }

    #[test]
    fn characters_outside_the_allowed_set_become_underscores() {
        assert_eq!(model_name(Some("fs"), "read.file v2"), "fs__read_file_v2");
        assert_eq!(model_name(Some("fs"), "列出"), "fs____");
    }

    #[test]
    fn a_name_not_starting_with_a_letter_gets_a_prefix() {
        assert_eq!(model_name(None, "2fa"), "mcp_2fa");
        assert_eq!(model_name(Some("1password"), "get"), "mcp_1password__get");
        assert_eq!(model_name(None, "_x"), "mcp__x");
        assert!(is_valid(&model_name(None, "")));
    }

    #[test]
    fn a_long_name_is_truncated_with_a_stable_hash_of_the_raw_name() {
        let tool = "a".repeat(100);
        let name = model_name(Some("server"), &tool);
        assert_eq!(name.len(), MAX_NAME_LEN);
        assert!(is_valid(&name), "{name}");
        let hash = format!("{:08x}", fnv1a_32(format!("server__{tool}").as_bytes()));
        assert!(name.ends_with(&format!("_{hash}")), "{name}");
        assert_eq!(name, model_name(Some("server"), &tool), "stable");
    }

    #[test]
    fn long_names_that_sanitise_alike_stay_distinct() {
        let base = "x".repeat(70);
        let dotted = model_name(Some("s"), &format!("{base}.bar"));
        let underscored = model_name(Some("s"), &format!("{base}_bar"));
        assert_ne!(dotted, underscored);
        assert!(is_valid(&dotted) && is_valid(&underscored));
    }

    #[test]
    fn a_name_of_exactly_64_bytes_is_kept_whole() {
        let tool = "t".repeat(64);
        assert_eq!(model_name(None, &tool), tool);
    }

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        assert_eq!(fnv1a_32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a_32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a_32(b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn collisions_get_deterministic_suffixes() {
        let mut table = NameTable::default();
        assert_eq!(table.claim("fs__read"), "fs__read");
        assert_eq!(table.claim("fs__read"), "fs__read_2");
        assert_eq!(table.claim("fs__read"), "fs__read_3");
        assert_eq!(table.claim("fs__read_2"), "fs__read_2_2");
    }

    #[test]
    fn a_suffixed_64_byte_name_still_fits() {
        let mut table = NameTable::default();
        let long = "n".repeat(MAX_NAME_LEN);
        table.claim(&long);
        let second = table.claim(&long);
        assert_eq!(second.len(), MAX_NAME_LEN);
        assert!(second.ends_with("_2"));
        assert!(is_valid(&second));
    }

    #[test]
    fn server_names_must_be_usable_as_prefixes() {
        assert!(is_valid_server_name("github"));
        assert!(is_valid_server_name("my-server_1"));
        assert!(!is_valid_server_name(""));
        assert!(!is_valid_server_name("a__b"));
        assert!(!is_valid_server_name("a.b"));
        assert!(!is_valid_server_name("a b"));
    }
}
