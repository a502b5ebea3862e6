//! Approvals when mounted: a call the task's mode asks about goes to the
//! host, in the way the host's protocol era allows.
//!
//! - 2025-11-25 clients that declared elicitation get an
//!   `elicitation/create` form (accept runs the call; `always: true` in the
//!   content runs every later call of that tool in the task; decline,
//!   cancel, `allow: false` or no answer within [`ANSWER_TIME`] deny it).
//! - 2026-07-28 clients get the input-required result that replaced
//!   server-to-client requests: the run waits while `run_task` answers
//!   with an elicitation in `inputRequests` and a sealed `requestState`;
//!   the host's retry carries the answer in, and the run goes on
//!   ([`super::handler`]). A task shows the same question as its
//!   `input_required` status, answered with `tasks/update`.
//!   Only when the request declares elicitation in its client
//!   capabilities: a host that cannot show the form (the Python SDK
//!   without an elicitation callback fails the whole call with
//!   `Elicitation not supported`) is never asked.
//! - Anyone else: nobody can answer, so the call is denied with
//!   [`nanohermes_core::policy::approval::DENIED`].
//!
//! The question is written for a host's dialog ([`host_question`]): the
//! tool, its arguments (clamped) and what approving does; not the
//! terminal's `Allow? [y]es / [n]o / [a]lways`.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::Peer;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, ProtocolVersion,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use nanohermes_core::policy::approval::{Answer, Approvals, AsyncPrompter};

/// How much of a call's arguments a question shows.
const SHOWN_ARGUMENTS: usize = 600;

/// The question a host shows for a call to `tool` with `arguments`.
pub fn host_question(tool: &str, arguments: &str) -> String {
    let arguments = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    format!(
        "The NanoHermes agent working on your task wants to call the tool `{tool}` with these arguments:\n{}\n\
         Accept to run this one call (with \"always\" checked, every later `{tool}` call of this task runs without asking). \
         Decline to refuse it: the call does not run and the agent is told it was denied.",
        mcp_tools::clamp::clamp(arguments, SHOWN_ARGUMENTS)
    )
}

/// How long a question waits for the host before the call is denied.
pub const ANSWER_TIME: Duration = Duration::from_secs(600);

/// The form every approval shows: two optional booleans.
pub fn form() -> ElicitationSchema {
    ElicitationSchema::builder()
        .bool_property("allow", |b| {
            b.description("Run this call (unset means yes when you accept)")
                .with_default(true)
        })
        .bool_property("always", |b| {
            b.description("Also run every later call of this tool in this task without asking")
                .with_default(false)
        })
        .build()
        .unwrap_or_else(|e| unreachable!("two optional booleans make a valid form: {e}"))
}

/// The elicitation request for `question`.
pub fn request(question: &str) -> ElicitRequestParams {
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: question.to_owned(),
        requested_schema: form(),
    }
}

/// What an elicitation answer means.
pub fn answer_of(result: &ElicitResult) -> Answer {
    if result.action != ElicitationAction::Accept {
        return Answer::No;
    }
    let flag = |name: &str| result.content.as_ref().and_then(|c| c.get(name)?.as_bool());
    match (flag("allow"), flag("always")) {
        (Some(false), _) => Answer::No,
        (_, Some(true)) => Answer::Always,
        _ => Answer::Yes,
    }
}

/// The same, for an answer that arrived as raw JSON (an `inputResponses`
/// entry); anything that is not an elicitation result is no.
pub fn answer_of_value(value: &Value) -> Answer {
    serde_json::from_value::<ElicitResult>(value.clone())
        .map_or(Answer::No, |result| answer_of(&result))
}

/// Asks a 2025-11-25 host with `elicitation/create`.
struct Elicit(Peer<RoleServer>);

impl AsyncPrompter for Elicit {
    fn ask(&self, tool: &str, arguments: &str) -> BoxFuture<'static, Answer> {
        let peer = self.0.clone();
        let params = request(&host_question(tool, arguments));
        Box::pin(async move {
            match peer
                .create_elicitation_with_timeout(params, Some(ANSWER_TIME))
                .await
            {
                Ok(result) => answer_of(&result),
                Err(e) => {
                    tracing::info!("approval request failed, denied: {e}");
                    Answer::No
                }
            }
        })
    }
}

/// A question a run waits on, for [`super::handler`] to put in an
/// input-required result.
pub struct Question {
    /// The text to show.
    pub text: String,
    /// Where the answer goes.
    pub answer: oneshot::Sender<Answer>,
}

/// Asks through input-required results: sends the question to the
/// handler and waits for the answer a retry brings.
struct InputRequired(mpsc::Sender<Question>);

impl AsyncPrompter for InputRequired {
    fn ask(&self, tool: &str, arguments: &str) -> BoxFuture<'static, Answer> {
        let questions = self.0.clone();
        let text = host_question(tool, arguments);
        Box::pin(async move {
            let (answer, answered) = oneshot::channel();
            if questions.send(Question { text, answer }).await.is_err() {
                return Answer::No;
            }
            tokio::time::timeout(ANSWER_TIME, answered)
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or(Answer::No)
        })
    }
}

/// How the host of a request can answer (`InputRequired` exactly when the
/// request is of the 2026-07-28 era).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostAnswers {
    /// Through `elicitation/create` on this peer.
    Elicitation,
    /// Through input-required results and retries.
    InputRequired,
    /// Not at all.
    Never,
}

impl HostAnswers {
    /// The word a task row keeps (a takeover asks the same way; an
    /// elicitation needs the original connection, so it is kept as never).
    pub fn word(self) -> &'static str {
        match self {
            HostAnswers::InputRequired => "input_required",
            HostAnswers::Elicitation | HostAnswers::Never => "never",
        }
    }

    /// The inverse of [`HostAnswers::word`].
    pub fn of_word(word: &str) -> HostAnswers {
        if word == "input_required" {
            HostAnswers::InputRequired
        } else {
            HostAnswers::Never
        }
    }
}

/// Whether the request of `ctx` is of the 2026-07-28 era.
pub fn is_modern(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// What the host of `ctx` can do: a 2026-07-28 request whose client
/// capabilities declare form elicitation → input-required (in the result
/// of a blocking call, or as a task's `input_required` status answered by
/// `tasks/update`); a legacy client that declared form elicitation →
/// elicitation; anyone else → never (the call is denied without asking).
pub fn host_answers(ctx: &RequestContext<RoleServer>) -> HostAnswers {
    if is_modern(ctx) {
        let declared = ctx
            .client_capabilities()
            .and_then(|caps| caps.elicitation)
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        if declared {
            HostAnswers::InputRequired
        } else {
            HostAnswers::Never
        }
    } else if ctx
        .peer
        .supported_elicitation_modes()
        .contains(&rmcp::service::ElicitationMode::Form)
    {
        HostAnswers::Elicitation
    } else {
        HostAnswers::Never
    }
}

/// The approvals of one run, and (for input-required) the questions it
/// will ask. `peer` is the requesting host (`None` for a run taken over
/// from another replica, whose host can only answer through the store).
pub fn approvals(
    how: &HostAnswers,
    peer: Option<&Peer<RoleServer>>,
) -> (Approvals, Option<mpsc::Receiver<Question>>) {
    match how {
        HostAnswers::Elicitation => match peer {
            Some(peer) => (
                Approvals::asking_async(Arc::new(Elicit(peer.clone()))),
                None,
            ),
            None => (Approvals::denying(), None),
        },
        HostAnswers::InputRequired => {
            let (tx, rx) = mpsc::channel(1);
            (
                Approvals::asking_async(Arc::new(InputRequired(tx))),
                Some(rx),
            )
        }
        HostAnswers::Never => (Approvals::denying(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accept_runs_the_call_and_everything_else_denies_it() {
        let result = |action, content: Option<Value>| {
            let mut r = ElicitResult::new(action);
            r.content = content;
            answer_of(&r)
        };
        assert_eq!(result(ElicitationAction::Accept, None), Answer::Yes);
        assert_eq!(
            result(ElicitationAction::Accept, Some(json!({"always": true}))),
            Answer::Always
        );
        assert_eq!(
            result(
                ElicitationAction::Accept,
                Some(json!({"allow": false, "always": true}))
            ),
            Answer::No
        );
        assert_eq!(
            result(ElicitationAction::Decline, Some(json!({"allow": true}))),
            Answer::No
        );
        assert_eq!(result(ElicitationAction::Cancel, None), Answer::No);
        assert_eq!(answer_of_value(&json!({"action": "accept"})), Answer::Yes);
        assert_eq!(answer_of_value(&json!("yes")), Answer::No);
    }

    #[test]
    fn the_host_question_names_the_tool_its_arguments_and_what_approving_does() {
        let question = host_question("run_command", r#"{"command":"rm -rf build"}"#);
        assert!(question.starts_with(
            "The NanoHermes agent working on your task wants to call the tool `run_command` with these arguments:\n{\"command\":\"rm -rf build\"}\nAccept to run this one call"
        ));
        assert!(!question.contains("[y]es"));
        let long = format!("{{\"content\":\"{}\"}}", "x".repeat(10_000));
        assert!(host_question("write_file", &long).len() < 1_500);
        assert!(host_question("list_dir", "").contains("arguments:\n{}\n"));
    }
}
