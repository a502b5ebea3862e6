//! The loop: send the history to the model, run the tools it calls, append
//! the results, repeat until it stops calling tools.
//!
//! [`Agent::run`] keeps the seed article's shape. Four variables
//! (`completed`, `interrupted`, `used_tools`, `final_text`), three exits
//! (done, interrupted, iteration limit), and one gate pipeline per call in
//! [`Agent::execute`]: the tool is known, the policy allows it, the
//! arguments are whole (not cut off by `max_tokens`) and a JSON object,
//! no PreToolUse hook vetoes it, then dispatch. Every failure inside a
//! call becomes an `ERROR: …` result for the model; only a failed model request ends a run early. After
//! every exit the history is valid: each assistant `tool_calls` entry has a
//! session-unique id, arguments that are one JSON object, and is answered
//! by one `tool` message, in call order.
//!
//! After the user message and after each step's results, a history past
//! its budget is compacted ([`crate::compaction`]): a whole step at a time,
//! so a call is never parted from its results. A context-length refusal
//! compacts too, and the request is retried once.
//!
//! With recall on ([`AgentParts::recall`]) and the memory server offered,
//! the memories matching the user's text are the system message's marked
//! block before the user message is added, and a completed turn that used
//! tools is distilled into new memories ([`crate::recall`]).

use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use serde_json::Value;

use crate::compaction::{self, CompactionConfig};
use crate::events::RunEvents;
use crate::history::{CallIds, assistant_message, system_message, tool_message, user_message};
use crate::hooks::Hooks;
use crate::interrupt::Interrupt;
use crate::policy::approval::Approvals;
use crate::policy::{Policy, Verdict, protected};
use crate::recall;
use crate::toolbox::ToolBox;
use crate::transcript::Transcript;
use crate::usage::UsageLedger;
use nanohermes_llm::{AssistantTurn, ChatEvent, Client, JsonList, LlmError, ToolCall};

/// How much of the model's invalid argument text its `ERROR:` result quotes.
const QUOTED_ARGUMENTS: usize = 2000;

/// The default cap on model round trips per run.
pub const DEFAULT_MAX_ITERATIONS: usize = 40;

/// How a run is bounded and gated.
#[derive(Debug, Clone, PartialEq, Eq)]
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
            policy: Policy::allow_all(),
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
    /// Tool calls the model made (each answered, run or refused).
    pub tool_calls: usize,
}

/// An agent: a model client, a tool box and the conversation so far.
pub struct Agent<T> {
    client: Client,
    tools: T,
    config: AgentConfig,
    messages: Transcript,
    call_ids: CallIds,
    usage: UsageLedger,
    interrupt: Interrupt,
    hooks: Hooks,
    approvals: Approvals,
    compaction: CompactionConfig,
    recall: bool,
}

/// What an agent is made of besides its model client and its tools: one
/// struct, filled in one place (the binary's composition root), so no way
/// of starting an agent can leave a part out.
pub struct AgentParts {
    /// The iteration cap and the permission gate.
    pub config: AgentConfig,
    /// The stop flag, shared with a signal handler or an MCP cancellation.
    pub interrupt: Interrupt,
    /// Who answers the calls the policy asks about (nobody: denied).
    pub approvals: Approvals,
    /// The user's hooks around prompts, tool calls and the end of a run.
    pub hooks: Hooks,
    /// When the history is compacted (by default past 120 000 characters
    /// and more than 11 messages, keeping the last 10).
    pub compaction: CompactionConfig,
    /// Searches long-term memory before each user message and distils
    /// completed turns that used tools into new memories, when the
    /// built-in memory server is offered.
    pub recall: bool,
}

impl Default for AgentParts {
    /// The default configuration, a private stop flag, nobody to ask, no
    /// hooks, default compaction, no recall.
    fn default() -> Self {
        AgentConfig::default().into()
    }
}

impl From<AgentConfig> for AgentParts {
    fn from(config: AgentConfig) -> Self {
        AgentParts {
            config,
            interrupt: Interrupt::default(),
            approvals: Approvals::denying(),
            hooks: Hooks::default(),
            compaction: CompactionConfig::default(),
            recall: false,
        }
    }
}

impl<T: ToolBox> Agent<T> {
    /// A new conversation that starts with `system_prompt`.
    pub fn new(
        client: Client,
        tools: T,
        system_prompt: &str,
        parts: impl Into<AgentParts>,
    ) -> Self {
        let parts = parts.into();
        Agent {
            client,
            tools,
            config: parts.config,
            messages: Transcript::new([system_message(system_prompt)]),
            call_ids: CallIds::default(),
            usage: UsageLedger::default(),
            interrupt: parts.interrupt,
            hooks: parts.hooks,
            approvals: parts.approvals,
            compaction: parts.compaction,
            recall: parts.recall,
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

    /// The memory server's tools, when recall is on and they are offered.
    fn memory_tools(&self) -> Option<recall::MemoryTools> {
        self.recall
            .then(|| recall::memory_tools(&self.tools))
            .flatten()
    }

    /// The recalled-memories block of the system message, replaced with
    /// the hits for `query` (removed when there are none).
    async fn recall_memories(&mut self, query: &str, ui: &mut dyn RunEvents) {
        let Some(names) = self.memory_tools() else {
            return;
        };
        if let Err(error) =
            recall::refresh_block(&self.tools, &names, &mut self.messages, query).await
        {
            ui.notice(&format!("searching long-term memory failed: {error}"));
        }
    }

    /// Distils the last turn into at most three new memories, when the
    /// policy lets `memory_save` run unasked.
    async fn distil_memories(&mut self, ui: &mut dyn RunEvents) {
        let Some(names) = self.memory_tools() else {
            return;
        };
        let allowed = names.save.as_deref().is_some_and(|save| {
            self.tools
                .facts(save)
                .is_some_and(|facts| self.config.policy.check(save, &facts) == Verdict::Run)
        });
        if !allowed {
            return;
        }
        match recall::distil(&self.client, &self.tools, &names, &self.messages).await {
            Ok(done) => {
                self.usage.record(done.usage);
                if done.saved + done.known > 0 {
                    ui.notice(&format!(
                        "long-term memory: {} saved, {} already known",
                        done.saved, done.known
                    ));
                }
            }
            Err(error) => ui.notice(&format!("distilling memories failed: {error}")),
        }
    }

    /// Compacts now, whatever the size (`/compact`): everything between the
    /// system message and the last `keep_messages` becomes one summary.
    /// Returns how many messages were replaced (0 when there was nothing
    /// to replace).
    pub async fn compact(&mut self) -> usize {
        let Some(cut) = compaction::cut_point(&self.messages, self.compaction.keep_messages) else {
            return 0;
        };
        let request =
            compaction::summary_request(&self.messages[1..cut], self.compaction.threshold_chars);
        // One request without tools; its text is not shown and a failure
        // only costs the summary.
        let summary = match self
            .client
            .chat((&request).into(), JsonList::Values(&[]), &mut |_| {})
            .await
        {
            Ok(turn) => {
                self.usage.record(turn.usage);
                Some(turn.content)
            }
            Err(_) => None,
        };
        let replacement = compaction::summary_message(summary.as_deref());
        self.messages.splice(1..cut, vec![replacement]).len()
    }

    /// Compacts when the history is past its limits, and says so.
    async fn compact_if_due(&mut self, ui: &mut dyn RunEvents) {
        if self
            .compaction
            .is_due_at(self.messages.len(), self.messages.encoded_len())
        {
            self.compact_and_report(ui).await;
        }
    }

    async fn compact_and_report(&mut self, ui: &mut dyn RunEvents) -> usize {
        let dropped = self.compact().await;
        if dropped > 0 {
            let how = if compaction::is_compaction_message(&self.messages[1])
                && self.messages[1]["content"] != compaction::OMISSION_NOTE
            {
                "a summary"
            } else {
                "an omission note (the summary request failed)"
            };
            ui.notice(&format!(
                "compacted the history: {dropped} earlier messages replaced by {how}"
            ));
        }
        dropped
    }

    /// One model request with the current history. A context-length
    /// refusal compacts the history and retries once.
    async fn complete(&mut self, ui: &mut dyn RunEvents) -> Result<AssistantTurn, LlmError> {
        let first = {
            let mut on_event = |event: ChatEvent<'_>| report(ui, event);
            self.client
                .chat(
                    (&self.messages).into(),
                    self.tools.encoded_declarations(),
                    &mut on_event,
                )
                .await
        };
        match first {
            Err(error) if error.is_context_length() => {
                ui.notice(&format!(
                    "the history does not fit the model's context, compacting it: {error}"
                ));
                if self.compact_and_report(ui).await == 0 {
                    return Err(error);
                }
                let mut on_event = |event: ChatEvent<'_>| report(ui, event);
                self.client
                    .chat(
                        (&self.messages).into(),
                        self.tools.encoded_declarations(),
                        &mut on_event,
                    )
                    .await
            }
            other => other,
        }
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
    pub async fn run(
        &mut self,
        task: &str,
        ui: &mut dyn RunEvents,
    ) -> Result<RunSummary, LlmError> {
        // SessionStart and UserPromptSubmit hooks may add to the prompt, or
        // block it (then the model is not asked).
        let task = match self.hooks.before_prompt(task, ui).await {
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
                });
            }
        };
        self.recall_memories(&task, ui).await;
        self.messages.push(user_message(&task));
        // A resumed session may already be past the budget.
        self.compact_if_due(ui).await;
        ui.checkpoint(&self.messages);

        let mut completed = false;
        let mut interrupted = false;
        let mut used_tools = false;
        let mut final_text = String::new();
        let mut iterations = 0;
        let mut tool_calls = 0;

        while iterations < self.config.max_iterations {
            if self.interrupt.take() {
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
            self.messages.push(assistant_message(&turn));
            ui.step(iterations, &turn.tool_calls);

            if turn.tool_calls.is_empty() {
                ui.checkpoint(&self.messages);
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
            self.compact_if_due(ui).await;
            ui.checkpoint(&self.messages);
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
        ui.settled();
        if completed && used_tools {
            self.distil_memories(ui).await;
        }
        self.hooks.after_run(ui).await;
        Ok(RunSummary {
            outcome,
            final_text,
            iterations,
            used_tools,
            tool_calls,
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

    /// What the policy grants every call: in Plan and Debug the built-in
    /// servers run commands in the read-only sandbox, whatever sandbox
    /// they were started with (a shared `serve` hub, `/mode plan`).
    fn grants(&self) -> mcp_tools::CallGrants {
        mcp_tools::CallGrants {
            read_only_sandbox: matches!(
                self.config.policy.mode(),
                crate::policy::Mode::Plan | crate::policy::Mode::Debug
            ),
            protected_write: false,
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
        let verdict = self.config.policy.check(&call.name, &facts);
        if let Verdict::Refuse(reason) = verdict {
            return format!("ERROR: {reason}");
        }
        // A write to a protected path is asked about whatever the mode.
        let protected = (!cut_off)
            .then(|| self.tools.protected_target(&facts, &call.arguments))
            .flatten();
        if let Some(target) = &protected {
            if !self.approvals.can_ask() {
                return protected::nobody_to_ask(&call.name, target);
            }
            let question = protected::question(&call.name, target, &call.arguments);
            if !self.approvals.approve_once(&call.name, question).await {
                return protected::declined(target);
            }
        } else if verdict == Verdict::Ask
            && !self.approvals.approve(&call.name, &call.arguments).await
        {
            return self.approvals.denial().to_owned();
        }
        if cut_off {
            return format!(
                "ERROR: your call to `{}` was cut off at the max_tokens limit ({} tokens) after {} bytes of arguments, so it was not run; write it in smaller parts, one shorter call at a time",
                call.name,
                self.client.settings().body.max_tokens,
                call.arguments.len()
            );
        }
        let arguments = match call.parse_arguments() {
            Ok(arguments) => arguments,
            Err(reason) => return invalid_arguments(call, &reason),
        };
        let grants = mcp_tools::CallGrants {
            protected_write: protected.is_some(),
            ..self.grants()
        };
        // PreToolUse may veto the call, PostToolUse annotate its result.
        self.hooks
            .around_tool(call, &facts, arguments, |arguments| {
                self.tools.call_with(&call.name, arguments, grants)
            })
            .await
    }
}

/// What the interactive mode does to the conversation between runs.
impl<T: ToolBox> Agent<T> {
    /// Removes the last user turn and everything after it (`/undo`): the
    /// history is valid again, as it was before that turn. A compaction
    /// summary is not a turn and stays. Returns how many messages went, or
    /// `None` when there is no turn to remove (none yet, or compacted).
    pub fn undo(&mut self) -> Option<usize> {
        let start = self
            .messages
            .iter()
            .enumerate()
            .skip(1)
            .rev()
            .find(|(_, m)| m["role"] == "user" && !compaction::is_compaction_message(m))
            .map(|(index, _)| index)?;
        Some(self.messages.truncate_from(start))
    }

    /// Starts over (`/reset`): only the system message stays. Returns how
    /// many messages went. Usage and used call ids are kept.
    pub fn reset(&mut self) -> usize {
        self.messages.truncate_from(1)
    }

    /// Puts a new permission gate in place (`/mode`) for the next call.
    pub fn set_policy(&mut self, policy: Policy) {
        self.config.policy = policy;
    }

    /// The tool box, to change what it offers.
    pub fn tools_mut(&mut self) -> &mut T {
        &mut self.tools
    }
}

/// The result for arguments that are not one JSON object. The raw text
/// appears here only (clamped): the history records `{}` for the call.
fn invalid_arguments(call: &ToolCall, reason: &str) -> String {
    format!(
        "ERROR: invalid JSON arguments for `{}`: {reason}; the call was not run. You sent (the history keeps {{}} instead):\n{}\nResend the call with the arguments as one JSON object",
        call.name,
        mcp_tools::clamp::clamp(&call.arguments, QUOTED_ARGUMENTS)
    )
}

fn report(ui: &mut dyn RunEvents, event: ChatEvent<'_>) {
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

    #[test]
    fn the_invalid_arguments_result_quotes_the_raw_text_clamped() {
        let call = ToolCall {
            id: "a".into(),
            name: "write_file".into(),
            arguments: format!("{{\"content\": \"{}", "x".repeat(10_000)),
        };
        let reason = call.parse_arguments().unwrap_err();
        let result = invalid_arguments(&call, &reason);
        assert!(
            result.starts_with(
                "ERROR: invalid JSON arguments for `write_file`: the JSON ends too early"
            ),
            "{result}"
        );
        assert!(result.contains("You sent (the history keeps {} instead):\n{\"content\": \"xxx"));
        assert!(result.contains("more bytes omitted]"), "{result}");
        assert!(result.len() < QUOTED_ARGUMENTS + 500, "{}", result.len());
        assert!(result.ends_with("\nResend the call with the arguments as one JSON object"));
    }
}
