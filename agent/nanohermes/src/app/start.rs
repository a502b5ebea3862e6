//! Starting an agent for `run` and the interactive mode, one way: the
//! model client built while the servers start, guidance, hooks, the hub
//! narrowed by the policy, the agent over the session's history.

use nanohermes_core::agent::Agent;
use nanohermes_core::hooks;
use nanohermes_core::interrupt::Interrupt;
use nanohermes_core::policy::approval::Approvals;
use nanohermes_core::prompt;
use nanohermes_hub::Hub;
use nanohermes_llm::Client;
use nanohermes_session::Opened;

use super::{RunParts, assemble};
use crate::config::Config;

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
/// with today's system prompt; `approvals` answers the calls the policy
/// asks about.
pub async fn start_agent(
    config: Config,
    opened: &Opened,
    approvals: Approvals,
) -> anyhow::Result<Started> {
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
    let hooks = super::hooks(&config.rules, &config.workspace, &config.hub.sandbox)?;
    let sandbox = mcp_tools::spawn::Sandbox::new(config.hub.sandbox.clone(), &config.workspace);
    // The first request waits this long for slow servers; the rest join,
    // deferred, at a later step.
    // A NanoHermes subagent shares this session's prompt cache key.
    let mut subagent_model = config.hub.subagent_model.clone();
    if let Some(model) = &mut subagent_model {
        model.prompt_cache_key = super::prompt_cache_key(config.send_cache_key, &opened.file.id);
    }
    let hub_config = nanohermes_hub::HubConfig {
        subagent_model,
        connect_wait: config
            .hub
            .connect_wait
            .or(Some(nanohermes_hub::DEFAULT_CONNECT_WAIT)),
        skills: guidance.skills.clone(),
        offered: Some(config.agent.policy.clone()),
        ..config.hub.clone()
    };
    let mut hub = Hub::start(hub_config).await?;
    // A resumed session's found tools are declared from its first request.
    hub.surface(opened.file.surfaced.clone());
    let client = client.await??;
    // Said once at start when the kernel is known not to enforce the
    // sandbox (namespaces are found out by the first command, which says so).
    let sandbox_warning = sandbox.startup_warning();
    // Which way out commands have, when they have one.
    let network_line = network_line(sandbox.policy());
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
        .chain(network_line)
        .collect();
    let mut system_prompt = prompt::system_prompt(&config.workspace, &guidance);
    prompt::add_deferred_line(&mut system_prompt, &hub.deferred_counts(), &connecting);
    let history = opened.file.messages.clone();
    let run = RunParts {
        agent: config.agent.clone(),
        approvals,
        interrupt: Interrupt::default(),
        hooks,
        session_id: opened.file.id.clone(),
    };
    let agent = assemble(&config, client, hub, &system_prompt, history, run);
    Ok(Started {
        agent,
        warnings,
        mode,
    })
}

/// The start-of-run line naming the commands' network when it is not off:
/// the allowlist and its domains, or the whole network.
fn network_line(policy: &mcp_tools::spawn::SandboxPolicy) -> Option<String> {
    if policy.mode == mcp_tools::spawn::SandboxMode::DangerFullAccess {
        return None;
    }
    if let Some(list) = policy.proxied() {
        let entries = list.domains.entries();
        return Some(format!(
            "sandbox: network {}: commands reach only {} through a local proxy; \
             any other host is refused",
            policy.network_mode(),
            if entries.is_empty() {
                "nothing (sandbox_allowed_domains is empty)".to_owned()
            } else {
                entries.join(", ")
            }
        ));
    }
    policy
        .network
        .then(|| "sandbox: network on: commands reach any host (sandbox_network = true)".to_owned())
}
