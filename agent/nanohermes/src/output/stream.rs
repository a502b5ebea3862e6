//! `--output-format stream-json`: one JSON object per line, in the shape
//! wrappers of Claude Code parse. An `init` event, then per model turn one
//! `assistant` event (its text and `tool_use` blocks, and that request's
//! usage as an increment), one `user` event per tool result, and the
//! result object last.

use std::io::Write;

use serde_json::{Map, Value, json};

use super::{ApiClock, RunReport, notice_to_stderr, request_usage, result_event, write_line};
use nanohermes_core::events::RunEvents;
use nanohermes_hub::{Hub, ServerState};
use nanohermes_llm::{ToolCall, Usage};

/// What the `init` event says about the run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InitInfo {
    /// The workspace root.
    pub cwd: String,
    /// The configured model.
    pub model: String,
    /// The permission mode's name.
    pub permission_mode: String,
    /// The tools the model is offered, by the names it calls them.
    pub tools: Vec<String>,
    /// The tools deferred behind `tool_search`, by the same names.
    pub deferred_tools: Vec<String>,
    /// Each configured server and its state: `connected`, `pending` (still
    /// connecting), `failed` or `disabled`.
    pub mcp_servers: Vec<(String, String)>,
}

impl InitInfo {
    /// The tools and servers of `hub`; the rest as given.
    pub fn from_hub(hub: &Hub, cwd: String, model: String, permission_mode: String) -> Self {
        let tools = hub
            .declarations()
            .iter()
            .filter_map(|d| d["function"]["name"].as_str().map(str::to_owned))
            .collect();
        let deferred_tools = hub.deferred().iter().map(|d| d.name.clone()).collect();
        let connecting = hub.connecting();
        let mcp_servers = hub
            .status()
            .into_iter()
            .map(|status| {
                let state = match status.state {
                    _ if connecting.contains(&status.name) => "pending",
                    ServerState::Running { .. } => "connected",
                    ServerState::Failed { .. } => "failed",
                    ServerState::Disabled => "disabled",
                };
                (status.name, state.to_owned())
            })
            .collect();
        InitInfo {
            cwd,
            model,
            permission_mode,
            tools,
            deferred_tools,
            mcp_servers,
        }
    }
}

/// Writes the events of a run as JSON lines; notices go to stderr.
pub struct StreamJsonUi {
    out: Box<dyn Write + Send>,
    session_id: String,
    model: String,
    /// The current turn's text so far (the client already dropped what a
    /// retry repeated).
    text: String,
    /// The current turn's reasoning so far.
    thinking: String,
    /// The current turn's usage, once its request ended.
    usage: Option<Usage>,
    /// Assistant events written, for their message ids.
    turns: usize,
    clock: ApiClock,
}

impl StreamJsonUi {
    /// Writes to `out` (stdout in `nanohermes run`); `session_id` is empty
    /// while the run keeps no session.
    pub fn new(out: Box<dyn Write + Send>, model: &str, session_id: &str) -> Self {
        StreamJsonUi {
            out,
            session_id: session_id.to_owned(),
            model: model.to_owned(),
            text: String::new(),
            thinking: String::new(),
            usage: None,
            turns: 0,
            clock: ApiClock::default(),
        }
    }

    /// The first line: `{"type":"system","subtype":"init",…}`.
    pub fn init(&mut self, info: &InitInfo) {
        let servers: Vec<Value> = info
            .mcp_servers
            .iter()
            .map(|(name, status)| json!({"name": name, "status": status}))
            .collect();
        let event = json!({
            "type": "system",
            "subtype": "init",
            "session_id": self.session_id,
            "cwd": info.cwd,
            "model": info.model,
            "permissionMode": info.permission_mode,
            "tools": info.tools,
            "deferred_tools": info.deferred_tools,
            "mcp_servers": servers,
        });
        write_line(&mut self.out, &event);
    }

    /// The last line: the result object.
    pub fn finish(&mut self, report: &RunReport) {
        let report = RunReport {
            duration_api: self.clock.total,
            ..report.clone()
        };
        write_line(&mut self.out, &result_event(&report));
    }
}

impl RunEvents for StreamJsonUi {
    fn text(&mut self, delta: &str) {
        self.text.push_str(delta);
    }

    fn thinking(&mut self, delta: &str) {
        self.thinking.push_str(delta);
    }

    fn usage(&mut self, usage: Option<Usage>) {
        self.usage = usage;
    }

    /// The turn is complete here, with its calls' final ids: one
    /// `assistant` event.
    fn step(&mut self, _step: usize, calls: &[ToolCall]) {
        self.turns += 1;
        let mut content = Vec::new();
        // Claude Code's shape: the reasoning is a `thinking` block before
        // the text, never part of it (nor of the result).
        let thinking = std::mem::take(&mut self.thinking);
        if !thinking.is_empty() {
            content.push(json!({"type": "thinking", "thinking": thinking}));
        }
        let text = std::mem::take(&mut self.text);
        if !text.is_empty() {
            content.push(json!({"type": "text", "text": text}));
        }
        for call in calls {
            // Arguments that are not one JSON object are recorded as `{}`,
            // as in the history; the call's result says what was wrong.
            let input = match serde_json::from_str::<Value>(&call.arguments) {
                Ok(Value::Object(map)) => Value::Object(map),
                _ => Value::Object(Map::new()),
            };
            content.push(json!({
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": input,
            }));
        }
        let mut message = json!({
            "id": format!("msg_{}", self.turns),
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" },
        });
        // Unknown usage is left out rather than reported as zero.
        if let Some(usage) = self.usage.take() {
            message["usage"] = request_usage(usage);
        }
        let event = json!({
            "type": "assistant",
            "message": message,
            "parent_tool_use_id": null,
            "session_id": self.session_id,
        });
        write_line(&mut self.out, &event);
    }

    fn tool_call(&mut self, call: &ToolCall, result: &str) {
        let event = json!({
            "type": "user",
            "message": {
                "role": "user",
                "content": [{
                    "type": "tool_result",
                    "tool_use_id": call.id,
                    "content": result,
                    "is_error": result.starts_with("ERROR: "),
                }],
            },
            "parent_tool_use_id": null,
            "session_id": self.session_id,
        });
        write_line(&mut self.out, &event);
    }

    fn turn_end(&mut self) {
        self.clock.stop();
    }

    fn checkpoint(&mut self, _messages: &nanohermes_core::transcript::Transcript) {
        self.clock.start();
    }

    fn notice(&mut self, line: &str) {
        notice_to_stderr(line);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// A writer the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn lines(buffer: &Shared) -> Vec<Value> {
        String::from_utf8(buffer.0.lock().unwrap().clone())
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn each_assistant_event_carries_only_its_own_requests_usage() {
        let buffer = Shared::default();
        let mut ui = StreamJsonUi::new(Box::new(buffer.clone()), "m", "s1");
        let call = ToolCall {
            id: "c1".into(),
            name: "list_dir".into(),
            arguments: "{}".into(),
        };
        ui.thinking("hm");
        ui.text("a");
        ui.turn_end();
        ui.usage(Some(Usage {
            prompt_tokens: 5,
            completion_tokens: 1,
            cached_tokens: 3,
            ..Usage::default()
        }));
        ui.step(1, std::slice::from_ref(&call));
        ui.tool_call(&call, "x");
        // The server reported nothing for the second request: no usage
        // key, rather than zeros or the first request's numbers.
        ui.text("b");
        ui.usage(None);
        ui.step(2, &[]);

        let events = lines(&buffer);
        assert_eq!(events.len(), 3);
        assert_eq!(
            events[0]["message"]["usage"],
            json!({"input_tokens":2,"cache_read_input_tokens":3,
                   "cache_creation_input_tokens":0,"output_tokens":1,
                   "reasoning_output_tokens":0})
        );
        assert_eq!(events[0]["session_id"], "s1");
        assert_eq!(
            events[0]["message"]["content"][0],
            json!({"type":"thinking","thinking":"hm"})
        );
        assert_eq!(events[0]["message"]["content"][1]["text"], "a");
        assert_eq!(events[1]["type"], "user");
        assert!(events[2]["message"].get("usage").is_none(), "{}", events[2]);
        assert_eq!(
            events[2]["message"]["content"],
            json!([{"type":"text","text":"b"}]),
            "the first turn's text is not repeated"
        );
        assert_eq!(events[2]["message"]["id"], "msg_2");
    }
}
