//! Sessions: one file per conversation, by default
//! `WORKSPACE/.nanohermes/sessions/ID.json`, kept at every step boundary
//! so a session survives a killed process and continues where its last
//! whole step ended. `run` (`--session FILE`, `--continue`, `--resume ID`),
//! the interactive mode and `nanohermes serve` (`run_task`'s `session_id`)
//! keep them with one mechanism, the [`Appender`].
//!
//! The file is JSON Lines (version 2, [`format`]): a header, then one
//! record per message, usage and surfaced-tool records, and an end marker
//! closing every write. A step appends its new messages in one `write`;
//! only a history changed in place (compaction, `/undo`, `/reset`) is
//! written again whole, atomically. A reader keeps what the last end
//! marker closes, so a write cut short never resumes half a step.
//! Version 1 files (one JSON object) still load, and are written again in
//! version 2 at their first checkpoint.
//!
//! New files keep the `.json` name. `--session FILE` names any path, so
//! the version must be told from the content anyway; one name per id
//! means no lookup rule for two extensions and no two files for one
//! session after a conversion. (Line-oriented tools read JSON Lines from
//! a `.json` file as well: `jq` takes a stream of values.)
//!
//! A file holds the history without its system message: the prompt is
//! rebuilt from the configuration current when the session continues. The
//! model's key is never in it (it is not in the history). An id is
//! checked before it becomes a path, so a caller cannot name a file
//! outside the directory.

mod appender;
pub mod format;
mod keeper;
mod lock;
mod open;
mod usage;

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

pub use appender::Appender;
pub use format::VERSION;
pub use keeper::{Keeper, SurfacedNames};
pub use lock::SessionLock;
pub use open::{Opened, SessionArgs, load_or_set_aside, open};
pub use usage::SessionUsage;

/// What a session file holds, as read (deserialised as such from a
/// version 1 file; written only through [`format`]).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct SessionFile {
    /// The layout version it was read in (1 or [`VERSION`]).
    pub version: u32,
    /// The session's id (also the file's stem).
    pub id: String,
    /// The workspace the session works in.
    pub workspace: PathBuf,
    /// The history, system message excluded.
    pub messages: Vec<Value>,
    /// Model usage over every task of the session.
    pub usage: SessionUsage,
    /// Deferred tools the session surfaced (found by `tool_search` or
    /// called by name): declared again from the first request on resume.
    #[serde(default)]
    pub surfaced: Vec<String>,
}

impl SessionFile {
    /// A session `id` in `workspace` with nothing in it yet.
    pub fn new(id: &str, workspace: &Path) -> SessionFile {
        SessionFile {
            version: VERSION,
            id: id.to_owned(),
            workspace: workspace.to_owned(),
            messages: Vec::new(),
            usage: SessionUsage::default(),
            surfaced: Vec::new(),
        }
    }
}

/// Where a workspace's sessions live.
#[derive(Debug, Clone)]
pub struct SessionStore {
    dir: PathBuf,
}

impl SessionStore {
    /// The sessions of `workspace`.
    pub fn of(workspace: &Path) -> SessionStore {
        SessionStore {
            dir: workspace.join(".nanohermes").join("sessions"),
        }
    }

    /// Refuses a session directory that is a symbolic link
    /// (`.nanohermes` or `.nanohermes/sessions`): a repository could ship
    /// one to put the whole conversation, tool output included, outside
    /// the workspace, or to read a planted session back in.
    pub fn check(&self) -> Result<(), String> {
        for dir in [self.dir.parent(), Some(self.dir.as_path())]
            .into_iter()
            .flatten()
        {
            if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(format!(
                    "the session directory {} is a symbolic link; nanohermes keeps sessions only in a real directory inside the workspace: remove the link (or pass --session FILE)",
                    dir.display()
                ));
            }
        }
        Ok(())
    }

    /// The file of session `id` (which must be [`valid_id`]).
    pub fn path(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// Reads session `id`: `Ok(None)` when there is none. A file that does
    /// not parse is an error that says so; the file is left as it is.
    pub fn load(&self, id: &str) -> Result<Option<SessionFile>, String> {
        if !valid_id(id) {
            return Err(format!(
                "session_id {id:?} is not a session id (letters, digits and '-', at most 64); pass the session_id a run_task result returned"
            ));
        }
        self.check()?;
        let path = self.path(id);
        let file = match read_file(&path) {
            Ok(file) => file,
            Err(Unreadable::Io(e)) => return Err(e),
            Err(Unreadable::Bad(problem)) => {
                return Err(format!(
                    "session file {} {problem}; it was left untouched: start a new session",
                    path.display()
                ));
            }
        };
        match file {
            Some(file) if file.id != id => Err(format!(
                "session file {} holds session {}, not {id}; start a new session",
                path.display(),
                file.id
            )),
            file => Ok(file),
        }
    }

    /// Writes `file` whole, atomically, mode 0600, in a directory only the
    /// user can read.
    pub fn save(&self, file: &SessionFile) -> std::io::Result<()> {
        self.check().map_err(std::io::Error::other)?;
        save_to(&self.path(&file.id), file)
    }

    /// The id of the session written last, if any (for `--continue`).
    pub fn most_recent(&self) -> Option<String> {
        std::fs::read_dir(&self.dir)
            .ok()?
            .flatten()
            .filter_map(|entry| {
                let path = entry.path();
                let id = path
                    .file_name()?
                    .to_str()?
                    .strip_suffix(".json")?
                    .to_owned();
                let modified = entry.metadata().ok()?.modified().ok()?;
                valid_id(&id).then_some((modified, id))
            })
            .max()
            .map(|(_, id)| id)
    }
}

/// Reads the session file at `path`, of either version, leaving it as it
/// is: `Ok(None)` when there is none, `Err` saying what is wrong.
pub fn read(path: &Path) -> Result<Option<SessionFile>, String> {
    read_file(path).map_err(|e| match e {
        Unreadable::Io(e) => e,
        Unreadable::Bad(problem) => format!("session file {} {problem}", path.display()),
    })
}

/// Why a session file could not be read.
enum Unreadable {
    /// Reading failed (the file may be fine).
    Io(String),
    /// What it holds is not a session.
    Bad(format::Problem),
}

fn read_file(path: &Path) -> Result<Option<SessionFile>, Unreadable> {
    let bytes = match lock::read_no_follow(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Unreadable::Io(lock::unreadable(path, &e))),
    };
    format::decode(&bytes).map(Some).map_err(Unreadable::Bad)
}

/// Writes `file` whole to `path` (version 2) atomically, mode 0600,
/// creating the directory (0700) if needed.
pub fn save_to(path: &Path, file: &SessionFile) -> std::io::Result<()> {
    mcp_tools::atomic::write_private(
        path,
        &format::encode(file),
        mcp_tools::Durability::PowerLoss,
    )
}

/// Whether `id` may name a session file: 1 to 64 ASCII letters, digits
/// and `-`.
pub fn valid_id(id: &str) -> bool {
    (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// A new random id: 128 bits from the kernel, as hex in UUID layout.
pub fn new_id() -> String {
    let mut bytes = [0u8; 16];
    fill_random(&mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// Fills `buf` from `/dev/urandom`; without it (never on Linux) from the
/// clock and the process id, which is still unique enough for an id.
pub fn fill_random(buf: &mut [u8]) {
    use std::io::Read as _;
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(buf))
        .is_ok()
    {
        return;
    }
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
        ^ u128::from(std::process::id());
    for (i, b) in buf.iter_mut().enumerate() {
        *b = (seed >> ((i % 16) * 8)) as u8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_could_leave_the_directory_are_refused() {
        for bad in [
            "",
            "../x",
            "a/b",
            "a.json",
            "..",
            &"a".repeat(65),
            "a b",
            "é",
        ] {
            assert!(!valid_id(bad), "{bad:?}");
        }
        assert!(valid_id(&new_id()));
        assert_ne!(new_id(), new_id());
        let dir = tempfile::tempdir().unwrap();
        let err = SessionStore::of(dir.path())
            .load("../../etc/passwd")
            .unwrap_err();
        assert!(
            err.starts_with("session_id \"../../etc/passwd\" is not a session id"),
            "{err}"
        );
    }

    #[test]
    fn a_saved_session_loads_back_is_private_and_a_damaged_one_is_kept() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::of(dir.path());
        let id = new_id();
        assert_eq!(store.load(&id).unwrap(), None);
        let file = SessionFile {
            version: VERSION,
            id: id.clone(),
            workspace: dir.path().to_owned(),
            messages: vec![serde_json::json!({"role": "user", "content": "hi"})],
            usage: SessionUsage::default(),
            surfaced: vec!["fx__echo".into()],
        };
        store.save(&file).unwrap();
        assert_eq!(store.load(&id).unwrap(), Some(file));
        let mode = std::fs::metadata(store.path(&id))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);

        std::fs::write(store.path(&id), b"{\"version\": 1, \"id\":").unwrap();
        assert_eq!(store.most_recent(), Some(id.clone()));
        let err = store.load(&id).unwrap_err();
        assert!(err.contains("is damaged"), "{err}");
        assert_eq!(
            std::fs::read(store.path(&id)).unwrap(),
            b"{\"version\": 1, \"id\":"
        );
    }
}
