//! Starting an agent for `run` and the interactive mode, one way: the
//! model client built while the servers start, guidance, hooks, the hub
//! narrowed by the policy, the agent over the session's history.

use crate::agent::Agent;
use crate::config::Config;
use crate::hooks::{self, Hooks};
use crate::hub::Hub;
use crate::llm::Client;
use crate::policy::approval::Approvals;
use crate::prompt;
use crate::session::Opened;

/// An agent ready for its first task.
pub struct Started {
    /// The agent, its servers running.
    pub agent: Agent<Hub>,
    /// Servers that did not start, renamed tools, guidance problems: one
    /// line each, for the user.
    pub warnings: Vec<String>,
    /// The permission mode's name (what hooks and `stream-json` see).
    pub mode: &'static str,
}

/// Starts everything `config` names, continuing `opened`'s conversation
/// with today's system prompt.
pub async fn start_agent(config: Config, opened: &Opened) -> anyhow::Result<Started> {
    let settings = config.model.clone();
    // Building the TLS client reads the system's certificates: keep it off
    // the path of the server start-up.
    let client = tokio::task::spawn_blocking(move || Client::new(settings));
    // Guidance is read before the servers start: the skills it finds
    // become the `skill` meta-tool, which the policy then narrows like
    // any other tool.
    let guidance = prompt::load(&config.workspace, &config.guidance);
    // A bad matcher fails here, before any server starts.
    let mode = hooks::mode_name(config.rules.mode);
    let hooks = Hooks::new(&config.rules.hooks, &config.workspace, mode)?
        .with_sandbox(config.hub.sandbox.clone());
    let sandbox = mcp_tools::spawn::Sandbox::new(config.hub.sandbox.clone(), &config.workspace);
    // The first request waits this long for slow servers; the rest join,
    // deferred, at a later step.
    let hub_config = crate::hub::HubConfig {
        connect_wait: config
            .hub
            .connect_wait
            .or(Some(crate::hub::DEFAULT_CONNECT_WAIT)),
        skills: guidance.skills.clone(),
        offered: Some(config.agent.policy.clone()),
        ..config.hub
    };
    let mut hub = Hub::start(hub_config).await?;
    // A resumed session's found tools are declared from its first request.
    hub.surface(opened.file.surfaced.clone());
    let client = client.await??;
    // Said once at start when the kernel is known not to enforce the
    // sandbox (namespaces are found out by the first command, which says so).
    let sandbox_warning = sandbox.startup_warning();
    let connecting = hub.connecting();
    let warnings = hub
        .warnings()
        .iter()
        .chain(&guidance.warnings)
        .cloned()
        .chain(connecting.iter().map(|name| {
            format!("server {name} is still connecting; its tools join when it is ready")
        }))
        .chain(sandbox_warning)
        .collect();
    let mut system_prompt = prompt::system_prompt(&config.workspace, &guidance);
    prompt::add_deferred_line(&mut system_prompt, &hub.deferred_counts(), &connecting);
    let history = opened.file.messages.clone();
    // On a terminal the user answers the calls the policy asks about;
    // without one they are denied.
    let agent = Agent::resume(client, hub, &system_prompt, config.agent, history)
        .with_approvals(Approvals::terminal())
        .with_hooks(hooks)
        .with_compaction(config.compaction)
        .with_recall(config.memory);
    Ok(Started {
        agent,
        warnings,
        mode,
    })
}
