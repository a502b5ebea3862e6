//! What a sandboxed child enters before Landlock: a user namespace (its
//! uid and gid mapped to themselves) owning a mount namespace, a PID
//! namespace (`contain.rs`) and, with the network off, a network namespace
//! (nothing but a loopback that is down: no TCP, UDP, DNS or raw socket
//! reaches anything); and in `workspace-write`, the read-only bind mounts
//! that protect what decides what runs later (planned here, in the parent):
//! - the workspace's whole git directory (`root/.git` and the directories
//!   [`super::Sandbox::with_git_dirs`] names), or for a commit
//!   ([`GitAccess::Commit`]) only what git never writes for one: hooks,
//!   config, `commondir`, `gitdir`, `config.worktree`, `info/`, `modules/`;
//! - the directories `core.hooksPath` names (made if missing);
//! - every nested repository's `.git`, every `.nanohermes/`, `hooks.json`
//!   and `.mcp.json` found under the root (`scan.rs`), each directory on
//!   the way to one pinned (bound onto itself), so that renaming a parent
//!   away to put a fresh copy in its place fails (`EBUSY`).
//!
//! A git directory is a mount point either way, so it cannot be renamed
//! or removed. A missing `.nanohermes` (with a `.gitignore` of `*`, so the
//! agent's files never land in the user's repository) or `.git/hooks` is
//! made empty first, so that it exists to be protected.

use std::collections::BTreeSet;
use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::stat::Mode;
use nix::sys::statvfs::{FsFlags, statvfs};

use super::scan;

/// How a commit may use the git directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum GitAccess {
    /// Read-only, whole: a command must not write git's state at all.
    #[default]
    ReadOnly,
    /// Writable as a commit needs (objects, refs, logs, index, `HEAD`),
    /// with hooks, config and what redirects git read-only.
    Commit,
}

/// The parts of a git directory that decide what git runs or where it
/// looks, read-only even for a commit.
const GIT_FIXED: &[&str] = &["config", "commondir", "gitdir", "config.worktree"];

/// What the child does before Landlock, every string made in advance.
#[derive(Debug)]
pub(super) struct Protect {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// The namespaces to unshare: user and mount, PID, and network when off.
    flags: CloneFlags,
    /// Bound onto themselves, writable: only to become mount points;
    /// outer ones first.
    pins: Vec<CString>,
    /// Bound onto themselves, then remounted read-only with these flags
    /// kept (a user namespace may not drop `nosuid`, `nodev`, …).
    read_only: Vec<(CString, MsFlags)>,
    /// The command's directory, entered again once the mounts exist, so
    /// a cwd inside a protected path is on the read-only mount.
    cwd: Option<CString>,
}

/// Every namespace a sandboxed command enters; without `network`, a
/// network namespace too.
pub(super) fn flags(network: bool) -> CloneFlags {
    let mut flags = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID;
    if !network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    flags
}

/// The namespaces of a command starting in `cwd`, no mount yet.
pub(super) fn isolate(cwd: &Path, network: bool) -> Protect {
    let (uid_map, gid_map) = id_maps();
    Protect {
        uid_map,
        gid_map,
        flags: flags(network),
        pins: Vec::new(),
        read_only: Vec::new(),
        cwd: c_path(cwd),
    }
}

/// This process's uid and gid, each mapped to itself.
pub(super) fn id_maps() -> (Vec<u8>, Vec<u8>) {
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    (
        format!("{uid} {uid} 1\n").into_bytes(),
        format!("{gid} {gid} 1\n").into_bytes(),
    )
}

/// The mounts planned so far, for [`Protect::workspace`].
#[derive(Default)]
struct Plan {
    pins: BTreeSet<PathBuf>,
    read_only: Vec<PathBuf>,
}

impl Plan {
    /// A git directory: read-only whole, or for a commit pinned with the
    /// parts git never writes for one read-only (`hooks/`, `info/`,
    /// `modules/` made if missing; a missing `commondir`, `gitdir` or
    /// `config.worktree` cannot be: a commit creates files beside them).
    fn git_dir(&mut self, git: &Path, access: GitAccess) {
        if access == GitAccess::ReadOnly {
            self.read_only.push(git.to_path_buf());
            return;
        }
        self.pins.insert(git.to_path_buf());
        // Made if missing, as `git init` makes them, so they can be
        // protected: a file a commit's hook creates there would decide
        // what git runs next.
        for name in ["hooks", "info", "modules"] {
            let dir = git.join(name);
            if !dir.exists() {
                let _ = std::fs::create_dir(&dir);
            }
            self.read_only.push(dir);
        }
        self.read_only
            .extend(GIT_FIXED.iter().map(|name| git.join(name)));
    }
}

/// Whether `path` exists and is not a symlink (a bind mount would follow
/// it somewhere else).
fn is_real(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| !m.file_type().is_symlink())
}

impl Protect {
    /// Plans the protection of the workspace at `root` (see the module
    /// doc); `git_dirs` are the repository's directories when they are
    /// not `root/.git` (a root below the top of its repository, a
    /// worktree). Returns whether the walk stopped before the end of the
    /// tree ([`scan::MAX_DIRS`]).
    pub(super) fn workspace(
        &mut self,
        root: &Path,
        git_dirs: &[PathBuf],
        git: GitAccess,
        cache: &std::sync::Mutex<scan::Cache>,
    ) -> bool {
        let mut plan = Plan::default();
        let nanohermes = root.join(".nanohermes");
        if !nanohermes.exists() && std::fs::create_dir(&nanohermes).is_ok() {
            let _ = std::fs::write(nanohermes.join(".gitignore"), "*\n");
        }
        plan.read_only.push(nanohermes);
        let dot_git = root.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(meta) if meta.is_dir() => plan.git_dir(&dot_git, git),
            // A worktree's or submodule's `.git` file names its git directory.
            Ok(meta) if meta.is_file() => plan.read_only.push(dot_git.clone()),
            _ => {}
        }
        for dir in git_dirs.iter().filter(|d| **d != dot_git) {
            if std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
                plan.git_dir(dir, git);
            }
        }
        for hooks in scan::hooks_paths(root, git_dirs) {
            if !hooks.exists() {
                let _ = std::fs::create_dir_all(&hooks);
            }
            plan.read_only.push(hooks);
        }
        let found = scan::walk(root, cache);
        for path in found.git.into_iter().chain(found.other) {
            let mut dir = path.parent();
            while let Some(d) = dir.filter(|d| *d != root && d.starts_with(root)) {
                plan.pins.insert(d.to_path_buf());
                dir = d.parent();
            }
            plan.read_only.push(path);
        }
        let mut pins: Vec<PathBuf> = plan.pins.into_iter().collect();
        pins.sort_by_key(|p| p.components().count());
        self.pins
            .extend(pins.iter().filter(|p| is_real(p)).filter_map(|p| c_path(p)));
        for path in plan.read_only {
            self.add_read_only(&path);
        }
        found.truncated
    }

    /// Adds `path` when it exists and is not a symlink (a bind mount
    /// would follow it somewhere else).
    fn add_read_only(&mut self, path: &Path) {
        if !is_real(path) {
            return;
        }
        let (Some(c), Ok(stat)) = (c_path(path), statvfs(path)) else {
            return;
        };
        let mut flags = MsFlags::empty();
        for (fs, ms) in [
            (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
            (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
            (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
            (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
            (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
            (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
        ] {
            if stat.flags().contains(fs) {
                flags |= ms;
            }
        }
        self.read_only.push((c, flags));
    }

    /// Whether the command runs as pid 1 of a PID namespace of its own
    /// (`contain.rs`).
    pub(super) fn contains(&self) -> bool {
        self.flags.contains(CloneFlags::CLONE_NEWPID)
    }

    /// In the child, after fork: a new user and mount namespace (this
    /// process keeps its uid and gid), then the bind mounts. Only system
    /// calls on memory made before the fork: async-signal-safe. `tag`
    /// marks a failure of the namespaces themselves (not of a mount).
    pub(super) fn enter(&self, tag: fn(io::Error) -> io::Error) -> io::Result<()> {
        enter_namespaces(&self.uid_map, &self.gid_map, self.flags).map_err(tag)?;
        for path in &self.pins {
            bind(path)?;
        }
        for (path, flags) in &self.read_only {
            bind(path)?;
            mount(
                None::<&std::ffi::CStr>,
                path.as_c_str(),
                None::<&std::ffi::CStr>,
                MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | *flags,
                None::<&std::ffi::CStr>,
            )
            .map_err(errno)?;
        }
        if let Some(cwd) = &self.cwd {
            nix::unistd::chdir(cwd.as_c_str()).map_err(errno)?;
        }
        Ok(())
    }
}

/// `unshare(flags)` (a user and a mount namespace at least), the id maps,
/// and every mount made private, so nothing done here reaches the
/// parent's namespace.
pub(super) fn enter_namespaces(
    uid_map: &[u8],
    gid_map: &[u8],
    flags: CloneFlags,
) -> io::Result<()> {
    unshare(flags).map_err(errno)?;
    write_proc(c"/proc/self/setgroups", b"deny")?;
    write_proc(c"/proc/self/uid_map", uid_map)?;
    write_proc(c"/proc/self/gid_map", gid_map)?;
    mount(
        None::<&std::ffi::CStr>,
        c"/",
        None::<&std::ffi::CStr>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&std::ffi::CStr>,
    )
    .map_err(errno)
}

fn bind(path: &CString) -> io::Result<()> {
    mount(
        Some(path.as_c_str()),
        path.as_c_str(),
        None::<&std::ffi::CStr>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&std::ffi::CStr>,
    )
    .map_err(errno)
}

fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) -> io::Result<()> {
    let fd = nix::fcntl::open(path, nix::fcntl::OFlag::O_WRONLY, Mode::empty()).map_err(errno)?;
    nix::unistd::write(&fd, bytes).map_err(errno)?;
    Ok(())
}

fn errno(e: nix::errno::Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

fn c_path(path: &Path) -> Option<CString> {
    CString::new(path.as_os_str().as_bytes()).ok()
}
