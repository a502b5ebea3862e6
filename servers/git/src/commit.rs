//! `git_commit`: stage what the model names, refuse an empty commit, and
//! record a new commit with the repository's hooks running.
//!
//! Never passed: `--no-verify` (hooks always run), `--amend` (history is only
//! added to), `--allow-empty`; and nothing here pushes. With `paths`, only
//! those paths are committed (`git commit -- PATHS`), even if other changes
//! are staged; with `all`, every tracked change under the workspace root is
//! staged first; with neither, what is already staged is committed.

use crate::diff::has_staged_changes;
use crate::runner::{Git, failed};

/// What to commit.
#[derive(Debug)]
pub enum Selection {
    /// What is already staged.
    Staged,
    /// These literal pathspecs, already confined: staged, then committed alone.
    Paths(Vec<String>),
    /// Every tracked change under the workspace root.
    AllTracked,
}

/// Stages the selection and commits it with `message`. The result names
/// the new commit (short hash, branch, subject) and what changed.
pub async fn commit(git: &Git, message: &str, selection: &Selection) -> Result<String, String> {
    if message.trim().is_empty() {
        return Err(
            "commit message is empty: give a short summary line of what the change does".into(),
        );
    }
    let only: &[String] = match selection {
        Selection::Staged => &[],
        Selection::Paths(pathspecs) => {
            let mut args = vec!["add".to_string(), "--".to_string()];
            args.extend(pathspecs.iter().cloned());
            git.run_ok(&args).await.map_err(|e| e.to_string())?;
            pathspecs
        }
        Selection::AllTracked => {
            git.run_ok(["add", "--update", "--", "."])
                .await
                .map_err(|e| e.to_string())?;
            &[]
        }
    };
    if !has_staged_changes(git, only)
        .await
        .map_err(|e| e.to_string())?
    {
        return Err(match selection {
            Selection::Staged => "nothing to commit: no changes are staged; give `paths` to stage files or `all: true` to stage every tracked change (see git_status)".to_string(),
            Selection::Paths(_) => "nothing to commit: the given paths have no changes (see git_status)".to_string(),
            Selection::AllTracked => "nothing to commit: no tracked file has changes; give `paths` to add new files (see git_status)".to_string(),
        });
    }
    let mut args = vec!["commit".to_string(), format!("--message={message}")];
    if !only.is_empty() {
        args.push("--".into());
        args.extend(only.iter().cloned());
    }
    let out = git.run(&args).await.map_err(|e| e.to_string())?;
    if out.code != 0 {
        let report = failed("commit".to_string(), &out).to_string();
        return Err(format!(
            "{report}\nNo commit was made (a pre-commit or commit-msg hook may have refused it: fix what it reports and commit again; hooks are never skipped). Staged changes stay staged"
        ));
    }
    let mut result = out.stdout.trim_end().to_string();
    let hooks = out.stderr.trim();
    if !hooks.is_empty() {
        result.push_str("\nHook output:\n");
        result.push_str(hooks);
    }
    Ok(result)
}
