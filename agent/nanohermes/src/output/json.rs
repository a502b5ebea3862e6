//! `--output-format json`: nothing on stdout until the run ends, then one
//! result object.

use std::io::Write;

use super::{ApiClock, RunReport, notice_to_stderr, result_event, write_line};
use nanohermes_core::events::{RunEvents, tool_line};
use nanohermes_llm::ToolCall;

/// Keeps stdout for the result object; tool lines and notices go to
/// stderr as in the text format. The final text is taken from the run's
/// summary, so streamed text is not kept here.
pub struct JsonUi {
    out: Box<dyn Write + Send>,
    clock: ApiClock,
}

impl JsonUi {
    /// Writes the result object to `out` (stdout in `nanohermes run`).
    pub fn new(out: Box<dyn Write + Send>) -> Self {
        JsonUi {
            out,
            clock: ApiClock::default(),
        }
    }

    /// Writes the result object.
    pub fn finish(&mut self, report: &RunReport) {
        let report = RunReport {
            duration_api: self.clock.total,
            ..report.clone()
        };
        write_line(&mut self.out, &result_event(&report));
    }
}

impl RunEvents for JsonUi {
    fn text(&mut self, _delta: &str) {}

    fn tool_call(&mut self, call: &ToolCall, result: &str) {
        let _ = writeln!(std::io::stderr().lock(), "{}", tool_line(call, result));
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
