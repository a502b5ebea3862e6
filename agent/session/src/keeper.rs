//! The `RunEvents` decorator that keeps `run`'s and the interactive mode's
//! session.

use super::{Appender, Opened};
use nanohermes_core::events::RunEvents;

/// A `RunEvents` that also keeps the session: every checkpoint writes the
/// history (system message left out: it is rebuilt on load), the usage
/// so far and the surfaced tools, through an [`Appender`].
pub struct Keeper<U> {
    inner: U,
    session: Appender,
    surfaced: Option<SurfacedNames>,
}

/// Reads the names of the tools surfaced so far (the hub's deferred
/// tools the model found), at each checkpoint.
pub type SurfacedNames = Box<dyn Fn() -> Vec<String> + Send + Sync>;

impl<U: RunEvents> Keeper<U> {
    /// Wraps `inner`, writing `opened`'s file.
    pub fn new(inner: U, opened: &Opened) -> Keeper<U> {
        Keeper {
            inner,
            session: Appender::new(&opened.path, &opened.file).holding(opened.take_lock()),
            surfaced: None,
        }
    }

    /// Also writes the tools `surfaced` names at each checkpoint.
    pub fn keep_surfaced(&mut self, surfaced: SurfacedNames) {
        self.surfaced = Some(surfaced);
    }

    /// The wrapped `RunEvents`.
    pub fn inner(&mut self) -> &mut U {
        &mut self.inner
    }

    /// The session's id.
    pub fn id(&self) -> &str {
        self.session.id()
    }

    /// Says when a write failed.
    fn report(&mut self, written: std::io::Result<()>) {
        if let Err(e) = written {
            self.inner.notice(&format!(
                "cannot write session {}: {e}",
                self.session.path().display()
            ));
        }
    }
}

impl<U: RunEvents> RunEvents for Keeper<U> {
    fn text(&mut self, delta: &str) {
        self.inner.text(delta);
    }

    fn thinking(&mut self, delta: &str) {
        self.inner.thinking(delta);
    }

    fn tool_call(&mut self, call: &nanohermes_llm::ToolCall, result: &str) {
        self.inner.tool_call(call, result);
    }

    fn notice(&mut self, line: &str) {
        self.inner.notice(line);
    }

    fn turn_end(&mut self) {
        self.inner.turn_end();
    }

    fn usage(&mut self, usage: Option<nanohermes_llm::Usage>) {
        self.session.count(usage);
        self.inner.usage(usage);
    }

    fn step(&mut self, step: usize, calls: &[nanohermes_llm::ToolCall]) {
        self.inner.step(step, calls);
    }

    fn checkpoint(&mut self, messages: &nanohermes_core::transcript::Transcript) {
        let surfaced = self.surfaced.as_ref().map(|names| names());
        let written = self.session.checkpoint(messages, surfaced);
        self.report(written);
        self.inner.checkpoint(messages);
    }

    /// The run's end: what is left (usage) is written and the file's
    /// writeback started, without an fsync: a process cannot exit while
    /// one of its threads is inside `fsync`, so an fsync here, even on a
    /// thread of its own, would hold the exit for the disk.
    fn settled(&mut self) {
        let written = self.session.flush();
        self.report(written);
        if let Err(e) = self.session.start_writeback() {
            tracing::debug!("cannot start the session's writeback: {e}");
        }
        self.inner.settled();
    }
}
