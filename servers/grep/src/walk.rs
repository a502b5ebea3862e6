//! The walk both tools share: which files exist for a search, and which of
//! them a glob selects.
//!
//! The walker is ripgrep's (`ignore`): it honours `.gitignore`, `.ignore`
//! and git's exclude files even outside a git repository, skips hidden files
//! and directories, never follows symlinks (so it cannot leave the root), and
//! walks in parallel.

use std::path::{Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};
use ignore::{WalkBuilder, WalkParallel};

/// A parallel walker over `start` with the search defaults.
pub fn parallel_walker(start: &Path) -> WalkParallel {
    WalkBuilder::new(start)
        .hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(true)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(false)
        .threads(0)
        .build_parallel()
}

/// A glob as the model writes it, compiled once.
///
/// A pattern with no `/` matches a file name at any depth (`*.rs`); a
/// pattern with a `/` matches the path relative to the workspace root
/// (`src/**/*.rs`), `*` never crossing a `/` and `**` crossing any number.
/// A leading `!` turns the glob into an exclusion.
#[derive(Debug, Clone)]
pub struct PathFilter {
    matcher: GlobMatcher,
    name_only: bool,
    negated: bool,
}

impl PathFilter {
    /// Compiles `pattern`, or says what is wrong with it.
    pub fn new(pattern: &str) -> Result<Self, String> {
        let trimmed = pattern.trim();
        let (negated, rest) = match trimmed.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, trimmed),
        };
        let rest = rest.trim_start_matches("./").trim_start_matches('/');
        if rest.is_empty() {
            return Err(format!(
                "glob `{pattern}` is empty: give a pattern such as `*.rs` or `src/**/*.ts`"
            ));
        }
        let glob = GlobBuilder::new(rest)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| format!("invalid glob `{pattern}`: {}", e.kind()))?;
        Ok(Self {
            matcher: glob.compile_matcher(),
            name_only: !rest.contains('/'),
            negated,
        })
    }

    /// Whether the file at `relative` (relative to the workspace root) is
    /// selected.
    pub fn selects(&self, relative: &Path) -> bool {
        let hit = if self.name_only {
            relative
                .file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        } else {
            self.matcher.is_match(relative)
        };
        hit != self.negated
    }
}

/// `path` relative to `root` (the path itself when it lies elsewhere).
pub fn relative_to(root: &Path, path: &Path) -> PathBuf {
    path.strip_prefix(root).unwrap_or(path).to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_without_a_slash_matches_names_at_any_depth() {
        let filter = PathFilter::new("*.rs").unwrap();
        assert!(filter.selects(Path::new("main.rs")));
        assert!(filter.selects(Path::new("src/deep/lib.rs")));
        assert!(!filter.selects(Path::new("src/lib.rsx")));
    }

    #[test]
    fn a_glob_with_a_slash_matches_the_whole_relative_path() {
        let filter = PathFilter::new("src/*.rs").unwrap();
        assert!(filter.selects(Path::new("src/lib.rs")));
        assert!(!filter.selects(Path::new("src/deep/lib.rs")));
        let deep = PathFilter::new("./src/**/*.rs").unwrap();
        assert!(deep.selects(Path::new("src/deep/lib.rs")));
        assert!(deep.selects(Path::new("src/lib.rs")));
    }

    #[test]
    fn a_leading_bang_excludes() {
        let filter = PathFilter::new("!*.md").unwrap();
        assert!(!filter.selects(Path::new("README.md")));
        assert!(filter.selects(Path::new("src/lib.rs")));
    }

    #[test]
    fn a_broken_glob_is_refused_with_the_pattern_quoted() {
        let err = PathFilter::new("src/[a").unwrap_err();
        assert!(err.starts_with("invalid glob `src/[a`"), "{err}");
    }
}
