//! One writer per session file, and no symbolic links followed.
//!
//! A run holds an advisory lock (`flock`, exclusive) on its session file
//! from the moment it opens it to its exit, so a second run on the same
//! file is refused at start with a clear error instead of silently
//! losing its turns to the first one's rewrite. The lock belongs to the
//! file's inode, and a rewrite replaces the inode (a new file renamed
//! over the old), so the [`super::Appender`] locks each new file before
//! it takes the name: at every moment the file under the name is locked.
//! A session file that did not exist at start is created without
//! replacing anything, so two new runs on one new name cannot both win.
//!
//! Every open is `O_NOFOLLOW`: a link planted at the file's name is an
//! error, never a way to write or read somewhere else.

use std::fs::File;
use std::io::{ErrorKind, Read as _};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::Path;

/// The lock a run holds on its session file (none while the file does
/// not exist yet: the first write creates it locked).
#[derive(Debug, Default)]
pub struct SessionLock {
    /// The locked file, open for reading.
    file: Option<Locked>,
    /// The file did not exist: the first write must not replace one.
    new: bool,
}

impl SessionLock {
    /// Locks the file at `path` and reads it through the locked handle
    /// (`None`: there is no file yet). Refused when another process holds
    /// the lock, or when `path` is a symbolic link.
    pub fn take(path: &Path) -> Result<(SessionLock, Option<Vec<u8>>), String> {
        // A rewrite may rename a new file over the one opened here between
        // the open and the lock: then the lock is on a file that no longer
        // has the name, so try again with the new one.
        for _ in 0..8 {
            let file = match open_no_follow(path) {
                Ok(file) => file,
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    return Ok((
                        SessionLock {
                            file: None,
                            new: true,
                        },
                        None,
                    ));
                }
                Err(e) => return Err(unreadable(path, &e)),
            };
            let mut file = match lock(file) {
                Ok(file) => file,
                Err(nix::errno::Errno::EWOULDBLOCK) => {
                    return Err(format!(
                        "session file {} is in use by another nanohermes run (it holds the file's lock); wait for that run to end, or start a new session",
                        path.display()
                    ));
                }
                Err(e) => {
                    return Err(format!("cannot lock session {}: {e}", path.display()));
                }
            };
            let held = file.metadata().map_err(|e| unreadable(path, &e))?;
            let named = std::fs::symlink_metadata(path).ok();
            if named.is_some_and(|m| m.ino() == held.ino() && m.dev() == held.dev()) {
                let mut bytes = Vec::new();
                file.read_to_end(&mut bytes)
                    .map_err(|e| unreadable(path, &e))?;
                return Ok((
                    SessionLock {
                        file: Some(file),
                        new: false,
                    },
                    Some(bytes),
                ));
            }
        }
        Err(format!(
            "session file {} keeps being replaced by another process; start a new session",
            path.display()
        ))
    }

    /// Whether the first write must create the file rather than replace
    /// one.
    pub fn is_new(&self) -> bool {
        self.new
    }

    /// Lets the lock go once a newer file, locked, holds the name.
    pub fn release(&mut self) {
        self.file = None;
        self.new = false;
    }
}

/// A file with an exclusive `flock` on it, held until it is dropped.
pub type Locked = nix::fcntl::Flock<File>;

/// Takes the exclusive lock on `file` without waiting (`EWOULDBLOCK`
/// when another open file holds it).
pub fn lock(file: File) -> Result<Locked, nix::errno::Errno> {
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock)
        .map_err(|(_, errno)| errno)
}

/// Opens `path` for reading without following a symbolic link at it.
pub fn open_no_follow(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Reads the whole file at `path`, refusing a symbolic link.
pub fn read_no_follow(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_no_follow(path)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The error line for a session file that could not be read.
pub fn unreadable(path: &Path, error: &std::io::Error) -> String {
    if error.raw_os_error() == Some(libc::ELOOP) {
        format!(
            "session file {} is a symbolic link; nanohermes does not follow links for session files: name the file itself",
            path.display()
        )
    } else {
        format!("cannot read session {}: {error}", path.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_and_a_link_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let (lock, bytes) = SessionLock::take(&path).unwrap();
        assert!(lock.is_new() && bytes.is_none());
        std::fs::write(&path, b"x").unwrap();
        let (first, bytes) = SessionLock::take(&path).unwrap();
        assert_eq!(bytes.as_deref(), Some(&b"x"[..]));
        let err = SessionLock::take(&path).unwrap_err();
        assert!(err.contains("is in use by another nanohermes run"), "{err}");
        drop(first);
        assert!(SessionLock::take(&path).is_ok());

        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        let err = SessionLock::take(&link).unwrap_err();
        assert!(err.contains("is a symbolic link"), "{err}");
    }
}
