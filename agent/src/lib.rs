//! NanoHermes, the agent: an MCP client that runs a coding task against an
//! OpenAI-compatible model with the tools of MCP servers.
//!
//! (The module map and contract are written as the agent-loop issue lands.)

pub mod hub;
pub mod llm;
