//! The input-required (MRTR, SEP-2322) fixtures of 2026-07-28: tools and a
//! prompt that answer `resultType: "input_required"` until the client
//! retries with the `inputResponses` (and, where used, the echoed
//! `requestState`) they asked for.
//!
//! `requestState` is sealed with an HMAC key drawn at startup
//! (rmcp's `RequestStateCodec`), so a tampered echo is refused with
//! `-32602` and never acted on.

#![allow(deprecated)] // sampling and roots input requests (SEP-2577)

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CreateMessageRequest,
    CreateMessageRequestParams, ElicitRequest, ElicitRequestParams, ErrorData, GetPromptResponse,
    GetPromptResult, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    ListRootsRequest, PromptMessage, RequestStateCodec, Role, SamplingMessage, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};

/// The prompt that needs an elicited `context` before it can render.
pub const PROMPT: &str = "test_input_required_result_prompt";

/// The input-required tools; all take no arguments.
pub fn list() -> Vec<Tool> {
    [
        ("elicitation", "Requires an elicitation input (SEP-2322)"),
        ("sampling", "Requires a sampling input (SEP-2322)"),
        ("list_roots", "Requires a roots/list input (SEP-2322)"),
        (
            "request_state",
            "Round-trips integrity-protected requestState (SEP-2322)",
        ),
        (
            "multiple_inputs",
            "Requires elicitation, sampling and roots inputs in one round",
        ),
        (
            "multi_round",
            "Asks over two rounds, requestState carrying the round",
        ),
        (
            "tampered_state",
            "Refuses a requestState that fails verification",
        ),
        (
            "capabilities",
            "Asks only for inputs the client declared it can give",
        ),
    ]
    .into_iter()
    .map(|(suffix, description)| {
        Tool::new(
            format!("test_input_required_result_{suffix}"),
            description,
            super::tools::object(json!({ "type": "object", "properties": {} })),
        )
    })
    .collect()
}

/// The sealing key and the MRTR tool bodies.
#[derive(Clone)]
pub struct Mrtr {
    codec: RequestStateCodec,
}

fn elicitation(message: &str, field: &str) -> InputRequest {
    let schema = json!({
        "type": "object",
        "properties": { field: { "type": "string" } },
        "required": [field],
    });
    InputRequest::Elicitation(ElicitRequest::new(
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: message.into(),
            requested_schema: serde_json::from_value(schema).expect("a valid elicitation schema"),
        },
    ))
}

fn sampling(prompt: &str) -> InputRequest {
    InputRequest::CreateMessage(CreateMessageRequest::new(CreateMessageRequestParams::new(
        vec![SamplingMessage::user_text(prompt)],
        100,
    )))
}

fn roots() -> InputRequest {
    InputRequest::ListRoots(ListRootsRequest::default())
}

fn asks<const N: usize>(pairs: [(&str, InputRequest); N]) -> InputRequests {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

/// A response usable as an answer: an object (an `ElicitResult`,
/// `CreateMessageResult` or `ListRootsResult`). Anything else counts as
/// missing, so the server asks again (SEP-2322's advice).
fn answer<'a>(responses: Option<&'a InputResponses>, key: &str) -> Option<&'a Map<String, Value>> {
    responses?.get(key)?.as_object()
}

fn field<'a>(response: &'a Map<String, Value>, outer: &str, inner: &str) -> Option<&'a str> {
    response.get(outer)?.get(inner)?.as_str()
}

fn done(text: impl Into<String>) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
}

fn input_required(
    requests: InputRequests,
    state: Option<String>,
) -> Result<CallToolResponse, ErrorData> {
    Ok(InputRequiredResult::new(Some(requests), state).into())
}

fn tampered() -> ErrorData {
    ErrorData::invalid_params("requestState failed integrity verification", None)
}

impl Mrtr {
    /// A codec with a fresh random key.
    pub fn new() -> std::io::Result<Self> {
        let mut key = [0u8; 32];
        use std::io::Read;
        std::fs::File::open("/dev/urandom")?.read_exact(&mut key)?;
        let codec = RequestStateCodec::try_new(key.to_vec())
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(Self { codec })
    }

    fn seal(&self, value: Value) -> Result<String, ErrorData> {
        self.codec
            .seal_json(&value)
            .map_err(|e| ErrorData::internal_error(format!("cannot seal requestState: {e}"), None))
    }

    fn open(&self, sealed: &str) -> Result<Value, ErrorData> {
        self.codec.open_json(sealed).map_err(|_| tampered())
    }

    /// Runs the MRTR tool `request.name`, or `None` when it is not one.
    pub fn call(
        &self,
        request: &CallToolRequestParams,
        cx: &RequestContext<RoleServer>,
    ) -> Option<Result<CallToolResponse, ErrorData>> {
        let suffix = request.name.strip_prefix("test_input_required_result_")?;
        let responses = request.input_responses.as_ref();
        let state = request.request_state.as_deref();
        Some(match suffix {
            "elicitation" => match answer(responses, "user_name") {
                Some(r) => done(format!(
                    "Hello, {}!",
                    field(r, "content", "name").unwrap_or("friend")
                )),
                None => input_required(
                    asks([("user_name", elicitation("What is your name?", "name"))]),
                    None,
                ),
            },
            "sampling" => match answer(responses, "capital_question") {
                Some(r) => done(format!(
                    "Sampling response: {}",
                    field(r, "content", "text").unwrap_or("(no sampling text)")
                )),
                None => input_required(
                    asks([(
                        "capital_question",
                        sampling("What is the capital of France?"),
                    )]),
                    None,
                ),
            },
            "list_roots" => match answer(responses, "client_roots") {
                Some(r) => {
                    let uris: Vec<&str> = r
                        .get("roots")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|root| root.get("uri")?.as_str())
                        .collect();
                    done(format!("Client roots: [{}]", uris.join(", ")))
                }
                None => input_required(asks([("client_roots", roots())]), None),
            },
            "request_state" | "tampered_state" => match state {
                None => self.seal(json!({ "stage": "confirm" })).and_then(|sealed| {
                    let schema_field = "ok";
                    let ask = InputRequest::Elicitation(ElicitRequest::new(
                        ElicitRequestParams::FormElicitationParams {
                            meta: None,
                            message: "Please confirm".into(),
                            requested_schema: serde_json::from_value(json!({
                                "type": "object",
                                "properties": { schema_field: { "type": "boolean" } },
                                "required": [schema_field],
                            }))
                            .expect("a valid elicitation schema"),
                        },
                    ));
                    input_required(asks([("confirm", ask)]), Some(sealed))
                }),
                // The echoed state is untrusted input: verify before acting.
                Some(sealed) => self.open(sealed).and_then(|_| done("Confirmed: state-ok")),
            },
            "multiple_inputs" => {
                if let Some(sealed) = state
                    && let Err(e) = self.open(sealed)
                {
                    return Some(Err(e));
                }
                let all = ["user_name", "greeting", "client_roots"]
                    .iter()
                    .all(|key| answer(responses, key).is_some());
                if all && state.is_some() {
                    done("All inputs received")
                } else {
                    self.seal(json!({ "stage": "gather" })).and_then(|sealed| {
                        input_required(
                            asks([
                                ("user_name", elicitation("What is your name?", "name")),
                                ("greeting", sampling("Generate a greeting")),
                                ("client_roots", roots()),
                            ]),
                            Some(sealed),
                        )
                    })
                }
            }
            "multi_round" => {
                let round = match state.map(|s| self.open(s)).transpose() {
                    Ok(state) => state
                        .and_then(|s| s.get("round").and_then(Value::as_i64))
                        .unwrap_or(0),
                    Err(e) => return Some(Err(e)),
                };
                let ask = match round {
                    0 => ("step1", elicitation("Step 1: What is your name?", "name")),
                    1 => (
                        "step2",
                        elicitation("Step 2: What is your favorite color?", "color"),
                    ),
                    _ => return Some(done("Multi-round flow complete")),
                };
                self.seal(json!({ "round": round + 1 }))
                    .and_then(|sealed| input_required(asks([ask]), Some(sealed)))
            }
            "capabilities" => {
                if responses.is_some() {
                    return Some(done("Capability-aware flow complete"));
                }
                // Only ask for what `_meta.clientCapabilities` declares.
                let declared = cx.meta.client_capabilities().unwrap_or_default();
                let mut requests = InputRequests::new();
                if declared.elicitation.is_some() {
                    requests.insert(
                        "user_name".into(),
                        elicitation("What is your name?", "name"),
                    );
                }
                if declared.sampling.is_some() {
                    requests.insert("greeting".into(), sampling("Generate a greeting"));
                }
                if declared.roots.is_some() {
                    requests.insert("client_roots".into(), roots());
                }
                if requests.is_empty() {
                    done("Client declared no MRTR-capable capabilities")
                } else {
                    input_required(requests, None)
                }
            }
            _ => return None,
        })
    }

    /// `test_streaming_elicitation`: one round, one elicitation (the
    /// 2026-07-28 stateless scenario checks it travels on the response
    /// stream, not as a server→client request).
    pub fn streaming_elicitation() -> Result<CallToolResponse, ErrorData> {
        input_required(
            asks([(
                "streaming_elicitation",
                elicitation("Provide a value", "value"),
            )]),
            None,
        )
    }

    /// `prompts/get` of [`PROMPT`]: MRTR on a request that is not a tool
    /// call.
    pub fn prompt(responses: Option<&InputResponses>) -> GetPromptResponse {
        match answer(responses, "user_context") {
            Some(r) => {
                let context = field(r, "content", "context").unwrap_or("(no context)");
                GetPromptResult::new(vec![PromptMessage::new_text(
                    Role::User,
                    format!("Prompt with elicited context: {context}"),
                )])
                .with_description("A prompt built from elicited context")
                .into()
            }
            None => InputRequiredResult::from_input_requests(asks([(
                "user_context",
                elicitation("What context should the prompt use?", "context"),
            )]))
            .into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_state_opens_and_a_tampered_or_foreign_one_is_invalid_params() {
        let mrtr = Mrtr::new().unwrap();
        let sealed = mrtr.seal(json!({ "round": 1 })).unwrap();
        assert_eq!(mrtr.open(&sealed).unwrap(), json!({ "round": 1 }));
        let mut tampered = sealed.clone().into_bytes();
        let last = tampered.len() - 1;
        tampered[last] = if tampered[last] == b'A' { b'B' } else { b'A' };
        let err = mrtr
            .open(std::str::from_utf8(&tampered).unwrap())
            .unwrap_err();
        assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS);
        // Another process's key (a restarted server) does not open it either.
        let other = Mrtr::new().unwrap();
        assert!(other.open(&sealed).is_err());
    }
}
