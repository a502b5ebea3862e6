//! What `nanohermes run --output-format` prints: `text` (the model's text
//! on stdout, [`nanohermes_core::events::TerminalUi`]), `json` (one result object at the
//! end, [`JsonUi`]) or `stream-json` (one event per line in the shape
//! Claude Code's `--output-format stream-json` uses, [`StreamJsonUi`]).
//!
//! In the JSON formats stdout carries JSON only: notices and tool lines go
//! to stderr. The result object is the same in both: `type`, `subtype`
//! (`success`, `error_max_turns`, `error_during_execution`), `is_error`,
//! `status`, `result` (the final text, or the error), `session_id`,
//! `usage`, `num_turns`, `duration_ms`, `duration_api_ms`,
//! `permission_denials` (the denied calls, in Claude Code's shape).

mod denials;
mod json;
mod stream;

use std::io::Write;
use std::time::Duration;

use serde_json::{Value, json};

use nanohermes_core::agent::Outcome;
use nanohermes_core::events::{RunEvents, TerminalUi};
use nanohermes_core::usage::UsageLedger;
use nanohermes_llm::Usage;

pub use denials::{Unanswered, advice};
pub use json::JsonUi;
pub use stream::{InitInfo, StreamJsonUi};

/// The `--output-format` values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// The model's text on stdout, tool lines and notices on stderr.
    #[default]
    Text,
    /// One JSON object on stdout when the run ends.
    Json,
    /// One JSON event per line on stdout, as the run goes.
    StreamJson,
}

/// The UI of one `nanohermes run` in the chosen format.
pub enum RunOutput {
    /// `text`.
    Text(TerminalUi),
    /// `json`.
    Json(JsonUi),
    /// `stream-json`.
    StreamJson(StreamJsonUi),
}

impl RunOutput {
    /// The UI for `format`, writing to stdout; `model` names the model in
    /// `stream-json`'s assistant events.
    pub fn stdout(format: OutputFormat, model: &str, session_id: &str) -> Self {
        let out = || Box::new(std::io::stdout()) as Box<dyn Write + Send>;
        match format {
            OutputFormat::Text => RunOutput::Text(TerminalUi::default()),
            OutputFormat::Json => RunOutput::Json(JsonUi::new(out())),
            OutputFormat::StreamJson => {
                RunOutput::StreamJson(StreamJsonUi::new(out(), model, session_id))
            }
        }
    }

    /// The events go here.
    pub fn ui(&mut self) -> &mut dyn RunEvents {
        match self {
            RunOutput::Text(ui) => ui,
            RunOutput::Json(ui) => ui,
            RunOutput::StreamJson(ui) => ui,
        }
    }

    /// `stream-json`'s init event; nothing in the other formats.
    pub fn init(&mut self, info: impl FnOnce() -> InitInfo) {
        if let RunOutput::StreamJson(ui) = self {
            ui.init(&info());
        }
    }

    /// The run is over: the text format ends its line, the JSON formats
    /// write the result object.
    pub fn finish(&mut self, report: &RunReport) {
        match self {
            RunOutput::Text(ui) => ui.finish_line(),
            RunOutput::Json(ui) => ui.finish(report),
            RunOutput::StreamJson(ui) => ui.finish(report),
        }
    }
}

/// A run that failed before it started (the configuration, the
/// workspace, the session): in the JSON formats stdout still gets its
/// result object (`is_error: true`, `status: "error"`), so a wrapper that
/// parses stdout always finds one; the text format prints nothing here
/// (the error line goes to stderr as for every command).
pub fn failed_to_start(format: OutputFormat, error: &str, started: std::time::Instant) {
    if format == OutputFormat::Text {
        return;
    }
    let report = RunReport {
        ending: Ending::Failed(error.to_owned()),
        session_id: String::new(),
        usage: UsageLedger::default(),
        num_turns: 0,
        duration: started.elapsed(),
        duration_api: Duration::ZERO,
        permission_denials: Vec::new(),
        failure: None,
    };
    write_line(&mut std::io::stdout().lock(), &result_event(&report));
}

/// How a run ended, for the result object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// The loop reached one of its exits with this final text.
    Finished {
        /// Why it stopped.
        outcome: Outcome,
        /// The text of the last model turn.
        final_text: String,
    },
    /// A model request (or the start-up) failed with this message.
    Failed(String),
}

/// Everything the result object reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunReport {
    /// How the run ended.
    pub ending: Ending,
    /// The session's id (empty while the run keeps no session).
    pub session_id: String,
    /// Totals over every model request.
    pub usage: UsageLedger,
    /// Model round trips made.
    pub num_turns: usize,
    /// Wall time of the whole run.
    pub duration: Duration,
    /// Of that, the time spent waiting for model turns (filled in by the
    /// UI, which sees each request start and end).
    pub duration_api: Duration,
    /// The calls that were denied (nobody could approve them, or the
    /// user said no), as `{tool_name, tool_use_id, tool_input}`.
    pub permission_denials: Vec<Value>,
    /// Why a run the model finished still failed as a whole (every
    /// subagent call failed): the result is then an error.
    pub failure: Option<String>,
}

/// Adds up the time from each step's start to its model turn's end: the
/// step boundary ([`RunEvents::checkpoint`]) starts it, [`RunEvents::turn_end`] stops it.
#[derive(Debug, Default)]
struct ApiClock {
    since: Option<std::time::Instant>,
    total: Duration,
}

impl ApiClock {
    fn start(&mut self) {
        self.since = Some(std::time::Instant::now());
    }

    fn stop(&mut self) {
        if let Some(since) = self.since.take() {
            self.total += since.elapsed();
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The result object: the `json` format's only output and the
/// `stream-json` format's last line.
pub fn result_event(report: &RunReport) -> Value {
    let (subtype, status, is_error, result) = match &report.ending {
        Ending::Finished {
            outcome,
            final_text,
        } => match outcome {
            Outcome::Done => ("success", "done", false, final_text.clone()),
            Outcome::IterationLimit => (
                "error_max_turns",
                "iteration_limit",
                true,
                final_text.clone(),
            ),
            Outcome::Interrupted => (
                "error_during_execution",
                "interrupted",
                true,
                final_text.clone(),
            ),
        },
        Ending::Failed(error) => ("error_during_execution", "error", true, error.clone()),
    };
    // A finished run that failed as a whole (every delegation failed) is
    // an error, as its exit code is.
    let (subtype, status, is_error) = match &report.failure {
        Some(_) if !is_error => ("error_during_execution", "error", true),
        _ => (subtype, status, is_error),
    };
    let mut event = json!({
        "type": "result",
        "subtype": subtype,
        "is_error": is_error,
        "status": status,
        "result": result,
        "session_id": report.session_id,
        "usage": ledger_usage(&report.usage),
        "num_turns": report.num_turns,
        "duration_ms": millis(report.duration),
        "duration_api_ms": millis(report.duration_api),
        "permission_denials": report.permission_denials,
    });
    if let Some(failure) = &report.failure {
        event["error"] = Value::from(failure.as_str());
    }
    event
}

/// Totals in Claude Code's key names (`input_tokens` is the input neither
/// read from nor written to the cache; the three add up to the prompt),
/// plus the reasoning share of the output and how many requests they
/// cover (a request whose server reported no usage is unknown, not zero).
fn ledger_usage(ledger: &UsageLedger) -> Value {
    json!({
        "input_tokens": ledger.uncached_input_tokens(),
        "cache_read_input_tokens": ledger.cached_tokens,
        "cache_creation_input_tokens": ledger.cache_write_tokens,
        "output_tokens": ledger.completion_tokens,
        "reasoning_output_tokens": ledger.reasoning_tokens,
        "requests": ledger.requests,
        "requests_without_usage": ledger.requests_without_usage,
    })
}

/// One request's usage in Claude Code's key names (see [`ledger_usage`]).
fn request_usage(usage: Usage) -> Value {
    let mut ledger = UsageLedger::default();
    ledger.record(Some(usage));
    json!({
        "input_tokens": ledger.uncached_input_tokens(),
        "cache_read_input_tokens": usage.cached_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "output_tokens": usage.completion_tokens,
        "reasoning_output_tokens": usage.reasoning_tokens,
    })
}

/// Writes `value` as one line and flushes, so a reader sees each event
/// as it happens. A closed stdout is not the run's problem: ignored.
fn write_line(out: &mut dyn Write, value: &Value) {
    let _ = writeln!(out, "{value}");
    let _ = out.flush();
}

/// A notice on stderr, as the terminal UI writes it.
fn notice_to_stderr(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "nanohermes: {line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(ending: Ending) -> RunReport {
        RunReport {
            ending,
            session_id: String::new(),
            usage: UsageLedger {
                requests: 2,
                requests_without_usage: 1,
                prompt_tokens: 100,
                completion_tokens: 10,
                cached_tokens: 60,
                ..UsageLedger::default()
            },
            num_turns: 2,
            duration: Duration::from_millis(1234),
            duration_api: Duration::from_millis(1000),
            permission_denials: Vec::new(),
            failure: None,
        }
    }

    #[test]
    fn the_result_object_maps_each_ending_to_its_subtype() {
        let done = result_event(&report(Ending::Finished {
            outcome: Outcome::Done,
            final_text: "ok".into(),
        }));
        assert_eq!(
            done,
            json!({"type":"result","subtype":"success","is_error":false,"status":"done",
                   "result":"ok","session_id":"","num_turns":2,"duration_ms":1234,
                   "duration_api_ms":1000,"permission_denials":[],
                   "usage":{"input_tokens":40,"cache_read_input_tokens":60,
                            "cache_creation_input_tokens":0,"output_tokens":10,
                            "reasoning_output_tokens":0,"requests":2,
                            "requests_without_usage":1}})
        );
        let limit = result_event(&report(Ending::Finished {
            outcome: Outcome::IterationLimit,
            final_text: String::new(),
        }));
        assert_eq!(limit["subtype"], "error_max_turns");
        assert_eq!(limit["status"], "iteration_limit");
        assert_eq!(limit["is_error"], true);
        let interrupted = result_event(&report(Ending::Finished {
            outcome: Outcome::Interrupted,
            final_text: String::new(),
        }));
        assert_eq!(interrupted["subtype"], "error_during_execution");
        assert_eq!(interrupted["status"], "interrupted");
        let failed = result_event(&report(Ending::Failed("model said 401".into())));
        assert_eq!(failed["subtype"], "error_during_execution");
        assert_eq!(failed["status"], "error");
        assert_eq!(failed["result"], "model said 401");
    }
}
