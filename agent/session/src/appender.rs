//! Keeping a session file at every step boundary in O(step), not O(history).
//!
//! The [`Appender`] remembers the serial numbers of the messages it wrote
//! ([`Transcript::serials`]). While they are still the start of the
//! history, a checkpoint appends only what is new (plus usage and
//! surfaced tools when they changed, plus the end marker) in one `write`
//! to a file held open with `O_APPEND`. When they are not (compaction,
//! `/undo`, `/reset`), and at the first write of a process (a resumed
//! file may be version 1, or end in a cut write, and its messages have no
//! serials yet), the whole file is written again atomically and reopened.
//! No write is fsynced: the page cache outlives a killed process; the end
//! of a run starts the file's writeback ([`Appender::start_writeback`]),
//! serve's last write waits for an fsync ([`Appender::sync`]).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::format::{self, Header};
use super::{SessionFile, SessionLock};
use mcp_tools::atomic::create_private_dir;
use nanohermes_core::transcript::Transcript;
use nanohermes_core::usage::UsageLedger;

/// One session file, kept up to date checkpoint by checkpoint.
#[derive(Debug)]
pub struct Appender {
    path: PathBuf,
    header: Header,
    usage: UsageLedger,
    surfaced: Vec<String>,
    /// The file, opened for appending and locked; `None`: the next write
    /// rewrites it.
    file: Option<super::lock::Locked>,
    /// The serial numbers of the messages in the file, in order.
    written: Vec<u64>,
    /// The usage and surfaced tools the file holds.
    written_usage: UsageLedger,
    written_surfaced: Vec<String>,
    /// The lock on the file as it was before the first write.
    lock: SessionLock,
}

impl Appender {
    /// Keeps `session` (its id, workspace, usage so far and surfaced
    /// tools; its messages come back in each checkpoint's history) at
    /// `path`. Nothing is written before the first checkpoint.
    pub fn new(path: &Path, session: &SessionFile) -> Appender {
        Appender {
            path: path.to_owned(),
            header: Header {
                version: format::VERSION,
                id: session.id.clone(),
                workspace: session.workspace.clone(),
            },
            usage: session.usage.into(),
            surfaced: session.surfaced.clone(),
            file: None,
            written: Vec::new(),
            written_usage: session.usage.into(),
            written_surfaced: session.surfaced.clone(),
            lock: SessionLock::default(),
        }
    }

    /// Keeps holding `lock` (taken when the session was opened) until the
    /// first write puts a new, locked file in its place; a file that did
    /// not exist then is created without replacing one.
    pub fn holding(mut self, lock: SessionLock) -> Appender {
        self.lock = lock;
        self
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// The file written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The usage so far (written at the next checkpoint or [`Self::flush`]).
    pub fn usage(&self) -> UsageLedger {
        self.usage
    }

    /// Counts one model request and what it used.
    pub fn count(&mut self, usage: Option<nanohermes_llm::Usage>) {
        self.usage.record(usage);
    }

    /// Replaces the usage totals.
    pub fn set_usage(&mut self, usage: UsageLedger) {
        self.usage = usage;
    }

    /// A step boundary: writes `history` (system message first, which is
    /// left out) and, when given, the tools `surfaced` now. Appends when
    /// the file holds the start of `history`, rewrites it otherwise; a
    /// checkpoint that changes nothing writes nothing.
    pub fn checkpoint(
        &mut self,
        history: &Transcript,
        surfaced: Option<Vec<String>>,
    ) -> std::io::Result<()> {
        if let Some(surfaced) = surfaced {
            self.surfaced = surfaced;
        }
        let serials = history.serials().get(1..).unwrap_or_default();
        let encoded = history.encoded().get(1..).unwrap_or_default();
        if self.file.is_none() || !serials.starts_with(&self.written) {
            return self.rewrite(history);
        }
        let new = self.written.len()..serials.len();
        let mut out = Vec::new();
        for raw in &encoded[new.clone()] {
            format::message(&mut out, raw);
        }
        self.append(out, &serials[new])
    }

    /// Writes usage and surfaced tools that changed since the last write
    /// (the end of a run, after its last checkpoint). Needs an earlier
    /// checkpoint's file: without one there is nothing to add to.
    pub fn flush(&mut self) -> std::io::Result<()> {
        if self.file.is_none() {
            return Ok(());
        }
        self.append(Vec::new(), &[])
    }

    /// Starts writing the file back to the disk and returns at once (the
    /// end of a run: [`mcp_tools::start_writeback`], no fsync, so the exit
    /// waits for nothing). Nothing to do before the first checkpoint.
    pub fn start_writeback(&self) -> std::io::Result<()> {
        match &self.file {
            Some(file) => mcp_tools::start_writeback(file),
            None => Ok(()),
        }
    }

    /// Makes the file survive a power loss too: fsyncs it and its
    /// directory on a thread of their own, whose handle is returned (drop
    /// it not to wait).
    pub fn sync(&self) -> mcp_tools::Syncing {
        mcp_tools::sync_in_background(&self.path)
    }

    /// Appends `out` (the new messages, whose serials are `serials`), the
    /// records that changed and the end marker, in one write.
    fn append(&mut self, mut out: Vec<u8>, serials: &[u64]) -> std::io::Result<()> {
        if self.usage != self.written_usage {
            format::usage(&mut out, &self.usage.into());
        }
        if self.surfaced != self.written_surfaced {
            format::surfaced(&mut out, &self.surfaced);
        }
        if out.is_empty() {
            return Ok(());
        }
        format::end(&mut out, self.written.len() + serials.len());
        let Some(file) = &mut self.file else {
            return Ok(());
        };
        if let Err(e) = file.write_all(&out) {
            // Part of it may be there, after the last end marker: the next
            // checkpoint writes the whole file again.
            self.file = None;
            return Err(e);
        }
        self.written.extend_from_slice(serials);
        self.written_usage = self.usage;
        self.written_surfaced.clone_from(&self.surfaced);
        Ok(())
    }

    /// Writes the whole file atomically and opens it for appending.
    fn rewrite(&mut self, history: &Transcript) -> std::io::Result<()> {
        self.file = None;
        let encoded = history.encoded().get(1..).unwrap_or_default();
        let mut out = Vec::new();
        format::header(&mut out, &self.header);
        for raw in encoded {
            format::message(&mut out, raw);
        }
        format::usage(&mut out, &self.usage.into());
        if !self.surfaced.is_empty() {
            format::surfaced(&mut out, &self.surfaced);
        }
        format::end(&mut out, encoded.len());
        self.file = Some(self.replace(&out)?);
        self.lock.release();
        self.written = history.serials().get(1..).unwrap_or_default().to_vec();
        self.written_usage = self.usage;
        self.written_surfaced.clone_from(&self.surfaced);
        Ok(())
    }
}

impl Appender {
    /// Puts a new file holding `bytes` under the name, atomically, and
    /// returns it open for appending. The new file is locked before it
    /// takes the name, so the name is never unlocked while a run holds
    /// the session ([`super::lock`]). No fsync: the page cache outlives a
    /// killed process.
    fn replace(&self, bytes: &[u8]) -> std::io::Result<super::lock::Locked> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let dir = match self.path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        create_private_dir(dir)?;
        let name = self.path.file_name().unwrap_or_default().to_string_lossy();
        let temp = dir.join(format!(".{name}.{}.tmp", super::new_id()));
        let file = std::fs::OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&temp)?;
        let mut file = match super::lock::lock(file) {
            Ok(file) => file,
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                return Err(e.into());
            }
        };
        let placed = file
            .write_all(bytes)
            .and_then(|()| {
                if self.lock.is_new() {
                    // Created, never replaced: another run that started
                    // on the same new name got there first.
                    match std::fs::hard_link(&temp, &self.path) {
                        Ok(()) => std::fs::remove_file(&temp),
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                            Err(std::io::Error::new(
                                e.kind(),
                                "another nanohermes run created this session file meanwhile; this run's turns are not written to it: start a new session",
                            ))
                        }
                        // A file system without hard links: the name is
                        // checked, then taken (a narrow race, there only).
                        Err(_) if !self.path.exists() => std::fs::rename(&temp, &self.path),
                        Err(e) => Err(e),
                    }
                } else {
                    std::fs::rename(&temp, &self.path)
                }
            });
        if let Err(e) = placed {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
        Ok(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn history(n: usize) -> Transcript {
        let mut t = Transcript::new([json!({"role": "system", "content": "s"})]);
        t.extend((0..n).map(|i| json!({"role": "user", "content": format!("m{i}")})));
        t
    }

    fn read(path: &Path) -> SessionFile {
        format::decode(&std::fs::read(path).unwrap()).unwrap()
    }

    #[test]
    fn two_runs_starting_one_new_session_file_cannot_both_write_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let (first_lock, _) = SessionLock::take(&path).unwrap();
        let (second_lock, _) = SessionLock::take(&path).unwrap();
        let mut first =
            Appender::new(&path, &SessionFile::new("s-1", dir.path())).holding(first_lock);
        let mut second =
            Appender::new(&path, &SessionFile::new("s-2", dir.path())).holding(second_lock);
        first.checkpoint(&history(1), None).unwrap();
        let err = second.checkpoint(&history(2), None).unwrap_err();
        assert!(
            err.to_string()
                .contains("created this session file meanwhile"),
            "{err}"
        );
        assert_eq!(read(&path).id, "s-1");
        // The first run holds the file it wrote: a third is refused.
        let err = SessionLock::take(&path).unwrap_err();
        assert!(err.contains("in use by another nanohermes run"), "{err}");
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn new_messages_are_appended_and_a_changed_history_rewritten() {
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions/s.json");
        let fresh = SessionFile::new("s-1", dir.path());
        let mut appender = Appender::new(&path, &fresh);
        let mut t = history(1);
        appender.checkpoint(&t, None).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let dir_mode = std::fs::metadata(path.parent().unwrap()).unwrap().mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        let inode = meta.ino();

        let before = std::fs::read(&path).unwrap();
        t.push(json!({"role": "assistant", "content": "a"}));
        appender.count(None);
        appender
            .checkpoint(&t, Some(vec!["fx__echo".into()]))
            .unwrap();
        let after = std::fs::read(&path).unwrap();
        assert!(after.starts_with(&before), "appended");
        assert_eq!(std::fs::metadata(&path).unwrap().ino(), inode);
        let tail = String::from_utf8(after[before.len()..].to_vec()).unwrap();
        assert_eq!(
            tail,
            "{\"message\":{\"content\":\"a\",\"role\":\"assistant\"}}\n\
             {\"usage\":{\"requests\":1,\"requests_without_usage\":1,\"prompt_tokens\":0,\"completion_tokens\":0}}\n\
             {\"surfaced\":[\"fx__echo\"]}\n{\"end\":2}\n",
            "a request without usage is unknown on disk, not zero tokens"
        );
        // Nothing changed: nothing written.
        appender
            .checkpoint(&t, Some(vec!["fx__echo".into()]))
            .unwrap();
        appender.flush().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), after);

        // An edit inside the written part: the file is written again.
        t.edit(1, |m| m["content"] = json!("changed"));
        appender.checkpoint(&t, None).unwrap();
        assert_ne!(std::fs::metadata(&path).unwrap().ino(), inode);
        let file = read(&path);
        assert_eq!(file.messages, t[1..].to_vec());
        assert_eq!((file.usage.requests, file.surfaced.len()), (1, 1));

        // Usage alone after the last checkpoint: flushed with an end marker.
        appender.count(None);
        appender.flush().unwrap();
        appender.start_writeback().unwrap();
        assert_eq!(read(&path).usage.requests, 2);
        assert_eq!(read(&path).messages.len(), 2);
    }
}
