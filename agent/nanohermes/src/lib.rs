//! NanoHermes, the agent: an MCP client that runs a coding task against an
//! OpenAI-compatible model with the tools of MCP servers.
//!
//! A run is a loop ([`agent::Agent::run`]): send the history and the tool
//! declarations to the model ([`llm::Client::chat`]), run the tool calls it
//! answers with through the MCP hub ([`hub::Hub`], behind the
//! [`toolbox::ToolBox`] trait), append the results, repeat until the model
//! stops calling tools, is interrupted, or hits the iteration cap.
//!
//! Modules, one concern each:
//!
//! | module | owns |
//! |---|---|
//! | [`agent`] | the loop: four variables, three exits, the gates of `execute` |
//! | [`llm`] | chat completions: body, SSE, tool-call accumulation, retry, fallback |
//! | [`hub`] | MCP client side: start servers, merge and name tools, route calls |
//! | [`toolbox`] | the three-method contract between the loop and the tools |
//! | [`history`] | the message shapes the history is made of |
//! | [`compaction`] | the history past its budget, replaced by a summary |
//! | [`policy`] | the permission gate |
//! | [`recall`] | long-term memory: the recalled block, distillation |
//! | [`prompt`] | the system prompt: AGENTS.md layering, NANOHERMES.md, skills |
//! | [`usage`] | the token ledger |
//! | [`interrupt`] | the step-boundary interrupt flag |
//! | [`events`] | where text, tool lines and notices go |
//! | [`config`] | flags and environment, resolved |
//! | [`cli`] | the `nanohermes` commands and exit codes |
//! | [`repl`] | `nanohermes` alone: the interactive mode and its commands |
//! | [`serve`] | `nanohermes serve`: the agent as an MCP server (`run_task`) |
//! | [`session`] | session files: atomic, 0600, resumable |
//!
//! Invariants (each pinned by a test in `tests/it`):
//! - after every exit of a run (done, interrupted, iteration limit, model
//!   error) every assistant `tool_calls` entry is answered by exactly one
//!   `tool` message with its `tool_call_id`, in call order;
//! - a tool failure (unknown tool, refused by policy, invalid JSON
//!   arguments, server error, panic) is an `ERROR: …` result, never an
//!   aborted run;
//! - an interrupt takes effect only at the top of the loop;
//! - text reaches the screen once, even when a request is retried after
//!   partial output.

pub mod app;
pub mod cli;
pub mod config;
pub mod output;
pub mod repl;
pub mod serve;
