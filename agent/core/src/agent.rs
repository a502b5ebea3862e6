//! The loop: send the history to the model, run the tools it calls, append
//! the results, repeat until it stops calling tools.
//!
//! [`Agent::run`] keeps the seed article's shape. Four variables
//! (`completed`, `interrupted`, `used_tools`, `final_text`), three exits
//! (done, interrupted, iteration limit), and one gate pipeline per call in
//! [`Agent::execute`]: the tool is known, the policy allows it, the
//! arguments are whole (not cut off by `max_tokens`) and a JSON object,
//! no PreToolUse hook vetoes it, then dispatch. Every failure inside a
//! call becomes an `ERROR: …` result for the model; only a failed model
//! request ends a run early. After every exit the history is valid: each
//! assistant `tool_calls` entry has a session-unique id, arguments that
//! are one JSON object, and is answered by one `tool` message, in call order.
//!
//! The rest are call points, each one line here and its body elsewhere:
//! long-term memory before the user message and after a completed turn
//! ([`crate::recall::Memory`]); compaction after the user message, after
//! each step's results and on a context-length refusal (then the request
//! is retried once) ([`crate::compaction::Compactor`]); hooks
//! ([`crate::hooks`]); checkpoints and notices ([`crate::events`]).

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use serde_json::Value;

use crate::compaction::Compactor;
use crate::events::{self, RunEvents};
use crate::history::{
    CallIds, assistant_message, cut_off_arguments, invalid_arguments, system_message, tool_message,
    user_message,
};
use crate::interrupt::Interrupt;
use crate::policy::{Verdict, protected};
use crate::recall::Memory;
use crate::toolbox::ToolBox;
use crate::transcript::Transcript;
use crate::usage::UsageLedger;
use nanohermes_llm::{AssistantTurn, Client, LlmError, ToolCall};

// What the interactive mode changes between runs: its only setters.
mod between_runs;

// The loop's inputs live in `parts` (filled by the composition root); they
// are named here too, where the loop that takes them is.
pub use crate::parts::{AgentConfig, AgentParts, DEFAULT_MAX_ITERATIONS};

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
    /// Tool calls the model made (each answered, run or refused).
    pub tool_calls: usize,
    /// The last model turn's finish reason (`stop`, `length`, `refusal`…),
    /// when the server gave one: how an editor tells a cut-off or refused
    /// answer from a finished one.
    pub finish_reason: Option<String>,
}

/// An agent: a model client, a tool box, its parts and the conversation
/// so far.
pub struct Agent<T> {
    client: Client,
    tools: T,
    parts: AgentParts,
    messages: Transcript,
    call_ids: CallIds,
    usage: UsageLedger,
}

impl<T: ToolBox> Agent<T> {
    /// A new conversation that starts with `system_prompt`.
    pub fn new(
        client: Client,
        tools: T,
        system_prompt: &str,
        parts: impl Into<AgentParts>,
    ) -> Self {
        Agent {
            client,
            tools,
            parts: parts.into(),
            messages: Transcript::new([system_message(system_prompt)]),
            call_ids: CallIds::default(),
            usage: UsageLedger::default(),
        }
    }

    /// Continues a conversation: `history` is an earlier run's messages
    /// without its system message (the prompt is rebuilt from the current
    /// configuration). Call ids already used stay taken.
    pub fn resume(
        client: Client,
        tools: T,
        system_prompt: &str,
        parts: impl Into<AgentParts>,
        history: Vec<Value>,
    ) -> Self {
        let mut agent = Agent::new(client, tools, system_prompt, parts);
        agent.call_ids.reserve(&history);
        agent.messages.extend(history);
        agent
    }

    /// The history, system message first.
    pub fn messages(&self) -> &[Value] {
        &self.messages
    }

    /// The history with its encodings and serial numbers (what sessions
    /// are written from).
    pub fn transcript(&self) -> &Transcript {
        &self.messages
    }

    /// Token usage over every request so far.
    pub fn usage(&self) -> UsageLedger {
        self.usage
    }

    /// The flag that stops the loop at its next step boundary.
    pub fn interrupt(&self) -> Interrupt {
        self.parts.interrupt.clone()
    }

    /// The tool box.
    pub fn tools(&self) -> &T {
        &self.tools
    }

    /// Gives the tool box back (to shut its servers down).
    pub fn into_tools(self) -> T {
        self.tools
    }

    /// Compaction's view of this agent ([`crate::compaction`]).
    fn compactor(&mut self) -> Compactor<'_> {
        Compactor {
            config: self.parts.compaction,
            client: &self.client,
            usage: &mut self.usage,
            history: &mut self.messages,
        }
    }

    /// Recall's view of this agent ([`crate::recall`]).
    fn memory(&mut self) -> Memory<'_, T> {
        Memory {
            enabled: self.parts.recall,
            tools: &self.tools,
            client: &self.client,
            policy: &self.parts.config.policy,
            usage: &mut self.usage,
            history: &mut self.messages,
        }
    }

    /// One model request with the current history. A context-length
    /// refusal compacts the history and retries once.
    async fn complete(&mut self, ui: &mut dyn RunEvents) -> Result<AssistantTurn, LlmError> {
        match self.request(ui).await {
            Err(error) if error.is_context_length() => {
                ui.notice(&format!(
                    "the history does not fit the model's context, compacting it: {error}"
                ));
                if self.compactor().compact_and_report(ui).await == 0 {
                    return Err(error);
                }
                self.request(ui).await
            }
            other => other,
        }
    }

    /// The history and the tool declarations, sent once; streamed text,
    /// retries and fallbacks go to `ui`.
    async fn request(&self, ui: &mut dyn RunEvents) -> Result<AssistantTurn, LlmError> {
        self.client
            .chat(
                (&self.messages).into(),
                self.tools.encoded_declarations(),
                &mut |event| events::report(ui, event),
            )
            .await
    }

    /// Runs one user task to one of the three exits. Fails only when a
    /// model request fails; the history is valid either way.
    pub async fn run(
        &mut self,
        task: &str,
        ui: &mut dyn RunEvents,
    ) -> Result<RunSummary, LlmError> {
        // SessionStart and UserPromptSubmit hooks may add to the prompt, or
        // block it (then the model is not asked).
        let task = match self.parts.hooks.before_prompt(task, ui).await {
            Ok(task) => task,
            Err(reason) => {
                ui.notice(&format!(
                    "the prompt was blocked by a UserPromptSubmit hook: {reason}"
                ));
                return Ok(RunSummary {
                    outcome: Outcome::Done,
                    final_text: String::new(),
                    iterations: 0,
                    used_tools: false,
                    tool_calls: 0,
                    finish_reason: None,
                });
            }
        };
        let recalled = self.memory().before_turn(&task, ui).await;
        self.messages
            .push(user_message(&crate::recall::with_recalled(recalled, &task)));
        // A resumed session may already be past the budget.
        self.compactor().compact_if_due(ui).await;
        ui.checkpoint(&self.messages);
        self.steps(ui).await
    }

    /// Continues the history as it stands, without a new user message:
    /// the run of a task whose process died, taken over from its last
    /// step boundary (where the history is valid by construction). A
    /// history that ends in an answer (an assistant message without tool
    /// calls) is already done and asks the model nothing.
    pub async fn continue_run(&mut self, ui: &mut dyn RunEvents) -> Result<RunSummary, LlmError> {
        if let Some(last) = self.messages.last()
            && last["role"] == "assistant"
            && last
                .get("tool_calls")
                .and_then(Value::as_array)
                .is_none_or(|calls| calls.is_empty())
        {
            return Ok(RunSummary {
                outcome: Outcome::Done,
                final_text: last["content"].as_str().unwrap_or_default().to_owned(),
                iterations: 0,
                used_tools: false,
                tool_calls: 0,
                finish_reason: None,
            });
        }
        self.compactor().compact_if_due(ui).await;
        self.steps(ui).await
    }

    /// The loop's steps from the history as it stands, to one of the
    /// three exits.
    async fn steps(&mut self, ui: &mut dyn RunEvents) -> Result<RunSummary, LlmError> {
        let mut completed = false;
        let mut interrupted = false;
        let mut used_tools = false;
        let mut final_text = String::new();
        let mut iterations = 0;
        let mut tool_calls = 0;
        let mut finish_reason = None;

        while iterations < self.parts.config.max_iterations {
            if self.parts.interrupt.take() {
                interrupted = true;
                break;
            }
            iterations += 1;
            // The step boundary: a server's changed tool list is applied
            // here, so the declarations sent are current.
            for notice in self.tools.refresh().await {
                ui.notice(&notice);
            }

            let mut turn = self.complete(ui).await?;
            self.call_ids.assign(&mut turn.tool_calls);
            ui.turn_end();
            self.usage.record(turn.usage);
            ui.usage(turn.usage);
            final_text.clone_from(&turn.content);
            finish_reason.clone_from(&turn.finish_reason);
            self.messages.push(assistant_message(&turn));
            ui.step(iterations, &turn.tool_calls);

            if turn.tool_calls.is_empty() {
                ui.checkpoint(&self.messages);
                // Anthropic paused a long turn: sending it back continues it.
                if turn.finish_reason.as_deref() == Some("pause_turn") {
                    continue;
                }
                completed = true;
                break;
            }
            used_tools = true;
            tool_calls += turn.tool_calls.len();

            let results = self.run_tool_calls(&turn).await;
            for (call, result) in turn.tool_calls.iter().zip(results) {
                ui.tool_call(call, &result);
                self.messages.push(tool_message(&call.id, &result));
            }
            // After the results: a whole step is what gets compacted.
            self.compactor().compact_if_due(ui).await;
            ui.checkpoint(&self.messages);
        }
        // An interrupt during the last allowed step still counts as one.
        if !completed && !interrupted && self.parts.interrupt.take() {
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
                self.parts.config.max_iterations
            ));
            Outcome::IterationLimit
        };
        ui.settled();
        if completed && used_tools {
            self.memory().after_turn(ui).await;
        }
        self.parts.hooks.after_run(ui).await;
        Ok(RunSummary {
            outcome,
            final_text,
            iterations,
            used_tools,
            tool_calls,
            finish_reason,
        })
    }

    /// Runs the calls of one turn: concurrently when there are several;
    /// results in call order whatever order they finish in.
    async fn run_tool_calls(&self, turn: &AssistantTurn) -> Vec<String> {
        let calls = &turn.tool_calls;
        match calls.as_slice() {
            [call] => vec![self.execute_guarded(call, turn.is_cut_off(0)).await],
            _ => {
                futures::future::join_all(
                    calls
                        .iter()
                        .enumerate()
                        .map(|(index, call)| self.execute_guarded(call, turn.is_cut_off(index))),
                )
                .await
            }
        }
    }

    /// [`Agent::execute`], with a panic turned into an `ERROR:` result.
    async fn execute_guarded(&self, call: &ToolCall, cut_off: bool) -> String {
        AssertUnwindSafe(self.execute(call, cut_off))
            .catch_unwind()
            .await
            .unwrap_or_else(|_| format!("ERROR: tool `{}` panicked", call.name))
    }

    /// The gates, in order: the tool is declared (listing is advertising,
    /// this is the gate), the policy allows it (or the user approves it,
    /// when the policy asks, and in every mode for a built-in file write to
    /// a protected path, which is then sent with the protected-write
    /// grant: [`protected`]), the arguments are whole
    /// (`cut_off` says the token budget ended the turn inside this call)
    /// and one JSON object, no PreToolUse hook vetoes it; then dispatch.
    /// Each refusal is an `ERROR: …` for the model.
    pub async fn execute(&self, call: &ToolCall, cut_off: bool) -> String {
        let Some(facts) = self.tools.facts(&call.name) else {
            return self.tools.unknown_tool(&call.name);
        };
        let verdict = self.parts.config.policy.check(&call.name, &facts);
        if let Verdict::Refuse(reason) = verdict {
            return format!("ERROR: {reason}");
        }
        // A write to a protected path is asked about whatever the mode.
        let protected = (!cut_off)
            .then(|| self.tools.protected_target(&facts, &call.arguments))
            .flatten();
        let approvals = &self.parts.approvals;
        if let Some(target) = &protected {
            let asked = protected::ask(approvals, &call.name, target, &call.arguments).await;
            if let Err(refusal) = asked {
                return refusal;
            }
        } else if verdict == Verdict::Ask && !approvals.approve(&call.name, &call.arguments).await {
            return approvals.denial().to_owned();
        }
        if cut_off {
            return cut_off_arguments(call, self.client.settings().body.max_tokens);
        }
        let arguments = match call.parse_arguments() {
            Ok(arguments) => arguments,
            Err(reason) => return invalid_arguments(call, &reason),
        };
        let grants = mcp_tools::CallGrants {
            protected_write: protected.is_some(),
            ..self.parts.config.policy.call_grants()
        };
        // PreToolUse may veto the call, PostToolUse annotate its result.
        self.parts
            .hooks
            .around_tool(call, &facts, arguments, |arguments| {
                self.tools.call_with(&call.name, arguments, grants)
            })
            .await
    }
}
