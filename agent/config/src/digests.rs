//! Trust bound to content: what each project file held when the user
//! trusted the project, the way direnv remembers an `.envrc`.
//!
//! A project's files that can start programs or change rules
//! ([`files::project_candidates`]: `.nanohermes/config.toml`, `.mcp.json`,
//! `.nanohermes/hooks.json` of the workspace, which in a monorepo may be a
//! package under the trusted directory) are read once into a [`Snapshot`];
//! their SHA-256 is compared with the [`Record`] kept in
//! `$NANOHERMES_HOME/trusted-files.json` — the user's own directory, which
//! no project file can name or write through the loader. A file that was
//! created, changed or removed since the record counts as changed
//! ([`Snapshot::changes`]); the loader skips it and the CLI asks again. The
//! same bytes that were hashed are the ones parsed, so a file swapped
//! between the check and the read cannot slip through.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use super::diag::ConfigError;
use super::files;

/// The record's file name inside `$NANOHERMES_HOME`.
pub const RECORD_FILE: &str = "trusted-files.json";

/// How a project file differs from what the user trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// It exists now and was not there (or not recorded) when trusted.
    Created,
    /// Its content differs.
    Changed,
    /// It was there when trusted and is gone.
    Removed,
}

impl ChangeKind {
    /// The word shown to the user.
    pub fn word(self) -> &'static str {
        match self {
            ChangeKind::Created => "created",
            ChangeKind::Changed => "changed",
            ChangeKind::Removed => "removed",
        }
    }
}

/// One project file that differs from the record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The file.
    pub path: PathBuf,
    /// How it differs.
    pub kind: ChangeKind,
}

/// The digests the user trusted, by absolute file path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    files: BTreeMap<String, String>,
}

/// The record file for `nanohermes_home`.
pub fn record_path(nanohermes_home: &Path) -> PathBuf {
    nanohermes_home.join(RECORD_FILE)
}

impl Record {
    /// Reads the record at `path`; a missing file is an empty record.
    pub fn load(path: &Path) -> Result<Record, ConfigError> {
        let shown = path.display().to_string();
        let Some(text) = files::read_optional(path, &shown)? else {
            return Ok(Record::default());
        };
        let files: BTreeMap<String, String> = serde_json::from_str(&text).map_err(|e| {
            ConfigError::at(
                &shown,
                Some(e.line()),
                format!(
                    "invalid trust record ({e}); remove the file and trust your projects again"
                ),
            )
        })?;
        Ok(Record { files })
    }

    /// Writes the record to `path` atomically, private to the user.
    pub fn save(&self, path: &Path) -> Result<(), ConfigError> {
        let mut text = serde_json::to_string_pretty(&self.files).unwrap_or_default();
        text.push('\n');
        super::edit::write_config_file(path, &path.display().to_string(), text.as_bytes())
    }

    /// The recorded digest of `path`.
    pub fn get(&self, path: &Path) -> Option<&str> {
        self.files.get(&key(path)).map(String::as_str)
    }

    /// Records what `snapshot` holds now: each existing file's digest, and
    /// no entry for a file that does not exist.
    pub fn remember(&mut self, snapshot: &Snapshot) {
        for file in &snapshot.files {
            match &file.content {
                Some(bytes) => {
                    self.files.insert(key(&file.path), digest(bytes));
                }
                None => {
                    self.files.remove(&key(&file.path));
                }
            }
        }
    }
}

/// One candidate file as read.
#[derive(Debug, Clone)]
pub struct SnapshotFile {
    /// Where it is.
    pub path: PathBuf,
    /// Its bytes; `None` when it does not exist.
    pub content: Option<Vec<u8>>,
}

/// The workspace's project files, each read once.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// In [`files::project_candidates`] order.
    pub files: Vec<SnapshotFile>,
}

impl Snapshot {
    /// Reads each of `paths` (a regular file only, never blocking; see
    /// [`files::read_regular`]).
    pub fn read(
        paths: &[PathBuf],
        show: &dyn Fn(&Path) -> String,
    ) -> Result<Snapshot, ConfigError> {
        let mut files = Vec::with_capacity(paths.len());
        for path in paths {
            let content = files::read_regular(path).map_err(|e| {
                ConfigError::at(
                    &show(path),
                    None,
                    format!("cannot read the file: {e}; make it a regular file or remove it"),
                )
            })?;
            files.push(SnapshotFile {
                path: path.clone(),
                content,
            });
        }
        Ok(Snapshot { files })
    }

    /// The files that exist.
    pub fn existing(&self) -> Vec<PathBuf> {
        self.files
            .iter()
            .filter(|f| f.content.is_some())
            .map(|f| f.path.clone())
            .collect()
    }

    /// The text of `path`, when it exists (invalid UTF-8 is an error).
    pub fn text(&self, path: &Path, shown: &str) -> Result<Option<String>, ConfigError> {
        let Some(file) = self.files.iter().find(|f| f.path == path) else {
            return Ok(None);
        };
        match &file.content {
            None => Ok(None),
            Some(bytes) => String::from_utf8(bytes.clone()).map(Some).map_err(|_| {
                ConfigError::at(shown, None, "the file is not valid UTF-8; save it as UTF-8")
            }),
        }
    }

    /// Every file that differs from `record`.
    pub fn changes(&self, record: &Record) -> Vec<Change> {
        let mut out = Vec::new();
        for file in &self.files {
            let kind = match (&file.content, record.get(&file.path)) {
                (None, None) => continue,
                (Some(_), None) => ChangeKind::Created,
                (None, Some(_)) => ChangeKind::Removed,
                (Some(bytes), Some(trusted)) if digest(bytes) == trusted => continue,
                (Some(_), Some(_)) => ChangeKind::Changed,
            };
            out.push(Change {
                path: file.path.clone(),
                kind,
            });
        }
        out
    }
}

/// `sha256:` and the hex SHA-256 of `bytes`.
pub fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for byte in hash {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

fn key(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// The changes as one phrase: `/w/.mcp.json (changed), /w/x (created)`.
pub fn describe(changes: &[Change], show: &dyn Fn(&Path) -> String) -> String {
    changes
        .iter()
        .map(|c| format!("{} ({})", show(&c.path), c.kind.word()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_changed_removed_and_same_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("a"),
            dir.path().join("b"),
            dir.path().join("c"),
        );
        std::fs::write(&a, "one").unwrap();
        std::fs::write(&b, "two").unwrap();
        let paths = [a.clone(), b.clone(), c.clone()];
        let show = |p: &Path| p.display().to_string();
        let mut record = Record::default();
        record.remember(&Snapshot::read(&paths, &show).unwrap());
        assert!(
            Snapshot::read(&paths, &show)
                .unwrap()
                .changes(&record)
                .is_empty()
        );

        std::fs::write(&a, "one!").unwrap();
        std::fs::remove_file(&b).unwrap();
        std::fs::write(&c, "new").unwrap();
        let kinds: Vec<ChangeKind> = Snapshot::read(&paths, &show)
            .unwrap()
            .changes(&record)
            .into_iter()
            .map(|c| c.kind)
            .collect();
        assert_eq!(
            kinds,
            [
                ChangeKind::Changed,
                ChangeKind::Removed,
                ChangeKind::Created
            ]
        );

        let path = dir.path().join("home/trusted-files.json");
        record.save(&path).unwrap();
        assert_eq!(Record::load(&path).unwrap(), record);
        assert!(record.get(&a).unwrap().starts_with("sha256:"));
    }
}
