//! `--agent`: the fixture poses as an MCP agent (a server offering
//! `run_task`, as `nanohermes serve` does), for the subagent tests.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};
use serde::Deserialize;

use super::Fixture;

#[derive(Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub(crate) struct RunTaskArgs {
    /// The task, in plain words.
    task: String,
}

#[tool_router(router = agent_router, vis = "pub(crate)")]
impl Fixture {
    /// Hand the fixture agent a whole task; it answers what it was asked
    /// and how deep it runs (NANOHERMES_AGENT_DEPTH).
    #[tool(annotations(destructive_hint = true, open_world_hint = true))]
    async fn run_task(&self, Parameters(args): Parameters<RunTaskArgs>) -> String {
        let depth = std::env::var("NANOHERMES_AGENT_DEPTH").unwrap_or_else(|_| "(unset)".into());
        format!("fixture agent did: {} (depth {depth})", args.task)
    }
}
