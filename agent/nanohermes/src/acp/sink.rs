//! The `RunEvents` of a prompt in an editor: every event becomes a
//! `session/update` notification, and the calls of the current step are
//! shared with the permission prompter, so a question names the tool call
//! the editor already shows. A call is announced `pending`, goes
//! `in_progress` when it starts (with its step when the gates let it
//! through unasked, else when the editor allows it: the prompter says so)
//! and ends `completed` or `failed`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use nanohermes_core::events::RunEvents;
use nanohermes_core::policy::{Policy, Verdict};
use nanohermes_core::toolbox::ToolFacts;
use nanohermes_llm::ToolCall;

use super::permission::Allowed;
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
    /// The session's policy for the prompt running: which calls start
    /// without a question.
    policy: Policy,
    /// The tools the editor allowed always.
    allowed: Allowed,
}

impl AcpUi {
    /// Reports session `session` (working in `workspace`) to `peer`;
    /// `allowed` is shared with the session's prompter.
    pub fn new(
        peer: Peer,
        session: &str,
        workspace: PathBuf,
        step: Step,
        allowed: Allowed,
    ) -> AcpUi {
        AcpUi {
            peer,
            session: session.to_owned(),
            workspace,
            facts: HashMap::new(),
            edits: HashMap::new(),
            step,
            policy: Policy::default(),
            allowed,
        }
    }

    /// The tools' facts (their kinds and which writes are diffs) and the
    /// policy for the prompt about to run.
    pub fn set_tools(&mut self, facts: HashMap<String, ToolFacts>, policy: Policy) {
        self.facts = facts;
        self.policy = policy;
    }

    /// Whether `call` starts running as soon as its step begins: the
    /// agent's gates ([`nanohermes_core::agent::Agent::execute`]) let it
    /// through without a question. A call asked about starts when the
    /// editor allows it (the prompter says so); one refused never starts.
    fn starts_at_once(&self, call: &ToolCall) -> bool {
        let Some(facts) = self.facts.get(&call.name) else {
            return false;
        };
        // A write to a protected path is asked about in every mode.
        if facts.is_file_edit()
            && nanohermes_builtins::protected_write(&facts.raw_name, &call.arguments).is_some()
        {
            return false;
        }
        match self.policy.check(&call.name, facts) {
            Verdict::Run => true,
            Verdict::Ask => self
                .allowed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&call.name),
            Verdict::Refuse(_) => false,
        }
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
        drop(step);
        // Every call is announced first; then those the gates let through
        // run (concurrently, when there are several).
        for call in calls {
            if self.starts_at_once(call) {
                self.send(updates::tool_call_started(&call.id));
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use nanohermes_config::Mode;
    use serde_json::Value;

    fn facts(server: &str, raw: &str, read_only: bool) -> ToolFacts {
        ToolFacts {
            read_only,
            destructive: !read_only,
            builtin: true,
            server: server.into(),
            raw_name: raw.into(),
        }
    }

    fn call(id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }

    /// The (kind, call id, status) of every update sent.
    fn sent(
        rx: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
    ) -> Vec<(String, String, String)> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|line| {
                let update =
                    serde_json::from_str::<Value>(&line).unwrap()["params"]["update"].clone();
                let field = |key: &str| update[key].as_str().unwrap_or_default().to_owned();
                (field("sessionUpdate"), field("toolCallId"), field("status"))
            })
            .collect()
    }

    #[test]
    fn calls_the_gates_let_through_are_in_progress_when_their_step_begins() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let workspace = tempfile::tempdir().unwrap();
        let allowed = Allowed::default();
        let mut ui = AcpUi::new(
            Peer::new(tx),
            "s",
            workspace.path().to_owned(),
            Step::default(),
            allowed.clone(),
        );
        let tools = HashMap::from([
            ("read_file".to_owned(), facts("files", "read_file", true)),
            ("write_file".to_owned(), facts("files", "write_file", false)),
            (
                "run_command".to_owned(),
                facts("shell", "run_command", false),
            ),
        ]);
        let step = [
            call("c1", "read_file", r#"{"path":"a"}"#),
            call("c2", "run_command", r#"{"command":"ls"}"#),
            call(
                "c3",
                "write_file",
                r#"{"path":".git/config","content":"x"}"#,
            ),
            call("c4", "nope", "{}"),
        ];
        let in_progress = |updates: &[(String, String, String)]| -> Vec<String> {
            updates
                .iter()
                .filter(|(kind, _, status)| kind == "tool_call_update" && status == "in_progress")
                .map(|(_, id, _)| id.clone())
                .collect()
        };
        ui.set_tools(
            tools.clone(),
            Policy::new(Mode::Default, None, Vec::new(), false),
        );
        ui.step(1, &step);
        let updates = sent(&mut rx);
        // All four announced pending first, then the read starts: the
        // command waits for the editor's answer, the protected write is
        // asked about in every mode, the unknown tool never runs.
        assert_eq!(
            updates[..4]
                .iter()
                .map(|(k, _, s)| (k.as_str(), s.as_str()))
                .collect::<Vec<_>>(),
            [("tool_call", "pending"); 4]
        );
        assert_eq!(in_progress(&updates), ["c1"]);
        // Once allowed always, the command starts at once too.
        allowed.lock().unwrap().insert("run_command".into());
        ui.step(2, &step);
        assert_eq!(in_progress(&sent(&mut rx)), ["c1", "c2"]);
        // In goal mode everything known runs but the protected write; in
        // plan mode only the read.
        ui.set_tools(
            tools.clone(),
            Policy::new(Mode::Goal, None, Vec::new(), false),
        );
        ui.step(3, &step);
        assert_eq!(in_progress(&sent(&mut rx)), ["c1", "c2"]);
        ui.set_tools(tools, Policy::new(Mode::Plan, None, Vec::new(), false));
        ui.step(4, &step);
        assert_eq!(in_progress(&sent(&mut rx)), ["c1"]);
    }
}
