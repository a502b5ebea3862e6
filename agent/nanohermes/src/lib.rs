//! NanoHermes, the binary: the commands (`cli`), the one composition root
//! (`app`), the interactive mode (`repl`), the output formats (`output`)
//! and the agent as an MCP server (`serve`).
//!
//! The layers below are crates of their own, and the compiler holds the
//! edges between them (`cargo run -p xtask -- tidy` checks them from
//! `cargo metadata`): `nanohermes-llm` (the model wire), `nanohermes-config`
//! (files, trust, paths), `nanohermes-core` (the loop, behind the `ToolBox`
//! trait), `nanohermes-session` (session files), `nanohermes-builtins` (the
//! seven tool servers, hosted) and `nanohermes-hub` (the MCP client, which
//! implements `ToolBox`).
//!
//! | module | owns |
//! |---|---|
//! | [`acp`] | `nanohermes acp`: the agent in an editor (Agent Client Protocol) |
//! | [`app`] | loading the configuration, starting servers, assembling an agent |
//! | [`cli`] | the `nanohermes` commands and exit codes |
//! | [`config`] | flags and environment, resolved into one [`config::Config`] |
//! | [`repl`] | `nanohermes` alone: the interactive mode and its commands |
//! | [`output`] | text, `json` and `stream-json` output of `run` |
//! | [`serve`] | `nanohermes serve`: the agent as an MCP server (`run_task`) |

pub mod acp;
pub mod app;
pub mod cli;
pub mod config;
pub mod output;
pub mod repl;
pub mod serve;
