//! `apply_patch`: unified diffs (git style), all or nothing.
//!
//! Parsing is lenient where models are sloppy (hunk counts are ignored, a
//! blank line inside a hunk is a blank context line, the line numbers are
//! only a hint for where to look) and strict where it matters: every removed
//! and every context line must be found in the file, or nothing is written.

use crate::quote;

/// One file's part of a patch.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FilePatch {
    /// Path before the change; `None` when the file is created.
    pub old_path: Option<String>,
    /// Path after the change; `None` when the file is deleted.
    pub new_path: Option<String>,
    /// The hunks, in order.
    pub hunks: Vec<Hunk>,
}

/// One `@@ … @@` block.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Hunk {
    /// The header line as written, for error messages.
    pub header: String,
    /// 1-based line where the old side starts (0 for an empty old side).
    pub old_start: usize,
    /// The hunk's lines in order.
    pub lines: Vec<HunkLine>,
    /// The old side ends without a newline at end of file.
    pub old_no_eol: bool,
    /// The new side ends without a newline at end of file.
    pub new_no_eol: bool,
}

/// A line of a hunk.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum HunkLine {
    /// Present on both sides.
    Context(String),
    /// Only on the old side.
    Remove(String),
    /// Only on the new side.
    Add(String),
}

impl Hunk {
    fn old_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(s) | HunkLine::Remove(s) => Some(s.as_str()),
                HunkLine::Add(_) => None,
            })
            .collect()
    }

    fn new_lines(&self) -> Vec<&str> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                HunkLine::Context(s) | HunkLine::Add(s) => Some(s.as_str()),
                HunkLine::Remove(_) => None,
            })
            .collect()
    }
}

/// Splits a unified diff into per-file patches.
pub(crate) fn parse(patch: &str) -> Result<Vec<FilePatch>, String> {
    let lines: Vec<&str> = patch.lines().collect();
    let mut files: Vec<FilePatch> = Vec::new();
    let mut i = 0;
    // A `diff --git` header opens a file whose ---/+++ lines may be absent
    // (pure renames, mode changes, empty new files).
    let mut pending_git: Option<FilePatch> = None;
    while i < lines.len() {
        let line = lines[i];
        if let Some(rest) = line.strip_prefix("diff --git ") {
            if let Some(p) = pending_git.take() {
                files.push(p);
            }
            let (old, new) = split_git_header(rest)?;
            pending_git = Some(FilePatch {
                old_path: Some(old),
                new_path: Some(new),
                hunks: Vec::new(),
            });
            i += 1;
        } else if line.starts_with("new file mode") {
            if let Some(p) = pending_git.as_mut() {
                p.old_path = None;
            }
            i += 1;
        } else if line.starts_with("deleted file mode") {
            if let Some(p) = pending_git.as_mut() {
                p.new_path = None;
            }
            i += 1;
        } else if let Some(from) = line.strip_prefix("rename from ") {
            if let Some(p) = pending_git.as_mut() {
                p.old_path = Some(plain_or_quoted(from)?);
            }
            i += 1;
        } else if let Some(to) = line.strip_prefix("rename to ") {
            if let Some(p) = pending_git.as_mut() {
                p.new_path = Some(plain_or_quoted(to)?);
            }
            i += 1;
        } else if line.starts_with("--- ")
            && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "))
        {
            let old = header_path(&line[4..], "a/")?;
            let new = header_path(&lines[i + 1][4..], "b/")?;
            let mut file = pending_git.take().unwrap_or(FilePatch {
                old_path: None,
                new_path: None,
                hunks: Vec::new(),
            });
            file.old_path = old;
            file.new_path = new;
            i += 2;
            while i < lines.len() && lines[i].starts_with("@@") {
                let (hunk, next) = parse_hunk(&lines, i)?;
                file.hunks.push(hunk);
                i = next;
            }
            files.push(file);
        } else if line.starts_with("@@") {
            return Err(format!(
                "hunk `{line}` has no file header before it; start each file with `--- a/PATH` and `+++ b/PATH` lines"
            ));
        } else {
            // `index …`, mode lines, `similarity index`, prose: skip.
            i += 1;
        }
    }
    if let Some(p) = pending_git.take() {
        files.push(p);
    }
    if files.is_empty() {
        return Err(
            "no file changes found; give a unified diff with `--- a/PATH`, `+++ b/PATH` and `@@` hunks"
                .into(),
        );
    }
    Ok(files)
}

fn split_git_header(rest: &str) -> Result<(String, String), String> {
    // Git quotes a name with unusual bytes: `"a/na\303\257ve" "b/na\303\257ve"`.
    if let Some(quoted) = quote::unquote(rest) {
        let (old, tail) = quoted?;
        let new = plain_or_quoted(tail.trim_start())?;
        return Ok((strip_prefix_dir(&old, "a/"), strip_prefix_dir(&new, "b/")));
    }
    if let Some(pos) = rest.find(" \"b/") {
        let new = plain_or_quoted(&rest[pos + 1..])?;
        return Ok((
            strip_prefix_dir(&rest[..pos], "a/"),
            strip_prefix_dir(&new, "b/"),
        ));
    }
    // `a/x b/x`: split at " b/" (paths with spaces are rare in patches a
    // model writes; the ---/+++ lines, when present, override this anyway).
    Ok(match rest.find(" b/") {
        Some(pos) => (
            strip_prefix_dir(&rest[..pos], "a/"),
            strip_prefix_dir(&rest[pos + 1..], "b/"),
        ),
        None => (rest.to_string(), rest.to_string()),
    })
}

/// A path as a header line gives it: git-quoted, or as written.
fn plain_or_quoted(raw: &str) -> Result<String, String> {
    match quote::unquote(raw) {
        Some(quoted) => quoted.map(|(path, _)| path),
        None => Ok(raw.to_string()),
    }
}

fn header_path(raw: &str, prefix: &str) -> Result<Option<String>, String> {
    if let Some(quoted) = quote::unquote(raw) {
        // What follows the closing quote is a tab and a timestamp, if anything.
        let (path, _) = quoted?;
        return Ok(Some(strip_prefix_dir(&path, prefix)));
    }
    // Drop a trailing tab + timestamp (`--- file\t2024-01-01 …`).
    let raw = raw.split('\t').next().unwrap_or(raw).trim_end();
    if raw == "/dev/null" {
        Ok(None)
    } else {
        Ok(Some(strip_prefix_dir(raw, prefix)))
    }
}

fn strip_prefix_dir(path: &str, prefix: &str) -> String {
    path.strip_prefix(prefix).unwrap_or(path).to_string()
}

fn parse_hunk(lines: &[&str], start: usize) -> Result<(Hunk, usize), String> {
    let header = lines[start];
    let old_start = parse_old_start(header).ok_or_else(|| {
        format!("bad hunk header `{header}`; expected `@@ -OLD_START,COUNT +NEW_START,COUNT @@`")
    })?;
    let mut hunk = Hunk {
        header: header.to_string(),
        old_start,
        lines: Vec::new(),
        old_no_eol: false,
        new_no_eol: false,
    };
    let mut i = start + 1;
    while i < lines.len() {
        let line = lines[i];
        if line.starts_with("@@") || line.starts_with("diff --git ") {
            break;
        }
        if line.starts_with("--- ") && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ ")) {
            break;
        }
        match line.chars().next() {
            Some(' ') => hunk.lines.push(HunkLine::Context(line[1..].to_string())),
            Some('-') => hunk.lines.push(HunkLine::Remove(line[1..].to_string())),
            Some('+') => hunk.lines.push(HunkLine::Add(line[1..].to_string())),
            Some('\\') => match hunk.lines.last() {
                Some(HunkLine::Remove(_)) => hunk.old_no_eol = true,
                Some(HunkLine::Add(_)) => hunk.new_no_eol = true,
                Some(HunkLine::Context(_)) => {
                    hunk.old_no_eol = true;
                    hunk.new_no_eol = true;
                }
                None => {}
            },
            // A blank line: an editor stripped the context line's space.
            None => hunk.lines.push(HunkLine::Context(String::new())),
            Some(_) => break,
        }
        i += 1;
    }
    // Trailing blank "context" lines are usually the patch's own final
    // newline or a separator before the next file, not part of the hunk;
    // dropping one only costs a line of context.
    while matches!(hunk.lines.last(), Some(HunkLine::Context(s)) if s.is_empty()) {
        hunk.lines.pop();
    }
    if hunk.lines.is_empty() {
        return Err(format!("hunk `{header}` has no lines"));
    }
    Ok((hunk, i))
}

fn parse_old_start(header: &str) -> Option<usize> {
    let rest = header.strip_prefix("@@")?.trim_start();
    let old = rest.strip_prefix('-')?;
    let digits: String = old.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// A file's text as lines plus whether it ends with a newline.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lines {
    /// The lines, without their terminators.
    pub lines: Vec<String>,
    /// The last line ends with `\n`.
    pub trailing_newline: bool,
}

impl Lines {
    /// Splits text into lines.
    pub fn from_text(text: &str) -> Self {
        if text.is_empty() {
            return Self {
                lines: Vec::new(),
                trailing_newline: true,
            };
        }
        let trailing_newline = text.ends_with('\n');
        let body = text.strip_suffix('\n').unwrap_or(text);
        Self {
            lines: body.split('\n').map(str::to_string).collect(),
            trailing_newline,
        }
    }

    /// Joins the lines back into text.
    pub fn to_text(&self) -> String {
        if self.lines.is_empty() {
            return String::new();
        }
        let mut text = self.lines.join("\n");
        if self.trailing_newline {
            text.push('\n');
        }
        text
    }
}

/// Applies `hunks` to `file` in order. The error names the hunk (1-based)
/// and its header; `shown` is the file's path for messages.
pub(crate) fn apply_hunks(file: &mut Lines, hunks: &[Hunk], shown: &str) -> Result<(), String> {
    // Lines added or removed by earlier hunks shift where later ones start.
    let mut delta: isize = 0;
    for (n, hunk) in hunks.iter().enumerate() {
        let old = hunk.old_lines();
        let new = hunk.new_lines();
        let hint = (hunk.old_start as isize - 1 + delta).max(0) as usize;
        let at = if old.is_empty() {
            // Pure insertion: `@@ -N,0 …` inserts after line N.
            Some((hunk.old_start as isize + delta).clamp(0, file.lines.len() as isize) as usize)
        } else {
            find_block(&file.lines, &old, hint)
        };
        let Some(at) = at else {
            return Err(format!(
                "hunk {} (`{}`) of {shown} does not apply: its context and removed lines were not found in the file; read the file and regenerate the patch",
                n + 1,
                hunk.header
            ));
        };
        let ends_at_eof = at + old.len() == file.lines.len();
        // Context lines keep the file's own text, so a loose match (trailing
        // whitespace) never rewrites the lines around the change.
        let mut replacement = Vec::with_capacity(new.len());
        let mut old_index = at;
        for line in &hunk.lines {
            match line {
                HunkLine::Context(_) => {
                    replacement.push(file.lines[old_index].clone());
                    old_index += 1;
                }
                HunkLine::Remove(_) => old_index += 1,
                HunkLine::Add(s) => replacement.push(s.clone()),
            }
        }
        file.lines.splice(at..at + old.len(), replacement);
        delta += new.len() as isize - old.len() as isize;
        if ends_at_eof {
            if hunk.new_no_eol {
                file.trailing_newline = false;
            } else if hunk.old_no_eol {
                file.trailing_newline = true;
            }
        }
    }
    Ok(())
}

/// Finds `block` in `lines`, searching outward from `hint`; exact matches
/// first, then matches that ignore trailing whitespace.
fn find_block(lines: &[String], block: &[&str], hint: usize) -> Option<usize> {
    if block.len() > lines.len() {
        return None;
    }
    let last_start = lines.len() - block.len();
    let hint = hint.min(last_start);
    let exact = |at: usize| {
        lines[at..at + block.len()]
            .iter()
            .zip(block)
            .all(|(a, b)| a == b)
    };
    let loose = |at: usize| {
        lines[at..at + block.len()]
            .iter()
            .zip(block)
            .all(|(a, b)| a.trim_end() == b.trim_end())
    };
    let matcher: [&dyn Fn(usize) -> bool; 2] = [&exact, &loose];
    let span = hint.max(last_start - hint);
    for matches in matcher {
        for distance in 0..=span {
            if distance <= hint && matches(hint - distance) {
                return Some(hint - distance);
            }
            if distance > 0 && hint + distance <= last_start && matches(hint + distance) {
                return Some(hint + distance);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(text: &str, patch: &str) -> Result<String, String> {
        let files = parse(patch)?;
        let mut lines = Lines::from_text(text);
        apply_hunks(&mut lines, &files[0].hunks, "f")?;
        Ok(lines.to_text())
    }

    #[test]
    fn a_simple_hunk_applies() {
        let patch = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n";
        assert_eq!(apply("a\nb\nc\n", patch).unwrap(), "a\nB\nc\n");
    }

    #[test]
    fn wrong_line_numbers_are_only_a_hint() {
        let patch = "--- a/f\n+++ b/f\n@@ -40,2 +40,2 @@\n x\n-y\n+Y\n";
        assert_eq!(apply("1\n2\nx\ny\n3\n", patch).unwrap(), "1\n2\nx\nY\n3\n");
    }

    #[test]
    fn the_match_nearest_the_hint_wins() {
        let patch = "--- a/f\n+++ b/f\n@@ -4,1 +4,1 @@\n-x\n+X\n";
        assert_eq!(apply("x\ny\nz\nx\n", patch).unwrap(), "x\ny\nz\nX\n");
    }

    #[test]
    fn later_hunks_account_for_earlier_ones() {
        let patch =
            "--- a/f\n+++ b/f\n@@ -1,1 +1,3 @@\n-a\n+a1\n+a2\n+a3\n@@ -3,1 +5,1 @@\n-c\n+C\n";
        assert_eq!(apply("a\nb\nc\n", patch).unwrap(), "a1\na2\na3\nb\nC\n");
    }

    #[test]
    fn missing_context_names_the_hunk() {
        let patch = "--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n-a\n+b\n@@ -9,1 +9,1 @@\n-nope\n+x\n";
        let err = apply("a\n", patch).unwrap_err();
        assert!(
            err.starts_with("hunk 2 (`@@ -9,1 +9,1 @@`) of f does not apply"),
            "{err}"
        );
    }

    #[test]
    fn no_newline_markers_are_honoured() {
        let patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n\\ No newline at end of file\n";
        assert_eq!(apply("a\n", patch).unwrap(), "b");
        let patch = "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n";
        assert_eq!(apply("a", patch).unwrap(), "b\n");
    }

    #[test]
    fn git_headers_give_creations_deletions_and_renames() {
        let patch = "diff --git a/new.txt b/new.txt\nnew file mode 100644\nindex 0000000..e69de29\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+one\n+two\ndiff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-gone\ndiff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to y\n";
        let files = parse(patch).unwrap();
        assert_eq!(files.len(), 3);
        assert_eq!(
            (files[0].old_path.as_deref(), files[0].new_path.as_deref()),
            (None, Some("new.txt"))
        );
        assert_eq!(
            (files[1].old_path.as_deref(), files[1].new_path.as_deref()),
            (Some("old.txt"), None)
        );
        assert_eq!(
            (files[2].old_path.as_deref(), files[2].new_path.as_deref()),
            (Some("x"), Some("y"))
        );
        assert!(files[2].hunks.is_empty());
    }

    #[test]
    fn git_quoted_paths_are_unquoted_everywhere_git_writes_them() {
        let patch = "diff --git \"a/dir/na\\303\\257ve.txt\" \"b/dir/na\\303\\257ve.txt\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/dir/na\\303\\257ve.txt\"\n@@ -0,0 +1 @@\n+x\ndiff --git \"a/tab\\there\" \"b/new name\"\nsimilarity index 100%\nrename from \"tab\\there\"\nrename to new name\ndiff --git a/plain \"b/q\\\"uote\"\n--- a/plain\n+++ \"b/q\\\"uote\"\t2024-01-01\n@@ -1 +1 @@\n-a\n+b\n";
        let files = parse(patch).unwrap();
        let paths: Vec<_> = files
            .iter()
            .map(|f| (f.old_path.as_deref(), f.new_path.as_deref()))
            .collect();
        assert_eq!(
            paths,
            [
                (None, Some("dir/naïve.txt")),
                (Some("tab\there"), Some("new name")),
                (Some("plain"), Some("q\"uote")),
            ]
        );
        let err = parse("--- /dev/null\n+++ \"b/open\n@@ -0,0 +1 @@\n+x\n").unwrap_err();
        assert!(err.starts_with("bad quoted path"), "{err}");
    }

    #[test]
    fn text_without_hunks_is_refused() {
        assert!(
            parse("hello")
                .unwrap_err()
                .contains("no file changes found")
        );
        assert!(
            parse("@@ -1 +1 @@\n-a\n+b\n")
                .unwrap_err()
                .contains("no file header")
        );
    }

    #[test]
    fn trailing_whitespace_differences_still_apply() {
        let patch = "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n";
        assert_eq!(apply("a   \nb\t\n", patch).unwrap(), "a   \nB\n");
    }
}
