//! `git_status`: `git status --porcelain=v2 --branch -z` parsed into a
//! compact summary (branch, upstream, staged, unstaged, untracked,
//! conflicted).
//!
//! Porcelain v2 with `-z` is the machine format: fields are space-separated,
//! records end in NUL, paths are never quoted, and a rename record carries
//! its original path in the next NUL-terminated field. Git reports paths
//! relative to the repository's top directory; they are rewritten relative
//! to the workspace root.

use std::fmt::Write as _;

use crate::runner::{Git, GitError, failed};

/// Entries listed per section before the rest is counted, not listed.
pub const MAX_ENTRIES_PER_SECTION: usize = 200;

/// The state of a repository as `git status` reports it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Status {
    /// The checked-out commit: `None` before the first commit.
    pub oid: Option<String>,
    /// The branch name, or `None` when HEAD is detached.
    pub head: Option<String>,
    /// The upstream branch, if one is configured.
    pub upstream: Option<String>,
    /// Commits ahead of and behind the upstream, when it exists.
    pub ahead_behind: Option<(u64, u64)>,
    /// Changes in the index (what the next commit records).
    pub staged: Vec<Change>,
    /// Changes in the working tree not yet staged.
    pub unstaged: Vec<Change>,
    /// Files git does not track.
    pub untracked: Vec<String>,
    /// Unmerged paths, with their two-letter state (`UU`, `AA`, ...).
    pub conflicted: Vec<(String, String)>,
}

/// One changed path on one side (index or working tree).
#[derive(Debug, PartialEq, Eq)]
pub struct Change {
    /// Git's letter: `M`odified, `T`ype changed, `A`dded, `D`eleted,
    /// `R`enamed, `C`opied.
    pub code: char,
    /// The path.
    pub path: String,
    /// The original path of a rename or copy.
    pub from: Option<String>,
}

/// Runs `git status` for the workspace and renders it. When the root is a
/// subdirectory of the repository, only its part is listed, with paths
/// relative to the root like every other tool's paths.
pub async fn status(git: &Git) -> Result<String, GitError> {
    let git = git.prepare().await?;
    let prefix = git.layout().map_or("", |l| l.prefix.as_str());
    // `.` is the root (git's working directory): nothing outside it is
    // listed, and submodules are not entered (`runner` adds
    // `--ignore-submodules=all`).
    let args = [
        "status",
        "--porcelain=v2",
        "--branch",
        "-z",
        "--untracked-files=normal",
        "--",
        ".",
    ];
    let out = git.run(args).await?;
    if out.code != 0 {
        return Err(failed(args.join(" "), &out));
    }
    let mut status = parse(&out.stdout).map_err(|e| GitError::Failed {
        command: args.join(" "),
        code: 0,
        output: e,
    })?;
    if !prefix.is_empty() {
        relativize(&mut status, prefix);
    }
    Ok(render(&status))
}

/// Rewrites paths relative to the repository top as paths relative to the
/// subdirectory `prefix` (which ends in `/`).
pub fn relativize(status: &mut Status, prefix: &str) {
    let up = "../".repeat(prefix.matches('/').count());
    let relative = |path: &mut String| {
        *path = match path.strip_prefix(prefix) {
            Some(inside) => inside.to_string(),
            None => format!("{up}{path}"),
        };
    };
    for change in status.staged.iter_mut().chain(status.unstaged.iter_mut()) {
        relative(&mut change.path);
        if let Some(from) = &mut change.from {
            relative(from);
        }
    }
    status.untracked.iter_mut().for_each(relative);
    status
        .conflicted
        .iter_mut()
        .for_each(|(_, path)| relative(path));
}

/// Parses the output of `git status --porcelain=v2 --branch -z`.
pub fn parse(text: &str) -> Result<Status, String> {
    let mut status = Status::default();
    let mut records = text.split('\0').filter(|r| !r.is_empty());
    while let Some(record) = records.next() {
        let unexpected = || format!("unexpected git status record: {record:?}");
        let (kind, rest) = record.split_once(' ').ok_or_else(unexpected)?;
        match kind {
            "#" => parse_header(&mut status, rest),
            "1" => {
                let fields: Vec<&str> = rest.splitn(8, ' ').collect();
                let [xy, _sub, _mh, _mi, _mw, _hh, _hi, path] = fields[..] else {
                    return Err(unexpected());
                };
                push_changes(&mut status, xy, path, None).ok_or_else(unexpected)?;
            }
            "2" => {
                let fields: Vec<&str> = rest.splitn(9, ' ').collect();
                let [xy, _sub, _mh, _mi, _mw, _hh, _hi, _score, path] = fields[..] else {
                    return Err(unexpected());
                };
                let from = records.next().ok_or_else(unexpected)?;
                push_changes(&mut status, xy, path, Some(from)).ok_or_else(unexpected)?;
            }
            "u" => {
                let fields: Vec<&str> = rest.splitn(10, ' ').collect();
                let [xy, .., path] = fields[..] else {
                    return Err(unexpected());
                };
                if fields.len() != 10 {
                    return Err(unexpected());
                }
                status.conflicted.push((xy.to_string(), path.to_string()));
            }
            "?" => status.untracked.push(rest.to_string()),
            "!" => {}
            _ => return Err(unexpected()),
        }
    }
    Ok(status)
}

fn parse_header(status: &mut Status, header: &str) {
    let Some((key, value)) = header.split_once(' ') else {
        return;
    };
    match key {
        "branch.oid" if value != "(initial)" => status.oid = Some(value.to_string()),
        "branch.head" if value != "(detached)" => status.head = Some(value.to_string()),
        "branch.upstream" => status.upstream = Some(value.to_string()),
        "branch.ab" => {
            let mut counts = value
                .split(' ')
                .map(|n| n.trim_start_matches(['+', '-']).parse());
            if let (Some(Ok(ahead)), Some(Ok(behind))) = (counts.next(), counts.next()) {
                status.ahead_behind = Some((ahead, behind));
            }
        }
        _ => {}
    }
}

fn push_changes(status: &mut Status, xy: &str, path: &str, from: Option<&str>) -> Option<()> {
    let mut letters = xy.chars();
    let (index, worktree) = (letters.next()?, letters.next()?);
    for (code, side) in [
        (index, &mut status.staged),
        (worktree, &mut status.unstaged),
    ] {
        if code != '.' {
            side.push(Change {
                code,
                path: path.to_string(),
                from: from
                    .filter(|_| matches!(code, 'R' | 'C'))
                    .map(str::to_string),
            });
        }
    }
    Some(())
}

/// Renders a status as the compact text the model reads.
pub fn render(status: &Status) -> String {
    let mut out = String::new();
    match (&status.head, &status.oid) {
        (Some(branch), Some(_)) => {
            let _ = write!(out, "On branch {branch}");
        }
        (Some(branch), None) => {
            let _ = write!(out, "On branch {branch} (no commits yet)");
        }
        (None, Some(oid)) => {
            let _ = write!(out, "HEAD detached at {}", short(oid));
        }
        (None, None) => out.push_str("HEAD detached (no commits yet)"),
    }
    match (&status.upstream, status.ahead_behind) {
        (Some(upstream), Some((0, 0))) => {
            let _ = write!(out, ", up to date with {upstream}");
        }
        (Some(upstream), Some((ahead, behind))) => {
            let _ = write!(out, ", tracking {upstream}: ahead {ahead}, behind {behind}");
        }
        (Some(upstream), None) => {
            let _ = write!(out, ", upstream {upstream} is gone");
        }
        (None, _) => {}
    }
    out.push('\n');
    let changes = |list: &[Change]| -> Vec<String> {
        list.iter()
            .map(|c| match &c.from {
                Some(from) => format!("{} {from} -> {}", c.code, c.path),
                None => format!("{} {}", c.code, c.path),
            })
            .collect()
    };
    section(&mut out, "Staged", &changes(&status.staged));
    section(&mut out, "Unstaged", &changes(&status.unstaged));
    section(&mut out, "Untracked", &status.untracked);
    let conflicted: Vec<String> = status
        .conflicted
        .iter()
        .map(|(xy, path)| format!("{xy} {path}"))
        .collect();
    section(&mut out, "Conflicted", &conflicted);
    let clean = status.staged.is_empty()
        && status.unstaged.is_empty()
        && status.untracked.is_empty()
        && status.conflicted.is_empty();
    if clean {
        out.push_str("Working tree clean\n");
    }
    out
}

fn section(out: &mut String, title: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "{title} ({}):", lines.len());
    for line in lines.iter().take(MAX_ENTRIES_PER_SECTION) {
        let _ = writeln!(out, "  {line}");
    }
    if lines.len() > MAX_ENTRIES_PER_SECTION {
        let _ = writeln!(
            out,
            "  ... and {} more",
            lines.len() - MAX_ENTRIES_PER_SECTION
        );
    }
}

fn short(oid: &str) -> &str {
    oid.get(..7).unwrap_or(oid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(porcelain: &str, expected: &str) {
        let status = parse(porcelain).unwrap();
        assert_eq!(
            render(&status),
            expected,
            "\n--- got ---\n{}",
            render(&status)
        );
    }

    #[test]
    fn every_kind_of_entry_is_sorted_into_its_section() {
        let porcelain = concat!(
            "# branch.oid 0123456789abcdef0123456789abcdef01234567\0",
            "# branch.head main\0",
            "# branch.upstream origin/main\0",
            "# branch.ab +2 -1\0",
            "1 M. N... 100644 100644 100644 aaaa bbbb src/lib.rs\0",
            "1 .M N... 100644 100644 100644 aaaa aaaa README.md\0",
            "1 MM N... 100644 100644 100644 aaaa bbbb both.rs\0",
            "2 R. N... 100644 100644 100644 aaaa aaaa R100 new name.txt\0old name.txt\0",
            "u UU N... 100644 100644 100644 100644 aaaa bbbb cccc merge.txt\0",
            "? notes/\0",
            "? a b.txt\0",
        );
        check(
            porcelain,
            "On branch main, tracking origin/main: ahead 2, behind 1\n\
             Staged (3):\n  M src/lib.rs\n  M both.rs\n  R old name.txt -> new name.txt\n\
             Unstaged (2):\n  M README.md\n  M both.rs\n\
             Untracked (2):\n  notes/\n  a b.txt\n\
             Conflicted (1):\n  UU merge.txt\n",
        );
    }

    #[test]
    fn a_clean_tree_says_so() {
        check(
            "# branch.oid 0123456789abcdef0123456789abcdef01234567\0# branch.head main\0",
            "On branch main\nWorking tree clean\n",
        );
    }

    #[test]
    fn detached_head_shows_the_short_commit() {
        check(
            "# branch.oid 0123456789abcdef0123456789abcdef01234567\0# branch.head (detached)\0",
            "HEAD detached at 0123456\nWorking tree clean\n",
        );
    }

    #[test]
    fn a_repository_without_commits_says_so() {
        check(
            "# branch.oid (initial)\0# branch.head main\0? a.txt\0",
            "On branch main (no commits yet)\nUntracked (1):\n  a.txt\n",
        );
    }

    #[test]
    fn upstream_states_are_named() {
        let head = "# branch.oid 0123456789abcdef0123456789abcdef01234567\0# branch.head dev\0";
        check(
            &format!("{head}# branch.upstream origin/dev\0# branch.ab +0 -0\0"),
            "On branch dev, up to date with origin/dev\nWorking tree clean\n",
        );
        check(
            &format!("{head}# branch.upstream origin/dev\0"),
            "On branch dev, upstream origin/dev is gone\nWorking tree clean\n",
        );
    }

    #[test]
    fn long_sections_are_cut_with_a_count() {
        let porcelain: String = (0..MAX_ENTRIES_PER_SECTION + 5)
            .map(|i| format!("? f{i}\0"))
            .collect();
        let text = render(&parse(&porcelain).unwrap());
        assert!(text.contains(&format!("Untracked ({}):", MAX_ENTRIES_PER_SECTION + 5)));
        assert!(text.ends_with("  ... and 5 more\n"), "{text}");
    }

    #[test]
    fn paths_are_made_relative_to_a_subdirectory_root() {
        let mut status = parse(concat!(
            "# branch.oid (initial)\0# branch.head main\0",
            "2 R. N... 100644 100644 100644 aaaa aaaa R100 a/b/new.txt\0top.txt\0",
            "? a/b/c/u.txt\0",
        ))
        .unwrap();
        relativize(&mut status, "a/b/");
        assert_eq!(
            render(&status),
            "On branch main (no commits yet)\nStaged (1):\n  R ../../top.txt -> new.txt\nUntracked (1):\n  c/u.txt\n"
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert_eq!(
            parse("1 M.\0").unwrap_err(),
            "unexpected git status record: \"1 M.\""
        );
        assert!(parse("2 R. N... 1 1 1 a a R100 new\0").is_err());
        assert!(parse("x y\0").is_err());
    }
}
