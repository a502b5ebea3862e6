//! `nanohermes run`.

use std::process::ExitCode;

use super::signals::watch_ctrl_c;
use super::{EXIT_INTERRUPTED, EXIT_ITERATION_LIMIT};
use crate::agent::{Agent, Outcome};
use crate::config::Config;
use crate::hooks::{self, Hooks};
use crate::hub::Hub;
use crate::llm::Client;
use crate::policy::approval::Approvals;
use crate::prompt;
use crate::ui::{TerminalUi, Ui};

/// `nanohermes run`: starts the servers and builds the HTTP client at the
/// same time, runs the loop, shuts the servers down.
pub async fn run(config: Config, task: &str) -> anyhow::Result<ExitCode> {
    let settings = config.model.clone();
    // Building the TLS client reads the system's certificates: keep it off
    // the path of the server start-up.
    let client = tokio::task::spawn_blocking(move || Client::new(settings));
    // Guidance is read before the servers start: the skills it finds
    // become the `skill` meta-tool, which the policy then narrows like
    // any other tool.
    let guidance = prompt::load(&config.workspace, &config.guidance);
    // A bad matcher fails here, before any server starts.
    let hooks = Hooks::new(
        &config.rules.hooks,
        &config.workspace,
        hooks::mode_name(config.rules.mode),
    )?;
    let hub = Hub::start(config.hub)
        .await?
        .with_skills(guidance.skills.clone())
        .offer_only(config.agent.policy.clone());
    let client = client.await??;

    let mut ui = TerminalUi::default();
    for warning in hub.warnings().iter().chain(&guidance.warnings) {
        ui.notice(warning);
    }
    let system_prompt = prompt::system_prompt(&config.workspace, &guidance);
    // On a terminal the user answers the calls the policy asks about;
    // without one they are denied.
    let mut agent = Agent::new(client, hub, &system_prompt, config.agent)
        .with_approvals(Approvals::terminal())
        .with_hooks(hooks);
    watch_ctrl_c(agent.interrupt());

    let result = agent.run(task, &mut ui).await;
    ui.finish_line();
    let usage = agent.usage();
    agent.into_tools().shutdown().await;

    let summary = result?;
    ui.notice(&format!("usage: {usage}"));
    Ok(match summary.outcome {
        Outcome::Done => ExitCode::SUCCESS,
        Outcome::IterationLimit => ExitCode::from(EXIT_ITERATION_LIMIT),
        Outcome::Interrupted => ExitCode::from(EXIT_INTERRUPTED),
    })
}
