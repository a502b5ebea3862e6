//! `git_diff`: unstaged or staged changes, or changes against a revision,
//! optionally for one path, clamped to the output cap.
//!
//! A revision from the model is checked before git sees it: a value that
//! starts with `-` would be read as an option, so it is refused, and the rest
//! must name a commit (`git rev-parse --verify`). A diff over the cap is
//! preceded by its `--stat` so the model still sees every changed file.

use mcp_tools::clamp;

use crate::runner::{Git, GitError, failed};

/// What to compare.
#[derive(Debug)]
pub struct DiffRequest {
    /// Compare the index (what is staged) instead of the working tree.
    pub staged: bool,
    /// A literal pathspec limiting the diff, already confined.
    pub pathspec: Option<String>,
    /// A revision to compare against, already checked by [`check_revision`].
    pub against: Option<String>,
}

/// Refuses a revision that git could read as an option or that is not a
/// plain single revision.
pub fn check_revision(revision: &str) -> Result<(), String> {
    if revision.is_empty() {
        return Err(
            "`against` is empty: give a revision such as HEAD~1, a branch or a commit hash".into(),
        );
    }
    if revision.starts_with('-') {
        return Err(format!(
            "`against` must be a revision, not an option: {revision:?} starts with `-`; give a commit, branch or tag such as HEAD~1"
        ));
    }
    if revision
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(format!(
            "`against` must be one revision without spaces or control characters: {revision:?}"
        ));
    }
    Ok(())
}

/// Runs the diff and renders it, clamped to `max_output` bytes.
pub async fn diff(git: &Git, request: &DiffRequest, max_output: usize) -> Result<String, String> {
    // Checks the repository (refused when it points out of the root) and
    // that the root is in a work tree: outside one, `git diff` silently
    // turns into `git diff --no-index`, which compares any files.
    let git = &git.prepare().await.map_err(|e| e.to_string())?;
    if let Some(revision) = &request.against {
        check_revision(revision)?;
        let out = git
            .run([
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{revision}^{{commit}}"),
            ])
            .await
            .map_err(|e| e.to_string())?;
        if out.code != 0 {
            return Err(format!(
                "unknown revision {revision:?}: give a commit hash, branch or tag such as HEAD~1 (see git_log)"
            ));
        }
    }
    let args = diff_args(request, false);
    let text = git.run_ok(&args).await.map_err(|e| e.to_string())?;
    if text.is_empty() {
        return Ok(nothing_message(request));
    }
    if text.len() <= max_output {
        return Ok(text);
    }
    let stat = git
        .run_ok(diff_args(request, true))
        .await
        .map_err(|e: GitError| e.to_string())?;
    let stat = clamp(&stat, max_output / 4);
    let header = format!(
        "The diff is {} bytes, over the {max_output}-byte limit; files changed:\n{stat}\nGive `path` to see one file. The diff starts:\n",
        text.len()
    );
    let room = max_output.saturating_sub(header.len());
    Ok(format!("{header}{}", clamp(&text, room)))
}

fn diff_args(request: &DiffRequest, stat: bool) -> Vec<String> {
    let mut args = vec!["diff".to_string(), "--no-ext-diff".to_string()];
    if stat {
        args.push("--stat".into());
    }
    if request.staged {
        args.push("--cached".into());
    }
    if let Some(revision) = &request.against {
        args.push(revision.clone());
    }
    args.push("--".into());
    // Never the whole repository: `.` is the root, git's working directory.
    args.push(request.pathspec.clone().unwrap_or_else(|| ".".to_owned()));
    args
}

fn nothing_message(request: &DiffRequest) -> String {
    let what = match (&request.against, request.staged) {
        (Some(revision), true) => format!("No differences between the index and {revision}"),
        (Some(revision), false) => {
            format!("No differences between the working tree and {revision}")
        }
        (None, true) => "No staged changes".to_string(),
        (None, false) => {
            "No unstaged changes to tracked files (untracked files are listed by git_status)"
                .to_string()
        }
    };
    match &request.pathspec {
        Some(p) => format!("{what} for {}", p.trim_start_matches(":(literal)")),
        None => what,
    }
}

/// Used by the commit tool to tell whether anything is staged.
pub(crate) async fn has_staged_changes(git: &Git, pathspecs: &[String]) -> Result<bool, GitError> {
    let mut args = vec!["diff", "--cached", "--quiet", "--no-ext-diff", "--"];
    args.extend(pathspecs.iter().map(String::as_str));
    let out = git.run(&args).await?;
    match out.code {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(failed(args.join(" "), &out)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_that_look_like_options_are_refused() {
        let err = check_revision("--output=/tmp/x").unwrap_err();
        assert!(
            err.starts_with("`against` must be a revision, not an option"),
            "{err}"
        );
        assert!(check_revision("-p").is_err());
        assert!(check_revision("").is_err());
        assert!(check_revision("HEAD ~1").is_err());
        assert!(check_revision("HEAD~1").is_ok());
        assert!(check_revision("main").is_ok());
    }
}
