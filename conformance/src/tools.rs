//! The suite's fixture tools that answer in one round: content of each kind,
//! a tool error, progress, the legacy era's logging, sampling and
//! elicitation (server→client requests), and the 2026-07-28 diagnostics
//! (`test_missing_capability`, `test_logging_tool`, …).
//!
//! Names, arguments and texts are fixed by the suite's scenarios
//! (`src/scenarios/server/*.ts` in modelcontextprotocol/conformance).

// Logging, sampling and roots are deprecated by SEP-2577 but are what the
// 2025-11-25 scenarios test.
#![allow(deprecated)]

use rmcp::model::{
    AudioContent, CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities,
    ContentBlock, CreateMessageRequestParams, ElicitRequestParams, ElicitationSchema, ErrorData,
    JsonObject, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam,
    ResourceContents, SamplingMessage, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

/// A 1x1 red PNG.
pub const IMAGE_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg==";
/// An empty WAV file.
const AUDIO_WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEARKwAAIhYAQACABAAZGF0YQAAAAA=";

/// `value` as a JSON object (a tool schema); the literals here are objects.
pub fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        other => unreachable!("a fixture schema is an object, not {other}"),
    }
}

fn no_args() -> JsonObject {
    object(json!({ "type": "object", "properties": {} }))
}

/// `test_custom_header`: its argument travels as `Mcp-Param-Value` too
/// (SEP-2243); rmcp checks header against body through `get_tool`.
pub fn custom_header_tool() -> Tool {
    Tool::new(
        "test_custom_header",
        "Echoes value, which is also sent as the Mcp-Param-Value header (SEP-2243)",
        object(json!({
            "type": "object",
            "properties": { "value": { "type": "string", "x-mcp-header": "Value" } },
            "required": ["value"]
        })),
    )
}

/// The one-round fixture tools, in a fixed order (tools/list SHOULD be
/// deterministic).
pub fn list() -> Vec<Tool> {
    let plain = [
        ("test_simple_text", "Returns simple text content"),
        ("test_image_content", "Returns image content"),
        ("test_audio_content", "Returns audio content"),
        (
            "test_embedded_resource",
            "Returns embedded resource content",
        ),
        (
            "test_multiple_content_types",
            "Returns multiple content types",
        ),
        (
            "test_tool_with_logging",
            "Sends logging notifications during execution",
        ),
        ("test_error_handling", "Always returns an error"),
        ("test_tool_with_progress", "Reports progress notifications"),
        (
            "test_elicitation_sep1034_defaults",
            "Elicits a form whose fields have defaults (SEP-1034)",
        ),
        (
            "test_elicitation_sep1330_enums",
            "Elicits a form with every enum style (SEP-1330)",
        ),
        (
            "test_reconnection",
            "Answers after a short pause (SSE reconnection)",
        ),
        (
            "test_trigger_tool_change",
            "Sends tools/list_changed to matching subscriptions",
        ),
        (
            "test_trigger_prompt_change",
            "Sends prompts/list_changed to matching subscriptions",
        ),
        (
            "test_missing_capability",
            "Requires the sampling client capability",
        ),
        (
            "test_streaming_elicitation",
            "Returns an input_required result with one elicitation",
        ),
        (
            "test_logging_tool",
            "Logs only when the request asked for a log level",
        ),
    ];
    let mut tools: Vec<Tool> = plain
        .into_iter()
        .map(|(name, description)| Tool::new(name, description, no_args()))
        .collect();
    tools.push(Tool::new(
        "test_sampling",
        "Requests LLM sampling from the client",
        object(json!({
            "type": "object",
            "properties": { "prompt": { "type": "string", "description": "The prompt to send" } },
            "required": ["prompt"]
        })),
    ));
    tools.push(Tool::new(
        "test_elicitation",
        "Requests user input from the client",
        object(json!({
            "type": "object",
            "properties": { "message": { "type": "string", "description": "The message to show" } },
            "required": ["message"]
        })),
    ));
    tools.push(Tool::new(
        "json_schema_2020_12_tool",
        "Takes arguments described with JSON Schema 2020-12 keywords",
        object(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "address",
                    "type": "object",
                    "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
                }
            },
            "properties": { "name": { "type": "string" }, "address": { "$ref": "#/$defs/address" } },
            "allOf": [{ "anyOf": [{ "required": ["name"] }, { "required": ["address"] }] }],
            "if": { "required": ["address"] },
            "then": { "properties": { "address": { "required": ["street"] } } },
            "else": { "required": ["name"] },
            "additionalProperties": false
        })),
    ));
    tools.push(custom_header_tool());
    tools
}

fn text(text: impl Into<String>) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into())
}

fn embedded(uri: &str, mime: &str, text: &str) -> ContentBlock {
    ContentBlock::resource(ResourceContents::TextResourceContents {
        uri: uri.into(),
        mime_type: Some(mime.into()),
        text: text.into(),
        meta: None,
    })
}

/// Runs the one-round tool `request.name`, or `None` when it is not one.
pub async fn call(
    request: &CallToolRequestParams,
    cx: &RequestContext<RoleServer>,
) -> Option<Result<CallToolResponse, ErrorData>> {
    let args = request.arguments.clone().unwrap_or_default();
    let arg = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
    Some(match request.name.as_ref() {
        "test_simple_text" => text("This is a simple text response for testing."),
        "test_image_content" => {
            Ok(CallToolResult::success(vec![ContentBlock::image(IMAGE_PNG, "image/png")]).into())
        }
        "test_audio_content" => Ok(CallToolResult::success(vec![ContentBlock::Audio(
            AudioContent::new(AUDIO_WAV, "audio/wav"),
        )])
        .into()),
        "test_embedded_resource" => Ok(CallToolResult::success(vec![embedded(
            "test://embedded-resource",
            "text/plain",
            "This is an embedded resource content.",
        )])
        .into()),
        "test_multiple_content_types" => Ok(CallToolResult::success(vec![
            ContentBlock::text("Multiple content types test:"),
            ContentBlock::image(IMAGE_PNG, "image/png"),
            embedded(
                "test://mixed-content-resource",
                "application/json",
                r#"{"test":"data","value":123}"#,
            ),
        ])
        .into()),
        "test_error_handling" => Ok(CallToolResult::error(vec![ContentBlock::text(
            "This tool intentionally returns an error for testing",
        )])
        .into()),
        "test_tool_with_logging" => {
            for message in [
                "Tool execution started",
                "Tool processing data",
                "Tool execution completed",
            ] {
                let note = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(message))
                    .with_logger("conformance-server");
                let _ = cx.peer.notify_logging_message(note).await;
                pause(50).await;
            }
            text("Logging test completed")
        }
        "test_tool_with_progress" => {
            let token = cx.meta.get_progress_token();
            for (progress, message) in [(0.0, "Starting"), (50.0, "Halfway"), (100.0, "Complete")] {
                if let Some(token) = &token {
                    let note = ProgressNotificationParam::new(token.clone(), progress)
                        .with_total(100.0)
                        .with_message(message);
                    let _ = cx.peer.notify_progress(note).await;
                }
                pause(50).await;
            }
            text("Progress test completed")
        }
        "test_sampling" => {
            let prompt = arg("prompt").unwrap_or_else(|| "Hello".into());
            let params =
                CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 100);
            match cx.peer.create_message(params).await {
                Ok(result) => {
                    let answer = result
                        .message
                        .content
                        .first()
                        .and_then(|c| c.as_text())
                        .map(|t| t.text.clone())
                        .unwrap_or_else(|| "No text response".into());
                    text(format!("LLM response: {answer}"))
                }
                Err(e) => tool_error(format!("Sampling error: {e}")),
            }
        }
        "test_elicitation" => {
            let message =
                arg("message").unwrap_or_else(|| "Please provide your information".into());
            let schema = json!({
                "type": "object",
                "properties": {
                    "username": { "type": "string", "description": "User's response" },
                    "email": { "type": "string", "description": "User's email address" }
                },
                "required": ["username", "email"]
            });
            elicit(cx, &message, schema, "User response").await
        }
        "test_elicitation_sep1034_defaults" => {
            let schema = json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "User's name", "default": "John Doe" },
                    "age": { "type": "integer", "description": "User's age", "default": 30 },
                    "score": { "type": "number", "description": "User's score", "default": 95.5 },
                    "status": {
                        "type": "string", "description": "User's status",
                        "enum": ["active", "inactive", "pending"], "default": "active"
                    },
                    "verified": { "type": "boolean", "description": "Whether user is verified", "default": true }
                }
            });
            let message = "Please provide values (all have defaults)";
            elicit(cx, message, schema, "Elicitation completed").await
        }
        "test_elicitation_sep1330_enums" => {
            let titled = |title: &str| {
                json!([
                    { "const": "value1", "title": format!("First {title}") },
                    { "const": "value2", "title": format!("Second {title}") },
                    { "const": "value3", "title": format!("Third {title}") }
                ])
            };
            let schema = json!({
                "type": "object",
                "properties": {
                    "untitledSingle": { "type": "string", "enum": ["option1", "option2", "option3"] },
                    "titledSingle": { "type": "string", "oneOf": titled("Option") },
                    "legacyEnum": {
                        "type": "string", "enum": ["opt1", "opt2", "opt3"],
                        "enumNames": ["Option One", "Option Two", "Option Three"]
                    },
                    "untitledMulti": {
                        "type": "array",
                        "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
                    },
                    "titledMulti": { "type": "array", "items": { "anyOf": titled("Choice") } }
                }
            });
            elicit(
                cx,
                "Test enum schema improvements",
                schema,
                "Enum elicitation completed",
            )
            .await
        }
        "json_schema_2020_12_tool" => text(format!(
            "Hello, {}!",
            arg("name").unwrap_or_else(|| "world".into())
        )),
        "test_reconnection" => {
            pause(100).await;
            text("Reconnection test completed")
        }
        "test_custom_header" => match arg("value") {
            Some(value) => text(value),
            None => Err(ErrorData::invalid_params("value must be a string", None)),
        },
        "test_missing_capability" => {
            let declared = cx.meta.client_capabilities().unwrap_or_default();
            if declared.sampling.is_none() {
                return Some(Err(ErrorData::missing_required_client_capability(
                    ClientCapabilities::builder().enable_sampling().build(),
                )));
            }
            text("Required capability declared")
        }
        "test_logging_tool" => {
            // 2026-07-28: no notifications/message unless the request set
            // `_meta["io.modelcontextprotocol/logLevel"]`.
            if let Some(level) = cx.meta.log_level() {
                let note =
                    LoggingMessageNotificationParam::new(level, json!("logLevel was requested"))
                        .with_logger("conformance-server");
                let _ = cx.peer.notify_logging_message(note).await;
            }
            text("Logging tool completed")
        }
        _ => return None,
    })
}

fn tool_error(message: String) -> Result<CallToolResponse, ErrorData> {
    Ok(CallToolResult::error(vec![ContentBlock::text(message)]).into())
}

/// A legacy-era `elicitation/create` round trip, its outcome as text.
async fn elicit(
    cx: &RequestContext<RoleServer>,
    message: &str,
    schema: Value,
    label: &str,
) -> Result<CallToolResponse, ErrorData> {
    let schema: ElicitationSchema = serde_json::from_value(schema)
        .map_err(|e| ErrorData::internal_error(format!("fixture schema: {e}"), None))?;
    let params = ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: message.into(),
        requested_schema: schema,
    };
    match cx.peer.create_elicitation(params).await {
        Ok(result) => {
            let action = serde_json::to_value(&result.action).unwrap_or(Value::Null);
            let content = result.content.unwrap_or(Value::Null);
            text(format!("{label}: action={action}, content={content}"))
        }
        Err(e) => tool_error(format!("Elicitation error: {e}")),
    }
}

async fn pause(ms: u64) {
    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
}
