//! The `RunEvents` of a prompt in an editor: every event becomes a
//! `session/update` notification, and the calls of the current step are
//! shared with the permission prompter, so a question names the tool call
//! the editor already shows.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use nanohermes_core::events::RunEvents;
use nanohermes_core::toolbox::ToolFacts;
use nanohermes_llm::ToolCall;

use super::rpc::Peer;
use super::updates::{self, FileEdit};

/// A call announced to the editor and not finished yet.
#[derive(Debug, Clone)]
pub struct Announced {
    /// The call's id (the ACP `toolCallId`).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The model's raw arguments.
    pub arguments: String,
    /// The `tool_call` update that announced it.
    pub update: serde_json::Value,
}

/// The calls of the step now running, shared by the sink (which fills
/// it) and the prompter (which looks the asked-about call up).
pub type Step = Arc<Mutex<Vec<Announced>>>;

/// Sends a session's events to the editor.
pub struct AcpUi {
    peer: Peer,
    session: String,
    workspace: PathBuf,
    /// Facts about the tools declared when the prompt began.
    facts: HashMap<String, ToolFacts>,
    /// Files the announced calls will change, by call id.
    edits: HashMap<String, FileEdit>,
    step: Step,
}

impl AcpUi {
    /// Reports session `session` (working in `workspace`) to `peer`.
    pub fn new(peer: Peer, session: &str, workspace: PathBuf, step: Step) -> AcpUi {
        AcpUi {
            peer,
            session: session.to_owned(),
            workspace,
            facts: HashMap::new(),
            edits: HashMap::new(),
            step,
        }
    }

    /// The tools' facts for the prompt about to run (their kinds and
    /// which writes are diffs).
    pub fn set_facts(&mut self, facts: HashMap<String, ToolFacts>) {
        self.facts = facts;
    }

    /// Sends one update.
    pub fn send(&self, update: serde_json::Value) {
        self.peer.notify(
            "session/update",
            updates::notification(&self.session, update),
        );
    }
}

impl RunEvents for AcpUi {
    fn text(&mut self, delta: &str) {
        if !delta.is_empty() {
            self.send(updates::chunk("agent_message_chunk", delta));
        }
    }

    fn thinking(&mut self, delta: &str) {
        if !delta.is_empty() {
            self.send(updates::chunk("agent_thought_chunk", delta));
        }
    }

    fn step(&mut self, _step: usize, calls: &[ToolCall]) {
        let mut step = self.step.lock().unwrap_or_else(|e| e.into_inner());
        step.clear();
        for call in calls {
            let facts = self.facts.get(&call.name);
            // Read before any call of the step runs: the diff's old side.
            if let Some(edit) =
                updates::planned_edit(&call.name, facts, &call.arguments, &self.workspace)
            {
                self.edits.insert(call.id.clone(), edit);
            }
            let update = updates::tool_call(
                &call.id,
                &call.name,
                facts,
                &call.arguments,
                &self.workspace,
            );
            self.send(update.clone());
            step.push(Announced {
                id: call.id.clone(),
                name: call.name.clone(),
                arguments: call.arguments.clone(),
                update,
            });
        }
    }

    fn tool_call(&mut self, call: &ToolCall, result: &str) {
        let facts = self.facts.get(&call.name);
        let edit = self.edits.remove(&call.id).and_then(|edit| {
            let new = updates::new_text(&edit, &call.name, facts, &call.arguments)?;
            Some((edit, new))
        });
        self.send(updates::tool_call_done(
            &call.id,
            result,
            edit.as_ref().map(|(edit, new)| (edit, new.clone())),
        ));
        let is_todo =
            updates::raw_name(&call.name, facts) == "todo_write" && facts.is_none_or(|f| f.builtin);
        if is_todo
            && !result.starts_with("ERROR: ")
            && let Some(plan) = updates::plan(&call.arguments)
        {
            self.send(plan);
        }
    }

    fn notice(&mut self, line: &str) {
        // ACP v1 shows notices only to clients that declare
        // `session.notices`; the log keeps them.
        tracing::info!("acp session {}: {line}", self.session);
    }

    fn settled(&mut self) {
        self.step.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.edits.clear();
    }
}
