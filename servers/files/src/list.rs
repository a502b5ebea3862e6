//! `list_dir`: a sorted, bounded listing that respects .gitignore.

use std::path::Path;

/// Entries shown before the listing is cut.
pub(crate) const MAX_ENTRIES: usize = 500;
/// Entries counted past the cut, to say how many were left out.
const MAX_COUNTED: usize = 100_000;

/// Lists `dir` down to `depth` levels, directories marked with `/` and
/// symlinks with `@`. Paths are relative to `dir`.
pub(crate) fn list(
    dir: &Path,
    shown: &str,
    depth: usize,
    include_ignored: bool,
) -> Result<String, String> {
    let meta = std::fs::metadata(dir).map_err(|e| crate::read::io_message(shown, &e))?;
    if !meta.is_dir() {
        return Err(format!(
            "{shown} is a file, not a directory; use read_file to read it"
        ));
    }
    let walker = ignore::WalkBuilder::new(dir)
        .max_depth(Some(depth))
        .hidden(false)
        .git_ignore(!include_ignored)
        .git_exclude(!include_ignored)
        .git_global(!include_ignored)
        .ignore(!include_ignored)
        .parents(!include_ignored)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b))
        .build();
    let mut out = String::new();
    let mut shown_entries = 0usize;
    let mut more = 0usize;
    for entry in walker {
        let Ok(entry) = entry else { continue };
        if entry.depth() == 0 {
            continue;
        }
        if shown_entries >= MAX_ENTRIES {
            more += 1;
            if more >= MAX_COUNTED {
                break;
            }
            continue;
        }
        let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
        out.push_str(&rel.to_string_lossy());
        match entry.file_type() {
            Some(t) if t.is_dir() => out.push('/'),
            Some(t) if t.is_symlink() => out.push('@'),
            _ => {}
        }
        out.push('\n');
        shown_entries += 1;
    }
    if shown_entries == 0 {
        return Ok(format!("({shown} is empty)"));
    }
    if more > 0 {
        let plus = if more >= MAX_COUNTED { "+" } else { "" };
        out.push_str(&format!(
            "[... {more}{plus} more entries not shown; list a subdirectory or use a smaller depth]\n"
        ));
    }
    Ok(out)
}
