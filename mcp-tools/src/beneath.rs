//! Opening a path beneath a directory descriptor, following no symlink on
//! the way: what makes a write land where it was checked, however the tree
//! changes meanwhile.
//!
//! [`crate::Workspace::resolve`] checks a path against the root by name; a
//! directory swapped for a symlink between that check and the write would
//! redirect a path-based write anywhere. So the writers open the checked
//! path again here, relative to a descriptor of the root, with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`: the kernel refuses any
//! step out of the root and any symlink (magic links included), so the
//! descriptor is the very directory that was checked, or an error. The
//! checked path is canonical (every symlink already followed by the
//! check), so a symlink met here was planted after it: refusing it loses
//! nothing. Where `openat2` is missing (`ENOSYS`: kernels before 5.6,
//! some seccomp filters; `EPERM` from older container profiles) the same
//! walk is done one component at a time with `openat(O_NOFOLLOW)`.
//!
//! The writer then works inside the opened directory (`*at` calls, and
//! [`crate::atomic::write_atomic_in`]'s `renameat`), so a later swap of any
//! directory above it changes nothing.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Component, Path};
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

/// Set once `openat2` answered `ENOSYS`: every later open walks.
static NO_OPENAT2: AtomicBool = AtomicBool::new(false);

/// How often an `openat2` that a concurrent rename interrupted (`EAGAIN`)
/// is retried before the walk takes over.
const AGAIN_RETRIES: usize = 8;

/// Opens `rel` beneath `dir` with `flags` (`O_CLOEXEC` is added), following
/// no symlink in any component, the last included: a symlink anywhere is an
/// `ELOOP` error (or `ENOTDIR` when a directory is asked for), `..` or an
/// absolute path an `InvalidInput` error. `mode` applies when `flags`
/// create a file. An empty `rel` opens `dir` itself again.
pub fn open_beneath(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
) -> io::Result<OwnedFd> {
    check_relative(rel)?;
    let rel = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let flags = flags | OFlags::CLOEXEC;
    if !NO_OPENAT2.load(Ordering::Relaxed) {
        let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS;
        for _ in 0..AGAIN_RETRIES {
            match rustix::fs::openat2(dir, rel, flags, mode, resolve) {
                Err(Errno::AGAIN) => continue,
                Err(Errno::NOSYS) => {
                    NO_OPENAT2.store(true, Ordering::Relaxed);
                    break;
                }
                // Older container seccomp profiles answer a syscall they do
                // not know with EPERM: the walk decides (and gives the real
                // EPERM or EACCES when there is one).
                Err(Errno::PERM) => break,
                other => return other.map_err(io::Error::from),
            }
        }
    }
    walk(dir, rel, flags, mode, false)
}

/// Opens the directory `rel` beneath `dir` for reading (so it can be
/// fsynced and written in with `*at` calls), creating the missing
/// directories on the way when `create` (mode `0o777` under the umask, as
/// `mkdir -p`), following no symlink.
pub fn open_dir_beneath(dir: BorrowedFd<'_>, rel: &Path, create: bool) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY;
    match open_beneath(dir, rel, flags, Mode::empty()) {
        Err(e) if create && e.kind() == io::ErrorKind::NotFound => {
            walk(dir, rel, flags | OFlags::CLOEXEC, Mode::empty(), true)
        }
        other => other,
    }
}

/// Refuses what cannot be beneath: an absolute path, `..`, a prefix.
fn check_relative(rel: &Path) -> io::Result<()> {
    let bad = rel
        .components()
        .find(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
    match bad {
        None => Ok(()),
        Some(_) => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is not a plain relative path (no `/` at the start, no `..`)",
                rel.display()
            ),
        )),
    }
}

/// The component-by-component walk: each directory on the way opened with
/// `O_PATH | O_DIRECTORY | O_NOFOLLOW` relative to the one before, the last
/// component with `flags | O_NOFOLLOW`. With `mkdir`, a missing directory
/// on the way (the last one included) is created first.
fn walk(
    dir: BorrowedFd<'_>,
    rel: &Path,
    flags: OFlags,
    mode: Mode,
    mkdir: bool,
) -> io::Result<OwnedFd> {
    let names: Vec<&std::ffi::OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let step = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let Some((last, parents)) = names.split_last() else {
        return rustix::fs::openat(dir, ".", flags, mode).map_err(io::Error::from);
    };
    let mut current: Option<OwnedFd> = None;
    for name in parents {
        let at = current.as_ref().map_or(dir, AsFd::as_fd);
        let next = open_or_make(at, name, step, Mode::empty(), mkdir)?;
        current = Some(next);
    }
    let at = current.as_ref().map_or(dir, AsFd::as_fd);
    open_or_make(at, last, flags | OFlags::NOFOLLOW, mode, mkdir)
}

/// `openat(at, name)`; when it is missing and `mkdir`, `mkdirat` first
/// (losing a race to another creator is fine: it is a directory either way,
/// and the open that follows still refuses a symlink).
fn open_or_make(
    at: BorrowedFd<'_>,
    name: &std::ffi::OsStr,
    flags: OFlags,
    mode: Mode,
    mkdir: bool,
) -> io::Result<OwnedFd> {
    match rustix::fs::openat(at, name, flags, mode) {
        Err(Errno::NOENT) if mkdir => {
            match rustix::fs::mkdirat(at, name, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(e.into()),
            }
            rustix::fs::openat(at, name, flags, mode).map_err(io::Error::from)
        }
        other => other.map_err(io::Error::from),
    }
}

/// Whether an error from this module means a symlink (or a step out of the
/// directory) was met where the checked path had none: the tree changed
/// under the writer.
pub fn is_swapped(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(code) if code == Errno::LOOP.raw_os_error() || code == Errno::XDEV.raw_os_error()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> (tempfile::TempDir, OwnedFd) {
        let dir = tempfile::tempdir().unwrap();
        let fd =
            rustix::fs::open(dir.path(), OFlags::PATH | OFlags::DIRECTORY, Mode::empty()).unwrap();
        (dir, fd)
    }

    /// Both ways (openat2 and the walk) refuse a symlink on the way and a
    /// step out, and open or create what is plainly beneath.
    #[test]
    fn the_open_and_the_walk_agree_on_symlinks_and_escapes() {
        let (dir, fd) = root();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::fs::write(dir.path().join("real/f"), "in").unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink("real", dir.path().join("alias")).unwrap();
        let read = OFlags::RDONLY;
        for walked in [false, true] {
            let open = |rel: &str| {
                if walked {
                    walk(fd.as_fd(), Path::new(rel), read, Mode::empty(), false)
                } else {
                    open_beneath(fd.as_fd(), Path::new(rel), read, Mode::empty())
                }
            };
            assert!(open("real/f").is_ok(), "walked={walked}");
            for rel in ["out", "alias/f", "out/x"] {
                let e = open(rel).unwrap_err();
                assert!(
                    is_swapped(&e) || e.raw_os_error() == Some(libc::ENOTDIR),
                    "{rel} walked={walked}: {e}"
                );
            }
        }
        assert_eq!(
            open_beneath(fd.as_fd(), Path::new("../x"), read, Mode::empty())
                .unwrap_err()
                .kind(),
            io::ErrorKind::InvalidInput
        );
        open_dir_beneath(fd.as_fd(), Path::new("new/a/b"), true).unwrap();
        assert!(dir.path().join("new/a/b").is_dir());
        assert!(open_dir_beneath(fd.as_fd(), Path::new("out/made"), true).is_err());
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
    }
}
