//! Sessions: one JSON file per conversation, by default
//! `WORKSPACE/.nanohermes/sessions/ID.json`, written at every step boundary
//! with [`mcp_tools::write_atomic`] (mode 0600), so a session survives a
//! killed process and continues where its last whole step ended. `run`
//! (`--session FILE`, `--continue`, `--resume ID`) and `nanohermes serve`
//! (`run_task`'s `session_id`) keep them the same way.
//!
//! A file holds the history without its system message: the prompt is
//! rebuilt from the configuration current when the session continues. The
//! model's key is never in it (it is not in the history). An id is
//! checked before it becomes a path, so a caller cannot name a file
//! outside the directory.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::serve::RunUsage;

/// The layout version written; a file of another version is refused.
pub const VERSION: u32 = 1;

/// What a session file holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionFile {
    /// Layout version ([`VERSION`]).
    pub version: u32,
    /// The session's id (also the file's stem).
    pub id: String,
    /// The workspace the session works in.
    pub workspace: PathBuf,
    /// The history, system message excluded.
    pub messages: Vec<Value>,
    /// Model usage over every task of the session.
    pub usage: RunUsage,
    /// Deferred tools the session surfaced (found by `tool_search` or
    /// called by name): declared again from the first request on resume.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub surfaced: Vec<String>,
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
        let path = self.path(id);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read session {}: {e}", path.display())),
        };
        let file: SessionFile = serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "session file {} is damaged ({e}); it was left untouched: start a new session",
                path.display()
            )
        })?;
        if file.version != VERSION || file.id != id {
            return Err(format!(
                "session file {} is not a version {VERSION} file of session {id}; start a new session",
                path.display()
            ));
        }
        Ok(Some(file))
    }

    /// Writes `file` atomically, mode 0600, in a directory only the user
    /// can read.
    pub fn save(&self, file: &SessionFile) -> std::io::Result<()> {
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

/// Reads the session file at `path` for `run`: `Ok(None)` when there is
/// none. A file that does not parse is moved aside to
/// `PATH.corrupt-SECONDS` (never overwritten) and reported in the `Err`
/// line, so the caller starts a fresh session and says why.
pub fn load_or_set_aside(path: &Path) -> Result<Option<SessionFile>, String> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read session {}: {e}", path.display())),
    };
    let problem = match serde_json::from_slice::<SessionFile>(&bytes) {
        Ok(file) if file.version == VERSION => return Ok(Some(file)),
        Ok(file) => format!("is version {}, not {VERSION}", file.version),
        Err(e) => format!("is damaged ({e})"),
    };
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".corrupt-{stamp}"));
    let aside = PathBuf::from(aside);
    let kept = match std::fs::rename(path, &aside) {
        Ok(()) => format!("it was kept as {}", aside.display()),
        Err(e) => format!("it could not be moved aside ({e}) and is left as it is"),
    };
    Err(format!(
        "session file {} {problem}; {kept}; starting a fresh session",
        path.display()
    ))
}

/// Writes `file` to `path` atomically, mode 0600, creating the directory
/// (0700) if needed.
pub fn save_to(path: &Path, file: &SessionFile) -> std::io::Result<()> {
    write_private_json(path, file)
}

/// Writes `value` as JSON to `path` through [`mcp_tools::write_atomic`],
/// mode 0600, in a directory created 0700 if missing: how sessions and
/// task handles (which hold what the model saw) are kept.
pub fn write_private_json<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    write_private_json_with(path, value, mcp_tools::Durability::PowerLoss)
}

/// [`write_private_json`], fsynced only when `durability` asks: a session
/// rewritten at every step needs to survive the agent being killed, which
/// needs no fsync (the end of a run issues one without waiting, [`Keeper`]).
pub fn write_private_json_with<T: Serialize>(
    path: &Path,
    value: &T,
    durability: mcp_tools::Durability,
) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if let Some(dir) = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty() && !d.is_dir())
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let bytes = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    mcp_tools::write_atomic_with(path, &bytes, 0o600, durability)
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
            usage: RunUsage::default(),
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

#[cfg(test)]
mod run_tests {
    use super::*;

    #[test]
    fn the_flags_pick_a_file_the_latest_session_or_a_named_one() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        let none = SessionArgs::default();
        let first = open(&none, ws).unwrap();
        assert!(!first.resumed() && first.warning.is_none());
        assert!(first.path.starts_with(ws.join(".nanohermes/sessions")));

        let latest = SessionArgs {
            continue_last: true,
            ..SessionArgs::default()
        };
        let opened = open(&latest, ws).unwrap();
        assert!(opened.warning.unwrap().contains("no earlier session"));

        let mut file = first.file.clone();
        file.messages = vec![serde_json::json!({"role": "user", "content": "hi"})];
        save_to(&first.path, &file).unwrap();
        let opened = open(&latest, ws).unwrap();
        assert_eq!(
            (opened.resumed(), opened.file.id.as_str()),
            (true, file.id.as_str())
        );

        let named = |id: &str| SessionArgs {
            resume: Some(id.into()),
            ..SessionArgs::default()
        };
        assert_eq!(open(&named(&file.id), ws).unwrap().file, file);
        let err = open(&named("0000-missing"), ws).unwrap_err();
        assert!(
            err.starts_with("--resume 0000-missing: no such session in"),
            "{err}"
        );
        assert!(
            open(&named("../x"), ws)
                .unwrap_err()
                .contains("a session id is letters")
        );
    }

    #[test]
    fn a_corrupt_session_file_is_set_aside_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        assert_eq!(load_or_set_aside(&path), Ok(None));
        std::fs::write(&path, b"{\"version\": 1, trunc").unwrap();
        let err = load_or_set_aside(&path).unwrap_err();
        assert!(
            err.contains("is damaged") && err.ends_with("starting a fresh session"),
            "{err}"
        );
        assert!(!path.exists());
        let aside: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(aside.len(), 1);
        assert_eq!(
            std::fs::read(aside[0].path()).unwrap(),
            b"{\"version\": 1, trunc"
        );
        assert!(
            err.contains(&aside[0].path().display().to_string()),
            "{err}"
        );
    }
}

/// The session flags of `run` (and, later, the interactive mode).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SessionArgs {
    /// Keep the conversation in FILE: continue it if it exists; written after every step.
    #[arg(long, global = true, value_name = "FILE", conflicts_with_all = ["continue_last", "resume"])]
    pub session: Option<PathBuf>,
    /// Continue the most recent session of this workspace.
    #[arg(long = "continue", global = true, conflicts_with = "resume")]
    pub continue_last: bool,
    /// Continue session ID of this workspace (the file names under .nanohermes/sessions/).
    #[arg(long, global = true, value_name = "ID")]
    pub resume: Option<String>,
}

/// The session a run keeps: where, what so far, and whether it continues
/// an earlier one.
#[derive(Debug, Clone, PartialEq)]
pub struct Opened {
    /// The file written after every step.
    pub path: PathBuf,
    /// Its content so far (an empty history for a new session).
    pub file: SessionFile,
    /// A line for the user: a corrupt file set aside, no earlier session.
    pub warning: Option<String>,
}

impl Opened {
    /// Whether the session continues an earlier conversation.
    pub fn resumed(&self) -> bool {
        !self.file.messages.is_empty()
    }
}

/// The session `args` name for `workspace`; with no flag, a new session of
/// the workspace (so `--continue` finds it next time). `Err` only for a
/// `--resume` that names no session.
pub fn open(args: &SessionArgs, workspace: &Path) -> Result<Opened, String> {
    let store = SessionStore::of(workspace);
    let fresh = |path: PathBuf, id: String, warning: Option<String>| Opened {
        path,
        file: SessionFile {
            version: VERSION,
            id,
            workspace: workspace.to_owned(),
            messages: Vec::new(),
            usage: RunUsage::default(),
            surfaced: Vec::new(),
        },
        warning,
    };
    let from_file = |path: PathBuf, id: String| match load_or_set_aside(&path) {
        Ok(Some(file)) => Opened {
            path,
            file,
            warning: None,
        },
        Ok(None) => fresh(path, id, None),
        Err(warning) => fresh(path, id, Some(warning)),
    };
    if let Some(path) = &args.session {
        return Ok(from_file(path.clone(), new_id()));
    }
    if let Some(id) = &args.resume {
        if !valid_id(id) {
            return Err(format!(
                "--resume {id:?}: a session id is letters, digits and '-' (the file names under {})",
                store.dir.display()
            ));
        }
        let path = store.path(id);
        if !path.exists() {
            return Err(format!(
                "--resume {id}: no such session in {}; --continue takes the most recent one",
                store.dir.display()
            ));
        }
        return Ok(from_file(path, id.clone()));
    }
    if args.continue_last {
        return Ok(match store.most_recent() {
            Some(id) => from_file(store.path(&id), id),
            None => {
                let id = new_id();
                fresh(
                    store.path(&id),
                    id,
                    Some("--continue: this workspace has no earlier session; starting one".into()),
                )
            }
        });
    }
    let id = new_id();
    Ok(fresh(store.path(&id), id, None))
}

/// A `Ui` that also keeps the session: every checkpoint writes the
/// history (system message left out: it is rebuilt on load) and the usage
/// so far.
pub struct Keeper<U> {
    inner: U,
    path: PathBuf,
    file: SessionFile,
    surfaced: Option<crate::hub::Surfaced>,
    /// Whether `file` changed since it was last written.
    dirty: bool,
}

impl<U: crate::ui::Ui> Keeper<U> {
    /// Wraps `inner`, writing `opened`'s file.
    pub fn new(inner: U, opened: &Opened) -> Keeper<U> {
        Keeper {
            inner,
            path: opened.path.clone(),
            file: opened.file.clone(),
            surfaced: None,
            dirty: false,
        }
    }

    /// Also writes the tools `surfaced` holds (the hub's, shared).
    pub fn keep_surfaced(&mut self, surfaced: crate::hub::Surfaced) {
        self.surfaced = Some(surfaced);
    }

    /// The wrapped `Ui`.
    pub fn inner(&mut self) -> &mut U {
        &mut self.inner
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.file.id
    }

    /// Writes the file as it stands, saying so when that fails.
    fn write(&mut self, durability: mcp_tools::Durability) {
        self.dirty = false;
        if let Err(e) = write_private_json_with(&self.path, &self.file, durability) {
            self.inner.notice(&format!(
                "cannot write session {}: {e}",
                self.path.display()
            ));
        }
    }
}

impl<U: crate::ui::Ui> crate::ui::Ui for Keeper<U> {
    fn text(&mut self, delta: &str) {
        self.inner.text(delta);
    }

    fn tool_call(&mut self, call: &crate::llm::ToolCall, result: &str) {
        self.inner.tool_call(call, result);
    }

    fn notice(&mut self, line: &str) {
        self.inner.notice(line);
    }

    fn turn_end(&mut self) {
        self.inner.turn_end();
    }

    fn usage(&mut self, usage: Option<crate::llm::Usage>) {
        self.dirty = true;
        self.file.usage.requests += 1;
        if let Some(usage) = usage {
            self.file.usage.prompt_tokens += usage.prompt_tokens;
            self.file.usage.completion_tokens += usage.completion_tokens;
        }
        self.inner.usage(usage);
    }

    fn step(&mut self, step: usize, calls: &[crate::llm::ToolCall]) {
        self.inner.step(step, calls);
    }

    fn checkpoint(&mut self, messages: &crate::transcript::Transcript) {
        self.file.messages = messages.get(1..).unwrap_or_default().to_vec();
        if let Some(surfaced) = &self.surfaced {
            self.file.surfaced = surfaced.names();
        }
        self.write(mcp_tools::Durability::ProcessDeath);
        self.inner.checkpoint(messages);
    }

    /// The run's end is made to survive a power loss too: the last
    /// checkpoint wrote it, the fsyncs are issued on a thread of their own
    /// and the exit does not wait for the disk.
    fn settled(&mut self) {
        if self.dirty {
            self.write(mcp_tools::Durability::ProcessDeath);
        }
        drop(mcp_tools::sync_in_background(&self.path));
        self.inner.settled();
    }
}
