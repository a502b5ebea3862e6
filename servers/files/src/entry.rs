//! One directory entry the tools change, held as its parent directory's
//! descriptor and its name.
//!
//! The parent is opened beneath the workspace root's descriptor with no
//! symlink followed ([`mcp_tools::Workspace::open_parent`]), so it is the
//! directory the resolver checked; every change then happens inside it
//! (`write_atomic_in`, `symlinkat`, `unlinkat`), so a directory swapped for
//! a symlink meanwhile cannot send a write outside the root.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use mcp_tools::Workspace;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// An entry inside an opened directory.
pub(crate) struct Entry {
    dir: OwnedFd,
    name: OsString,
}

impl Entry {
    /// Opens the parent of `resolved` (a path the workspace resolved),
    /// creating missing parent directories when `create_parents`.
    pub fn open(ws: &Workspace, resolved: &Path, create_parents: bool) -> io::Result<Entry> {
        let (dir, name) = ws.open_parent(resolved, create_parents)?;
        Ok(Entry { dir, name })
    }

    /// What the entry is, without following a symlink; `None` when missing.
    pub fn kind(&self) -> Option<FileType> {
        rustix::fs::statat(&self.dir, self.name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
            .ok()
            .map(|stat| FileType::from_raw_mode(stat.st_mode))
    }

    /// Replaces the entry with a regular file holding `bytes`, atomically
    /// and durably; an existing file keeps its mode.
    pub fn write(&self, bytes: &[u8]) -> io::Result<()> {
        mcp_tools::write_atomic_in(
            self.dir.as_fd(),
            &self.name,
            bytes,
            mcp_tools::DEFAULT_FILE_MODE,
            mcp_tools::Durability::PowerLoss,
        )
    }

    /// Opens the entry for reading, refusing a symlink.
    pub fn open_read(&self) -> io::Result<std::fs::File> {
        rustix::fs::openat(
            &self.dir,
            self.name.as_os_str(),
            OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map(std::fs::File::from)
        .map_err(io::Error::from)
    }

    /// The bytes of the entry when it is a regular file.
    pub fn read_bytes(&self) -> io::Result<Vec<u8>> {
        let mut file = self.open_read()?;
        let mut bytes = Vec::new();
        io::Read::read_to_end(&mut file, &mut bytes)?;
        Ok(bytes)
    }

    /// The target of the entry when it is a symlink.
    pub fn read_link(&self) -> io::Result<PathBuf> {
        use std::os::unix::ffi::OsStringExt;
        let target = rustix::fs::readlinkat(&self.dir, self.name.as_os_str(), Vec::new())?;
        Ok(PathBuf::from(OsString::from_vec(target.into_bytes())))
    }

    /// Creates the entry as a symlink to `target` (stored, not followed).
    pub fn symlink(&self, target: &Path) -> io::Result<()> {
        rustix::fs::symlinkat(target, &self.dir, self.name.as_os_str()).map_err(io::Error::from)
    }

    /// Removes the entry (a link is removed, not its target); a missing
    /// entry is not an error.
    pub fn remove(&self) -> io::Result<()> {
        match rustix::fs::unlinkat(&self.dir, self.name.as_os_str(), AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
