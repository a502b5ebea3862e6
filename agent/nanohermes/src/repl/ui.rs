//! The interactive mode's `RunEvents`: the model's text streamed to stdout, one
//! line per tool call and the notices on stderr, a spinner on stderr while
//! the model or the tools are working. Colours and the spinner only when
//! stderr is a terminal, and no colour when `NO_COLOR` is set.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use nanohermes_core::events::{RunEvents, tool_line};
use nanohermes_core::policy::approval::{Answer, Prompter, TerminalPrompter};
use nanohermes_llm::ToolCall;

const DIM: &str = "\x1b[2m";
const YELLOW: &str = "\x1b[33m";
const RESET: &str = "\x1b[0m";
const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// What the terminal can take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    /// Colour escapes on stderr.
    pub colour: bool,
    /// A spinner on stderr while waiting.
    pub spinner: bool,
}

impl Style {
    /// From stderr and `NO_COLOR` (set and not empty: no colour).
    pub fn detect() -> Style {
        let tty = std::io::stderr().is_terminal();
        let no_colour = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            colour: tty && !no_colour,
            spinner: tty,
        }
    }

    fn paint(self, colour: &str, text: &str) -> String {
        if self.colour {
            format!("{colour}{text}{RESET}")
        } else {
            text.to_owned()
        }
    }
}

/// The spinner's state, shared with the thread that draws it.
#[derive(Debug, Default)]
struct Spin {
    running: bool,
    drawn: bool,
    /// A question is open: nothing is drawn over it.
    asking: bool,
}

impl Spin {
    /// Clears the spinner's line if a frame is on it.
    fn clear(&mut self) {
        if std::mem::take(&mut self.drawn) {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
        }
    }
}

/// Asks the approval question on the terminal with the spinner stopped
/// and its line cleared, so the question is readable and the answer is
/// typed on a line of its own; the spinner goes on after the answer.
#[derive(Debug)]
pub struct ReplPrompter {
    spin: Arc<Mutex<Spin>>,
}

impl Prompter for ReplPrompter {
    fn ask(&self, question: &str) -> Answer {
        {
            let mut spin = self.spin.lock().unwrap_or_else(|e| e.into_inner());
            spin.asking = true;
            spin.clear();
        }
        let answer = TerminalPrompter.ask(question);
        self.spin.lock().unwrap_or_else(|e| e.into_inner()).asking = false;
        answer
    }
}

/// The terminal `RunEvents` of the interactive mode.
#[derive(Debug)]
pub struct ReplUi {
    style: Style,
    spin: Arc<Mutex<Spin>>,
    spinner_thread: bool,
    /// Whether the last text written to stdout ended a line.
    mid_line: bool,
    /// Tool results were just shown: the next wait is for the model.
    after_tools: bool,
    /// Reasoning was shown last: the answer starts on a new line.
    thinking: bool,
}

impl ReplUi {
    /// A `RunEvents` for `style`.
    pub fn new(style: Style) -> ReplUi {
        ReplUi {
            style,
            spin: Arc::default(),
            spinner_thread: false,
            mid_line: false,
            after_tools: false,
            thinking: false,
        }
    }

    /// Shows the spinner until the next output (only on a terminal).
    pub fn wait(&mut self) {
        if !self.style.spinner {
            return;
        }
        if !self.spinner_thread {
            self.spinner_thread = true;
            spawn_spinner(Arc::downgrade(&self.spin));
        }
        self.spin.lock().unwrap_or_else(|e| e.into_inner()).running = true;
    }

    /// Hides the spinner, clearing its line.
    pub fn stop(&mut self) {
        let mut spin = self.spin.lock().unwrap_or_else(|e| e.into_inner());
        spin.running = false;
        spin.clear();
    }

    /// The prompter for approval questions, which stops this spinner
    /// while it asks.
    pub fn prompter(&self) -> ReplPrompter {
        ReplPrompter {
            spin: self.spin.clone(),
        }
    }

    /// Ends the current stdout line, if text left it open.
    pub fn finish_line(&mut self) {
        self.stop();
        if self.mid_line {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out);
            let _ = out.flush();
            self.mid_line = false;
        }
    }

    /// A line of a command's answer, on stdout.
    pub fn say(&mut self, text: &str) {
        self.finish_line();
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    }
}

/// Draws a frame every 100 ms while the spinner runs; ends with its `RunEvents`.
fn spawn_spinner(spin: Weak<Mutex<Spin>>) {
    std::thread::spawn(move || {
        let mut frame = 0;
        while let Some(spin) = spin.upgrade() {
            {
                let mut spin = spin.lock().unwrap_or_else(|e| e.into_inner());
                if spin.running && !spin.asking {
                    let mut err = std::io::stderr().lock();
                    let _ = write!(err, "\r{} working…", FRAMES[frame % FRAMES.len()]);
                    let _ = err.flush();
                    spin.drawn = true;
                    frame += 1;
                }
            }
            drop(spin);
            std::thread::sleep(Duration::from_millis(100));
        }
    });
}

impl RunEvents for ReplUi {
    fn text(&mut self, delta: &str) {
        self.stop();
        if std::mem::take(&mut self.thinking) {
            // The answer starts on its own line after the reasoning.
            self.finish_line();
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(delta.as_bytes());
        let _ = out.flush();
        if !delta.is_empty() {
            self.mid_line = !delta.ends_with('\n');
        }
    }

    /// Reasoning streams dimmed where the answer will follow.
    fn thinking(&mut self, delta: &str) {
        self.stop();
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(self.style.paint(DIM, delta).as_bytes());
        let _ = out.flush();
        if !delta.is_empty() {
            self.thinking = true;
            self.mid_line = !delta.ends_with('\n');
        }
    }

    fn tool_call(&mut self, call: &ToolCall, result: &str) {
        self.finish_line();
        let line = self.style.paint(DIM, &tool_line(call, result));
        let _ = writeln!(std::io::stderr().lock(), "{line}");
        self.after_tools = true;
    }

    fn notice(&mut self, line: &str) {
        self.finish_line();
        let line = self.style.paint(YELLOW, &format!("nanohermes: {line}"));
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }

    fn turn_end(&mut self) {
        self.finish_line();
    }

    fn step(&mut self, _step: usize, calls: &[ToolCall]) {
        // The tools run now; their lines come when all of them are done.
        if !calls.is_empty() {
            self.wait();
        }
    }

    fn checkpoint(&mut self, _messages: &nanohermes_core::transcript::Transcript) {
        // After a step's results the loop asks the model again.
        if std::mem::take(&mut self.after_tools) {
            self.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paint_only_when_colour_is_on() {
        let on = Style {
            colour: true,
            spinner: true,
        };
        let off = Style {
            colour: false,
            spinner: true,
        };
        assert_eq!(on.paint(DIM, "x"), "\x1b[2mx\x1b[0m");
        assert_eq!(off.paint(DIM, "x"), "x");
    }
}
