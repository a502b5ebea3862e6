//! The loop: send the history to the model, run the tools it calls, append
//! the results, repeat until it stops calling tools.
//!
//! [`Agent::run`] keeps the seed article's shape. Four variables
//! (`completed`, `interrupted`, `used_tools`, `final_text`), three exits
//! (done, interrupted, iteration limit), and one gate pipeline per call in
//! [`Agent::execute`]: the tool is known, the policy allows it, the
//! arguments are a JSON object, then dispatch. Every failure inside a call
//! becomes an `ERROR: …` result for the model; only a failed model request
//! ends a run early. After every exit the history is valid: each assistant
//! `tool_calls` entry is answered by one `tool` message, in call order.

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use serde_json::{Map, Value};

use crate::history::{assistant_message, system_message, tool_message, user_message};
use crate::interrupt::Interrupt;
use crate::llm::{ChatEvent, Client, LlmError, ToolCall};
use crate::policy::Policy;
use crate::toolbox::ToolBox;
use crate::ui::Ui;
use crate::usage::UsageLedger;

/// The default cap on model round trips per run.
pub const DEFAULT_MAX_ITERATIONS: usize = 40;

/// How a run is bounded and gated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentConfig {
    /// Model round trips per run (one request plus all its tool calls each).
    pub max_iterations: usize,
    /// The permission gate.
    pub policy: Policy,
}

impl Default for AgentConfig {
    /// 40 iterations, every known tool allowed.
    fn default() -> Self {
        AgentConfig {
            max_iterations: DEFAULT_MAX_ITERATIONS,
            policy: Policy::AllowAll,
        }
    }
}

/// Why a run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The model answered without calling tools.
    Done,
    /// An interrupt was taken at a step boundary.
    Interrupted,
    /// The iteration cap was reached with the model still calling tools.
    IterationLimit,
}

/// What a run produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSummary {
    /// Why it stopped.
    pub outcome: Outcome,
    /// The text of the last model turn (may be empty).
    pub final_text: String,
    /// Model round trips made.
    pub iterations: usize,
    /// Whether any tool ran.
    pub used_tools: bool,
}

/// An agent: a model client, a tool box and the conversation so far.
pub struct Agent<T> {
    client: Client,
    tools: T,
    config: AgentConfig,
    messages: Vec<Value>,
    usage: UsageLedger,
    interrupt: Interrupt,
}

impl<T: ToolBox> Agent<T> {
    /// A new conversation that starts with `system_prompt`.
    pub fn new(client: Client, tools: T, system_prompt: &str, config: AgentConfig) -> Self {
        Agent {
            client,
            tools,
            config,
            messages: vec![system_message(system_prompt)],
            usage: UsageLedger::default(),
            interrupt: Interrupt::default(),
        }
    }

    /// Uses `interrupt` as the stop flag (shared with a signal handler or an
    /// MCP cancellation), instead of a private one.
    pub fn with_interrupt(mut self, interrupt: Interrupt) -> Self {
        self.interrupt = interrupt;
        self
    }

    /// The history, system message first.
    pub fn messages(&self) -> &[Value] {
        &self.messages
    }

    /// Token usage over every request so far.
    pub fn usage(&self) -> UsageLedger {
        self.usage
    }

    /// The flag that stops the loop at its next step boundary.
    pub fn interrupt(&self) -> Interrupt {
        self.interrupt.clone()
    }

    /// The tool box.
    pub fn tools(&self) -> &T {
        &self.tools
    }

    /// Gives the tool box back (to shut its servers down).
    pub fn into_tools(self) -> T {
        self.tools
    }

    /// Runs one user task to one of the three exits. Fails only when a
    /// model request fails; the history is valid either way.
    pub async fn run(&mut self, task: &str, ui: &mut dyn Ui) -> Result<RunSummary, LlmError> {
        self.messages.push(user_message(task));

        let mut completed = false;
        let mut interrupted = false;
        let mut used_tools = false;
        let mut final_text = String::new();
        let mut iterations = 0;

        while iterations < self.config.max_iterations {
            if self.interrupt.take() {
                interrupted = true;
                break;
            }
            iterations += 1;

            let mut on_event = |event: ChatEvent<'_>| report(ui, event);
            let turn = self
                .client
                .chat(&self.messages, self.tools.declarations(), &mut on_event)
                .await?;
            ui.turn_end();
            self.usage.record(turn.usage);
            final_text.clone_from(&turn.content);
            self.messages.push(assistant_message(&turn));

            if turn.tool_calls.is_empty() {
                completed = true;
                break;
            }
            used_tools = true;

            let results = self.run_tool_calls(&turn.tool_calls).await;
            for (call, result) in turn.tool_calls.iter().zip(results) {
                ui.tool_call(call, &result);
                self.messages.push(tool_message(&call.id, &result));
            }
        }
        // An interrupt during the last allowed step still counts as one.
        if !completed && !interrupted && self.interrupt.take() {
            interrupted = true;
        }

        let outcome = if completed {
            Outcome::Done
        } else if interrupted {
            ui.notice("interrupted: stopped at a step boundary, the conversation was kept");
            Outcome::Interrupted
        } else {
            ui.notice(&format!(
                "reached the {} iteration limit without finishing",
                self.config.max_iterations
            ));
            Outcome::IterationLimit
        };
        Ok(RunSummary {
            outcome,
            final_text,
            iterations,
            used_tools,
        })
    }

    /// Runs the calls of one turn: concurrently when there are several;
    /// results in call order whatever order they finish in.
    async fn run_tool_calls(&self, calls: &[ToolCall]) -> Vec<String> {
        match calls {
            [call] => vec![self.execute_guarded(call).await],
            _ => {
                futures::future::join_all(calls.iter().map(|call| self.execute_guarded(call))).await
            }
        }
    }

    /// [`Agent::execute`], with a panic turned into an `ERROR:` result.
    async fn execute_guarded(&self, call: &ToolCall) -> String {
        AssertUnwindSafe(self.execute(call))
            .catch_unwind()
            .await
            .unwrap_or_else(|_| format!("ERROR: tool `{}` panicked", call.name))
    }

    /// The gates, in order: the tool is declared (listing is advertising,
    /// this is the gate), the policy allows it, the arguments are a JSON
    /// object; then dispatch. Each refusal is an `ERROR: …` for the model.
    pub async fn execute(&self, call: &ToolCall) -> String {
        let Some(facts) = self.tools.facts(&call.name) else {
            return format!(
                "ERROR: unknown tool `{}`; the available tools are: {}",
                call.name,
                self.tools.names().join(", ")
            );
        };
        if let Err(reason) = self.config.policy.check(&call.name, &facts) {
            return format!("ERROR: {reason}");
        }
        let arguments = match parse_arguments(&call.arguments) {
            Ok(arguments) => arguments,
            Err(reason) => {
                return format!(
                    "ERROR: invalid JSON arguments for `{}`: {reason}; send the arguments as one JSON object",
                    call.name
                );
            }
        };
        self.tools.call(&call.name, arguments).await
    }
}

/// Parses the model's argument text: empty means no arguments; anything
/// else must be a JSON object.
pub fn parse_arguments(text: &str) -> Result<Map<String, Value>, String> {
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!("expected an object, got {}", kind(&other))),
        Err(e) => Err(e.to_string()),
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn report(ui: &mut dyn Ui, event: ChatEvent<'_>) {
    match event {
        ChatEvent::Text(text) => ui.text(text),
        ChatEvent::Retry {
            attempt,
            max_retries,
            delay,
            error,
        } => {
            ui.notice(&format!(
                "retrying in {} ms (retry {attempt}/{max_retries}): {error}",
                delay.as_millis()
            ));
        }
        ChatEvent::Fallback { model, error } => {
            ui.notice(&format!(
                "trying the fallback model `{model}` once: {error}"
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compile-time check: a run can be spawned on a multi-threaded runtime
    /// (the `run_task` server will need it).
    #[allow(dead_code)]
    fn run_future_is_send(agent: &mut Agent<crate::hub::Hub>, ui: &mut crate::ui::TerminalUi) {
        fn assert_send<T: Send>(_: &T) {}
        assert_send(&agent.run("task", ui));
    }

    #[test]
    fn arguments_must_be_an_object_and_empty_means_none() {
        assert!(parse_arguments("  ").unwrap().is_empty());
        assert_eq!(parse_arguments(r#"{"a":1}"#).unwrap()["a"], 1);
        assert_eq!(
            parse_arguments("[1]").unwrap_err(),
            "expected an object, got an array"
        );
        assert!(parse_arguments(r#"{"a":"#).unwrap_err().contains("EOF"));
    }
}
