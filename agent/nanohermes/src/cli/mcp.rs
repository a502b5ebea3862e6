//! `nanohermes mcp`, the way `codex mcp` and `claude mcp` work: `list`,
//! `get NAME`, `add NAME -- CMD ARGS…` / `add NAME --url URL`, `remove
//! NAME`, `call NAME TOOL 'JSON'`, `login NAME` / `logout NAME` (OAuth). `add` and `remove` edit the user's own
//! config (`$NANOHERMES_HOME/config.toml`) and keep the rest of the file
//! as it was; `list`, `get` and `call` start the servers for real.
//! `probe URL` drives the hub's client stack from a script, for the MCP
//! conformance suite ([`probe`]).

mod inspect;
mod login;
pub mod probe;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};

use crate::config::Options;
use nanohermes_config::{
    self, BuiltinName, ConfigError, ConfigSources, NewServer, Origin, add_server, remove_server,
};

/// What `nanohermes mcp` does.
#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// Every configured server (built-ins too): where it runs, its status and
    /// tool count after a real handshake, its protocol era, where it was configured.
    List,
    /// One server's resolved configuration, where it came from, and which
    /// environment variables it does not get.
    Get {
        /// The server's name.
        name: String,
    },
    /// Add a server to your own config: `add NAME -- CMD ARGS…` or `add NAME --url URL`.
    Add(AddArgs),
    /// Remove a server from your own config.
    Remove {
        /// The server's name.
        name: String,
    },
    /// Log in to an HTTP server that requires OAuth: prints the URL to open
    /// and stores the tokens in $NANOHERMES_HOME/credentials.json.
    Login {
        /// The server's name.
        name: String,
        /// A scope to ask for on top of what the server names. Repeatable.
        #[arg(long = "scope", value_name = "SCOPE")]
        scopes: Vec<String>,
    },
    /// Forget the tokens stored for an HTTP server.
    Logout {
        /// The server's name.
        name: String,
    },
    /// Start one server, call one tool, print the result's text (exit 1 when the tool fails).
    Call {
        /// The server's name.
        name: String,
        /// The tool's name on that server (without the `NAME__` prefix).
        tool: String,
        /// The arguments, one JSON object.
        #[arg(default_value = "{}", value_name = "JSON")]
        arguments: String,
    },
    /// Connect to one Streamable HTTP server with the agent's own client code and run a
    /// script of steps (or the conformance scenario named in $MCP_CONFORMANCE_SCENARIO).
    Probe(probe::ProbeArgs),
}

/// `nanohermes mcp add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// The server's name; its tools are NAME__TOOL.
    pub name: String,
    /// A Streamable HTTP endpoint instead of a command.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub url: Option<String>,
    /// The variable whose value is sent as `Authorization: Bearer …` (with --url).
    #[arg(long, value_name = "VAR", requires = "url")]
    pub bearer_token_env_var: Option<String>,
    /// A variable set for the command, `K=V`. Repeatable.
    #[arg(long = "env", value_name = "K=V", conflicts_with = "url")]
    pub env: Vec<String>,
    /// Replace an existing entry of the same name (or a built-in).
    #[arg(long)]
    pub force: bool,
    /// The program and its arguments, after `--`.
    #[arg(last = true, value_name = "CMD ARGS")]
    pub command: Vec<String>,
}

/// Runs one `nanohermes mcp` command.
pub async fn main(options: &Options, command: McpCommand) -> anyhow::Result<ExitCode> {
    match command {
        McpCommand::List => inspect::list(crate::app::load(options, false)?).await,
        McpCommand::Get { name } => inspect::get(crate::app::load(options, false)?, &name),
        McpCommand::Call {
            name,
            tool,
            arguments,
        } => inspect::call(crate::app::load(options, false)?, &name, &tool, &arguments).await,
        McpCommand::Login { name, scopes } => {
            login::login(crate::app::load(options, false)?, &name, scopes).await
        }
        McpCommand::Logout { name } => {
            login::logout(crate::app::load(options, false)?, &name).await
        }
        McpCommand::Add(args) => add(options, args),
        McpCommand::Remove { name } => remove(options, &name),
        McpCommand::Probe(args) => probe::main(args).await,
    }
}

/// The layers without the trust question and without the defaults:
/// enough to find the user's file and where a server came from.
fn sources_of(options: &Options) -> anyhow::Result<ConfigSources> {
    Ok(ConfigSources::from_process(
        options.workspace()?,
        options.overrides()?,
    ))
}

fn user_config(sources: &ConfigSources) -> anyhow::Result<std::path::PathBuf> {
    sources
        .user_config_path()
        .context("neither NANOHERMES_HOME nor HOME is set, so there is no config file to edit; set NANOHERMES_HOME=DIR")
}

fn add(options: &Options, args: AddArgs) -> anyhow::Result<ExitCode> {
    let sources = sources_of(options)?;
    let path = user_config(&sources)?;
    let server = match (&args.url, args.command.split_first()) {
        (Some(url), _) => NewServer::Http {
            url: url.clone(),
            bearer_token_env_var: args.bearer_token_env_var.clone(),
        },
        (None, Some((command, rest))) => NewServer::Stdio {
            command: command.clone(),
            args: rest.to_vec(),
            env: parse_env(&args.env)?,
        },
        (None, None) => bail!(ConfigError::at(
            "nanohermes mcp add",
            None,
            format!(
                "no command or URL for {:?}; use `nanohermes mcp add {} -- COMMAND ARGS...` or `nanohermes mcp add {} --url https://host/mcp`",
                args.name, args.name, args.name
            )
        )),
    };
    if !args.force && BuiltinName::from_name(&args.name).is_some() {
        bail!(ConfigError::at(
            "nanohermes mcp add",
            None,
            format!(
                "{:?} is a built-in server; pass --force to replace it with this one, or pick another name",
                args.name
            )
        ));
    }
    add_server(&path, &args.name, &server, args.force)?;
    say(&format!("added {} to {}", args.name, path.display()))
}

fn parse_env(pairs: &[String]) -> anyhow::Result<BTreeMap<String, String>> {
    pairs
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) if nanohermes_config::servers::is_env_name(k) => {
                Ok((k.to_owned(), v.to_owned()))
            }
            _ => Err(ConfigError::at(
                "--env",
                None,
                format!("{pair:?} is not allowed; use --env NAME=VALUE"),
            )
            .into()),
        })
        .collect()
}

fn remove(options: &Options, name: &str) -> anyhow::Result<ExitCode> {
    let sources = sources_of(options)?;
    let path = user_config(&sources)?;
    if remove_server(&path, name)? {
        return say(&format!("removed {name} from {}", path.display()));
    }
    // Say where the server is configured instead, when it is.
    let origin = nanohermes_config::load(&sources).ok().and_then(|loaded| {
        loaded
            .settings
            .servers
            .into_iter()
            .find(|s| s.name == name)
            .map(|s| s.origin)
    });
    let message = match origin {
        Some(Origin::Default) => format!(
            "{name} is a built-in and cannot be removed; to turn it off, add `[mcp_servers.{name}]` with `enabled = false` to {}",
            path.display()
        ),
        Some(flag @ (Origin::Flag | Origin::AgentFlag)) => {
            format!(
                "{name} comes from a {} flag; drop the flag",
                flag.describe()
            )
        }
        Some(origin) => format!(
            "{name} is configured in {}, not in {}; edit that file",
            origin.describe(),
            path.display()
        ),
        None => format!(
            "there is no server {name:?}; `nanohermes mcp list` shows the configured servers"
        ),
    };
    bail!(message)
}

/// A line on stdout.
fn say(line: &str) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
