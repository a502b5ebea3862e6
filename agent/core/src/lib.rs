//! The agent loop and everything it needs that is not MCP: a run sends the
//! history and the tool declarations to the model, runs the tool calls it
//! answers with through a [`toolbox::ToolBox`], appends the results, and
//! repeats until the model stops calling tools, is interrupted, or hits
//! the iteration cap ([`agent::Agent::run`]).
//!
//! This crate knows nothing of MCP: the MCP client (`nanohermes-hub`)
//! implements [`toolbox::ToolBox`], the three-method contract the loop
//! calls tools through. The tidy check (`cargo run -p xtask -- tidy`) keeps
//! `rmcp`, the hub and the tool servers out of its dependencies.
//!
//! | module | owns |
//! |---|---|
//! | [`agent`] | the loop: four variables, three exits, the gates of `execute` |
//! | [`parts`] | what an agent is made of: its bounds, gate and parts |
//! | [`toolbox`] | the contract between the loop and the tools |
//! | [`transcript`] | the history, each item encoded once |
//! | [`history`] | the message shapes the history is made of |
//! | [`compaction`] | the history past its budget, replaced by a summary |
//! | [`policy`] | the permission gate |
//! | [`hooks`] | the user's hook commands around tool calls and prompts |
//! | [`recall`] | long-term memory: the recalled block, distillation |
//! | [`prompt`] | the system prompt: AGENTS.md layering, NANOHERMES.md, skills |
//! | [`usage`] | the token ledger |
//! | [`interrupt`] | the step-boundary interrupt flag |
//! | [`events`] | the run-event sink: text, tool lines, notices, checkpoints |
//!
//! Invariants (each pinned by a test of the `nanohermes` binary):
//! - after every exit of a run (done, interrupted, iteration limit, model
//!   error) every assistant `tool_calls` entry is answered by exactly one
//!   `tool` message with its `tool_call_id`, in call order;
//! - a tool failure (unknown tool, refused by policy, invalid JSON
//!   arguments, server error, panic) is an `ERROR: …` result, never an
//!   aborted run;
//! - an interrupt takes effect only at the top of the loop;
//! - text reaches the screen once, even when a request is retried after
//!   partial output.

pub mod agent;
pub mod compaction;
pub mod events;
pub mod history;
pub mod hooks;
pub mod interrupt;
pub mod parts;
pub mod policy;
pub mod prompt;
pub mod recall;
pub mod toolbox;
pub mod transcript;
pub mod usage;
