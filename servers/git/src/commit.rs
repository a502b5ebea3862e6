//! `git_commit`: stage what the model names, refuse an empty commit, and
//! record a new commit with the repository's hooks running.
//!
//! Never passed: `--no-verify` (hooks always run), `--amend` (history is only
//! added to), `--allow-empty`; and nothing here pushes. With `paths`, only
//! those paths are committed (`git commit -- PATHS`), even if other changes
//! are staged; with `all`, every tracked change under the workspace root is
//! staged first; with neither, what is already staged is committed.
//!
//! The agent's own files (`.nanohermes/`, whose sessions hold whole
//! conversations) are never committed: a path under one is refused, every
//! staging and path commit excludes them ([`EXCLUDE_AGENT_FILES`]) whether
//! or not the repository ignores them, and a commit of what is staged is
//! refused while one is staged.

use std::path::Path;

use mcp_tools::Workspace;

use crate::diff::has_staged_changes;
use crate::runner::{Git, failed, pathspec};

/// The directory of the agent's own files, at any depth.
pub const AGENT_DIR: &str = ".nanohermes";

/// The pathspec that keeps every `.nanohermes/` below the root out of a
/// staging or a path commit.
pub const EXCLUDE_AGENT_FILES: &str = ":(exclude,glob)**/.nanohermes/**";

/// A pathspec for a model-given path to commit: confined to the workspace
/// ([`pathspec`]), and refused under a `.nanohermes/` directory.
pub fn commit_pathspec(workspace: &Workspace, path: &str) -> Result<String, String> {
    let spec = pathspec(workspace, path)?;
    let shown = spec.trim_start_matches(":(literal)");
    if Path::new(shown)
        .components()
        .any(|c| c.as_os_str() == AGENT_DIR)
    {
        return Err(format!(
            "refused: {path:?} is under {AGENT_DIR}/, the agent's own files (sessions hold whole \
             conversations); they are never committed. Leave it out of `paths`"
        ));
    }
    Ok(spec)
}

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
    // Refused when the repository points out of the root.
    let git = &git.prepare().await.map_err(|e| e.to_string())?;
    let only: Vec<String> = match selection {
        Selection::Staged => {
            refuse_staged_agent_files(git).await?;
            Vec::new()
        }
        Selection::Paths(pathspecs) => {
            let mut only = pathspecs.clone();
            only.push(EXCLUDE_AGENT_FILES.to_owned());
            let mut args = vec!["add".to_string(), "--".to_string()];
            args.extend(only.iter().cloned());
            git.run_ok(&args).await.map_err(|e| e.to_string())?;
            only
        }
        Selection::AllTracked => {
            git.run_ok(["add", "--update", "--", ".", EXCLUDE_AGENT_FILES])
                .await
                .map_err(|e| e.to_string())?;
            Vec::new()
        }
    };
    let only = only.as_slice();
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

/// Refuses to commit what is staged while it holds the agent's own files.
async fn refuse_staged_agent_files(git: &Git) -> Result<(), String> {
    let listed = git
        .run_ok([
            "diff",
            "--cached",
            "--name-only",
            "--no-ext-diff",
            "--",
            ":(glob)**/.nanohermes/**",
        ])
        .await
        .map_err(|e| e.to_string())?;
    match listed.lines().next() {
        None => Ok(()),
        Some(first) => Err(format!(
            "refused: the staged changes include {first} under {AGENT_DIR}/, the agent's own \
             files, which are never committed; unstage them (`git restore --staged \
             {AGENT_DIR}`) or give `paths` to commit only the files you mean"
        )),
    }
}
