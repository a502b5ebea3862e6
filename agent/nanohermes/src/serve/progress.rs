//! What a `run_task` run reports while it works: one standard
//! `notifications/progress` per step (when the caller sent a progress
//! token), the last step's line for `tasks/get`, and the session written at
//! every step boundary.

use std::sync::{Arc, Mutex};

use rmcp::Peer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RoleServer;
use serde_json::Value;
use tokio::sync::mpsc;

use nanohermes_core::events::RunEvents;
use nanohermes_core::interrupt::Interrupt;
use nanohermes_llm::ToolCall;
use nanohermes_session::Appender;

use super::store::sessions::PgSession;

/// Where a run's session is kept: a file, or the shared store.
pub enum SessionSink {
    /// `WORKSPACE/.nanohermes/sessions/ID.json`.
    File(Appender),
    /// PostgreSQL; a write that fails (the lease is lost, the store stayed
    /// down) interrupts the run at its next step boundary, since steps
    /// that cannot be kept must not be taken.
    Store(PgSession, Interrupt),
}

impl SessionSink {
    fn count(&mut self, usage: Option<nanohermes_llm::Usage>) {
        match self {
            SessionSink::File(file) => file.count(usage),
            SessionSink::Store(store, _) => store.count(usage),
        }
    }

    fn checkpoint(&mut self, history: &nanohermes_core::transcript::Transcript) {
        match self {
            SessionSink::File(file) => {
                let written = file.checkpoint(history, None);
                report(file, written);
            }
            SessionSink::Store(store, interrupt) => {
                if let Err(e) = store.checkpoint(history) {
                    tracing::warn!("cannot store session {}: {e}", store.id());
                    interrupt.request();
                }
            }
        }
    }
}

/// Longest argument summary in a step line.
const SUMMARY: usize = 60;

/// Where progress goes: the request that is waiting now (a 2026-07-28
/// retry after an approval is a new request with its own token).
#[derive(Clone, Default)]
pub struct ProgressTarget(Arc<Mutex<Option<Listener>>>);

/// A request that asked for progress: its peer and its token.
type Listener = (Peer<RoleServer>, ProgressToken);

impl ProgressTarget {
    /// Sends later progress to `token` on `peer` (`None`: to nobody).
    pub fn set(&self, target: Option<Listener>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = target;
    }

    fn get(&self) -> Option<Listener> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The `RunEvents` of a run served over MCP.
pub struct ServeUi {
    notes: mpsc::UnboundedSender<(f64, String)>,
    last_step: Arc<Mutex<String>>,
    session: Option<SessionSink>,
}

impl ServeUi {
    /// Reports to `target` (in order, from one forwarding task) and keeps
    /// `session`; `last_step` receives every step line.
    pub fn new(
        target: ProgressTarget,
        last_step: Arc<Mutex<String>>,
        session: Option<SessionSink>,
    ) -> ServeUi {
        let (notes, mut rx) = mpsc::unbounded_channel::<(f64, String)>();
        tokio::spawn(async move {
            while let Some((progress, message)) = rx.recv().await {
                if let Some((peer, token)) = target.get() {
                    let note =
                        ProgressNotificationParam::new(token, progress).with_message(message);
                    // A host that went away cannot be told; the run goes on.
                    let _ = peer.notify_progress(note).await;
                }
            }
        });
        ServeUi {
            notes,
            last_step,
            session,
        }
    }

    /// Writes the session with `history` and its final usage, made to
    /// survive a crash before the result is sent (a step's write only
    /// survives this process: no fsync). The history is given again for a
    /// run that reached no checkpoint (a prompt hook refused the task) or
    /// whose last write failed: the file is then written whole.
    pub fn finish(
        &mut self,
        history: &nanohermes_core::transcript::Transcript,
        usage: nanohermes_core::usage::UsageLedger,
    ) {
        match &mut self.session {
            Some(SessionSink::File(session)) => {
                session.set_usage(usage);
                let written = session
                    .checkpoint(history, None)
                    .and_then(|()| session.sync().wait());
                report(session, written);
            }
            Some(SessionSink::Store(session, _)) => {
                session.set_usage(usage);
                if let Err(e) = session.checkpoint(history) {
                    tracing::warn!("cannot store session {}: {e}", session.id());
                }
            }
            None => {}
        }
    }
}

impl RunEvents for ServeUi {
    fn text(&mut self, _delta: &str) {}

    fn tool_call(&mut self, _call: &ToolCall, _result: &str) {}

    fn notice(&mut self, line: &str) {
        tracing::info!("run_task: {line}");
    }

    fn step(&mut self, step: usize, calls: &[ToolCall]) {
        let line = step_line(step, calls);
        *self.last_step.lock().unwrap_or_else(|e| e.into_inner()) = line.clone();
        let _ = self.notes.send((step as f64, line));
    }

    fn usage(&mut self, usage: Option<nanohermes_llm::Usage>) {
        if let Some(session) = &mut self.session {
            session.count(usage);
        }
    }

    fn checkpoint(&mut self, messages: &nanohermes_core::transcript::Transcript) {
        if let Some(session) = &mut self.session {
            session.checkpoint(messages);
        }
    }
}

/// Logs a session write that failed (the run goes on).
fn report(session: &Appender, written: std::io::Result<()>) {
    if let Err(e) = written {
        tracing::warn!("cannot write session {}: {e}", session.path().display());
    }
}

/// `step 3: read_file src/lib.rs, run_command cargo test` — each call's
/// name and its first string argument, shortened.
pub fn step_line(step: usize, calls: &[ToolCall]) -> String {
    if calls.is_empty() {
        return format!("step {step}: answering");
    }
    let calls: Vec<String> = calls.iter().map(call_summary).collect();
    format!("step {step}: {}", calls.join(", "))
}

fn call_summary(call: &ToolCall) -> String {
    let argument = serde_json::from_str::<Value>(&call.arguments)
        .ok()
        .and_then(|v| {
            v.as_object()?
                .values()
                .find_map(|v| v.as_str().map(str::to_owned))
        });
    match argument {
        Some(argument) => {
            let line = argument.lines().next().unwrap_or_default();
            let mut short: String = line.chars().take(SUMMARY).collect();
            if short.len() < argument.len() {
                short.push('…');
            }
            format!("{} {short}", call.name)
        }
        None => call.name.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    #[test]
    fn a_step_line_names_each_call_and_its_first_string_argument() {
        assert_eq!(step_line(4, &[]), "step 4: answering");
        assert_eq!(
            step_line(
                3,
                &[
                    call("read_file", r#"{"path":"src/lib.rs","offset":3}"#),
                    call("todo_read", "{}"),
                    call(
                        "run_command",
                        &format!(r#"{{"command":"{}"}}"#, "x".repeat(100))
                    ),
                ]
            ),
            format!(
                "step 3: read_file src/lib.rs, todo_read, run_command {}…",
                "x".repeat(SUMMARY)
            )
        );
    }
}
