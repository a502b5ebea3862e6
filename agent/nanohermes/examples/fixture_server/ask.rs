//! `--ask`: the tool `ask`, which needs the user's input before it
//! answers, the way each era asks for it:
//! - 2025-11-25: it sends `elicitation/create` and answers with what came
//!   back;
//! - 2026-07-28 (MRTR): it answers `input_required` with one elicitation
//!   and the opaque [`STATE`]; the retry must carry the answer and the
//!   state exactly as sent, or the call fails.
//!
//! The form: `name` (string, default "Ada"), `ok` (boolean, no default).
//! The answer: `elicited ACTION CONTENT` (legacy) or `state ok: ACTION
//! CONTENT` (MRTR).

use rmcp::handler::server::tool::{InputResponses, RequestState};
use rmcp::model::{
    CallToolResponse, ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest,
    InputRequests, InputRequiredResult,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};
use serde_json::json;

use super::Fixture;

/// The state the MRTR round sends; odd on purpose (spaces, quotes,
/// non-ASCII), so a client that parses or re-encodes it is caught.
pub(crate) const STATE: &str = "opaque \"state\" ✓ 1";

fn form() -> ElicitRequestParams {
    serde_json::from_value(json!({
        "mode": "form",
        "message": "Who is asking?",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "Ada"},
                "ok": {"type": "boolean"},
            },
        },
    }))
    .expect("a valid form")
}

fn describe(result: &ElicitResult) -> String {
    let action = serde_json::to_value(&result.action).unwrap_or_default();
    let content = result.content.clone().unwrap_or_default();
    format!("{} {content}", action.as_str().unwrap_or("?"))
}

#[tool_router(router = ask_router, vis = "pub(crate)")]
impl Fixture {
    /// Ask the user who is asking (elicitation in either era), then answer
    /// with what they said.
    #[tool]
    async fn ask(
        &self,
        context: RequestContext<RoleServer>,
        RequestState(state): RequestState,
        InputResponses(answers): InputResponses,
    ) -> Result<CallToolResponse, String> {
        let legacy = context
            .peer
            .peer_info()
            .is_some_and(|info| info.protocol_version.has_initialize());
        if legacy {
            let result = context
                .peer
                .create_elicitation(form())
                .await
                .map_err(|e| format!("elicitation failed: {e}"))?;
            return Ok(rmcp::model::CallToolResult::success(vec![
                rmcp::model::ContentBlock::text(format!("elicited {}", describe(&result))),
            ])
            .into());
        }
        let Some(answers) = answers else {
            let mut requests = InputRequests::new();
            requests.insert(
                "who".to_owned(),
                InputRequest::Elicitation(ElicitRequest::new(form())),
            );
            return Ok(InputRequiredResult::new(Some(requests), Some(STATE.to_owned())).into());
        };
        if state.as_deref() != Some(STATE) {
            return Err(format!(
                "requestState came back as {state:?}, not {STATE:?}"
            ));
        }
        let answer: ElicitResult = answers
            .get("who")
            .cloned()
            .and_then(|v| serde_json::from_value(v).ok())
            .ok_or("the retry has no answer for `who`")?;
        Ok(
            rmcp::model::CallToolResult::success(vec![rmcp::model::ContentBlock::text(format!(
                "state ok: {}",
                describe(&answer)
            ))])
            .into(),
        )
    }
}
