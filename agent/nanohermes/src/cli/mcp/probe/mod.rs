//! `nanohermes mcp probe URL`: the agent's own MCP client stack (the hub:
//! its planning, transport, handshake, era rule, elicitation and MRTR
//! code) driven by a script instead of a model, the way Goose's
//! `mcp-probe` is. The MCP conformance suite runs it for its client
//! scenarios (`MCP_CONFORMANCE_SCENARIO`, `MCP_CONFORMANCE_CONTEXT`,
//! `MCP_CONFORMANCE_PROTOCOL_VERSION`, the server URL last).
//!
//! | file | concern |
//! |---|---|
//! | `script.rs` | the line format of `--script` |
//! | `scenario.rs` | the steps of each conformance scenario |
//! | `connect.rs` | the hub with the one server |
//! | `auth.rs` | OAuth for the `auth/*` scenarios |
//! | `elicit.rs` | how elicitations are answered |
//! | `run.rs` | running the steps, reporting each |
//!
//! Exit codes: 0 when the connection and every step worked, 1 when the
//! connection or a step failed (each failure is a line on stderr), 2 for a
//! bad script or option.

mod auth;
mod connect;
mod elicit;
mod run;
mod scenario;
mod script;

use std::io::{Read as _, Write as _};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use clap::Args;
use rmcp::model::JsonObject;

use nanohermes_config::ConfigError;
use nanohermes_hub::{Era, ServerState};

use script::Step;

/// `nanohermes mcp probe`.
#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// The server's Streamable HTTP endpoint (last, as the conformance suite passes it).
    pub url: String,
    /// Steps to run, one a line (`-` reads stdin): list, call NAME [JSON], resources, read URI,
    /// prompts, prompt NAME [JSON], elicit accept [JSON] | decline | cancel.
    #[arg(long, value_name = "FILE")]
    pub script: Option<String>,
    /// The protocol revision to speak (2025-11-25 runs `initialize`, 2026-07-28
    /// `server/discover`); default $MCP_CONFORMANCE_PROTOCOL_VERSION, 2025-11-25 for a
    /// scenario without it, else probe as a configured server is.
    #[arg(long, value_name = "VERSION")]
    pub protocol: Option<String>,
    /// The conformance scenario whose steps to run (default $MCP_CONFORMANCE_SCENARIO).
    #[arg(long, value_name = "NAME", conflicts_with = "script")]
    pub scenario: Option<String>,
}

/// Runs the probe.
pub async fn main(args: ProbeArgs) -> anyhow::Result<ExitCode> {
    // A suite run without a version (the 0.1.x runners set none) means
    // 2025-11-25, the revision those runners test.
    let protocol = args
        .protocol
        .or_else(|| env("MCP_CONFORMANCE_PROTOCOL_VERSION"))
        .or_else(|| {
            (args.script.is_none() && env("MCP_CONFORMANCE_SCENARIO").is_some())
                .then(|| "2025-11-25".to_owned())
        });
    let era = protocol.as_deref().map(era_of).transpose()?;
    let steps = steps(args.script.as_deref(), args.scenario.clone())?;
    let elicitor = Arc::new(elicit::ScriptedElicitor::default());
    let scenario = args
        .scenario
        .clone()
        .or_else(|| env("MCP_CONFORMANCE_SCENARIO"));
    let credentials = auth::ProbeCredentials::new();
    let oauth = scenario
        .as_deref()
        .filter(|s| args.script.is_none() && auth::is_auth(s))
        .map(|_| (auth::spec(&context()), &credentials));
    // The hub's error names the URL and why (and the server's stderr tail).
    let hub = connect::connect(&args.url, era, Arc::clone(&elicitor), oauth).await?;
    for warning in hub.warnings() {
        eprintln!("warning: {warning}");
    }
    if let Some(ServerState::Running { tools, era }) = hub
        .status()
        .into_iter()
        .find(|s| s.name == connect::SERVER)
        .map(|s| s.state)
    {
        let mut out = std::io::stdout().lock();
        writeln!(
            out,
            "connected to {} (protocol {era}, {tools} tools)",
            args.url
        )?;
    }
    let outcome = run::run(&hub, connect::SERVER, &elicitor, &steps).await;
    hub.shutdown().await;
    if outcome.failed > 0 {
        bail!(
            "{} of {} steps failed",
            outcome.failed,
            outcome.failed + outcome.passed
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The era of a protocol revision: those with `initialize` are legacy.
fn era_of(version: &str) -> anyhow::Result<Era> {
    match version {
        "2026-07-28" => Ok(Era::Modern),
        "2024-11-05" | "2025-03-26" | "2025-06-18" | "2025-11-25" => Ok(Era::Legacy),
        _ => bail!(ConfigError::at(
            "--protocol",
            None,
            format!("unknown protocol revision {version:?}; use 2025-11-25 or 2026-07-28")
        )),
    }
}

/// The steps: the script, else the scenario's, else `list`.
fn steps(script: Option<&str>, scenario: Option<String>) -> anyhow::Result<Vec<Step>> {
    if let Some(path) = script {
        let text = if path == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("cannot read the script from stdin")?;
            text
        } else {
            std::fs::read_to_string(path).with_context(|| format!("cannot read script {path}"))?
        };
        return script::parse(&text)
            .map_err(|e| ConfigError::at("--script", None, format!("{e:#}")).into());
    }
    let Some(scenario) = scenario.or_else(|| env("MCP_CONFORMANCE_SCENARIO")) else {
        return Ok(vec![Step::List]);
    };
    Ok(scenario::steps(&scenario, &context()).unwrap_or_else(|| {
        eprintln!("no steps known for scenario {scenario:?}; listing only");
        vec![Step::List]
    }))
}

/// The scenario's data (`MCP_CONFORMANCE_CONTEXT`, JSON), empty when unset.
fn context() -> JsonObject {
    env("MCP_CONFORMANCE_CONTEXT")
        .and_then(|raw| serde_json::from_str(&raw).ok())
        .unwrap_or_default()
}
