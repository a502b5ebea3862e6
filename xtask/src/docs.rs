//! The doc-claim check: the repository paths and crate names that
//! ARCHITECTURE.md names in backticks exist.
//!
//! Conservative on purpose, so it fails on a stale claim and not on prose:
//! only inline code spans (not fenced blocks) without whitespace are read,
//! and of those only
//! - a path: it contains `/` and ends in `.rs` or `/`, or it starts with a
//!   top-level directory of the repository ([`TOP_DIRS`]); spans starting
//!   with `.`, `/`, `$` or `~` (runtime locations) or holding `:` (URLs,
//!   Rust paths) are not paths;
//! - a crate: the whole span is `nanohermes-NAME`.
//!
//! A path starting with a top-level directory must exist from the root;
//! any other (`tests/it/hooks.rs`, `cli/mcp/probe/`) must be the tail of
//! some file's or directory's path, as such paths are relative to a crate
//! or a module. `*` and placeholder components (`<name>`, all-capitals
//! such as `NAME`) match any component with the same extension. The few
//! spans that fit the pattern but are not repository paths are listed in
//! [`NOT_REPO_PATHS`].

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use crate::metadata::Workspace;

/// The repository's top-level directories that a rooted path starts with.
pub const TOP_DIRS: &[&str] = &[
    "agent/",
    "mcp-tools/",
    "servers/",
    "bench/",
    "conformance/",
    "xtask/",
    "scripts/",
    "schemas/",
];

/// Spans that pass the path pattern but name no repository path, each with
/// its reason; exact matches only, so a real path is never hidden.
pub const NOT_REPO_PATHS: &[(&str, &str)] = &[
    (
        "info/",
        "a git directory's info/, named by the sandbox's section",
    ),
    (
        "modules/",
        "a git directory's modules/ (submodules), same section",
    ),
];

/// A claim a document makes that the tree does not back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadClaim {
    /// The 1-based line of the document.
    pub line: usize,
    /// The backticked text.
    pub claim: String,
    /// What is wrong with it.
    pub problem: &'static str,
}

impl std::fmt::Display for BadClaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: `{}`: {}", self.line, self.claim, self.problem)
    }
}

/// The outcome of the doc-claim check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DocReport {
    /// Path claims read.
    pub paths: usize,
    /// Crate claims read.
    pub crates: usize,
    /// The ones that fail.
    pub bad: Vec<BadClaim>,
}

/// Every file and directory of the tree, as `/`-separated paths relative to
/// the root (directories end in `/`), without `target/`, `node_modules/`
/// and hidden entries.
pub fn tree(root: &Path) -> Result<Vec<String>> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) -> Result<()> {
        for entry in fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" || name == "node_modules" {
                continue;
            }
            let rel = format!("{prefix}{name}");
            if entry.file_type()?.is_dir() {
                out.push(format!("{rel}/"));
                walk(&entry.path(), &format!("{rel}/"), out)?;
            } else {
                out.push(rel);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(root, "", &mut out)?;
    Ok(out)
}

/// Checks the claims of `doc` against `tree` (from [`tree`]) and the
/// workspace's package names. Pure.
pub fn check(doc: &str, tree: &[String], ws: &Workspace) -> DocReport {
    let mut report = DocReport::default();
    for (line, span) in code_spans(doc) {
        if is_crate_claim(&span) {
            report.crates += 1;
            if !ws.has(&span) {
                report.bad.push(BadClaim {
                    line,
                    claim: span,
                    problem: "no workspace package has this name",
                });
            }
        } else if is_path_claim(&span) && !NOT_REPO_PATHS.iter().any(|(p, _)| *p == span) {
            report.paths += 1;
            let rooted = TOP_DIRS.iter().any(|d| span.starts_with(d));
            if !tree.iter().any(|entry| path_matches(&span, entry, rooted)) {
                report.bad.push(BadClaim {
                    line,
                    claim: span,
                    problem: if rooted {
                        "no such path in the repository"
                    } else {
                        "no path in the repository ends with this"
                    },
                });
            }
        }
    }
    report
}

/// The inline code spans of a Markdown text with their 1-based lines;
/// fenced blocks are skipped.
fn code_spans(doc: &str) -> Vec<(usize, String)> {
    let mut spans = Vec::new();
    let mut fenced = false;
    for (n, line) in doc.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut parts = line.split('`');
        parts.next();
        while let (Some(span), Some(_)) = (parts.next(), parts.next()) {
            spans.push((n + 1, span.to_owned()));
        }
    }
    spans
}

fn is_crate_claim(span: &str) -> bool {
    span.strip_prefix("nanohermes-").is_some_and(|rest| {
        !rest.is_empty()
            && rest
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
    })
}

fn is_path_claim(span: &str) -> bool {
    if span.is_empty()
        || span.contains(char::is_whitespace)
        || span.contains(':')
        || span.starts_with(['.', '/', '$', '~'])
    {
        return false;
    }
    (span.contains('/') && (span.ends_with(".rs") || span.ends_with('/')))
        || TOP_DIRS.iter().any(|d| span.starts_with(d))
}

/// Whether the tree entry `entry` backs the claim `claim`: equal to it
/// (`rooted`) or ending with it at a component boundary, with wildcards.
fn path_matches(claim: &str, entry: &str, rooted: bool) -> bool {
    let is_dir = claim.ends_with('/');
    if is_dir != entry.ends_with('/') {
        return false;
    }
    let want: Vec<&str> = claim.trim_end_matches('/').split('/').collect();
    let have: Vec<&str> = entry.trim_end_matches('/').split('/').collect();
    if have.len() < want.len() || (rooted && have.len() != want.len()) {
        return false;
    }
    let tail = &have[have.len() - want.len()..];
    want.iter().zip(tail).all(|(w, h)| component_matches(w, h))
}

fn component_matches(want: &str, have: &str) -> bool {
    if want == have {
        return true;
    }
    let (w_stem, w_ext) = split_ext(want);
    let (h_stem, h_ext) = split_ext(have);
    if w_ext != h_ext {
        return false;
    }
    let placeholder = (w_stem.starts_with('<') && w_stem.ends_with('>'))
        || (w_stem.len() >= 2
            && w_stem.bytes().any(|c| c.is_ascii_uppercase())
            && w_stem
                .bytes()
                .all(|c| c.is_ascii_uppercase() || c == b'-' || c == b'_'));
    placeholder || glob(w_stem.as_bytes(), h_stem.as_bytes())
}

fn split_ext(component: &str) -> (&str, &str) {
    match component.rfind('.') {
        Some(p) if p > 0 => (&component[..p], &component[p..]),
        _ => (component, ""),
    }
}

/// `*` matches any run of characters; everything else matches itself.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|k| glob(rest, &text[k..])),
        Some((c, rest)) => text.first() == Some(c) && glob(rest, &text[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_spans_are_claims() {
        for path in [
            "agent/core/src/transcript.rs",
            "mcp-tools/src/spawn/",
            "tests/it/foo.rs",
            "cli/",
            "scripts/test",
            "schemas/NAME.json",
        ] {
            assert!(is_path_claim(path), "{path}");
        }
        for not_path in [
            "tools/list",
            "notifications/cancelled",
            ".nanohermes/",
            "/undo",
            "$NANOHERMES_HOME/tasks/",
            "https://",
            "nanohermes-NAME --print-schema > schemas/NAME.json",
            "mcp_tools::spawn",
        ] {
            assert!(!is_path_claim(not_path), "{not_path}");
        }
        assert!(is_crate_claim("nanohermes-core"));
        assert!(!is_crate_claim("nanohermes-NAME"));
        assert!(!is_crate_claim("nanohermes-memory list|global"));
    }

    #[test]
    fn wildcards_match_one_component_with_its_extension() {
        assert!(path_matches("schemas/NAME.json", "schemas/git.json", true));
        assert!(!path_matches("schemas/NAME.json", "schemas/git.txt", true));
        assert!(path_matches("servers/<name>/", "servers/git/", true));
        assert!(path_matches(
            "mcp-tools/tests/spawn*.rs",
            "mcp-tools/tests/spawn_exit.rs",
            true
        ));
        assert!(!path_matches("servers/<name>/", "servers/git/src/", true));
        assert!(!path_matches("servers/git/", "vendor/servers/git/", true));
        assert!(path_matches(
            "tests/it/hooks.rs",
            "agent/tests/it/hooks.rs",
            false
        ));
        assert!(!path_matches(
            "it/hooks.rs",
            "agent/tests/xit/hooks.rs",
            false
        ));
        assert!(!path_matches("cli/", "agent/src/cli.rs", false));
    }
}
