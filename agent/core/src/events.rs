//! Where the loop reports what happens: streamed text, one line per tool
//! call, notices, usage, step boundaries, and the checkpoints where the
//! history is valid (a session keeper writes its file there, so this sink
//! is also how sessions are saved). The terminal implementation writes the model's text to
//! stdout and everything else to stderr, so `nanohermes run … > answer.txt`
//! keeps only the answer.

use std::io::Write;

use serde_json::Value;

use crate::transcript::Transcript;
use nanohermes_llm::{ChatEvent, ToolCall, Usage};

/// Receives the events of a run.
pub trait RunEvents: Send {
    /// A piece of the model's text, as it streams.
    fn text(&mut self, delta: &str);
    /// A piece of the model's reasoning, as it streams: shown apart from
    /// the answer (dimmed, or as `thinking` events), never counted in it.
    fn thinking(&mut self, _delta: &str) {}
    /// A tool call finished with `result` (reported in call order).
    fn tool_call(&mut self, call: &ToolCall, result: &str);
    /// A one-line notice: retries, fallbacks, warnings.
    fn notice(&mut self, line: &str);
    /// The model's turn is complete (its text, if any, has been shown).
    fn turn_end(&mut self) {}
    /// One model request's token usage (`None` when the server reported
    /// none), reported as an increment after its turn ends and before
    /// [`RunEvents::step`].
    fn usage(&mut self, _usage: Option<Usage>) {}
    /// Step `step` (1-based) is about to run `calls` (empty when the model
    /// answered without tools). `nanohermes serve` turns this into one
    /// `notifications/progress`.
    fn step(&mut self, _step: usize, _calls: &[ToolCall]) {}
    /// A step boundary: `messages` (system message first) is a valid
    /// history here, every call answered. Where sessions are kept, this is
    /// where they are written.
    fn checkpoint(&mut self, _messages: &Transcript) {}
    /// The run is over (done, interrupted or at its iteration limit): what
    /// the checkpoints wrote for a killed process must now survive a
    /// crash too (sessions are fsynced here, not at every step).
    fn settled(&mut self) {}
}

/// A borrowed `RunEvents` is a `RunEvents` (so decorators such as the session keeper
/// can wrap whichever one a command picked).
impl<U: RunEvents + ?Sized> RunEvents for &mut U {
    fn text(&mut self, delta: &str) {
        (**self).text(delta);
    }
    fn thinking(&mut self, delta: &str) {
        (**self).thinking(delta);
    }
    fn tool_call(&mut self, call: &ToolCall, result: &str) {
        (**self).tool_call(call, result);
    }
    fn notice(&mut self, line: &str) {
        (**self).notice(line);
    }
    fn turn_end(&mut self) {
        (**self).turn_end();
    }
    fn usage(&mut self, usage: Option<Usage>) {
        (**self).usage(usage);
    }
    fn step(&mut self, step: usize, calls: &[ToolCall]) {
        (**self).step(step, calls);
    }
    fn checkpoint(&mut self, messages: &Transcript) {
        (**self).checkpoint(messages);
    }
    fn settled(&mut self) {
        (**self).settled();
    }
}

/// Passes one event of a model request on to `events`: streamed text as
/// text, a retry or a fallback as a notice.
pub fn report(events: &mut dyn RunEvents, event: ChatEvent<'_>) {
    match event {
        ChatEvent::Text(text) => events.text(text),
        ChatEvent::Reasoning(text) => events.thinking(text),
        ChatEvent::Retry {
            attempt,
            max_retries,
            delay,
            error,
        } => {
            events.notice(&format!(
                "retrying in {} ms (retry {attempt}/{max_retries}): {error}",
                delay.as_millis()
            ));
        }
        ChatEvent::Fallback { model, error } => {
            events.notice(&format!(
                "trying the fallback model `{model}` once: {error}"
            ));
        }
    }
}

/// Text to stdout; reasoning (dimmed on a terminal), tool lines and
/// notices to stderr.
#[derive(Debug, Default)]
pub struct TerminalUi {
    /// Whether the last text written to stdout ended a line.
    mid_line: bool,
    /// Whether the last reasoning written to stderr ended a line.
    thinking_mid_line: bool,
}

impl TerminalUi {
    /// Ends the current stdout line, if text left it open.
    pub fn finish_line(&mut self) {
        if self.thinking_mid_line {
            let _ = writeln!(std::io::stderr().lock());
            self.thinking_mid_line = false;
        }
        if self.mid_line {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out);
            let _ = out.flush();
            self.mid_line = false;
        }
    }
}

impl RunEvents for TerminalUi {
    fn text(&mut self, delta: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(delta.as_bytes());
        let _ = out.flush();
        self.mid_line = !delta.ends_with('\n');
    }

    fn thinking(&mut self, delta: &str) {
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(dimmed(delta, std::io::IsTerminal::is_terminal(&err)).as_bytes());
        let _ = err.flush();
        self.thinking_mid_line = !delta.ends_with('\n');
    }

    fn tool_call(&mut self, call: &ToolCall, result: &str) {
        self.finish_line();
        let _ = writeln!(std::io::stderr().lock(), "{}", tool_line(call, result));
    }

    fn notice(&mut self, line: &str) {
        self.finish_line();
        let _ = writeln!(std::io::stderr().lock(), "nanohermes: {line}");
    }

    fn turn_end(&mut self) {
        self.finish_line();
    }
}

/// `text` in the terminal's dim style when `terminal`, else as it is.
pub fn dimmed(text: &str, terminal: bool) -> std::borrow::Cow<'_, str> {
    if terminal {
        format!("\x1b[2m{text}\x1b[0m").into()
    } else {
        text.into()
    }
}

/// One line for a finished tool call: name, compact arguments, outcome.
pub fn tool_line(call: &ToolCall, result: &str) -> String {
    let arguments = serde_json::from_str::<Value>(&call.arguments)
        .map(|v| v.to_string())
        .unwrap_or_else(|_| call.arguments.replace('\n', " "));
    let outcome = match result.strip_prefix("ERROR: ") {
        Some(error) => format!("ERROR: {}", first_line(error)),
        None => format!("ok ({} bytes)", result.len()),
    };
    format!(
        "tool {} {} -> {}",
        call.name,
        shorten(&arguments, 120),
        outcome
    )
}

fn first_line(text: &str) -> String {
    shorten(text.lines().next().unwrap_or_default(), 160)
}

fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let end = mcp_tools::clamp::floor_char_boundary(text, max);
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_line_shows_name_arguments_and_outcome_on_one_line() {
        let call = ToolCall {
            id: "a".into(),
            name: "read_file".into(),
            arguments: "{\"path\": \"a.rs\"}".into(),
        };
        assert_eq!(
            tool_line(&call, "fn main() {}\n"),
            r#"tool read_file {"path":"a.rs"} -> ok (13 bytes)"#
        );
        assert_eq!(
            tool_line(&call, "ERROR: no such file: a.rs\nmore"),
            r#"tool read_file {"path":"a.rs"} -> ERROR: no such file: a.rs"#
        );
    }
}
