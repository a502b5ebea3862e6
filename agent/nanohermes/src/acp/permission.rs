//! Approvals through the editor: a call the mode asks about becomes
//! `session/request_permission` with allow once / allow always / reject
//! once / reject always. "Allow always" is remembered by the session's
//! [`Approvals`](nanohermes_core::policy::approval::Approvals) (one per
//! session, kept across prompts), "reject always" here; an editor that
//! cannot answer (an error, a closed connection) and a cancelled prompt
//! are a no, which the model reads as the denial it already knows.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::{Value, json};

use nanohermes_core::policy::approval::{Answer, AsyncPrompter};

use super::rpc::Peer;
use super::sink::Step;
use super::updates;

/// Asks the editor about the calls of one session; clones share it.
#[derive(Clone)]
pub struct EditorPrompter(Arc<Inner>);

struct Inner {
    peer: Peer,
    session: String,
    step: Step,
    /// Tools answered "reject always" in this session.
    rejected: Mutex<HashSet<String>>,
    /// Set by `session/cancel`: no more questions for this prompt.
    cancelled: Arc<AtomicBool>,
    /// Tools answered "allow always" (shared with the sink, which then
    /// knows their next calls run without a question).
    allowed: Allowed,
}

/// The tools an editor answered "allow always" for in a session: the
/// session's approvals run their calls without asking from then on.
pub type Allowed = Arc<Mutex<HashSet<String>>>;

impl EditorPrompter {
    /// Asks `peer` about session `session`'s calls, found in `step`;
    /// `cancelled` answers no without asking; "allow always" answers are
    /// noted in `allowed`.
    pub fn new(
        peer: Peer,
        session: &str,
        step: Step,
        cancelled: Arc<AtomicBool>,
        allowed: Allowed,
    ) -> EditorPrompter {
        EditorPrompter(Arc::new(Inner {
            peer,
            session: session.to_owned(),
            step,
            rejected: Mutex::default(),
            cancelled,
            allowed,
        }))
    }

    /// Whether `arguments` are those of a call announced in this step (a
    /// question about a protected write passes its own text instead, and
    /// its "always" is not remembered).
    fn is_announced(&self, tool: &str, arguments: &str) -> bool {
        self.0
            .step
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .any(|a| a.name == tool && a.arguments == arguments)
    }

    /// The `toolCall` of the question: the announced call with these
    /// arguments (else the last one of that tool), as it was announced.
    fn tool_call(&self, tool: &str, arguments: &str) -> Value {
        let step = self.0.step.lock().unwrap_or_else(|e| e.into_inner());
        let announced = step
            .iter()
            .find(|a| a.name == tool && a.arguments == arguments)
            .or_else(|| step.iter().rev().find(|a| a.name == tool));
        match announced {
            Some(announced) => {
                let mut call = announced.update.clone();
                if let Some(object) = call.as_object_mut() {
                    object.remove("sessionUpdate");
                }
                call
            }
            None => {
                json!({ "toolCallId": format!("permission-{tool}"), "title": tool, "rawInput": {"question": arguments} })
            }
        }
    }
}

/// The four options, in the order editors show them.
pub fn options(tool: &str) -> Value {
    json!([
        { "optionId": "allow-once", "name": "Allow", "kind": "allow_once" },
        { "optionId": "allow-always", "name": format!("Always allow {tool}"), "kind": "allow_always" },
        { "optionId": "reject-once", "name": "Reject", "kind": "reject_once" },
        { "optionId": "reject-always", "name": format!("Always reject {tool}"), "kind": "reject_always" },
    ])
}

/// The answer in a `session/request_permission` response (and whether it
/// was "reject always"); anything but a selected allow is a no.
pub fn answer_of(response: &Result<Value, Value>) -> (Answer, bool) {
    let selected = response
        .as_ref()
        .ok()
        .and_then(|r| r.get("outcome"))
        .filter(|o| o.get("outcome").and_then(Value::as_str) == Some("selected"))
        .and_then(|o| o.get("optionId"))
        .and_then(Value::as_str);
    match selected {
        Some("allow-once") => (Answer::Yes, false),
        Some("allow-always") => (Answer::Always, false),
        Some("reject-always") => (Answer::No, true),
        _ => (Answer::No, false),
    }
}

impl AsyncPrompter for EditorPrompter {
    fn ask(&self, tool: &str, arguments: &str) -> BoxFuture<'static, Answer> {
        let this = self.0.clone();
        let tool = tool.to_owned();
        let call = self.tool_call(&tool, arguments);
        let remembered = self.is_announced(&tool, arguments);
        Box::pin(async move {
            let refused = this
                .rejected
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&tool);
            if refused || this.cancelled.load(Ordering::SeqCst) {
                return Answer::No;
            }
            let params = json!({
                "sessionId": this.session,
                "toolCall": call,
                "options": options(&tool),
            });
            let response = this
                .peer
                .request("session/request_permission", params)
                .await;
            let (answer, always) = answer_of(&response);
            if always {
                this.rejected
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(tool.clone());
            }
            if answer == Answer::Always && remembered {
                this.allowed
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(tool);
            }
            // Allowed: the call runs now. (A question that names no
            // announced call has no id the editor knows.)
            if answer != Answer::No
                && let Some(id) = call.get("toolCallId").and_then(Value::as_str)
                && !id.starts_with("permission-")
            {
                this.peer.notify(
                    "session/update",
                    updates::notification(&this.session, updates::tool_call_started(id)),
                );
            }
            answer
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_selected_allow_runs_the_call() {
        let selected = |id: &str| Ok(json!({"outcome": {"outcome": "selected", "optionId": id}}));
        assert_eq!(answer_of(&selected("allow-once")), (Answer::Yes, false));
        assert_eq!(
            answer_of(&selected("allow-always")),
            (Answer::Always, false)
        );
        assert_eq!(answer_of(&selected("reject-once")), (Answer::No, false));
        assert_eq!(answer_of(&selected("reject-always")), (Answer::No, true));
        assert_eq!(answer_of(&selected("bogus")), (Answer::No, false));
        assert_eq!(
            answer_of(&Ok(json!({"outcome": {"outcome": "cancelled"}}))),
            (Answer::No, false)
        );
        assert_eq!(
            answer_of(&Err(json!({"code": -32601}))),
            (Answer::No, false)
        );
        assert_eq!(answer_of(&Err(Value::Null)), (Answer::No, false));
        let options = options("run_command");
        let kinds: Vec<&str> = options
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["allow_once", "allow_always", "reject_once", "reject_always"]
        );
    }

    #[tokio::test]
    async fn the_question_names_the_announced_call_and_reject_always_sticks() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let peer = Peer::new(tx);
        let step: Step = Arc::default();
        step.lock().unwrap().push(super::super::sink::Announced {
            id: "c7".into(),
            name: "run_command".into(),
            arguments: r#"{"command":"ls"}"#.into(),
            update: json!({"sessionUpdate": "tool_call", "toolCallId": "c7", "title": "Run ls"}),
        });
        let prompter = EditorPrompter::new(peer.clone(), "s", step, Arc::default(), Arc::default());
        let asking = tokio::spawn({
            let prompter = prompter.clone();
            async move { prompter.ask("run_command", r#"{"command":"ls"}"#).await }
        });
        let sent: Value = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
        assert_eq!(sent["method"], "session/request_permission");
        assert_eq!(sent["params"]["sessionId"], "s");
        assert_eq!(
            sent["params"]["toolCall"],
            json!({"toolCallId": "c7", "title": "Run ls"})
        );
        peer.settle(
            &sent["id"],
            Ok(json!({"outcome": {"outcome": "selected", "optionId": "reject-always"}})),
        );
        assert_eq!(asking.await.unwrap(), Answer::No);
        // Not asked again: answered no at once.
        assert_eq!(prompter.ask("run_command", "{}").await, Answer::No);
        assert!(rx.try_recv().is_err());
    }
}
