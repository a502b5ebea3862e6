//! Finding what decides what runs later, anywhere under the root: every
//! nested repository's `.git` (a directory, or a gitfile), every
//! `.nanohermes/`, every `hooks.json` and `.mcp.json`; and the directory
//! the repository's `core.hooksPath` names. [`super::protect`] makes them
//! read-only in the command's mount namespace.
//!
//! The walk is bounded ([`MAX_DIRS`]) and never enters a `.git` or
//! `.nanohermes` directory (protected whole), a symlink (a bind mount
//! would follow it elsewhere) or another filesystem. It costs one
//! `getdents` per directory and one `lstat` per subdirectory, in the
//! parent, before the fork.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The most directories one walk reads; past it the rest of the tree is
/// not searched, and the command's result says so.
pub(super) const MAX_DIRS: usize = 100_000;

/// The names protected wherever they are.
const DIR_NAMES: &[&str] = &[".nanohermes"];
const FILE_NAMES: &[&str] = &["hooks.json", ".mcp.json"];

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

/// Walks `root` (see the module doc).
pub(super) fn walk(root: &Path) -> Found {
    let mut found = Found::default();
    let Ok(dev) = std::fs::symlink_metadata(root).map(|m| m.dev()) else {
        return found;
    };
    let mut stack = vec![root.to_path_buf()];
    let mut visited = 0;
    while let Some(dir) = stack.pop() {
        visited += 1;
        if visited > MAX_DIRS {
            found.truncated = true;
            break;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let at_root = dir == root;
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
                    found.git.push(path);
                }
                continue;
            }
            if DIR_NAMES.contains(&name) && kind.is_dir() {
                if !at_root {
                    found.other.push(path);
                }
                continue;
            }
            if FILE_NAMES.contains(&name) && kind.is_file() {
                found.other.push(path);
                continue;
            }
            if kind.is_dir() && entry.metadata().is_ok_and(|m| m.dev() == dev) {
                stack.push(path);
            }
        }
    }
    found
}

/// The directories `core.hooksPath` names for the repository at `root`
/// (a relative value is taken from the top of the work tree: `root`, or
/// the directory holding one of `git_dirs` named `.git`), read with `git
/// config`, which reads config files and runs nothing. Empty when git is
/// missing, the key unset, or git refuses the repository.
pub(super) fn hooks_paths(root: &Path, git_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let output = std::process::Command::new("git")
        .args(["config", "--get", "--path", "core.hooksPath"])
        .current_dir(root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", std::env::var_os("HOME").unwrap_or_default())
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let Ok(output) = output else {
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
