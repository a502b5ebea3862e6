//! `nanohermes run`.

use std::process::ExitCode;
use std::time::Instant;

use super::signals::watch_ctrl_c;
use super::{EXIT_INTERRUPTED, EXIT_ITERATION_LIMIT};
use crate::agent::{Agent, Outcome, RunSummary};
use crate::config::Config;
use crate::hooks::{self, Hooks};
use crate::hub::Hub;
use crate::llm::Client;
use crate::output::{Ending, InitInfo, OutputFormat, RunOutput, RunReport};
use crate::policy::approval::Approvals;
use crate::prompt;
use crate::session::{self, Keeper, Opened, SessionArgs};
use crate::usage::UsageLedger;

/// `nanohermes run`: starts the servers and builds the HTTP client at the
/// same time, runs the loop, shuts the servers down. In the JSON formats
/// a failure still ends stdout with a result object (`is_error: true`);
/// the exit codes are the same in every format.
pub async fn run(
    config: Config,
    task: &str,
    format: OutputFormat,
    session: &SessionArgs,
) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    // The session is opened first: its id goes into every output format.
    let opened = session::open(session, &config.workspace).map_err(anyhow::Error::msg)?;
    let session_id = opened.file.id.clone();
    let mut output = RunOutput::stdout(format, &config.model.model, &session_id);
    if let Some(warning) = &opened.warning {
        output.ui().notice(warning);
    }
    let mut report = RunReport {
        ending: Ending::Failed(String::new()),
        session_id,
        usage: UsageLedger::default(),
        num_turns: 0,
        duration: Default::default(),
        duration_api: Default::default(),
    };
    let result = run_loop(config, task, &opened, &mut output, &mut report.usage).await;
    report.duration = started.elapsed();
    match result {
        Ok(summary) => {
            report.num_turns = summary.iterations;
            let outcome = summary.outcome;
            report.ending = Ending::Finished {
                outcome,
                final_text: summary.final_text,
            };
            output.finish(&report);
            output.ui().notice(&format!("usage: {}", report.usage));
            output.ui().notice(&format!(
                "session {} kept: continue it with --resume {}",
                report.session_id, report.session_id
            ));
            Ok(match outcome {
                Outcome::Done => ExitCode::SUCCESS,
                Outcome::IterationLimit => ExitCode::from(EXIT_ITERATION_LIMIT),
                Outcome::Interrupted => ExitCode::from(EXIT_INTERRUPTED),
            })
        }
        Err(error) => {
            report.ending = Ending::Failed(format!("{error:#}"));
            output.finish(&report);
            Err(error)
        }
    }
}

/// Everything between start-up and shut-down; `usage` is filled in
/// whether or not the loop failed.
async fn run_loop(
    config: Config,
    task: &str,
    opened: &Opened,
    output: &mut RunOutput,
    usage: &mut UsageLedger,
) -> anyhow::Result<RunSummary> {
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
    let hooks = Hooks::new(&config.rules.hooks, &config.workspace, mode)?;
    let hub = Hub::start(config.hub)
        .await?
        .with_skills(guidance.skills.clone())
        .offer_only(config.agent.policy.clone());
    let client = client.await??;

    output.init(|| {
        InitInfo::from_hub(
            &hub,
            config.workspace.display().to_string(),
            config.model.model.clone(),
            mode.to_owned(),
        )
    });
    let ui = output.ui();
    for warning in hub.warnings().iter().chain(&guidance.warnings) {
        ui.notice(warning);
    }
    let system_prompt = prompt::system_prompt(&config.workspace, &guidance);
    // On a terminal the user answers the calls the policy asks about;
    // without one they are denied.
    // A continued session gets the system prompt of today's config.
    let history = opened.file.messages.clone();
    let mut agent = Agent::resume(client, hub, &system_prompt, config.agent, history)
        .with_approvals(Approvals::terminal())
        .with_hooks(hooks)
        .with_compaction(config.compaction)
        .with_recall(config.memory);
    watch_ctrl_c(agent.interrupt());

    let mut ui = Keeper::new(ui, opened);
    let result = agent.run(task, &mut ui).await;
    *usage = agent.usage();
    agent.into_tools().shutdown().await;
    Ok(result?)
}
