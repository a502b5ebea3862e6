//! Flags and environment, resolved into the settings the parts need.
//!
//! Two stages: [`Options`] holds what the user typed (clap parses flags and
//! `NANOHERMES_*`/`OPENAI_*` variables into it), [`Config::resolve`] checks
//! it and turns it into [`ModelSettings`], [`HubConfig`] and
//! [`AgentConfig`]. Every refusal is one line that says what to change.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;

use crate::agent::{AgentConfig, DEFAULT_MAX_ITERATIONS};
use crate::hub::{Builtin, ExternalServer, HubConfig};
use crate::llm::{DEFAULT_BASE_URL, DEFAULT_MODEL, ModelSettings, RetryPolicy};
use crate::policy::Policy;

/// How long every server gets to start and list its tools.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);

/// The flags shared by every command.
#[derive(Debug, Clone, Args)]
pub struct Options {
    /// The directory the agent works in; tools cannot leave it [default: the current directory].
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// The model to ask.
    #[arg(long, global = true, env = "NANOHERMES_MODEL", default_value = DEFAULT_MODEL)]
    pub model: String,

    /// A model to try once when the main one keeps failing (429/5xx, connection errors).
    #[arg(
        long,
        global = true,
        env = "NANOHERMES_FALLBACK_MODEL",
        value_name = "MODEL"
    )]
    pub fallback_model: Option<String>,

    /// The OpenAI-compatible API root, e.g. http://localhost:11434/v1 for Ollama.
    #[arg(long, global = true, env = "OPENAI_BASE_URL", default_value = DEFAULT_BASE_URL, value_name = "URL")]
    pub base_url: String,

    /// Model round trips before the run gives up.
    #[arg(long, global = true, default_value_t = DEFAULT_MAX_ITERATIONS, value_name = "N")]
    pub max_iterations: usize,

    /// An external MCP server over stdio, as one string `NAME=COMMAND [ARGS...]`
    /// (shell-style quoting); its tools are NAME__TOOL. Repeatable.
    #[arg(long = "mcp", global = true, value_name = "NAME=COMMAND [ARGS...]")]
    pub mcp: Vec<String>,

    /// Ask for whole responses instead of a stream.
    #[arg(long, global = true)]
    pub no_stream: bool,

    /// Send `reasoning_effort: "high"` (for reasoning models).
    #[arg(long, global = true)]
    pub thinking: bool,

    /// Only offer and run tools annotated read-only (by a built-in or a server given with --mcp).
    #[arg(long, global = true)]
    pub read_only: bool,

    /// Let web_fetch reach loopback, private and link-local addresses (your intranet, local services).
    #[arg(long, global = true)]
    pub allow_private_network: bool,

    /// Retries of a failed model request (429/5xx, connection errors).
    #[arg(long, global = true, default_value_t = RetryPolicy::default().max_retries, value_name = "N")]
    pub max_retries: u32,

    /// The first retry's wait in milliseconds; each later retry doubles it (capped at 30 s).
    #[arg(long, global = true, default_value_t = 500, value_name = "MS")]
    pub retry_base_ms: u64,

    /// The largest tool result the model sees, in bytes.
    #[arg(long, global = true, default_value_t = mcp_tools::DEFAULT_MAX_OUTPUT, value_name = "BYTES")]
    pub max_output: usize,
}

/// Everything a run needs, checked.
#[derive(Debug, Clone)]
pub struct Config {
    /// The canonical workspace root.
    pub workspace: PathBuf,
    /// The model client's settings.
    pub model: ModelSettings,
    /// The servers to start.
    pub hub: HubConfig,
    /// Loop bounds and policy.
    pub agent: AgentConfig,
}

impl Config {
    /// Checks `options` and resolves them; `api_key` is `OPENAI_API_KEY`.
    /// `needs_model` is false for commands that never talk to the model.
    pub fn resolve(
        options: &Options,
        api_key: Option<String>,
        needs_model: bool,
    ) -> anyhow::Result<Config> {
        let workspace = match &options.workspace {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        let workspace = workspace
            .canonicalize()
            .with_context(|| format!("workspace {} does not exist", workspace.display()))?;
        if !workspace.is_dir() {
            bail!("workspace {} is not a directory", workspace.display());
        }

        let api_key = api_key.filter(|k| !k.trim().is_empty());
        // An empty variable (`OPENAI_BASE_URL=`) means the default.
        let base_url = match options.base_url.trim().trim_end_matches('/') {
            "" => DEFAULT_BASE_URL.to_owned(),
            url => url.to_owned(),
        };
        let model_name = match options.model.trim() {
            "" => DEFAULT_MODEL.to_owned(),
            name => name.to_owned(),
        };
        let url = reqwest::Url::parse(&base_url).with_context(|| {
            format!("OPENAI_BASE_URL {base_url:?} is not a URL (e.g. http://localhost:8080/v1)")
        })?;
        if needs_model && api_key.is_none() && url.host_str() == Some("api.openai.com") {
            bail!(
                "OPENAI_API_KEY is not set: {base_url} needs an API key \
                 (set OPENAI_API_KEY, or point OPENAI_BASE_URL at a local server such as http://localhost:11434/v1)"
            );
        }
        if options.max_iterations == 0 {
            bail!("--max-iterations must be at least 1");
        }

        let mut model = ModelSettings::new(base_url, model_name);
        model.api_key = api_key;
        model.fallback_model = options.fallback_model.clone().filter(|m| !m.is_empty());
        model.body.stream = !options.no_stream;
        model.body.thinking = options.thinking;
        model.retry = RetryPolicy {
            max_retries: options.max_retries,
            base_delay: Duration::from_millis(options.retry_base_ms),
        };

        let external = options
            .mcp
            .iter()
            .map(|spec| parse_mcp(spec))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let hub = HubConfig {
            workspace: workspace.clone(),
            max_output: options.max_output,
            builtins: Builtin::ALL.to_vec(),
            external,
            startup_timeout: STARTUP_TIMEOUT,
            allow_private_network: options.allow_private_network,
        };
        let policy = if options.read_only {
            Policy::ReadOnly
        } else {
            Policy::AllowAll
        };
        let agent = AgentConfig {
            max_iterations: options.max_iterations,
            policy,
        };
        Ok(Config {
            workspace,
            model,
            hub,
            agent,
        })
    }
}

/// Parses `--mcp NAME=COMMAND [ARGS...]` with shell-style word splitting, so
/// arguments may be quoted: `--mcp 'docs=npx -y "@scope/server" --root "my dir"'`.
/// The user typed it, so they vouch for it: its read-only annotations count.
pub fn parse_mcp(spec: &str) -> anyhow::Result<ExternalServer> {
    let Some(words) = shlex::split(spec) else {
        bail!("--mcp {spec:?} has unbalanced quotes");
    };
    let Some((first, args)) = words.split_first() else {
        bail!("--mcp wants NAME=COMMAND [ARGS...], got an empty string");
    };
    let mut server = ExternalServer::parse(first)?;
    server.args = args.to_vec();
    server.trusted_annotations = true;
    Ok(server)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(args: &[&str]) -> Options {
        use clap::Parser as _;
        let argv = ["nanohermes", "tools"].iter().chain(args);
        crate::cli::Cli::try_parse_from(argv).unwrap().options
    }

    #[test]
    fn empty_base_url_and_model_mean_the_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().to_str().unwrap();
        let options = options(&["--workspace", workspace, "--base-url", "", "--model", " "]);
        let config = Config::resolve(&options, Some("k".into()), true).unwrap();
        assert_eq!(config.model.base_url, DEFAULT_BASE_URL);
        assert_eq!(config.model.model, DEFAULT_MODEL);
        assert_eq!(config.workspace, dir.path().canonicalize().unwrap());
        assert!(!config.hub.allow_private_network, "off unless asked for");
    }

    #[test]
    fn allow_private_network_reaches_the_hub() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().to_str().unwrap();
        let options = options(&["--workspace", workspace, "--allow-private-network"]);
        let config = Config::resolve(&options, None, false).unwrap();
        assert!(config.hub.allow_private_network);
    }

    #[test]
    fn a_local_server_needs_no_key_but_api_openai_com_does() {
        let dir = tempfile::tempdir().unwrap();
        let workspace = dir.path().to_str().unwrap();
        let local = options(&[
            "--workspace",
            workspace,
            "--base-url",
            "http://localhost:11434/v1/",
        ]);
        let config = Config::resolve(&local, None, true).unwrap();
        assert_eq!(
            (config.model.base_url.as_str(), config.model.api_key),
            ("http://localhost:11434/v1", None)
        );
        let openai = options(&["--workspace", workspace, "--base-url", DEFAULT_BASE_URL]);
        assert!(
            Config::resolve(&openai, Some(" ".into()), true)
                .unwrap_err()
                .to_string()
                .starts_with("OPENAI_API_KEY is not set")
        );
        assert!(
            Config::resolve(&openai, None, false).is_ok(),
            "`tools` never talks to the model"
        );
    }

    #[test]
    fn mcp_spec_is_split_like_a_shell_command() {
        let server = parse_mcp(r#"docs=/usr/bin/env  "my server" --flag='a b'"#).unwrap();
        assert_eq!(server.name, "docs");
        assert_eq!(server.command, "/usr/bin/env");
        assert_eq!(server.args, ["my server", "--flag=a b"]);
        assert!(server.trusted_annotations, "the user typed it: vouched for");
        assert!(
            parse_mcp("docs=x 'open")
                .unwrap_err()
                .to_string()
                .contains("unbalanced quotes")
        );
        assert!(parse_mcp("no-command").is_err());
    }
}
pub mod sources;
