//! The command line: `nanohermes run "TASK"` and `nanohermes tools`.
//!
//! Exit codes: 0 when the model finished, 1 on an error (one line on
//! stderr, no backtrace), 2 on a usage error, 3 when the iteration limit was
//! reached, 130 when interrupted.

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::agent::{Agent, Outcome};
use crate::config::{Config, Options};
use crate::hub::Hub;
use crate::interrupt::Interrupt;
use crate::llm::Client;
use crate::prompt::system_prompt;
use crate::ui::{TerminalUi, Ui};

/// Exit code when the iteration limit ends a run.
pub const EXIT_ITERATION_LIMIT: u8 = 3;
/// Exit code when Ctrl-C ends a run.
pub const EXIT_INTERRUPTED: u8 = 130;

/// `nanohermes`: an MCP-native terminal coding agent.
#[derive(Debug, Parser)]
#[command(name = "nanohermes", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Settings shared by every command.
    #[command(flatten)]
    pub options: Options,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one task to completion: the model's text on stdout, one line per tool call on stderr.
    Run {
        /// The task, in plain words (several words are joined with spaces).
        #[arg(required = true, value_name = "TASK")]
        task: Vec<String>,
    },
    /// List the tools the model would see, with their server and whether they are read-only.
    Tools,
}

/// The variable the model's API key is read from; no child ever gets it.
pub const API_KEY_VAR: &str = "OPENAI_API_KEY";

/// The whole program: parse, run, map the outcome to an exit code. Every
/// exit path ends every process the agent started
/// ([`mcp_tools::spawn::kill_all_spawned`]): here after the run, in the
/// second Ctrl-C's handler, and on SIGTERM or SIGHUP.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    // Before anything is spawned: no child may receive the model's key,
    // whatever policy it is started with.
    mcp_tools::spawn::withhold(API_KEY_VAR);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return fail(&anyhow::anyhow!("cannot start the async runtime: {e}")),
    };
    let api_key = std::env::var(API_KEY_VAR).ok();
    let outcome = runtime.block_on(async move {
        watch_terminate();
        match cli.command {
            Command::Run { task } => {
                let config = Config::resolve(&cli.options, api_key, true)?;
                run(config, &task.join(" ")).await
            }
            Command::Tools => tools(Config::resolve(&cli.options, api_key, false)?).await,
        }
    });
    // Do not wait for blocking tasks a tool may have left behind.
    runtime.shutdown_background();
    // The hub shut its servers down; this catches whatever outlived them
    // (a background task, a daemon an external server left).
    mcp_tools::spawn::kill_all_spawned();
    outcome.unwrap_or_else(|e| fail(&e))
}

/// `nanohermes run`: starts the servers and builds the HTTP client at the
/// same time, runs the loop, shuts the servers down.
pub async fn run(config: Config, task: &str) -> anyhow::Result<ExitCode> {
    let settings = config.model.clone();
    // Building the TLS client reads the system's certificates: keep it off
    // the path of the server start-up.
    let client = tokio::task::spawn_blocking(move || Client::new(settings));
    let hub = Hub::start(config.hub)
        .await?
        .offer_only(config.agent.policy);
    let client = client.await??;

    let mut ui = TerminalUi::default();
    for warning in hub.warnings() {
        ui.notice(warning);
    }
    let mut agent = Agent::new(client, hub, &system_prompt(&config.workspace), config.agent);
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

/// `nanohermes tools`: the merged tool list, one tool per line: the tools
/// the model would be offered under the current policy (`--read-only`).
pub async fn tools(config: Config) -> anyhow::Result<ExitCode> {
    let policy = config.agent.policy;
    let hub = Hub::start(config.hub).await?;
    let mut ui = TerminalUi::default();
    for warning in hub.warnings() {
        ui.notice(warning);
    }
    let rows: Vec<[&str; 3]> = hub
        .tools()
        .iter()
        .filter(|t| policy.allows(&t.facts()))
        .map(|t| {
            [
                t.name.as_str(),
                t.server.as_str(),
                if t.read_only { "yes" } else { "no" },
            ]
        })
        .collect();
    let table = tool_table(&rows);
    let mut out = std::io::stdout().lock();
    let written = out.write_all(table.as_bytes()).and_then(|()| out.flush());
    drop(out);
    hub.shutdown().await;
    written?;
    Ok(ExitCode::SUCCESS)
}

/// Left-aligned columns under a `TOOL SERVER READ-ONLY` header.
fn tool_table(rows: &[[&str; 3]]) -> String {
    let header = ["TOOL", "SERVER", "READ-ONLY"];
    let width = |column: usize| {
        rows.iter()
            .map(|r| r[column].len())
            .chain([header[column].len()])
            .max()
            .unwrap_or(0)
    };
    let (name_width, server_width) = (width(0), width(1));
    std::iter::once(header)
        .chain(rows.iter().copied())
        .map(|[name, server, read_only]| {
            format!("{name:name_width$}  {server:server_width$}  {read_only}\n")
        })
        .collect()
}

/// First Ctrl-C: stop at the next step boundary. Second: quit now.
///
/// The handler is registered before this returns, so a Ctrl-C that comes
/// while the first request is in flight is not lost to the default action.
fn watch_ctrl_c(interrupt: Interrupt) {
    #[cfg(unix)]
    let mut signals = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
    {
        Ok(signals) => signals,
        Err(_) => return,
    };
    tokio::spawn(async move {
        #[cfg(unix)]
        let mut next = async || signals.recv().await.is_some();
        #[cfg(not(unix))]
        let mut next = async || tokio::signal::ctrl_c().await.is_ok();
        if !next().await {
            return;
        }
        interrupt.request();
        let _ = writeln!(
            std::io::stderr(),
            "\nnanohermes: interrupt requested; stopping at the next step boundary (Ctrl-C again to quit now)"
        );
        if next().await {
            mcp_tools::spawn::kill_all_spawned();
            std::process::exit(i32::from(EXIT_INTERRUPTED));
        }
    });
}

/// SIGTERM or SIGHUP: end every process the agent started, then exit with
/// 128 + the signal's number, as a shell reports it.
fn watch_terminate() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        for (kind, number) in [(SignalKind::terminate(), 15), (SignalKind::hangup(), 1)] {
            let Ok(mut signals) = signal(kind) else {
                continue;
            };
            tokio::spawn(async move {
                if signals.recv().await.is_some() {
                    mcp_tools::spawn::kill_all_spawned();
                    std::process::exit(128 + number);
                }
            });
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("NANOHERMES_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn fail(error: &anyhow::Error) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "nanohermes: error: {error:#}");
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_table_aligns_columns_under_a_header() {
        let table = tool_table(&[["read_file", "files", "yes"], ["x__y", "ext", "no"]]);
        assert_eq!(
            table,
            "TOOL       SERVER  READ-ONLY\nread_file  files   yes\nx__y       ext     no\n"
        );
    }
}
