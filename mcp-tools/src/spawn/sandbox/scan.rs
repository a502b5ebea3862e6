//! Finding what decides what runs later, anywhere under the root: every
//! nested repository's `.git` (a directory, or a gitfile), every
//! `.nanohermes/`, every `hooks.json` and `.mcp.json`; and the directory
//! the repository's `core.hooksPath` names. [`super::protect`] makes them
//! read-only in the command's mount namespace.
//!
//! The walk is bounded ([`MAX_DIRS`]) and never enters a `.git` or
//! `.nanohermes` directory (protected whole), a symlink (a bind mount
//! would follow it elsewhere) or another filesystem. It runs in the
//! parent, before the fork: one `lstat` per directory, and a read of the
//! directories whose change time moved since the last walk ([`Cache`]).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The most directories one walk reads; past it the rest of the tree is
/// not searched, and the command's result says so.
pub(super) const MAX_DIRS: usize = 100_000;

/// The names protected wherever they are (`.git` is planned on its own:
/// a repository's directory, or a gitfile naming one).
const DIR_NAMES: &[&str] = &[super::PROTECTED_DIRS[1]];
const FILE_NAMES: &[&str] = &super::PROTECTED_FILES;

/// What one walk found below the root (the root's own `.git` and
/// `.nanohermes` excluded: the caller plans those).
#[derive(Debug, Default)]
pub(super) struct Found {
    /// Nested repositories' `.git`, directories or gitfiles.
    pub git: Vec<PathBuf>,
    /// `.nanohermes` directories, `hooks.json` and `.mcp.json` files.
    pub other: Vec<PathBuf>,
    /// Whether the walk stopped at [`MAX_DIRS`].
    pub truncated: bool,
}

/// What one directory held at its last read, valid while its change time
/// is the same: any entry created, removed or renamed in it, or a
/// `touch` of it, changes that (unlike the modification time, no one can
/// set it back).
#[derive(Debug, Clone)]
struct Listing {
    changed: (i64, i64),
    subdirs: Vec<PathBuf>,
    git: Vec<PathBuf>,
    other: Vec<PathBuf>,
}

/// The listings of the last walk, so the next one reads again only the
/// directories that changed (one `lstat` each for the rest). Shared by
/// the clones of a sandbox.
#[derive(Debug, Default)]
pub(super) struct Cache {
    dirs: HashMap<PathBuf, Listing>,
}

/// Walks `root` (see the module doc), reusing `cache` for directories
/// that did not change.
pub(super) fn walk(root: &Path, cache: &Mutex<Cache>) -> Found {
    let mut found = Found::default();
    let Ok(dev) = std::fs::symlink_metadata(root).map(|m| m.dev()) else {
        return found;
    };
    let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
    let mut seen = HashMap::with_capacity(cache.dirs.len());
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if seen.len() >= MAX_DIRS {
            found.truncated = true;
            break;
        }
        let Ok(meta) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if !meta.is_dir() || meta.dev() != dev {
            continue;
        }
        let changed = (meta.ctime(), meta.ctime_nsec());
        let listing = match cache.dirs.remove(&dir) {
            Some(listing) if listing.changed == changed => listing,
            _ => list(&dir, dir == root, changed),
        };
        stack.extend(listing.subdirs.iter().cloned());
        found.git.extend(listing.git.iter().cloned());
        found.other.extend(listing.other.iter().cloned());
        seen.insert(dir, listing);
    }
    cache.dirs = seen;
    found
}

/// Reads one directory (see the module doc for what is kept).
fn list(dir: &Path, at_root: bool, changed: (i64, i64)) -> Listing {
    let mut listing = Listing {
        changed,
        subdirs: Vec::new(),
        git: Vec::new(),
        other: Vec::new(),
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return listing;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            continue;
        }
        let name = entry.file_name();
        let name = name.to_str().unwrap_or("");
        let path = entry.path();
        if name == ".git" {
            if !at_root {
                listing.git.push(path);
            }
        } else if DIR_NAMES.contains(&name) && kind.is_dir() {
            if !at_root {
                listing.other.push(path);
            }
        } else if FILE_NAMES.contains(&name) && kind.is_file() {
            listing.other.push(path);
        } else if kind.is_dir() {
            listing.subdirs.push(path);
        }
    }
    listing
}

/// The directories `core.hooksPath` names for the repository at `root`
/// (a relative value is taken from the top of the work tree: `root`, or
/// the directory holding one of `git_dirs` named `.git`), read with `git
/// config`, which reads config files and runs nothing. Empty when git is
/// missing, the key unset, or git refuses the repository.
pub(super) fn hooks_paths(root: &Path, git_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let Some(output) = git_config_hooks_path(root) else {
        return Vec::new();
    };
    let value = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || value.is_empty() {
        return Vec::new();
    }
    let value = PathBuf::from(value);
    if value.is_absolute() {
        return vec![value];
    }
    let mut tops = vec![root.to_path_buf()];
    for dir in git_dirs {
        if dir.file_name() == Some(std::ffi::OsStr::new(".git"))
            && let Some(top) = dir.parent()
            && !tops.iter().any(|t| t == top)
        {
            tops.push(top.to_path_buf());
        }
    }
    tops.into_iter().map(|top| top.join(&value)).collect()
}

/// How long `git config` may take: it reads files, but a repository can
/// include a FIFO, which git would wait on forever.
const GIT_CONFIG_BOUND: Duration = Duration::from_secs(2);

/// `git config --get --path core.hooksPath` in `root`, in a process group
/// of its own that is killed past [`GIT_CONFIG_BOUND`]; `None` when git is
/// missing or was killed.
fn git_config_hooks_path(root: &Path) -> Option<std::process::Output> {
    use std::os::unix::process::CommandExt as _;
    let mut child = std::process::Command::new("git")
        .args(["config", "--get", "--path", "core.hooksPath"])
        .current_dir(root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", std::env::var_os("HOME").unwrap_or_default())
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + GIT_CONFIG_BOUND;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return child.wait_with_output().ok(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(2)),
            _ => break,
        }
    }
    let pgid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
    let _ = child.wait();
    tracing::warn!(
        "`git config` in {} did not answer within {GIT_CONFIG_BOUND:?} (a config include that blocks?); core.hooksPath is not protected for this command",
        root.display()
    );
    None
}
