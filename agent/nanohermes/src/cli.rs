//! The command line: `nanohermes` alone (the interactive mode),
//! `nanohermes run "TASK"`, `nanohermes tools`, `nanohermes mcp …` and
//! `nanohermes serve`.
//!
//! Every command loads the configuration the same way ([`crate::app::load`]):
//! the user's config, a trusted project's files, the environment, the
//! flags. Exit codes: 0 when the model finished, 1 on an error (one line on
//! stderr, no backtrace), 2 on a usage or configuration error (a
//! configuration error's line names `FILE:LINE`; a missing `--workspace`
//! and a flag the command cannot take are usage errors), 3 when the
//! iteration limit was reached, 130 when interrupted, 143 on SIGTERM, 129
//! on SIGHUP. Under `run --output-format json|stream-json` every error
//! also ends stdout with a result object.

mod mcp;
mod run;
mod signals;
mod table;
mod tools;

use std::io::Write;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::Options;
use nanohermes_config::ConfigError;

pub use mcp::{AddArgs, McpCommand};
pub use run::run;
pub use tools::{HUB_SERVER, OfferedTool, offered, tools};

/// Exit code when the iteration limit ends a run.
pub const EXIT_ITERATION_LIMIT: u8 = 3;
/// Exit code for a usage or configuration error.
pub const EXIT_USAGE: u8 = 2;
/// Exit code when Ctrl-C ends a run.
pub const EXIT_INTERRUPTED: u8 = 130;

/// `nanohermes`: an MCP-native terminal coding agent.
#[derive(Debug, Parser)]
#[command(name = "nanohermes", version, about, long_about = None)]
pub struct Cli {
    /// What to do; none starts the interactive mode.
    #[command(subcommand)]
    pub command: Option<Command>,
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
        /// `text` (the model's text on stdout), `json` (one result object at the end) or
        /// `stream-json` (one JSON event per line, in Claude Code's shape).
        #[arg(long, value_enum, default_value_t, value_name = "FORMAT")]
        output_format: crate::output::OutputFormat,
    },
    /// List the tools the model would see, with their server and whether they are read-only.
    Tools,
    /// Trust this workspace's own config (.mcp.json, .nanohermes/config.toml, hooks.json) as it is now:
    /// shows the files and the variables .mcp.json passes to servers, records each file's SHA-256.
    Trust,
    /// Manage and try MCP servers: list, get, add, remove, call, login, logout, probe.
    Mcp {
        /// What to do with the servers.
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Serve the agent itself over MCP (stdio, or --http): one tool, run_task, for MCP hosts and other agents.
    Serve(crate::serve::ServeArgs),
    /// Serve the agent to an editor over the Agent Client Protocol (ACP v1, stdio): Zed, JetBrains, Neovim.
    Acp,
    /// Serve one built-in over stdio or --http (used for run = "process").
    #[command(hide = true, disable_help_flag = true)]
    Builtin {
        /// The built-in's name.
        name: String,
        /// Its server flags (`--root`, `--http`, ...).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

/// The whole program: parse, load the configuration, run, map the outcome
/// to an exit code. Every exit path ends every process the agent started
/// ([`mcp_tools::spawn::kill_all_spawned`]): here after the run, in the
/// second Ctrl-C's handler, and on SIGTERM or SIGHUP.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // A built-in child needs no model, key or config: it runs its own runtime.
    if let Some(Command::Builtin { name, args }) = &cli.command {
        return nanohermes_builtins::serve_builtin_main(name, args);
    }
    init_logging();
    // One agent's loop is sequential and its tools' blocking work goes to
    // the blocking pool: one thread runs it without the cross-thread
    // wake-ups a worker pool costs on every message (notes/rmcp-3.11.md
    // §4: 105 → 61 µs a call). `serve` runs many tasks at once: a pool.
    let mut builder = match cli.command {
        Some(Command::Serve(_)) => tokio::runtime::Builder::new_multi_thread(),
        _ => tokio::runtime::Builder::new_current_thread(),
    };
    let runtime = match builder.enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => return fail(&anyhow::anyhow!("cannot start the async runtime: {e}")),
    };
    let options = cli.options;
    // `serve --http --store postgres://…` drains on SIGTERM instead
    // (serve/store/http.rs): its tasks reach a step boundary and give
    // their leases back to the other replicas.
    let drains = matches!(&cli.command, Some(Command::Serve(args)) if args.drains_on_sigterm());
    let outcome = runtime.block_on(async move {
        if !drains {
            signals::watch_terminate();
        }
        if let Some(Command::Run { output_format, .. }) = &cli.command {
            // Under --output-format json|stream-json every error, this
            // early one too, ends stdout with a result object.
            let started = std::time::Instant::now();
            if let Err(error) = check_usage(cli.command.as_ref(), &options) {
                crate::output::failed_to_start(*output_format, &format!("{error:#}"), started);
                return Err(error);
            }
        } else {
            check_usage(cli.command.as_ref(), &options)?;
        }
        match cli.command {
            None => {
                let config = crate::app::load(&options, true)?.config;
                crate::repl::main(config, &options.session).await
            }
            Some(Command::Run {
                task,
                output_format,
            }) => {
                let started = std::time::Instant::now();
                let config = match crate::app::load(&options, true) {
                    Ok(setup) => setup.config,
                    Err(error) => {
                        let line = format!("{error:#}");
                        crate::output::failed_to_start(output_format, &line, started);
                        return Err(error);
                    }
                };
                run(config, &task.join(" "), output_format, &options.session).await
            }
            Some(Command::Tools) => tools(crate::app::load(&options, false)?.config).await,
            Some(Command::Trust) => crate::app::trust(&options).map(|()| ExitCode::SUCCESS),
            Some(Command::Mcp { command }) => mcp::main(&options, command).await,
            Some(Command::Serve(args)) => crate::serve::main(&options, args).await,
            Some(Command::Acp) => crate::acp::main(&options).await,
            Some(Command::Builtin { .. }) => unreachable!("served before the runtime starts"),
        }
    });
    // Do not wait for blocking tasks a tool may have left behind.
    runtime.shutdown_background();
    // The hub shut its servers down; this catches whatever outlived them
    // (a background task, a daemon an external server left).
    mcp_tools::spawn::kill_all_spawned();
    outcome.unwrap_or_else(|e| fail(&e))
}

/// A usage error: a flag the command cannot take, a workspace that is not
/// there. Exits 2, as a configuration error does.
#[derive(Debug)]
pub struct UsageError(String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// What the flags get wrong before anything loads: `serve` takes no
/// `--workspace` (each `run_task` names its own, inside a `--root`), and
/// a `--workspace` must be a directory that exists.
fn check_usage(command: Option<&Command>, options: &Options) -> anyhow::Result<()> {
    match command {
        Some(Command::Builtin { .. }) => return Ok(()),
        Some(Command::Serve(_)) => {
            if let Some(workspace) = &options.workspace {
                return Err(UsageError(format!(
                    "serve takes no --workspace ({}): each run_task names its workspace, which must lie inside a --root DIR (default: the current directory); use --root {}",
                    workspace.display(),
                    workspace.display()
                ))
                .into());
            }
            return Ok(());
        }
        _ => {}
    }
    options
        .workspace()
        .map(drop)
        .map_err(|e| UsageError(format!("{e:#}; pass an existing directory as --workspace")).into())
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("NANOHERMES_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// One line on stderr; a configuration error exits 2, anything else 1.
fn fail(error: &anyhow::Error) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "nanohermes: error: {error:#}");
    if error.downcast_ref::<ConfigError>().is_some() || error.downcast_ref::<UsageError>().is_some()
    {
        ExitCode::from(EXIT_USAGE)
    } else {
        ExitCode::FAILURE
    }
}

/// Whether `args` (after the program name) are the `serve` command, by
/// this binary's own parser: how the hub recognises a configured server
/// that is another NanoHermes (it then gets this agent's model settings).
pub fn is_serve_command(args: &[&str]) -> bool {
    use clap::Parser as _;
    let words = std::iter::once("nanohermes").chain(args.iter().copied());
    matches!(
        Cli::try_parse_from(words),
        Ok(Cli {
            command: Some(Command::Serve(_)),
            ..
        })
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_serve_command_parses_as_serve() {
        for (args, expected) in [
            (&["serve", "--root", "."][..], true),
            (&["--model", "m", "serve"][..], true),
            (&["serve"][..], true),
            (&["run", "serve"][..], false),
            (&["mcp", "list"][..], false),
            (&["--no-such-flag", "serve"][..], false),
        ] {
            assert_eq!(is_serve_command(args), expected, "{args:?}");
        }
    }
}
