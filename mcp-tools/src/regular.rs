//! Opening a file that must be a regular file, without ever waiting on it:
//! the one way the agent reads a file a repository may have planted
//! (project config, guidance, skills). A FIFO, socket or device named like
//! `AGENTS.md` would block a plain `open` or `read` forever, or read a
//! device's endless stream.

use std::fs::{File, Metadata};
use std::io;
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::Path;

/// Opens `path` for reading with `O_NONBLOCK | O_NOCTTY` (a FIFO opens at
/// once instead of waiting for a writer) and checks on the open handle that
/// it is a regular file; the error says what it is instead. Returns the
/// file and its metadata, so a caller can compare the inode with what it
/// checked before opening.
pub fn open_regular(path: &Path) -> io::Result<(File, Metadata)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other(format!(
            "it is not a regular file but a {}",
            kind(&meta)
        )));
    }
    Ok((file, meta))
}

/// What a file that is not a regular file is, for messages.
pub fn kind(meta: &Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_file() {
        "regular file"
    } else if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_char_device() || t.is_block_device() {
        "device"
    } else {
        "special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_and_a_device_are_refused_at_once_and_a_file_opens() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("AGENTS.md");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let e = open_regular(&fifo).unwrap_err();
        assert_eq!(e.to_string(), "it is not a regular file but a FIFO");
        let e = open_regular(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(e.to_string(), "it is not a regular file but a device");
        let file = dir.path().join("ok.md");
        std::fs::write(&file, "hi").unwrap();
        assert_eq!(open_regular(&file).unwrap().1.len(), 2);
    }
}
