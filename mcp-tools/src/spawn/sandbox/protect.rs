//! The paths a sandboxed command must not write even inside the root:
//! `.git/hooks`, `.git/config` (a planted hook or `core.hooksPath` runs
//! the next time anyone commits) and `.nanohermes` (the agent's own
//! project config and hooks). Planned in the parent; the child makes them
//! read-only bind mounts in its own mount namespace ([`Protect::enter`]).
//!
//! `.git` itself becomes a mount point, so it cannot be renamed or removed
//! to put a fresh one in its place. A missing `.nanohermes` or
//! `.git/hooks` is created empty first, so that it exists to be protected.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::stat::Mode;
use nix::sys::statvfs::{FsFlags, statvfs};

/// What the child does before Landlock, every string made in advance.
#[derive(Debug)]
pub(super) struct Protect {
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// Bound onto themselves, writable: only to become mount points.
    pins: Vec<CString>,
    /// Bound onto themselves, then remounted read-only with these flags
    /// kept (a user namespace may not drop `nosuid`, `nodev`, …).
    read_only: Vec<(CString, MsFlags)>,
    /// The command's directory, entered again once the mounts exist, so
    /// a cwd inside a protected path is on the read-only mount.
    cwd: Option<CString>,
}

/// Plans the protection for a command in `root` starting in `cwd`;
/// `git_dirs` are the repository's directories when they are not
/// `root/.git` (a root below the top of its repository, a worktree).
pub(super) fn plan(root: &Path, cwd: &Path, git_dirs: &[std::path::PathBuf]) -> Protect {
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    let mut protect = Protect {
        uid_map: format!("{uid} {uid} 1\n").into_bytes(),
        gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        pins: Vec::new(),
        read_only: Vec::new(),
        cwd: c_path(cwd),
    };
    let nanohermes = root.join(".nanohermes");
    if !nanohermes.exists() {
        let _ = std::fs::create_dir(&nanohermes);
    }
    protect.add_read_only(&nanohermes);
    let git = root.join(".git");
    match std::fs::symlink_metadata(&git) {
        Ok(meta) if meta.is_dir() => protect.add_git_dir(&git),
        // A worktree's or submodule's `.git` file names its git directory.
        Ok(meta) if meta.is_file() => protect.add_read_only(&git),
        _ => {}
    }
    for dir in git_dirs.iter().filter(|d| **d != git) {
        if std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
            protect.add_git_dir(dir);
        }
    }
    protect
}

impl Protect {
    /// A git directory: pinned, its hooks (made if missing) and config
    /// read-only.
    fn add_git_dir(&mut self, git: &Path) {
        if let Some(path) = c_path(git) {
            self.pins.push(path);
        }
        let hooks = git.join("hooks");
        if !hooks.exists() {
            let _ = std::fs::create_dir(&hooks);
        }
        self.add_read_only(&hooks);
        self.add_read_only(&git.join("config"));
    }

    /// Adds `path` when it exists and is not a symlink (a bind mount
    /// would follow it somewhere else).
    fn add_read_only(&mut self, path: &Path) {
        let is_real = std::fs::symlink_metadata(path).is_ok_and(|m| !m.file_type().is_symlink());
        if !is_real {
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

    /// In the child, after fork: a new user and mount namespace (this
    /// process keeps its uid and gid), then the bind mounts. Only system
    /// calls on memory made before the fork: async-signal-safe.
    pub(super) fn enter(&self) -> io::Result<()> {
        enter_namespaces(&self.uid_map, &self.gid_map)?;
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

/// `unshare(CLONE_NEWUSER | CLONE_NEWNS)`, the id maps, and every mount
/// made private, so nothing done here reaches the parent's namespace.
pub(super) fn enter_namespaces(uid_map: &[u8], gid_map: &[u8]) -> io::Result<()> {
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS).map_err(errno)?;
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
