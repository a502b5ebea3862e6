//! `nanohermes run`.

use std::process::ExitCode;
use std::time::Instant;

use super::signals::watch_ctrl_c;
use super::{EXIT_INTERRUPTED, EXIT_ITERATION_LIMIT};
use crate::app::{Started, start_agent};
use crate::config::Config;
use crate::output::{Ending, InitInfo, OutputFormat, RunOutput, RunReport, Unanswered, advice};
use nanohermes_core::agent::{Outcome, RunSummary};
use nanohermes_core::policy::approval::Approvals;
use nanohermes_core::usage::UsageLedger;
use nanohermes_session::{self as session, Keeper, Opened, SessionArgs};

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
    let opened = match session::open(session, &config.workspace) {
        Ok(opened) => opened,
        Err(error) => {
            crate::output::failed_to_start(format, &error, started);
            return Err(anyhow::Error::msg(error));
        }
    };
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
        permission_denials: Vec::new(),
        failure: None,
    };
    let mut denied = None;
    let result = run_loop(
        config,
        task,
        &opened,
        &mut output,
        (
            &mut report.usage,
            &mut denied,
            &mut report.permission_denials,
        ),
    )
    .await;
    report.duration = started.elapsed();
    match result {
        Ok((summary, subagents)) => {
            report.num_turns = summary.iterations;
            let outcome = summary.outcome;
            report.ending = Ending::Finished {
                outcome,
                final_text: summary.final_text,
            };
            // Every delegation failed: the answer stands, but the run is
            // not a success (a script must see it; the cause is usually a
            // setup problem every later run repeats).
            let undelegated = subagents.all_failed_notice();
            report.failure = undelegated.clone();
            output.finish(&report);
            if let Some(denied) = &denied {
                output.ui().notice(denied);
            }
            output.ui().notice(&format!("usage: {}", report.usage));
            if let Some(hint) = opened.resume_hint() {
                output.ui().notice(&hint);
            }
            if let Some(notice) = &undelegated {
                output.ui().notice(notice);
            }
            Ok(match outcome {
                Outcome::Done if undelegated.is_some() => ExitCode::FAILURE,
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

/// Everything between start-up and shut-down, and how the subagent calls
/// went; `usage` is filled in whether or not the loop failed, `denied`
/// with the line about calls nobody could approve, when there were some,
/// and `denials` with every denied call.
async fn run_loop(
    config: Config,
    task: &str,
    opened: &Opened,
    output: &mut RunOutput,
    (usage, denied, denials): (
        &mut UsageLedger,
        &mut Option<String>,
        &mut Vec<serde_json::Value>,
    ),
) -> anyhow::Result<(RunSummary, nanohermes_hub::SubagentTally)> {
    let rules_mode = config.rules.mode;
    let (workspace, model) = (
        config.workspace.display().to_string(),
        config.model.model.clone(),
    );
    let Started {
        mut agent,
        warnings,
        mode,
    } = start_agent(config, opened, Approvals::terminal()).await?;
    output.init(|| InitInfo::from_hub(agent.tools(), workspace, model, mode.to_owned()));
    let ui = output.ui();
    for warning in &warnings {
        ui.notice(warning);
    }
    watch_ctrl_c(agent.interrupt());

    let mut ui = Keeper::new(Unanswered::new(ui), opened);
    let surfaced = agent.tools().surfaced();
    ui.keep_surfaced(Box::new(move || surfaced.names()));
    let result = agent.run(task, &mut ui).await;
    *usage = agent.usage();
    let subagents = agent.tools().subagent_tally();
    *denials = ui.inner().denials().to_vec();
    *denied = advice(ui.inner().tools(), rules_mode, |name| {
        agent
            .tools()
            .tool(name)
            .is_some_and(|t| t.facts().is_file_edit())
    });
    agent.into_tools().shutdown().await;
    Ok((result?, subagents))
}
