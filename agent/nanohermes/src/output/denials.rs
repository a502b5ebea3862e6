//! The calls a run denied because nobody could approve them: a run
//! without a terminal cannot ask, and its calls that need a yes are
//! denied ([`nanohermes_core::policy::approval::UNANSWERED`]). Each is shown as an
//! error on its own tool line; at the end the run says how many there
//! were and which setting lets them run, so a scripted run that did
//! nothing does not pass for one that worked.

use serde_json::{Value, json};

use nanohermes_core::events::RunEvents;
use nanohermes_core::policy::Mode;
use nanohermes_core::policy::approval::{DENIED, is_unanswered};
use nanohermes_core::transcript::Transcript;
use nanohermes_llm::{ToolCall, Usage};

/// A `RunEvents` that notes the denied calls: those nobody could approve, and
/// those the user answered no.
pub struct Unanswered<U> {
    inner: U,
    tools: Vec<String>,
    denials: Vec<Value>,
}

impl<U: RunEvents> Unanswered<U> {
    /// Wraps `inner`.
    pub fn new(inner: U) -> Unanswered<U> {
        Unanswered {
            inner,
            tools: Vec::new(),
            denials: Vec::new(),
        }
    }

    /// Every denied call as Claude Code's result object lists it in
    /// `permission_denials`: `{tool_name, tool_use_id, tool_input}`.
    pub fn denials(&self) -> &[Value] {
        &self.denials
    }

    /// The tool of each call denied so far, in call order.
    pub fn tools(&self) -> &[String] {
        &self.tools
    }
}

impl<U: RunEvents> RunEvents for Unanswered<U> {
    fn text(&mut self, delta: &str) {
        self.inner.text(delta);
    }

    fn thinking(&mut self, delta: &str) {
        self.inner.thinking(delta);
    }

    fn tool_call(&mut self, call: &ToolCall, result: &str) {
        let unanswered = is_unanswered(result);
        if unanswered {
            self.tools.push(call.name.clone());
        }
        if unanswered || result == DENIED {
            let input = serde_json::from_str::<Value>(&call.arguments)
                .ok()
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({}));
            self.denials.push(json!({
                "tool_name": call.name,
                "tool_use_id": call.id,
                "tool_input": input,
            }));
        }
        self.inner.tool_call(call, result);
    }

    fn notice(&mut self, line: &str) {
        self.inner.notice(line);
    }

    fn turn_end(&mut self) {
        self.inner.turn_end();
    }

    fn usage(&mut self, usage: Option<Usage>) {
        self.inner.usage(usage);
    }

    fn step(&mut self, step: usize, calls: &[ToolCall]) {
        self.inner.step(step, calls);
    }

    fn checkpoint(&mut self, messages: &Transcript) {
        self.inner.checkpoint(messages);
    }

    fn settled(&mut self) {
        self.inner.settled();
    }
}

/// The run's closing line about its unanswered calls (`None` when there
/// were none): how many, which tools, and the settings that would have
/// let them run in `mode`. `file_edit` says whether a tool is one of the
/// built-in file tools (which `accept-edits` runs unasked).
pub fn advice(tools: &[String], mode: Mode, file_edit: impl Fn(&str) -> bool) -> Option<String> {
    if tools.is_empty() {
        return None;
    }
    let mut names: Vec<&str> = Vec::new();
    for tool in tools {
        if !names.contains(&tool.as_str()) {
            names.push(tool);
        }
    }
    let mut ways = Vec::new();
    if mode == Mode::Default && names.iter().any(|name| file_edit(name)) {
        ways.push("--mode accept-edits (file edits run unasked)".to_owned());
    }
    ways.push("--mode goal (every tool runs unasked; for unattended runs)".to_owned());
    if matches!(mode, Mode::Default | Mode::Debug) {
        ways.push("auto_approve = true in config.toml".to_owned());
    }
    let calls = if tools.len() == 1 {
        "call was"
    } else {
        "calls were"
    };
    Some(format!(
        "{} tool {calls} denied because nobody could approve them (no terminal to ask on): {}; to let such calls run, use {}",
        tools.len(),
        names.join(", "),
        ways.join(", or ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_advice_counts_names_each_tool_once_and_fits_the_mode() {
        let edits = |name: &str| name == "write_file";
        assert_eq!(advice(&[], Mode::Default, edits), None);
        let tools = [
            "write_file".to_owned(),
            "run_command".into(),
            "write_file".into(),
        ];
        let line = advice(&tools, Mode::Default, edits).unwrap();
        assert!(
            line.starts_with("3 tool calls were denied because nobody could approve them (no terminal to ask on): write_file, run_command; "),
            "{line}"
        );
        assert!(line.contains("--mode accept-edits") && line.contains("--mode goal"));
        assert!(line.contains("auto_approve = true"), "{line}");
        // accept-edits already runs edits and never auto-approves.
        let line = advice(&tools[1..2], Mode::AcceptEdits, edits).unwrap();
        assert!(line.starts_with("1 tool call was denied"), "{line}");
        assert!(
            !line.contains("accept-edits (") && !line.contains("auto_approve"),
            "{line}"
        );
    }
}
