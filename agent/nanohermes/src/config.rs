//! Flags, config files and the environment, resolved into the settings the
//! parts need.
//!
//! Three stages. [`Options`] holds what the user typed on the command line;
//! every value is optional, so a flag's default never hides a file's value.
//! [`sources::load`] lays the flags over the environment, the trusted
//! project's files and the user's own config ([`Options::overrides`] turns
//! the flags into its input). [`Config::from_settings`] applies the agent's
//! defaults to what no layer set and checks the rest into
//! [`ModelSettings`], [`HubConfig`], [`AgentConfig`] and [`Rules`]. Every
//! refusal is one line that says what to change.

pub use nanohermes_config as sources;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;

use nanohermes_core::agent::{AgentConfig, DEFAULT_MAX_ITERATIONS};
use nanohermes_core::compaction::CompactionConfig;
use nanohermes_core::policy::Policy;
use nanohermes_hub::HubConfig;
use nanohermes_llm::{ModelSettings, RetryPolicy};
use sources::{ConfigError, HookEvent, HookGroup, Mode, Overrides, ServerSpec, Settings};

pub use nanohermes_config::DEFAULT_API_KEY_ENV;

mod connection;
use connection::{default_connection, provider_connection, subagent_model};

/// The flags shared by every command. Nothing here has a default value:
/// an absent flag leaves the key to the config files and the environment,
/// and [`Config::from_settings`] applies the defaults last.
#[derive(Debug, Clone, Default, Args)]
pub struct Options {
    /// The directory the agent works in; tools cannot leave it [default: the current directory].
    #[arg(long, global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// The model to ask [default: gpt-4.1-mini; env: NANOHERMES_MODEL, OPENAI_MODEL].
    #[arg(long, global = true, value_name = "MODEL")]
    pub model: Option<String>,

    /// A model to try once when the main one keeps failing (429/5xx, connection errors) [env: NANOHERMES_FALLBACK_MODEL].
    #[arg(long, global = true, value_name = "MODEL")]
    pub fallback_model: Option<String>,

    /// The OpenAI-compatible API root, e.g. http://localhost:11434/v1 for Ollama [default: https://api.openai.com/v1; env: OPENAI_BASE_URL].
    #[arg(long, global = true, value_name = "URL")]
    pub base_url: Option<String>,

    /// The model provider: openai, anthropic, ollama, lmstudio or a [model_providers.NAME] of your config; beats model_provider [env: NANOHERMES_PROVIDER].
    #[arg(long = "provider", global = true, value_name = "NAME")]
    pub provider: Option<String>,

    /// Never send a prompt cache key (for servers that refuse unknown request fields).
    #[arg(long, global = true)]
    pub no_cache_key: bool,

    /// Sampling temperature, 0 to 2 [default: 0].
    #[arg(long, global = true, value_name = "T")]
    pub temperature: Option<f64>,

    /// The most tokens one answer may have [default: 4096].
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: Option<u32>,

    /// Model round trips before the run gives up [default: 40].
    #[arg(long, global = true, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iterations: Option<u32>,

    /// An MCP server: `NAME=COMMAND [ARGS...]` as one string with shell-style
    /// quoting (stdio), or `NAME=https://host/mcp` (Streamable HTTP); its tools
    /// are NAME__TOOL and it replaces a configured server of the same name. Repeatable.
    #[arg(
        long = "mcp",
        global = true,
        value_name = "NAME=COMMAND [ARGS...] | NAME=URL"
    )]
    pub mcp: Vec<String>,

    /// An MCP agent to use as a subagent, written as for --mcp
    /// (`NAME=COMMAND [ARGS...]` or `NAME=URL`): its run_task is
    /// NAME__run_task, and agent_list names it. Repeatable.
    #[arg(
        long = "agent",
        global = true,
        value_name = "NAME=COMMAND [ARGS...] | NAME=URL"
    )]
    pub agent: Vec<String>,

    /// Ask for whole responses instead of a stream.
    #[arg(long, global = true)]
    pub no_stream: bool,

    /// Send `reasoning_effort: "high"` (for reasoning models).
    #[arg(long, global = true)]
    pub thinking: bool,

    /// Only offer and run tools annotated read-only (by a built-in or a server you configured).
    #[arg(long, global = true)]
    pub read_only: bool,

    /// Permission mode: default, accept-edits, plan, goal or debug [env: NANOHERMES_MODE].
    #[arg(long, global = true, value_name = "MODE")]
    pub mode: Option<String>,

    /// Let web_fetch reach loopback, private and link-local addresses (your intranet, local services).
    #[arg(long, global = true)]
    pub allow_private_network: bool,

    /// Retries of a failed model request (429/5xx, connection errors) [default: 2].
    #[arg(long, global = true, value_name = "N")]
    pub max_retries: Option<u32>,

    /// The first retry's wait in milliseconds; each later retry doubles it (capped at 30 s) [default: 500].
    #[arg(long, global = true, value_name = "MS")]
    pub retry_base_ms: Option<u64>,

    /// The largest tool result the model sees, in bytes.
    #[arg(long, global = true, default_value_t = mcp_tools::DEFAULT_MAX_OUTPUT, value_name = "BYTES")]
    pub max_output: usize,

    /// Which session to keep: `--session FILE`, `--continue`, `--resume ID`.
    #[command(flatten)]
    pub session: nanohermes_session::SessionArgs,
}

impl Options {
    /// The workspace, canonical: `--workspace` or the current directory.
    pub fn workspace(&self) -> anyhow::Result<PathBuf> {
        let workspace = match &self.workspace {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        let canonical = workspace
            .canonicalize()
            .with_context(|| format!("workspace {} does not exist", workspace.display()))?;
        if !canonical.is_dir() {
            bail!("workspace {} is not a directory", workspace.display());
        }
        Ok(canonical)
    }

    /// The flags as the top layer of the config: only what was typed. An
    /// empty `--model ""` or `--base-url ""` means "not set", as an empty
    /// variable does.
    pub fn overrides(&self) -> Result<Overrides, ConfigError> {
        let non_empty = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let base_url = non_empty(&self.base_url).map(|u| u.trim_end_matches('/').to_owned());
        if let Some(url) = &base_url
            && !sources::raw::is_http_url(url)
        {
            return Err(ConfigError::at(
                "--base-url",
                None,
                format!(
                    "{url:?} is not allowed; use an http:// or https:// URL such as http://localhost:11434/v1"
                ),
            ));
        }
        if let Some(t) = self.temperature
            && !(0.0..=2.0).contains(&t)
        {
            return Err(ConfigError::at(
                "--temperature",
                None,
                format!("{t} is not allowed; use a number from 0 to 2"),
            ));
        }
        let mode = match non_empty(&self.mode) {
            Some(name) => Some(Mode::from_name(&name).ok_or_else(|| {
                ConfigError::at(
                    "--mode",
                    None,
                    format!("{name:?} is not allowed; use one of {}", Mode::names()),
                )
            })?),
            None => None,
        };
        Ok(Overrides {
            mode,
            model: non_empty(&self.model),
            model_provider: non_empty(&self.provider),
            base_url,
            fallback_model: non_empty(&self.fallback_model),
            temperature: self.temperature,
            max_tokens: self.max_tokens,
            stream: self.no_stream.then_some(false),
            thinking: self.thinking.then_some(true),
            max_iterations: self.max_iterations,
            max_retries: self.max_retries,
            retry_base_ms: self.retry_base_ms,
            mcp: self.mcp.clone(),
            agents: self.agent.clone(),
            ..Overrides::default()
        })
    }
}

/// The permission settings, merged over the layers; [`Rules::policy`] is
/// what [`AgentConfig::policy`] enforces (`--read-only` sets `mode` to
/// plan).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rules {
    /// The permission mode.
    pub mode: Mode,
    /// The shell and destructive tools run without asking in the default
    /// and debug modes.
    pub auto_approve: bool,
    /// When set, only these tool patterns may run.
    pub allow: Option<Vec<String>>,
    /// These tool patterns never run.
    pub deny: Vec<String>,
    /// Hooks by event, every layer's in order.
    pub hooks: BTreeMap<HookEvent, Vec<HookGroup>>,
}

impl Rules {
    /// The permission gate these rules describe.
    pub fn policy(&self) -> Policy {
        Policy::new(
            self.mode,
            self.allow.clone(),
            self.deny.clone(),
            self.auto_approve,
        )
    }
}

/// Everything a run needs, checked.
#[derive(Debug, Clone)]
pub struct Config {
    /// The canonical workspace root.
    pub workspace: PathBuf,
    /// The variable the API key was read from (withheld from every child).
    pub api_key_env: String,
    /// Every variable holding a model provider's secret ([`Settings::key_vars`]):
    /// withheld from every child.
    pub key_vars: Vec<String>,
    /// The chosen provider (`--provider`, `model_provider`), or `None` for
    /// the connection `base_url` and `api_key_env` describe.
    pub provider: Option<sources::Provider>,
    /// Whether a session's prompt cache key is sent: the provider's
    /// `prompt_cache_key` (default true), off with `--no-cache-key`. The
    /// caller sets [`ModelSettings::prompt_cache_key`] per session when true.
    pub send_cache_key: bool,
    /// The model client's settings.
    pub model: ModelSettings,
    /// The servers to start.
    pub hub: HubConfig,
    /// Loop bounds and policy.
    pub agent: AgentConfig,
    /// When the history is compacted (`compact_threshold_chars`,
    /// `compact_keep_messages`).
    pub compaction: CompactionConfig,
    /// Long-term memory around each task (`memory`, default false; the
    /// memory server must be enabled too).
    pub memory: bool,
    /// Permission mode, allow/deny rules, auto-approval and hooks.
    pub rules: Rules,
    /// Where AGENTS.md, NANOHERMES.md and skills are looked for besides
    /// the workspace; `home` is filled in by the CLI from the config
    /// sources.
    pub guidance: nanohermes_core::prompt::GuidanceSources,
}

impl Config {
    /// Applies the agent's defaults to what no layer set. `env` reads the
    /// variable named by `api_key_env`; `needs_model` is false for commands
    /// that never talk to the model (they need no key).
    pub fn from_settings(
        settings: Settings,
        workspace: PathBuf,
        options: &Options,
        env: &dyn Fn(&str) -> Option<String>,
        needs_model: bool,
    ) -> anyhow::Result<Config> {
        let provider = settings.provider(env)?;
        let key_vars = settings.key_vars();
        let (mut model, api_key_env) = match &provider {
            None => default_connection(&settings, options, env, needs_model)?,
            Some(provider) => provider_connection(provider, &settings, options, env, needs_model)?,
        };
        model.fallback_model = settings.fallback_model.clone();
        if let Some(t) = settings.temperature {
            model.body.temperature = t;
        }
        if let Some(n) = settings.max_tokens {
            model.body.max_tokens = n;
        }
        model.body.stream = settings.stream.unwrap_or(model.body.stream);
        model.body.thinking = settings.thinking.unwrap_or(model.body.thinking);
        let defaults = RetryPolicy::default();
        // The top-level key (any layer) and the flag beat the provider's
        // own setting, which beats the default.
        let provider_retries = provider.as_ref().and_then(|p| p.request_max_retries);
        let provider_idle = provider.as_ref().and_then(|p| p.stream_idle_timeout_ms);
        model.retry = RetryPolicy {
            max_retries: settings
                .max_retries
                .or(provider_retries)
                .unwrap_or(defaults.max_retries),
            base_delay: settings
                .retry_base_ms
                .map_or(defaults.base_delay, Duration::from_millis),
        };
        if let Some(ms) = settings.stream_idle_timeout_ms.or(provider_idle) {
            // Zero would fail every request at once.
            model.stream_idle_timeout = Duration::from_millis(ms.max(1));
        }

        let agent = AgentConfig {
            max_iterations: settings
                .max_iterations
                .map_or(DEFAULT_MAX_ITERATIONS, |n| n as usize),
            policy: Policy::default(),
        };
        let rules = Rules {
            // `--read-only` is plan mode, whatever the layers say.
            mode: if options.read_only {
                Mode::Plan
            } else {
                settings.mode.unwrap_or_default()
            },
            auto_approve: settings.auto_approve.unwrap_or(false),
            allow: settings.allow.clone(),
            deny: settings.deny.clone(),
            hooks: settings.hooks.clone(),
        };
        let agent = AgentConfig {
            policy: rules.policy(),
            ..agent
        };
        let mut guidance = nanohermes_core::prompt::GuidanceSources::default();
        if let Some(names) = settings.project_doc_fallback_filenames.clone() {
            guidance.fallback_filenames = names;
        }
        let max_agent_depth = settings
            .max_agent_depth
            .map_or(nanohermes_hub::DEFAULT_MAX_AGENT_DEPTH, |n| n as usize);
        let deferral = nanohermes_hub::DeferConfig {
            enabled: settings.tool_search.unwrap_or(true),
            max_bytes: settings
                .tool_budget_bytes
                .map_or(nanohermes_hub::deferred::DEFAULT_MAX_BYTES, |n| n as usize),
            max_tools: settings
                .tool_budget_count
                .map_or(nanohermes_hub::deferred::DEFAULT_MAX_TOOLS, |n| n as usize),
            always_load_tools: settings.always_load_tools.clone().unwrap_or_default(),
        };
        let sandbox = sandbox_policy(
            &settings,
            &workspace,
            rules.mode,
            options.allow_private_network,
        );
        let hub = HubConfig {
            // A NanoHermes subagent runs on this agent's model.
            subagent_model: Some(subagent_model(&model, &api_key_env, provider.as_ref(), env)),
            max_agent_depth,
            deferral,
            sandbox,
            // Checked when the file was read ([`nanohermes_config::raw::parse`]).
            web_allowed_domains: settings
                .web_allowed_domains
                .as_deref()
                .map(|d| mcp_tools::net::DomainList::parse(d).unwrap_or_default()),
            ..hub_config(&workspace, options, settings.servers)
        };
        let defaults = CompactionConfig::default();
        let compaction = CompactionConfig {
            threshold_chars: settings
                .compact_threshold_chars
                .map_or(defaults.threshold_chars, |n| n as usize),
            keep_messages: settings
                .compact_keep_messages
                .map_or(defaults.keep_messages, |n| n as usize),
        };
        let send_cache_key =
            provider.as_ref().is_none_or(|p| p.prompt_cache_key) && !options.no_cache_key;
        Ok(Config {
            workspace,
            api_key_env,
            key_vars,
            provider,
            send_cache_key,
            model,
            hub,
            agent,
            compaction,
            memory: settings.memory.unwrap_or(false),
            rules,
            guidance,
        })
    }
}

impl Config {
    /// One line naming the model server, for `nanohermes mcp list`:
    /// `model: M at URL, provider anthropic, wire messages` (`no provider`
    /// when `base_url` and `api_key_env` describe the connection).
    pub fn model_line(&self) -> String {
        let provider = match &self.provider {
            Some(p) if p.display != p.id => format!("provider {} ({})", p.id, p.display),
            Some(p) => format!("provider {}", p.id),
            None => "no provider".to_owned(),
        };
        format!(
            "model: {} at {}, {provider}, wire {}",
            self.model.model, self.model.base_url, self.model.wire
        )
    }
}

/// The commands' sandbox: `sandbox` (default workspace-write) with the
/// network off unless `sandbox_network` (`true`: all of it;
/// `"allowlist"`: `sandbox_allowed_domains` through the proxy, private
/// addresses only with `--allow-private-network`, the flag `web_fetch`
/// obeys too); Plan and Debug run read-only.
/// `~/` in `sandbox_writable` is the home directory; a relative path is
/// in the workspace.
fn sandbox_policy(
    settings: &Settings,
    workspace: &std::path::Path,
    mode: Mode,
    allow_private_network: bool,
) -> mcp_tools::spawn::SandboxPolicy {
    use nanohermes_config::SandboxNetwork;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let writable = settings
        .sandbox_writable
        .iter()
        .flatten()
        .map(|p| match (p.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ if p == "~" => home.clone().unwrap_or_else(|| PathBuf::from(p)),
            _ => workspace.join(p),
        })
        .collect();
    let policy = mcp_tools::spawn::SandboxPolicy {
        mode: settings.sandbox.unwrap_or_default(),
        network: settings.sandbox_network == Some(SandboxNetwork::Open(true)),
        allowlist: matches!(settings.sandbox_network, Some(SandboxNetwork::Limited(_))).then(
            || {
                mcp_tools::net::Allowlist {
                    // Checked when the file was read ([`nanohermes_config::raw::parse`]).
                    domains: mcp_tools::net::DomainList::parse(
                        settings
                            .sandbox_allowed_domains
                            .as_deref()
                            .unwrap_or_default(),
                    )
                    .unwrap_or_default(),
                    allow_private_network,
                }
            },
        ),
        writable,
        when_unavailable: settings.sandbox_unavailable.unwrap_or_default(),
        temp_dir: None,
    };
    sandbox_for_mode(policy, mode)
}

/// `policy` as `mode` runs it: read-only in the modes that must not write
/// (plan, debug), else as configured.
pub fn sandbox_for_mode(
    policy: mcp_tools::spawn::SandboxPolicy,
    mode: Mode,
) -> mcp_tools::spawn::SandboxPolicy {
    if matches!(mode, Mode::Plan | Mode::Debug) {
        policy.narrowed_to_read_only()
    } else {
        policy
    }
}

/// What the hub starts: every configured server (the hub reports disabled
/// ones and starts the rest), with the era of each remembered in
/// `$NANOHERMES_HOME/mcp-eras.json`.
fn hub_config(
    workspace: &std::path::Path,
    options: &Options,
    servers: Vec<ServerSpec>,
) -> HubConfig {
    HubConfig {
        max_output: options.max_output,
        allow_private_network: options.allow_private_network,
        era_cache: nanohermes_config::Paths::of_process().era_cache(),
        credentials: nanohermes_hub::auth::store::default_path(),
        serve_command: crate::cli::is_serve_command,
        ..HubConfig::new(workspace, servers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nanohermes_llm::{Advice, DEFAULT_MODEL, KeySource};

    fn options(args: &[&str]) -> Options {
        use clap::Parser as _;
        let argv = ["nanohermes", "tools"].iter().chain(args);
        crate::cli::Cli::try_parse_from(argv).unwrap().options
    }

    fn resolve(args: &[&str], settings: Settings, key: Option<&str>) -> anyhow::Result<Config> {
        let dir = std::env::temp_dir();
        let key = key.map(str::to_owned);
        let env = move |name: &str| (name == "MY_LLM_KEY").then(|| key.clone()).flatten();
        Config::from_settings(settings, dir, &options(args), &env, true)
    }

    #[test]
    fn an_absent_flag_is_none_so_a_file_value_survives() {
        let overrides = options(&[]).overrides().unwrap();
        assert_eq!(
            (overrides.model, overrides.max_iterations, overrides.stream),
            (None, None, None)
        );
        let typed = options(&["--model", "m", "--no-stream", "--max-iterations", "3"])
            .overrides()
            .unwrap();
        assert_eq!(
            (
                typed.model.as_deref(),
                typed.max_iterations,
                typed.stream,
                typed.thinking
            ),
            (Some("m"), Some(3), Some(false), None)
        );
        assert_eq!(options(&["--model", " "]).overrides().unwrap().model, None);
    }

    #[test]
    fn bad_flag_values_name_the_flag() {
        assert_eq!(
            options(&["--base-url", "localhost:1"])
                .overrides()
                .unwrap_err()
                .to_string(),
            "--base-url: \"localhost:1\" is not allowed; use an http:// or https:// URL such as http://localhost:11434/v1"
        );
        assert_eq!(
            options(&["--temperature", "3"])
                .overrides()
                .unwrap_err()
                .to_string(),
            "--temperature: 3 is not allowed; use a number from 0 to 2"
        );
        assert_eq!(
            options(&["--mode", "yolo"])
                .overrides()
                .unwrap_err()
                .to_string(),
            "--mode: \"yolo\" is not allowed; use one of default, accept-edits, plan, goal, debug"
        );
    }

    #[test]
    fn the_mode_flag_takes_the_config_spellings_and_claude_codes() {
        let mode = |args: &[&str]| options(args).overrides().unwrap().mode;
        assert_eq!(mode(&[]), None);
        assert_eq!(mode(&["--mode", "goal"]), Some(Mode::Goal));
        assert_eq!(mode(&["--mode", "acceptEdits"]), Some(Mode::AcceptEdits));
    }

    #[test]
    fn defaults_apply_to_what_no_layer_set() {
        let config = resolve(&[], Settings::default(), None).unwrap_err();
        assert!(
            config
                .to_string()
                .starts_with("OPENAI_API_KEY is not set: https://api.openai.com/v1"),
            "{config}"
        );
        let local = Settings {
            base_url: Some("http://localhost:11434/v1/".into()),
            ..Settings::default()
        };
        let config = resolve(&[], local, None).unwrap();
        assert_eq!(config.model.base_url, "http://localhost:11434/v1");
        assert_eq!(config.model.model, DEFAULT_MODEL);
        assert_eq!(config.agent.max_iterations, DEFAULT_MAX_ITERATIONS);
        assert_eq!(config.model.body.max_tokens, 4096);
        assert!(config.model.body.stream);
        assert_eq!(config.rules, Rules::default());
        assert!(!config.hub.allow_private_network, "off unless asked for");
        assert_eq!(
            config.hub.max_agent_depth,
            nanohermes_hub::DEFAULT_MAX_AGENT_DEPTH
        );
        let shallow = Settings {
            base_url: Some("http://localhost:11434/v1".into()),
            max_agent_depth: Some(0),
            ..Settings::default()
        };
        assert_eq!(resolve(&[], shallow, None).unwrap().hub.max_agent_depth, 0);
        assert_eq!(
            (
                config.compaction.threshold_chars,
                config.compaction.keep_messages
            ),
            (120_000, 10)
        );
        let small = Settings {
            base_url: Some("http://localhost:11434/v1".into()),
            compact_threshold_chars: Some(8_000),
            compact_keep_messages: Some(4),
            ..Settings::default()
        };
        assert_eq!(
            resolve(&[], small, None).unwrap().compaction,
            CompactionConfig {
                threshold_chars: 8_000,
                keep_messages: 4
            }
        );
        assert!(!config.memory, "long-term memory is off by default");
        let mindful = Settings {
            base_url: Some("http://localhost:11434/v1".into()),
            memory: Some(true),
            ..Settings::default()
        };
        assert!(resolve(&[], mindful, None).unwrap().memory);
    }

    #[test]
    fn api_key_env_names_the_variable_holding_the_key() {
        let settings = Settings {
            api_key_env: Some("MY_LLM_KEY".into()),
            temperature: Some(0.5),
            max_tokens: Some(100),
            mode: Some(Mode::Plan),
            deny: vec!["shell__*".into()],
            ..Settings::default()
        };
        let config = resolve(&["--allow-private-network"], settings.clone(), Some("sk-1")).unwrap();
        assert_eq!(config.api_key_env, "MY_LLM_KEY");
        assert_eq!(config.model.api_key.as_deref(), Some("sk-1"));
        assert_eq!(
            (config.model.body.temperature, config.model.body.max_tokens),
            (0.5, 100)
        );
        assert_eq!(
            (config.rules.mode, config.rules.deny.as_slice()),
            (Mode::Plan, ["shell__*".to_owned()].as_slice())
        );
        assert!(config.hub.allow_private_network);
        let e = resolve(&[], settings, None).unwrap_err().to_string();
        assert!(e.starts_with("MY_LLM_KEY is not set"), "{e}");
    }

    fn resolve_with(
        args: &[&str],
        settings: Settings,
        vars: &[(&str, &str)],
    ) -> anyhow::Result<Config> {
        let vars: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let env = move |name: &str| vars.get(name).cloned();
        Config::from_settings(settings, std::env::temp_dir(), &options(args), &env, true)
    }

    fn with_provider(id: &str, table: Option<sources::RawProvider>) -> Settings {
        Settings {
            model_provider: Some(id.to_owned()),
            model_providers: table.map(|t| (id.to_owned(), t)).into_iter().collect(),
            ..Settings::default()
        }
    }

    #[test]
    fn a_providers_table_becomes_the_model_settings() {
        let table = sources::RawProvider {
            base_url: Some("http://gpu:8080/v1/".into()),
            env_key: Some("GPU_AUTH".into()),
            wire_api: Some(sources::WireName::Responses),
            query_params: Some([("api-version".to_owned(), "7".to_owned())].into()),
            http_headers: Some([("X-Team".to_owned(), "tools".to_owned())].into()),
            env_http_headers: Some(
                [
                    ("X-Org".to_owned(), "GPU_ORG".to_owned()),
                    ("X-Absent".to_owned(), "GPU_UNSET".to_owned()),
                ]
                .into(),
            ),
            ..sources::RawProvider::default()
        };
        let settings = Settings {
            // The connection without a provider: not used with one.
            base_url: Some("http://127.0.0.1:9/v1".into()),
            api_key_env: Some("MY_LLM_KEY".into()),
            ..with_provider("gpu", Some(table))
        };
        let env = [
            ("GPU_AUTH", "sk-gpu"),
            ("GPU_ORG", "org-1"),
            ("MY_LLM_KEY", "x"),
        ];
        let config = resolve_with(&[], settings, &env).unwrap();
        let model = &config.model;
        assert_eq!(model.base_url, "http://gpu:8080/v1");
        assert_eq!(model.api_key.as_deref(), Some("sk-gpu"));
        assert_eq!(model.wire, nanohermes_llm::WireApi::Responses);
        assert_eq!(model.query_params, [("api-version".into(), "7".into())]);
        assert_eq!(
            model.http_headers,
            [
                ("X-Team".to_owned(), "tools".to_owned()),
                ("X-Org".to_owned(), "org-1".to_owned())
            ]
        );
        assert_eq!(config.api_key_env, "GPU_AUTH");
        assert!(config.key_vars.contains(&"GPU_ORG".to_owned()));
        assert!(config.send_cache_key);
        assert_eq!(
            config.model_line(),
            "model: gpt-4.1-mini at http://gpu:8080/v1, provider gpu, wire responses"
        );
        let sub = config.hub.subagent_model.unwrap();
        assert_eq!(sub.provider.as_deref(), Some("gpu"));
        assert_eq!(sub.base_url_env, None, "the child reads the table itself");
        let names: Vec<String> = sub.env().into_iter().map(|(n, _)| n).collect();
        for name in [
            "NANOHERMES_PROVIDER",
            "NANOHERMES_MODEL",
            "GPU_AUTH",
            "GPU_ORG",
        ] {
            assert!(names.iter().any(|n| n == name), "{name}: {names:?}");
        }
    }

    #[test]
    fn the_top_level_key_and_the_flag_beat_the_providers_retries_and_idle_timeout() {
        let table = || sources::RawProvider {
            base_url: Some("http://gpu:8080/v1".into()),
            request_max_retries: Some(7),
            stream_idle_timeout_ms: Some(9_000),
            ..sources::RawProvider::default()
        };
        let config = resolve_with(&[], with_provider("gpu", Some(table())), &[]).unwrap();
        assert_eq!(config.model.retry.max_retries, 7);
        assert_eq!(
            config.model.stream_idle_timeout,
            Duration::from_millis(9_000)
        );
        let top = Settings {
            max_retries: Some(1),
            stream_idle_timeout_ms: Some(2_000),
            ..with_provider("gpu", Some(table()))
        };
        let config = resolve_with(&[], top, &[]).unwrap();
        assert_eq!(config.model.retry.max_retries, 1);
        assert_eq!(
            config.model.stream_idle_timeout,
            Duration::from_millis(2_000)
        );
        let plain = resolve_with(&[], with_provider("ollama", None), &[]).unwrap();
        assert_eq!(
            plain.model.retry.max_retries,
            RetryPolicy::default().max_retries
        );
    }

    #[test]
    fn the_cache_key_is_off_by_the_providers_key_or_the_flag() {
        let local = || Settings {
            base_url: Some("http://localhost:11434/v1".into()),
            ..Settings::default()
        };
        assert!(resolve(&[], local(), None).unwrap().send_cache_key);
        assert!(
            !resolve(&["--no-cache-key"], local(), None)
                .unwrap()
                .send_cache_key
        );
        let refusing = sources::RawProvider {
            base_url: Some("http://strict:8080/v1".into()),
            prompt_cache_key: Some(false),
            ..sources::RawProvider::default()
        };
        let config = resolve_with(&[], with_provider("strict", Some(refusing)), &[]).unwrap();
        assert!(!config.send_cache_key);
    }

    #[test]
    fn without_a_provider_the_connection_is_what_it_was() {
        let settings = Settings {
            base_url: Some("http://localhost:11434/v1".into()),
            ..Settings::default()
        };
        let config = resolve(&[], settings, None).unwrap();
        assert_eq!(config.provider, None);
        assert_eq!(config.model.wire, nanohermes_llm::WireApi::Chat);
        assert!(config.model.http_headers.is_empty() && config.model.query_params.is_empty());
        let sub = config.hub.subagent_model.unwrap();
        let names: Vec<String> = sub.env().into_iter().map(|(n, _)| n).collect();
        assert_eq!(&names[..2], ["OPENAI_BASE_URL", "NANOHERMES_MODEL"]);
        assert!(!names.iter().any(|n| n == "NANOHERMES_PROVIDER"));
    }

    #[test]
    fn a_builtin_provider_reads_its_own_variables_and_needs_its_key() {
        let env = [
            ("ANTHROPIC_BASE_URL", "http://proxy:8080/v1"),
            ("ANTHROPIC_API_KEY", "sk-ant"),
            ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
        ];
        let config = resolve_with(&[], with_provider("anthropic", None), &env).unwrap();
        assert_eq!(config.model.base_url, "http://proxy:8080/v1");
        assert_eq!(config.model.wire, nanohermes_llm::WireApi::Messages);
        assert_eq!(config.model.api_key.as_deref(), Some("sk-ant"));
        let sub = config.hub.subagent_model.unwrap();
        assert_eq!(sub.base_url_env.as_deref(), Some("ANTHROPIC_BASE_URL"));
        let e = resolve_with(&[], with_provider("anthropic", None), &[]).unwrap_err();
        assert!(e.downcast_ref::<ConfigError>().is_some(), "exits 2");
        assert_eq!(
            e.to_string(),
            "provider \"anthropic\" needs ANTHROPIC_API_KEY; set it, or choose another provider with --provider"
        );
        let local = resolve_with(&[], with_provider("lmstudio", None), &[]).unwrap();
        assert_eq!(
            (
                local.model.base_url.as_str(),
                local.model.api_key.as_deref()
            ),
            ("http://localhost:1234/v1", None)
        );
    }

    /// The advice an error gives names what this connection was set up
    /// with: the key's variable (or the provider that sends none) and
    /// where the base URL came from.
    #[test]
    fn the_advice_names_where_the_key_and_the_base_url_were_set() {
        let var = |v: &str| KeySource::Var(v.to_owned());
        let unset = |v: &str| KeySource::Unset(v.to_owned());
        let local = || Settings {
            base_url: Some("http://localhost:11434/v1".into()),
            ..Settings::default()
        };
        let own_key = || Settings {
            api_key_env: Some("MY_KEY".into()),
            ..local()
        };
        let table = sources::RawProvider {
            base_url: Some("http://gpu:8080/v1".into()),
            env_key: Some("GPU_AUTH".into()),
            ..sources::RawProvider::default()
        };
        let keyless = sources::RawProvider {
            base_url: Some("http://gpu:8080/v1".into()),
            ..sources::RawProvider::default()
        };
        let url = ("OPENAI_BASE_URL", "http://localhost:11434/v1");
        // Flags, settings, environment; the advice's key and base URL.
        type Case<'a> = (
            &'a [&'a str],
            Settings,
            Vec<(&'a str, &'a str)>,
            KeySource,
            &'a str,
        );
        let cases: Vec<Case> = vec![
            (
                &[],
                Settings::default(),
                vec![("OPENAI_API_KEY", "k")],
                var("OPENAI_API_KEY"),
                "OPENAI_BASE_URL",
            ),
            (
                &[],
                local(),
                vec![url],
                unset("OPENAI_API_KEY"),
                "OPENAI_BASE_URL",
            ),
            (
                &[],
                local(),
                vec![("OPENAI_API_KEY", "k")],
                var("OPENAI_API_KEY"),
                "base_url in your config",
            ),
            (
                &["--base-url", "http://localhost:11434/v1"],
                local(),
                vec![url],
                unset("OPENAI_API_KEY"),
                "--base-url",
            ),
            (
                &[],
                own_key(),
                vec![url],
                unset("MY_KEY"),
                "OPENAI_BASE_URL",
            ),
            (
                &[],
                own_key(),
                vec![url, ("MY_KEY", "k")],
                var("MY_KEY"),
                "OPENAI_BASE_URL",
            ),
            (
                &[],
                with_provider("anthropic", None),
                vec![("ANTHROPIC_API_KEY", "k")],
                var("ANTHROPIC_API_KEY"),
                "ANTHROPIC_BASE_URL",
            ),
            (
                &[],
                with_provider("openai", None),
                vec![("OPENAI_API_KEY", "k")],
                var("OPENAI_API_KEY"),
                "OPENAI_BASE_URL",
            ),
            (
                &[],
                with_provider("ollama", None),
                vec![],
                KeySource::None {
                    provider: "ollama".into(),
                },
                "base_url in [model_providers.ollama]",
            ),
            (
                &[],
                with_provider("gpu", Some(table)),
                vec![("GPU_AUTH", "k")],
                var("GPU_AUTH"),
                "base_url in [model_providers.gpu]",
            ),
            (
                &[],
                with_provider("gpu", Some(keyless)),
                vec![url],
                KeySource::None {
                    provider: "gpu".into(),
                },
                "base_url in [model_providers.gpu]",
            ),
        ];
        for (args, settings, env, key, base_url) in cases {
            let label = format!("{args:?} {env:?} {:?}", settings.model_provider);
            let config = resolve_with(args, settings, &env).unwrap();
            assert_eq!(
                config.model.advice,
                Advice {
                    key,
                    base_url: base_url.to_owned()
                },
                "{label}"
            );
        }
    }
}
