//! Which session `run` and the interactive mode keep: the flags, the
//! file they name (locked for the run, [`SessionLock`]), and a damaged
//! session file set aside. A file that is not a session file is refused
//! and left as it is.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{
    SessionFile, SessionLock, SessionStore, Unreadable, format, new_id, read_file, valid_id,
};

/// Reads the session file at `path` for `run`: `Ok(None)` when there is
/// none. A file that does not parse is moved aside to
/// `PATH.corrupt-SECONDS` (never overwritten) and reported in the `Err`
/// line, so the caller starts a fresh session and says why.
pub fn load_or_set_aside(path: &Path) -> Result<Option<SessionFile>, String> {
    let problem = match read_file(path) {
        Ok(file) => return Ok(file),
        Err(Unreadable::Io(e)) => return Err(e),
        Err(Unreadable::Bad(problem)) => problem,
    };
    Err(set_aside(path, &problem))
}

/// Moves the damaged session file at `path` aside; the line says where.
fn set_aside(path: &Path, problem: &format::Problem) -> String {
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
    format!(
        "session file {} {problem}; {kept}; starting a fresh session",
        path.display()
    )
}

/// What a session file at `path` holds, read through its lock: a fresh
/// session when there is none (or it is empty), the session, or a
/// damaged session set aside (with the line saying so). A file that is
/// not a session file at all is an error, and is left untouched, unless
/// it is `ours` (in the workspace's session directory, where every file
/// is the agent's).
fn load_locked(
    path: &Path,
    fresh: SessionFile,
    ours: bool,
) -> Result<(SessionFile, Option<String>, SessionLock), String> {
    let (lock, bytes) = SessionLock::take(path)?;
    let Some(bytes) = bytes.filter(|b| !b.is_empty()) else {
        return Ok((fresh, None, lock));
    };
    if !ours && !format::looks_like_session(&bytes) {
        return Err(format!(
            "{} is not a nanohermes session file; it was left untouched: --session takes a new file name or an earlier session's file",
            path.display()
        ));
    }
    match format::decode(&bytes) {
        Ok(file) => Ok((file, None, lock)),
        Err(problem) => {
            // The lock was on the file now moved aside; the new file is
            // created, never put over another run's.
            let warning = set_aside(path, &problem);
            drop(lock);
            let (lock, _) = SessionLock::take(path)?;
            Ok((fresh, Some(warning), lock))
        }
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
#[derive(Debug)]
pub struct Opened {
    /// The file written after every step.
    pub path: PathBuf,
    /// Its content so far (an empty history for a new session).
    pub file: SessionFile,
    /// A line for the user: a corrupt file set aside, no earlier session.
    pub warning: Option<String>,
    /// `--session FILE` named the file (it is not found by id).
    pub named: bool,
    /// The lock on the file, until the session's writer takes it.
    lock: Mutex<Option<SessionLock>>,
}

impl Opened {
    /// The lock taken when the file was opened, for the writer (once).
    pub fn take_lock(&self) -> SessionLock {
        self.lock
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_default()
    }

    /// The flag that continues this session, once its file exists:
    /// `--session FILE` for a file named so, else `--resume ID`. `None`
    /// while nothing was written (a session left before its first task):
    /// a hint then would name a session that does not exist.
    pub fn resume_hint(&self) -> Option<String> {
        if !self.path.is_file() {
            return None;
        }
        Some(if self.named {
            format!(
                "session {} kept: continue it with --session {}",
                self.file.id,
                self.path.display()
            )
        } else {
            format!(
                "session {} kept: continue it with --resume {}",
                self.file.id, self.file.id
            )
        })
    }

    /// Whether the session continues an earlier conversation.
    pub fn resumed(&self) -> bool {
        !self.file.messages.is_empty()
    }
}

/// The session `args` name for `workspace`; with no flag, a new session of
/// the workspace (so `--continue` finds it next time). The file is locked
/// for the run. `Err` for a `--resume` that names no session, a file that
/// is not a session file, a file another run holds, and a session
/// directory that is a symbolic link.
pub fn open(args: &SessionArgs, workspace: &Path) -> Result<Opened, String> {
    let store = SessionStore::of(workspace);
    let fresh = |path: PathBuf, id: String, warning: Option<String>| Opened {
        path,
        file: SessionFile::new(&id, workspace),
        warning,
        named: false,
        lock: Mutex::new(None),
    };
    let from_file = |path: PathBuf, id: String| -> Result<Opened, String> {
        let named = args.session.is_some();
        let (file, warning, lock) = load_locked(&path, SessionFile::new(&id, workspace), !named)?;
        Ok(Opened {
            path,
            file,
            warning,
            named,
            lock: Mutex::new(Some(lock)),
        })
    };
    if let Some(path) = &args.session {
        return from_file(path.clone(), new_id());
    }
    store.check()?;
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
        return from_file(path, id.clone());
    }
    if args.continue_last {
        return Ok(match store.most_recent() {
            Some(id) => from_file(store.path(&id), id)?,
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
    from_file(store.path(&id), id)
}

#[cfg(test)]
mod tests {
    use super::super::save_to;
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
        // One run at a time: the first still holds the file.
        let err = open(&named(&file.id), ws).unwrap_err();
        assert!(err.contains("is in use by another nanohermes run"), "{err}");
        drop(opened);
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
