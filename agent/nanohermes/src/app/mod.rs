//! The composition root: where a resolved configuration becomes running
//! parts. Every command loads the configuration one way ([`load`]);
//! `run` and the interactive mode start their servers and agent one way
//! ([`start_agent`]); and exactly one function, [`assemble`], turns a
//! resolved configuration into an [`Agent`], for `run`, the interactive
//! mode and each `serve` task alike, so a setting (compaction, memory
//! recall, hooks, the policy) cannot reach one of them and miss another.

mod setup;
mod start;

pub use setup::{Setup, load, trust};
pub use start::{Started, start_agent};

use nanohermes_core::agent::{Agent, AgentConfig, AgentParts};
use nanohermes_core::hooks::Hooks;
use nanohermes_core::interrupt::Interrupt;
use nanohermes_core::policy::approval::Approvals;
use nanohermes_core::toolbox::ToolBox;
use nanohermes_llm::Client;
use serde_json::Value;

use crate::config::{Config, Rules};

/// What differs between the ways an agent is started: its limits and
/// policy (a `serve` task may narrow them), who answers the calls the
/// policy asks about, what stops it, and its hooks.
pub struct RunParts {
    /// The iteration cap and the permission gate.
    pub agent: AgentConfig,
    /// A terminal, an MCP host, or nobody.
    pub approvals: Approvals,
    /// The stop flag a signal handler or an MCP cancellation sets.
    pub interrupt: Interrupt,
    /// The user's hooks, for this workspace and mode.
    pub hooks: Hooks,
    /// The session the run writes (empty when it keeps none): its id
    /// names the prompt cache key ([`prompt_cache_key`]).
    pub session_id: String,
}

/// The variable that hands a session's prompt cache key to its subagents.
pub const PROMPT_CACHE_KEY_VAR: &str = nanohermes_hub::PROMPT_CACHE_KEY_VAR;

/// The prompt cache key of a session, when the provider takes one
/// (`enabled`): the parent agent's, inherited through
/// [`PROMPT_CACHE_KEY_VAR`] (a subagent shares its session's cache), else
/// one named after the session, else (no session kept) one for this
/// process. Stable for the whole session, so every request of it is routed
/// to the same cache.
pub fn prompt_cache_key(enabled: bool, session_id: &str) -> Option<String> {
    if !enabled {
        return None;
    }
    let inherited = std::env::var(PROMPT_CACHE_KEY_VAR)
        .ok()
        .filter(|key| !key.trim().is_empty());
    Some(inherited.unwrap_or_else(|| {
        if session_id.is_empty() {
            format!("nanohermes-process-{}", std::process::id())
        } else {
            format!("nanohermes-{session_id}")
        }
    }))
}

/// A run's hooks: the rules' hook groups for `workspace`, their commands
/// in `sandbox` as the rules' mode runs it. A bad matcher is an error.
pub fn hooks(
    rules: &Rules,
    workspace: &std::path::Path,
    sandbox: &mcp_tools::spawn::SandboxPolicy,
) -> anyhow::Result<Hooks> {
    let mode = nanohermes_core::hooks::mode_name(rules.mode);
    Ok(Hooks::new(&rules.hooks, workspace, mode)?
        .with_sandbox(crate::config::sandbox_for_mode(sandbox.clone(), rules.mode)))
}

/// The one assembly of an agent: `tools` and `client` with the system
/// prompt and the earlier `history` (without its system message), the
/// configuration's compaction and memory recall, and `run`'s parts.
pub fn assemble<T: ToolBox>(
    config: &Config,
    client: Client,
    tools: T,
    system_prompt: &str,
    history: Vec<Value>,
    run: RunParts,
) -> Agent<T> {
    let parts = AgentParts {
        config: run.agent,
        interrupt: run.interrupt,
        approvals: run.approvals,
        hooks: run.hooks,
        compaction: config.compaction,
        recall: config.memory,
    };
    let key = prompt_cache_key(config.send_cache_key, &run.session_id);
    let client = client.with_cache_key(key);
    Agent::resume(client, tools, system_prompt, parts, history)
}
