//! What an agent is made of besides its model client and its tools: the
//! loop's bounds and gate ([`AgentConfig`]) and its parts ([`AgentParts`]),
//! filled in one place (the binary's composition root, `app::assemble`)
//! and handed to [`Agent::new`](crate::agent::Agent::new) whole.

use crate::compaction::CompactionConfig;
use crate::hooks::Hooks;
use crate::interrupt::Interrupt;
use crate::policy::Policy;
use crate::policy::approval::Approvals;

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
