//! Atomic file replacement, the one way every NanoHermes writer replaces a
//! file (the files and todo servers today; sessions and config later).
//!
//! The new content goes to a temp file in the target's own directory (a
//! rename is only atomic within one file system), created with `O_EXCL`
//! under an unpredictable name so nothing planted in the directory can be
//! followed or clobbered. The temp file is fsynced, given its final mode,
//! renamed over the target, and then the directory is fsynced so the
//! rename itself survives a crash. A reader sees the old file or the new
//! one, never a torn one; a failure before the rename leaves the target
//! untouched and removes the temp file.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
#[cfg(test)]
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// Mode for a new file when the caller has no reason to choose (`rw-r--r--`
/// before the umask). Writers of private data (sessions) pass `0o600`.
pub const DEFAULT_FILE_MODE: u32 = 0o644;

/// Mode of the temp file while it is written when the target exists: no
/// wider than any mode it can end with, so the content is never more
/// readable than the file it replaces.
const PRIVATE_MODE: u32 = 0o600;

/// Replaces `path` with `contents` atomically.
///
/// - An existing regular file at `path` keeps its permission bits (the
///   temp file gets them before the rename).
/// - A new file gets `new_file_mode`, reduced by the process umask like any
///   newly created file (pass [`DEFAULT_FILE_MODE`], or `0o600` for private data).
/// - The parent directory must exist; this does not create directories, so
///   a caller that wants private directories makes them itself.
/// - A symlink at `path` is replaced by the new file, not followed: resolve
///   the path first if the link's target is meant.
///
/// On error before the rename the target is unchanged and the temp file is
/// gone. An error from the final directory fsync means the new content is
/// in place but its durability across a crash is not guaranteed.
pub fn write_atomic(path: &Path, contents: &[u8], new_file_mode: u32) -> io::Result<()> {
    write_atomic_with(path, contents, new_file_mode, Durability::PowerLoss)
}

/// What a replaced file must survive, which decides whether it is fsynced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// The writer's own death (SIGKILL, a panic, a closed terminal): the
    /// renamed file is in the page cache, which outlives the process, so no
    /// fsync is needed. For files rewritten at every step of a run, where
    /// two fsyncs would cost more than the step itself.
    ProcessDeath,
    /// A power loss or kernel crash too: the file and then its directory
    /// are fsynced.
    PowerLoss,
}

/// [`write_atomic`], fsynced only when `durability` asks for it: the same
/// atomic replacement either way (a reader sees the old file or the new one).
pub fn write_atomic_with(
    path: &Path,
    contents: &[u8],
    new_file_mode: u32,
    durability: Durability,
) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let Some(name) = path.file_name() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} does not name a file", path.display()),
        ));
    };
    let dir = std::fs::File::open(dir)?;
    write_atomic_in(dir.as_fd(), name, contents, new_file_mode, durability)
}

/// [`write_atomic_with`] inside an open directory: the temp file is created
/// in `dir`, renamed to `name` in `dir` (`renameat`), and `dir` is fsynced,
/// so where the file lands is fixed by the descriptor, whatever happens to
/// the path that led to it meanwhile (see [`crate::beneath`]). `name` is one
/// file name, not a path. An existing regular file `name` keeps its mode; a
/// symlink `name` is replaced, not followed. `dir` must be opened for
/// reading (not `O_PATH`) when `durability` fsyncs it.
pub fn write_atomic_in(
    dir: BorrowedFd<'_>,
    name: &OsStr,
    contents: &[u8],
    new_file_mode: u32,
    durability: Durability,
) -> io::Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.as_bytes().contains(&b'/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a file name", name.to_string_lossy()),
        ));
    }
    let existing_mode = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => {
            Some(stat.st_mode & 0o7777)
        }
        _ => None,
    };
    let create_mode = if existing_mode.is_some() {
        PRIVATE_MODE
    } else {
        new_file_mode & 0o7777
    };
    let (temp_name, file) = create_temp(dir, create_mode)?;
    let temp = TempEntry {
        dir,
        name: Some(temp_name),
    };
    let mut file = std::fs::File::from(file);
    file.write_all(contents)?;
    if let Some(mode) = existing_mode {
        // fchmod on the open handle sets the exact bits (no umask).
        rustix::fs::fchmod(&file, Mode::from_raw_mode(mode))?;
    }
    if durability == Durability::PowerLoss {
        file.sync_all()?;
    }
    drop(file);
    temp.persist(name)?;
    if durability == Durability::PowerLoss {
        rustix::fs::fsync(dir)?;
    }
    Ok(())
}

/// Creates a new temp file in `dir` under an unpredictable name, with
/// `O_CREAT | O_EXCL | O_NOFOLLOW` so nothing planted there is opened;
/// a name already taken is tried again with another.
fn create_temp(dir: BorrowedFd<'_>, mode: u32) -> io::Result<(OsString, OwnedFd)> {
    use std::hash::{BuildHasher, Hasher};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut last = None;
    for _ in 0..TEMP_ATTEMPTS {
        // RandomState is seeded from the OS once per thread and advanced
        // per instance: with the counter and the clock, a name no other
        // process can guess in advance.
        let mut hasher = std::hash::RandomState::new().build_hasher();
        hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        hasher.write_u32(std::process::id());
        let name = OsString::from(format!(".nanohermes-{:016x}.tmp", hasher.finish()));
        match rustix::fs::openat(dir, name.as_os_str(), flags, Mode::from_raw_mode(mode)) {
            Ok(fd) => return Ok((name, fd)),
            Err(rustix::io::Errno::EXIST) => last = Some(rustix::io::Errno::EXIST),
            Err(e) => return Err(e.into()),
        }
    }
    Err(last.map_or_else(|| io::Error::other("no temp file name"), io::Error::from))
}

/// Names tried before giving up on a free temp file name.
const TEMP_ATTEMPTS: usize = 16;

/// A temp file in a directory, removed on drop unless persisted: the
/// cleanup on every error path of [`write_atomic_in`].
struct TempEntry<'a> {
    dir: BorrowedFd<'a>,
    name: Option<OsString>,
}

impl TempEntry<'_> {
    /// Renames the temp file to `name` in the same directory.
    fn persist(mut self, name: &OsStr) -> io::Result<()> {
        let temp = self.name.as_deref().unwrap_or_default();
        rustix::fs::renameat(self.dir, temp, self.dir, name)?;
        self.name = None;
        Ok(())
    }
}

impl Drop for TempEntry<'_> {
    fn drop(&mut self) {
        if let Some(name) = self.name.take() {
            let _ = rustix::fs::unlinkat(self.dir, name.as_os_str(), AtFlags::empty());
        }
    }
}

/// Starts writing `file`'s dirty pages back to the disk and returns at once
/// (`sync_file_range` with `SYNC_FILE_RANGE_WRITE`): no fsync, nothing
/// waited for, so an exit right after it costs nothing. The data leaves
/// the page cache now instead of after its 30 s; the file's metadata
/// follows with the file system's next journal commit. What the end of a
/// run does with its session file.
pub fn start_writeback(file: &std::fs::File) -> io::Result<()> {
    use std::os::fd::AsRawFd as _;
    sync_file_range_write(file.as_raw_fd())
}

/// `sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE)`; nix has no wrapper.
#[allow(unsafe_code)]
fn sync_file_range_write(fd: std::os::fd::RawFd) -> io::Result<()> {
    // SAFETY: the call reads no memory of ours; `fd` is borrowed from a
    // live `File` for the duration of the call, and an invalid one is an
    // EBADF error, not undefined behaviour.
    let rc = unsafe { libc::sync_file_range(fd, 0, 0, libc::SYNC_FILE_RANGE_WRITE) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// A file being made durable on a thread of its own ([`sync_in_background`]).
/// Dropping it does not wait: the fsyncs have been issued and finish
/// whether or not this process is still there to see them.
#[derive(Debug)]
pub struct Syncing(Option<std::thread::JoinHandle<io::Result<()>>>);

impl Syncing {
    /// Waits for the fsyncs; their outcome.
    pub fn wait(mut self) -> io::Result<()> {
        match self.0.take().map(std::thread::JoinHandle::join) {
            None => Ok(()),
            Some(Ok(outcome)) => outcome,
            Some(Err(_)) => Err(io::Error::other("the fsync thread panicked")),
        }
    }
}

/// Makes a file already in place (written with [`Durability::ProcessDeath`])
/// survive a power loss too: a thread of its own fsyncs the file, then its
/// directory; [`Syncing::wait`] waits for both. Not for an exit path: a
/// process cannot end while one of its threads is inside `fsync`, so
/// exiting waits for it anyway ([`start_writeback`] does not).
pub fn sync_in_background(path: &Path) -> Syncing {
    let path = path.to_path_buf();
    let sync = move || -> io::Result<()> {
        std::fs::File::open(&path)?.sync_all()?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        std::fs::File::open(dir)?.sync_all()
    };
    let outcome = std::thread::Builder::new()
        .name("nanohermes-fsync".into())
        .spawn(move || {
            let outcome = sync();
            if let Err(e) = &outcome {
                tracing::warn!("fsync failed: {e}");
            }
            outcome
        });
    match outcome {
        Ok(handle) => Syncing(Some(handle)),
        Err(e) => {
            tracing::warn!("cannot start the fsync thread: {e}");
            Syncing(None)
        }
    }
}

// The private writer: the one way a file only its user may read (a
// session, a task record, OAuth tokens) is written.

/// Writes `value` as JSON to `path` through [`write_atomic`],
/// mode 0600, in a directory created 0700 if missing: how task handles
/// and tokens (which hold what the model saw) are kept.
pub fn write_private_json<T: serde::Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    write_private(path, &bytes, Durability::PowerLoss)
}

/// Writes `bytes` to `path` through [`write_atomic_with`] at
/// `durability`, mode 0600, in a directory created 0700 if missing.
pub fn write_private(path: &Path, bytes: &[u8], durability: Durability) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
    }
    write_atomic_with(path, bytes, 0o600, durability)
}

/// What the `.gitignore` the agent writes into a directory it creates
/// under `.nanohermes` holds: everything, itself included.
pub const GITIGNORE: &str = "*\n";

/// Creates `dir` (mode 0700) with its missing parents. When the topmost
/// directory created is `.nanohermes` itself or lies inside one, it gets
/// a `.gitignore` holding `*`: sessions hold the whole conversation, tool
/// output included, and must not be committed by a `git add .`. An
/// existing `.nanohermes` (a project's committed config) is not given
/// one: its new subdirectory is. A `.gitignore` already there is kept.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if dir.as_os_str().is_empty() || dir.is_dir() {
        return Ok(());
    }
    let mut top = dir;
    while let Some(parent) = top
        .parent()
        .filter(|p| !p.as_os_str().is_empty() && !p.exists())
    {
        top = parent;
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    let agents = top
        .components()
        .any(|c| c.as_os_str() == std::ffi::OsStr::new(".nanohermes"));
    if agents {
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(top.join(".gitignore"));
        match created {
            Ok(mut file) => std::io::Write::write_all(&mut file, GITIGNORE.as_bytes())?,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    /// Names in `dir`, sorted.
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// The process umask, read from /proc (reading it with umask(2) would
    /// change it for the other test threads).
    fn umask() -> u32 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .unwrap();
        u32::from_str_radix(line.trim(), 8).unwrap()
    }

    #[test]
    fn a_background_sync_leaves_the_file_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        write_atomic_with(&path, b"one", DEFAULT_FILE_MODE, Durability::ProcessDeath).unwrap();
        sync_in_background(&path).wait().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one");
        assert!(
            sync_in_background(&dir.path().join("missing"))
                .wait()
                .is_err()
        );
    }

    #[test]
    fn creates_and_replaces_leaving_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        write_atomic(&path, b"one", DEFAULT_FILE_MODE).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"one");
        write_atomic(&path, b"two", DEFAULT_FILE_MODE).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(names(dir.path()), ["f.txt"]);
    }

    #[test]
    fn an_unsynced_write_is_the_same_replacement_with_the_same_modes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session.json");
        write_atomic_with(&path, b"one", 0o600, Durability::ProcessDeath).unwrap();
        assert_eq!(mode(&path), 0o600);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_atomic_with(&path, b"two", 0o600, Durability::ProcessDeath).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        assert_eq!(mode(&path), 0o640);
        assert_eq!(names(dir.path()), ["session.json"]);
    }

    #[test]
    fn a_new_file_gets_the_given_mode_under_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let public = dir.path().join("public");
        write_atomic(&public, b"x", DEFAULT_FILE_MODE).unwrap();
        assert_eq!(mode(&public), 0o644 & !umask());
        let private = dir.path().join("private");
        write_atomic(&private, b"x", 0o600).unwrap();
        assert_eq!(mode(&private), 0o600);
    }

    #[test]
    fn an_existing_file_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.sh");
        std::fs::write(&path, "old").unwrap();
        for kept in [0o755, 0o600, 0o640] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(kept)).unwrap();
            write_atomic(&path, b"new", 0o600).unwrap();
            assert_eq!(mode(&path), kept);
        }
        assert_eq!(std::fs::read(&path).unwrap(), b"new");
    }

    #[test]
    fn a_failed_rename_leaves_the_target_and_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        // rename(2) of a file over a non-empty directory fails after the
        // temp file was written.
        let target = dir.path().join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("inner"), "keep").unwrap();
        assert!(write_atomic(&target, b"x", DEFAULT_FILE_MODE).is_err());
        assert_eq!(names(dir.path()), ["target"]);
        assert_eq!(std::fs::read(target.join("inner")).unwrap(), b"keep");
    }

    #[test]
    fn a_missing_directory_is_an_error_not_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/dir/f");
        let err = write_atomic(&path, b"x", DEFAULT_FILE_MODE).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
        assert!(!dir.path().join("no").exists());
    }

    #[test]
    fn a_symlink_at_the_path_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("real");
        std::fs::write(&target, "real").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomic(&link, b"new", DEFAULT_FILE_MODE).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"real");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_file());
        assert_eq!(std::fs::read(&link).unwrap(), b"new");
    }
}
