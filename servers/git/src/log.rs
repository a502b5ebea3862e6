//! `git_log`: recent commits as one line each (short hash, date, author,
//! subject), newest first, for the whole history or one path.

use std::fmt::Write as _;

use crate::runner::{Git, failed};

/// Commits shown when the model does not say how many.
pub const DEFAULT_MAX_COUNT: u32 = 20;
/// The most commits one call may show.
pub const MAX_MAX_COUNT: u32 = 200;

const FIELD: char = '\u{1f}';
const RECORD: char = '\u{1e}';

/// One commit as the log shows it.
#[derive(Debug, PartialEq, Eq)]
pub struct Commit {
    /// Abbreviated hash.
    pub hash: String,
    /// Author date, `YYYY-MM-DD HH:MM` in the author's time zone.
    pub date: String,
    /// Author name.
    pub author: String,
    /// First line of the message.
    pub subject: String,
}

/// Checks `max_count` and turns a missing value into the default.
pub fn max_count(requested: Option<u32>) -> Result<u32, String> {
    match requested {
        None => Ok(DEFAULT_MAX_COUNT),
        Some(n) if (1..=MAX_MAX_COUNT).contains(&n) => Ok(n),
        Some(n) => Err(format!(
            "max_count must be between 1 and {MAX_MAX_COUNT}, got {n}; give `path` to narrow the history instead"
        )),
    }
}

/// Runs `git log` and renders at most `max_count` commits.
pub async fn log(git: &Git, max_count: u32, pathspec: Option<&str>) -> Result<String, String> {
    // One more than asked, to tell the model whether there is more.
    let mut args = vec![
        "log".to_string(),
        format!("--max-count={}", max_count + 1),
        "--date=format:%Y-%m-%d %H:%M".to_string(),
        format!("--format=%h{FIELD}%ad{FIELD}%an{FIELD}%s{RECORD}"),
        "--".to_string(),
    ];
    args.extend(pathspec.map(str::to_string));
    let git = git.prepare().await.map_err(|e| e.to_string())?;
    let out = git.run(&args).await.map_err(|e| e.to_string())?;
    if out.code != 0 {
        if out.stderr.contains("does not have any commits yet") {
            return Ok("No commits yet".to_string());
        }
        return Err(failed(args.join(" "), &out).to_string());
    }
    let commits = parse(&out.stdout);
    Ok(render(&commits, max_count as usize, pathspec))
}

/// Parses the `--format` records written by [`log`].
pub fn parse(text: &str) -> Vec<Commit> {
    text.split(RECORD)
        .filter_map(|record| {
            let mut fields = record.trim_start_matches('\n').splitn(4, FIELD);
            Some(Commit {
                hash: fields.next().filter(|h| !h.is_empty())?.to_string(),
                date: fields.next()?.to_string(),
                author: fields.next()?.to_string(),
                subject: fields.next()?.to_string(),
            })
        })
        .collect()
}

/// Renders up to `max_count` commits, one per line, and says when more exist.
pub fn render(commits: &[Commit], max_count: usize, pathspec: Option<&str>) -> String {
    let path = pathspec.map(|p| p.trim_start_matches(":(literal)"));
    if commits.is_empty() {
        return match path {
            Some(p) => format!("No commits touch {p}"),
            None => "No commits yet".to_string(),
        };
    }
    let mut out = String::new();
    for c in commits.iter().take(max_count) {
        let _ = writeln!(out, "{} {} {}: {}", c.hash, c.date, c.author, c.subject);
    }
    if commits.len() > max_count {
        let _ = writeln!(
            out,
            "(showing the latest {max_count}; older commits exist: raise max_count up to {MAX_MAX_COUNT})"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_become_one_line_per_commit() {
        let text = "abc1234\u{1f}2026-01-02 03:04\u{1f}Ada L\u{1f}Fix: a | b\u{1e}\n\
                    def5678\u{1f}2026-01-01 00:00\u{1f}Bob\u{1f}Start\u{1e}\n";
        let commits = parse(text);
        assert_eq!(
            render(&commits, 20, None),
            "abc1234 2026-01-02 03:04 Ada L: Fix: a | b\ndef5678 2026-01-01 00:00 Bob: Start\n"
        );
        assert_eq!(
            render(&commits, 1, None),
            "abc1234 2026-01-02 03:04 Ada L: Fix: a | b\n(showing the latest 1; older commits exist: raise max_count up to 200)\n"
        );
    }

    #[test]
    fn max_count_is_bounded() {
        assert_eq!(max_count(None), Ok(DEFAULT_MAX_COUNT));
        assert_eq!(max_count(Some(200)), Ok(200));
        assert!(max_count(Some(0)).is_err());
        assert_eq!(
            max_count(Some(201)).unwrap_err(),
            "max_count must be between 1 and 200, got 201; give `path` to narrow the history instead"
        );
    }
}
