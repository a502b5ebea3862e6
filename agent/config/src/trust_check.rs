//! The trust question's facts: what the user decided about a workspace,
//! which of its files changed since, which variables its `.mcp.json`
//! expands; asking, and recording the answer (trust level in the user's
//! config, digests in the trust record).

use std::path::{Path, PathBuf};

use super::diag::ConfigError;
use super::digests::{self, Change, Record, Snapshot};
use super::files;
use super::layered::{ConfigSources, read_user};
use super::mcp_json;
use super::raw;
use super::trust::{self, TrustStatus};

/// What the CLI needs to decide whether to ask about trust.
#[derive(Debug, Clone)]
pub struct TrustCheck {
    /// The user's decision so far.
    pub status: TrustStatus,
    /// The workspace's config files that exist.
    pub project_files: Vec<PathBuf>,
    /// For a trusted project: the files created, changed or removed since
    /// the user trusted it.
    pub changes: Vec<Change>,
    /// One line per `${VAR}` the project's `.mcp.json` expands (see
    /// [`mcp_json::expansions`]), shown with the question.
    pub expansions: Vec<String>,
    /// Where a decision is recorded.
    pub user_config: Option<PathBuf>,
    /// Where the trusted files' digests are recorded.
    pub record_path: Option<PathBuf>,
    /// The workspace.
    pub workspace: PathBuf,
    snapshot: Snapshot,
    record: Record,
}

impl TrustCheck {
    /// Whether to ask on a terminal: a project with config files the user
    /// never decided about, or a trusted one whose files changed since.
    pub fn should_ask(&self, is_tty: bool) -> bool {
        let changed = self.status.is_trusted() && !self.changes.is_empty();
        trust::should_ask(&self.status, is_tty, !self.project_files.is_empty())
            || (is_tty && changed)
    }

    /// Asks on `input`/`output` and records the answer: for an undecided
    /// project, its trust level in the user's config (either way); on yes,
    /// the digest of every project file in the trust record. A "no" to
    /// changed files records nothing: they stay skipped and the next run
    /// asks again. Returns whether the files are now trusted.
    pub fn ask_and_record(
        &self,
        input: &mut dyn std::io::BufRead,
        output: &mut dyn std::io::Write,
    ) -> Result<bool, ConfigError> {
        let show = |p: &Path| p.display().to_string();
        let mut question = if self.status.is_trusted() {
            trust::changed_question(&self.workspace, &digests::describe(&self.changes, &show))
        } else {
            let files: Vec<String> = self.project_files.iter().map(|p| show(p)).collect();
            trust::question(&self.workspace, &files)
        };
        if !self.expansions.is_empty() {
            let lines: String = self.expansions.iter().map(|l| format!("  {l}\n")).collect();
            question = format!(
                ".mcp.json passes these environment variables to servers:\n{lines}{question}"
            );
        }
        let yes = trust::ask(input, output, &question)
            .map_err(|e| ConfigError::at("", None, format!("cannot ask about trust: {e}")))?;
        if !self.status.is_trusted() {
            let level = if yes {
                raw::TrustLevel::Trusted
            } else {
                raw::TrustLevel::Untrusted
            };
            if let Some(path) = &self.user_config {
                trust::record(path, &self.workspace, level)?;
            }
        }
        if yes {
            self.remember()?;
        }
        Ok(yes)
    }

    /// Records the digests of the project files as read for this check.
    fn remember(&self) -> Result<(), ConfigError> {
        if let Some(path) = &self.record_path {
            let mut record = self.record.clone();
            record.remember(&self.snapshot);
            record.save(path)?;
        }
        Ok(())
    }

    /// Trusts the project as it is now, without asking: its trust level
    /// in the user's config and each file's digest in the trust record
    /// (what answering yes does; for the user's own commands and tests).
    pub fn trust_now(&self) -> Result<(), ConfigError> {
        if !self.status.is_trusted()
            && let Some(path) = &self.user_config
        {
            trust::record(path, &self.workspace, raw::TrustLevel::Trusted)?;
        }
        self.remember()
    }
}

/// Reads the user's config and the project's files and tells what the
/// user decided and what changed since.
pub fn trust_check(sources: &ConfigSources) -> Result<TrustCheck, ConfigError> {
    let (user, _) = read_user(sources)?;
    let user_config = sources.user_config_path();
    let status = trust::status(&user, &sources.workspace);
    let snapshot = sources.snapshot()?;
    let record = sources.record()?;
    let changes = match status.is_trusted() {
        true => snapshot.changes(&record),
        false => Vec::new(),
    };
    let json_path = files::mcp_json(&sources.workspace);
    let key_vars = super::providers::key_vars_of(&user);
    let expansions = match snapshot.text(&json_path, &sources.show(&json_path)) {
        Ok(Some(text)) => mcp_json::expansions(&text, &key_vars),
        _ => Vec::new(),
    };
    Ok(TrustCheck {
        status,
        project_files: snapshot.existing(),
        changes,
        expansions,
        user_config,
        record_path: sources.trust_record_path(),
        workspace: sources.workspace.clone(),
        snapshot,
        record,
    })
}
