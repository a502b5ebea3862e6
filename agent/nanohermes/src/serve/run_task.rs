//! The `run_task` tool: its arguments, its structured result and its
//! declaration. The doc comments here are what a host's model reads.

use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use nanohermes_core::usage::UsageLedger;

/// The tool's name.
pub const RUN_TASK: &str = "run_task";

/// Arguments of `run_task`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunTaskArgs {
    /// The coding task, in plain words.
    pub task: String,
    /// Directory to work in; must lie inside a root the server was started with (default: the first root).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// Model to ask instead of the configured one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Permission mode: plan (read-only), debug, default, accept-edits or goal (never asks); at most the server's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Most model round trips for this task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_iterations: Option<u32>,
    /// Continue this earlier conversation (the session_id a previous result returned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The model finished.
    Completed,
    /// Cancelled; stopped at a step boundary, the session kept.
    Interrupted,
    /// The iteration limit was reached first.
    IterationLimit,
    /// A model request failed, or the task could not start.
    Error,
}

/// Model usage of one task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub struct RunUsage {
    /// Model requests made.
    pub requests: u64,
    /// Input tokens (over requests whose server reported usage).
    pub prompt_tokens: u64,
    /// Output tokens (over requests whose server reported usage).
    pub completion_tokens: u64,
    /// Of the input, tokens the provider served from its prompt cache.
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    /// Of the input, tokens the provider wrote to its prompt cache.
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    /// Of the output, tokens spent reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl From<UsageLedger> for RunUsage {
    fn from(ledger: UsageLedger) -> Self {
        RunUsage {
            requests: ledger.requests,
            prompt_tokens: ledger.prompt_tokens,
            completion_tokens: ledger.completion_tokens,
            cache_read_input_tokens: ledger.cached_tokens,
            cache_creation_input_tokens: ledger.cache_write_tokens,
            reasoning_tokens: ledger.reasoning_tokens,
        }
    }
}

/// The structured result of `run_task`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub struct RunTaskOutput {
    /// How the task ended.
    pub status: RunStatus,
    /// The model's last text, or what went wrong.
    pub final_text: String,
    /// Model round trips made.
    pub iterations: u64,
    /// Tool calls the model made.
    pub tool_calls: u64,
    /// Model usage.
    pub usage: RunUsage,
    /// Pass as session_id to continue this conversation (empty if none was kept).
    pub session_id: String,
}

impl RunTaskOutput {
    /// A task that could not run, or whose model request failed.
    pub fn error(message: impl Into<String>, session_id: &str) -> RunTaskOutput {
        RunTaskOutput {
            status: RunStatus::Error,
            final_text: message.into(),
            iterations: 0,
            tool_calls: 0,
            usage: RunUsage::default(),
            session_id: session_id.to_owned(),
        }
    }
}

/// The declaration: input and output schemas from the types above, and
/// the annotations careful hosts ask on (it writes files and runs
/// commands, and reaches the model over the network).
pub fn tool() -> Tool {
    Tool::new(
        RUN_TASK,
        "Run a coding task with the NanoHermes agent in a workspace: it reads, edits, searches and runs commands until done, then returns its final answer. Pass session_id from an earlier result to continue that conversation.",
        Arc::new(rmcp::model::JsonObject::new()),
    )
    .with_input_schema::<RunTaskArgs>()
    .with_output_schema::<RunTaskOutput>()
    .with_title("Run a coding task")
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(true)
            .idempotent(false)
            .open_world(true),
    )
}
