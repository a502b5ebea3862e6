//! Input a server asks the client for in the middle of a request:
//! elicitation (a form for the user), in both eras.
//!
//! - 2025-11-25: the server sends `elicitation/create` on the connection;
//!   the hub's client handler ([`super::handler::Notified`]) answers it.
//! - 2026-07-28 (MRTR): the server answers `tools/call` with an
//!   `InputRequiredResult` (`inputRequests`, opaque `requestState`); the hub
//!   fulfils the requests ([`fulfil`]) and sends the call again, with a new
//!   JSON-RPC id, the responses and the state echoed verbatim (connection.rs).
//!
//! Who answers is an [`Elicitor`] given in [`super::HubConfig`]; without
//! one the hub does not declare the `elicitation` capability, so a
//! conforming server never asks, and one that asks anyway is declined.
//! Sampling and roots are never declared (both are deprecated in
//! 2026-07-28), so requests for them are refused.

use std::fmt::Debug;
use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{
    ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, InputRequest, InputRequests, InputResponses, JsonObject,
};
use serde_json::Value;

/// How many `input_required` rounds one call may take before the hub gives
/// up on it (a server that keeps asking is broken or looping).
pub const MAX_INPUT_ROUNDS: usize = 8;

/// Answers a server's elicitation on behalf of the user.
pub trait Elicitor: Debug + Send + Sync {
    /// The answer to `request` from server `server`.
    fn elicit(&self, server: &str, request: ElicitRequestParams) -> BoxFuture<'_, ElicitResult>;
}

/// The shared handle the hub keeps.
pub type SharedElicitor = Arc<dyn Elicitor>;

/// What the client declares about elicitation: form mode when someone
/// answers, nothing otherwise.
pub(crate) fn capability(elicitor: Option<&SharedElicitor>) -> Option<ElicitationCapability> {
    elicitor.map(|_| ElicitationCapability::new().with_form(FormElicitationCapability::new()))
}

/// Answers one elicitation: the elicitor's answer, or a decline when there
/// is none.
pub(crate) async fn elicit(
    elicitor: Option<&SharedElicitor>,
    server: &str,
    request: ElicitRequestParams,
) -> ElicitResult {
    match elicitor {
        Some(elicitor) => elicitor.elicit(server, request).await,
        None => ElicitResult::new(ElicitationAction::Decline),
    }
}

/// Fulfils the `inputRequests` of an `InputRequiredResult`, keyed as the
/// server keyed them. An error names what could not be answered.
pub(crate) async fn fulfil(
    elicitor: Option<&SharedElicitor>,
    server: &str,
    requests: InputRequests,
) -> Result<InputResponses, String> {
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let answer = match request {
            InputRequest::Elicitation(request) => {
                let result = elicit(elicitor, server, request.params).await;
                serde_json::to_value(result).map_err(|e| e.to_string())?
            }
            InputRequest::CreateMessage(_) => {
                return Err(format!(
                    "input request {key:?} asks for sampling, which NanoHermes does not offer"
                ));
            }
            InputRequest::ListRoots(_) => {
                return Err(format!(
                    "input request {key:?} asks for roots, which NanoHermes does not offer"
                ));
            }
            other => {
                return Err(format!(
                    "input request {key:?} is of a kind NanoHermes does not know: {}",
                    mcp_tools::clamp(&format!("{other:?}"), 200)
                ));
            }
        };
        responses.insert(key, answer);
    }
    Ok(responses)
}

/// The `default` of every property of a form's schema that has one
/// (SEP-1034), overlaid with `given`: what a user who accepts the form
/// without typing sends.
pub fn with_schema_defaults(request: &ElicitRequestParams, given: &JsonObject) -> JsonObject {
    let mut content = JsonObject::new();
    if let ElicitRequestParams::FormElicitationParams {
        requested_schema, ..
    } = request
        && let Ok(Value::Object(schema)) = serde_json::to_value(requested_schema)
        && let Some(Value::Object(properties)) = schema.get("properties")
    {
        for (name, property) in properties {
            if let Some(default) = property.get("default") {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    content.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
    content
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn form(schema: Value) -> ElicitRequestParams {
        serde_json::from_value(json!({
            "mode": "form",
            "message": "m",
            "requestedSchema": schema,
        }))
        .unwrap()
    }

    #[test]
    fn defaults_fill_what_was_not_given() {
        let request = form(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "ok": {"type": "boolean"},
            },
        }));
        let given = json!({"age": 41, "ok": true});
        let content = with_schema_defaults(&request, given.as_object().unwrap());
        assert_eq!(
            Value::Object(content),
            json!({"name": "John Doe", "age": 41, "ok": true})
        );
    }

    #[tokio::test]
    async fn without_an_elicitor_requests_are_declined_and_sampling_refused() {
        let requests: InputRequests = serde_json::from_value(json!({
            "a": {"method": "elicitation/create", "params": {
                "message": "m", "requestedSchema": {"type": "object", "properties": {}}}},
        }))
        .unwrap();
        let answers = fulfil(None, "s", requests).await.unwrap();
        assert_eq!(answers["a"]["action"], "decline");
        let sampling: InputRequests = serde_json::from_value(json!({
            "b": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}},
        }))
        .unwrap();
        let refused = fulfil(None, "s", sampling).await.unwrap_err();
        assert!(refused.contains("sampling"), "{refused}");
    }
}
