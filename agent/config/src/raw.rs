//! The shape of `config.toml`, exactly as written: every key optional,
//! unknown keys refused (`deny_unknown_fields`), and the checks that need
//! no other file. `schemas/config.json` is generated from these types.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::diag::{ConfigError, Located};

/// One `config.toml`: `$NANOHERMES_HOME/config.toml` or
/// `WORKSPACE/.nanohermes/config.toml`. Every key is optional; a later
/// layer overrides an earlier one.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "NanoHermes config.toml")]
pub struct RawConfig {
    /// The model to ask, e.g. "gpt-4.1-mini".
    pub model: Option<String>,
    /// The OpenAI-compatible API root, e.g. "http://localhost:11434/v1".
    /// Read from your own config only, never from a project's.
    pub base_url: Option<String>,
    /// The environment variable holding the API key [default: OPENAI_API_KEY].
    /// Read from your own config only, never from a project's.
    pub api_key_env: Option<String>,
    /// The model provider, by name: a built-in (openai, anthropic, ollama,
    /// lmstudio) or a `[model_providers.NAME]` table; absent keeps
    /// `base_url` and `api_key_env`. Read from your own config only.
    pub model_provider: Option<String>,
    /// Model providers by name, with Codex's keys; a table named like a
    /// built-in replaces it. Read from your own config only.
    #[serde(default)]
    pub model_providers: BTreeMap<String, super::providers::RawProvider>,
    /// A model to try once when the main one keeps failing.
    pub fallback_model: Option<String>,
    /// Sampling temperature, 0 to 2.
    pub temperature: Option<f64>,
    /// The most tokens one answer may have (at least 1).
    pub max_tokens: Option<u32>,
    /// Ask for streamed answers [default: true].
    pub stream: Option<bool>,
    /// Send `reasoning_effort: "high"` (for reasoning models).
    pub thinking: Option<bool>,
    /// Model round trips before a run gives up (at least 1).
    pub max_iterations: Option<u32>,
    /// Retries of a failed model request (429/5xx, connection errors).
    pub max_retries: Option<u32>,
    /// The first retry's wait in milliseconds; each later retry doubles it.
    pub retry_base_ms: Option<u64>,
    /// Milliseconds without a stream event (or a byte of another response) before a model request fails and is retried [default: 300000].
    pub stream_idle_timeout_ms: Option<u64>,
    /// The permission mode.
    pub mode: Option<Mode>,
    /// Run the shell and destructive tools without asking (default and debug modes).
    pub auto_approve: Option<bool>,
    /// When set, only these tools may run (`server__tool`, `mcp__server__tool`, `server__*`).
    pub allow: Option<Vec<String>>,
    /// These tools never run; deny lists of all layers add up.
    pub deny: Option<Vec<String>>,
    /// Lifecycle hooks, in the shape Claude Code and Codex use.
    pub hooks: Option<BTreeMap<HookEvent, Vec<HookGroup>>>,
    /// Guidance files read in a directory that has no AGENTS.md, first
    /// found wins [default: ["CLAUDE.md"]]; `[]` reads AGENTS.md only.
    pub project_doc_fallback_filenames: Option<Vec<String>>,
    /// How deep a chain of agents mounting agents may go [default: 3]: an
    /// agent this many levels deep mounts no subagent (no server's
    /// `run_task`); 0 mounts none at all.
    pub max_agent_depth: Option<u32>,
    /// Compact the history once its messages, serialised, pass this many
    /// characters [default: 120000]: all but the last
    /// `compact_keep_messages` become one model-written summary.
    pub compact_threshold_chars: Option<u32>,
    /// The messages kept verbatim when the history is compacted (at least
    /// 1) [default: 10].
    pub compact_keep_messages: Option<u32>,
    /// Long-term memory around each task [default: false]: the memories
    /// matching the task are shown to the model, and a finished task that
    /// used tools is distilled into new ones (one more model request).
    /// Needs the memory server.
    pub memory: Option<bool>,
    /// Defer the tools of servers nobody pinned behind `tool_search` when
    /// the declarations pass `tool_budget_bytes` or `tool_budget_count`
    /// [default: true].
    pub tool_search: Option<bool>,
    /// Declaration bytes per request before tools are deferred [default: 16000].
    pub tool_budget_bytes: Option<u32>,
    /// Declared tools per request before tools are deferred [default: 40].
    pub tool_budget_count: Option<u32>,
    /// Tools never deferred (`server__tool`, `mcp__server__tool`, `server__*`).
    pub always_load_tools: Option<Vec<String>>,
    /// The kernel sandbox of shell commands, git hooks and hooks
    /// [default: "workspace-write"]; Plan and Debug modes use "read-only".
    pub sandbox: Option<mcp_tools::spawn::SandboxMode>,
    /// The network of sandboxed commands [default: false]: `false` none at
    /// all, `true` all of it, `"allowlist"` only `sandbox_allowed_domains`
    /// through a local proxy (HTTP and HTTPS).
    pub sandbox_network: Option<SandboxNetwork>,
    /// The domains commands reach with `sandbox_network = "allowlist"`,
    /// e.g. ["crates.io", "*.crates.io"] (`*.x`: the names below x).
    pub sandbox_allowed_domains: Option<Vec<String>>,
    /// More paths sandboxed commands may write in workspace-write, e.g.
    /// ["~/.cargo", "~/.cache"]; `~/` is your home, a relative path is in the workspace.
    pub sandbox_writable: Option<Vec<String>>,
    /// When the kernel cannot enforce the sandbox: "refuse" commands
    /// [default] or "warn" and run them without it.
    pub sandbox_unavailable: Option<mcp_tools::spawn::WhenUnavailable>,
    /// The only domains `web_fetch` reaches, e.g. ["docs.rs", "*.rust-lang.org"]
    /// (`*.x`: the names below x) [default: unset, every public host].
    pub web_allowed_domains: Option<Vec<String>>,
    /// The MCP servers, by name; a name's tools are `NAME__TOOL`.
    #[serde(default)]
    pub mcp_servers: BTreeMap<String, RawServer>,
    /// Per-project decisions, by absolute path; only in your own config.
    #[serde(default)]
    pub projects: BTreeMap<String, RawProject>,
    /// `nanohermes serve` settings; only in your own config.
    pub serve: Option<RawServe>,
}

/// The `[serve]` table: how `nanohermes serve` keeps its state.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawServe {
    /// Where tasks and sessions are kept: "files" [default] or
    /// "postgres://USER@HOST:PORT/DB", shared by every replica (the
    /// password from NANOHERMES_STORE_PASSWORD or PGPASSWORD, never here;
    /// TLS by `sslmode` and `sslrootcert`).
    /// `--store` overrides it.
    pub store: Option<String>,
}

/// `sandbox_network`: a bool, or the word `"allowlist"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged, expecting = "true, false or \"allowlist\"")]
pub enum SandboxNetwork {
    /// `true`: commands have the whole network; `false`: none.
    Open(bool),
    /// `"allowlist"`: only `sandbox_allowed_domains`, through a proxy.
    Limited(NetworkWord),
}

/// The words `sandbox_network` takes besides `true` and `false`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkWord {
    /// Only `sandbox_allowed_domains`, through the sandbox's proxy.
    Allowlist,
}

/// Permission modes. `accept-edits` is written the Codex way (kebab-case,
/// like `approval_policy = "on-request"`); Claude Code's `acceptEdits`
/// is accepted by [`Mode::from_name`] for flags.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Everyday use: the shell and destructive tools ask (`auto_approve` skips it).
    #[default]
    Default,
    /// File edits run without asking; the shell and other destructive tools ask.
    AcceptEdits,
    /// Read-only analysis: only tools annotated read-only.
    Plan,
    /// Unattended: never asks, runs to the goal.
    Goal,
    /// Read-only tools plus the shell, which asks unless `auto_approve`.
    Debug,
}

impl Mode {
    /// Every mode, in the order they are listed in errors.
    pub const ALL: &'static [Mode] = &[
        Mode::Default,
        Mode::AcceptEdits,
        Mode::Plan,
        Mode::Goal,
        Mode::Debug,
    ];

    /// The name written in config files.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::AcceptEdits => "accept-edits",
            Mode::Plan => "plan",
            Mode::Goal => "goal",
            Mode::Debug => "debug",
        }
    }

    /// Looks a mode up by name, also accepting Claude Code's camelCase
    /// `acceptEdits` (flags and environment).
    pub fn from_name(name: &str) -> Option<Mode> {
        match name {
            "acceptEdits" => Some(Mode::AcceptEdits),
            _ => Mode::ALL.iter().copied().find(|m| m.name() == name),
        }
    }

    /// How much a mode lets run without asking: plan < debug < default <
    /// accept-edits < goal. A `run_task` caller may narrow the server's mode,
    /// never widen it (a parent agent's model must not lift its own approvals).
    pub fn permissiveness(self) -> u8 {
        match self {
            Mode::Plan => 0,
            Mode::Debug => 1,
            Mode::Default => 2,
            Mode::AcceptEdits => 3,
            Mode::Goal => 4,
        }
    }

    /// "default, accept-edits, plan, goal, debug".
    pub fn names() -> String {
        Mode::ALL
            .iter()
            .map(|m| m.name())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The hook events, named as Claude Code names them.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, Serialize, JsonSchema,
)]
pub enum HookEvent {
    /// Before a tool call; may block it.
    PreToolUse,
    /// After a tool call.
    PostToolUse,
    /// When the user sends a prompt.
    UserPromptSubmit,
    /// When a run ends.
    Stop,
    /// When a sub-agent's run ends.
    SubagentStop,
    /// When a session starts.
    SessionStart,
    /// When a session ends.
    SessionEnd,
    /// Before the history is compacted.
    PreCompact,
    /// When the agent shows a notification.
    Notification,
    /// When a tool call needs the user's permission.
    PermissionRequest,
}

/// The hooks that run for the tools matching `matcher`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookGroup {
    /// A regular expression over the tool name, e.g. "^(shell|files)__"; absent matches every tool.
    pub matcher: Option<String>,
    /// The commands to run, in order.
    pub hooks: Vec<HookCommand>,
}

/// One hook command.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HookCommand {
    /// Always "command".
    #[serde(rename = "type")]
    pub kind: HookKind,
    /// The shell command; it reads the event as JSON on stdin; for PreToolUse, any non-zero exit blocks.
    pub command: String,
    /// Seconds before the hook is killed.
    pub timeout: Option<u64>,
}

/// What a hook is; only commands exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HookKind {
    /// A shell command.
    Command,
}

/// `[projects."/abs/path"]`: what you decided about a project.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawProject {
    /// "trusted" reads the project's `.nanohermes/config.toml` and `.mcp.json`.
    pub trust_level: TrustLevel,
}

/// A project's trust.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TrustLevel {
    /// Its config files are read: they may start programs and change rules.
    Trusted,
    /// Its config files are skipped, and the agent does not ask again.
    Untrusted,
}

/// `[mcp_servers.NAME]`, with Codex's key names so entries paste unchanged,
/// plus `builtin` and `run`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawServer {
    /// A built-in server to run under this name.
    pub builtin: Option<BuiltinName>,
    /// Where the built-in runs when it has no `url` [default: in-process].
    pub run: Option<Run>,
    /// The program to start (stdio transport).
    pub command: Option<String>,
    /// Its arguments.
    pub args: Option<Vec<String>>,
    /// Variables set for the program.
    pub env: Option<BTreeMap<String, String>>,
    /// Names of variables passed through from the agent's environment.
    pub env_vars: Option<Vec<String>>,
    /// The program's working directory, relative to the workspace [default: the workspace].
    pub cwd: Option<String>,
    /// A Streamable HTTP endpoint instead of a program.
    pub url: Option<String>,
    /// The variable holding a bearer token sent as `Authorization: Bearer …`.
    pub bearer_token_env_var: Option<String>,
    /// HTTP headers with fixed values.
    pub http_headers: Option<BTreeMap<String, String>>,
    /// HTTP headers whose values come from environment variables (header = "VAR").
    pub env_http_headers: Option<BTreeMap<String, String>>,
    /// OAuth: a client registered with the server's authorization server
    /// beforehand (otherwise a Client ID Metadata Document or dynamic registration).
    pub oauth_client_id: Option<String>,
    /// OAuth: the variable holding that client's secret.
    pub oauth_client_secret_env_var: Option<String>,
    /// OAuth: the HTTPS URL of this client's metadata document, used as the
    /// client id where the authorization server supports it.
    pub oauth_client_metadata_url: Option<String>,
    /// OAuth: the scopes to ask for [default: what the server names].
    pub oauth_scopes: Option<Vec<String>>,
    /// OAuth: the loopback port `nanohermes mcp login` listens on for the
    /// redirect [default: any free port].
    pub oauth_callback_port: Option<u16>,
    /// Seconds the server has to start and list its tools [default: 10].
    pub startup_timeout_sec: Option<f64>,
    /// Codex's older spelling of the start-up timeout, in milliseconds.
    pub startup_timeout_ms: Option<u64>,
    /// Seconds one tool call may take [default: 60].
    pub tool_timeout_sec: Option<f64>,
    /// false skips the server [default: true].
    pub enabled: Option<bool>,
    /// true makes start-up fail when the server cannot start [default: false].
    pub required: Option<bool>,
    /// Only these tools are offered (applied first).
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered (applied after `enabled_tools`).
    pub disabled_tools: Option<Vec<String>>,
    /// What this server is for, in one line; `agent_list` shows it for a
    /// subagent (a server offering `run_task`).
    pub description: Option<String>,
    /// true: its tools are always declared, never deferred behind
    /// `tool_search` [default: false].
    pub always_load: Option<bool>,
}

/// The seven built-in servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BuiltinName {
    /// Read, write, edit, patch and list files.
    Files,
    /// Search file contents, find files by glob.
    Grep,
    /// Run commands and background tasks.
    Shell,
    /// Status, diff, log and commit.
    Git,
    /// Notes kept across sessions.
    Memory,
    /// The session's todo list.
    Todo,
    /// Fetch a URL as text.
    Web,
}

impl BuiltinName {
    /// The seven, in listing order.
    pub const ALL: &'static [BuiltinName] = &[
        BuiltinName::Files,
        BuiltinName::Grep,
        BuiltinName::Shell,
        BuiltinName::Git,
        BuiltinName::Memory,
        BuiltinName::Todo,
        BuiltinName::Web,
    ];

    /// The name used in config and as the default server name.
    pub fn name(self) -> &'static str {
        match self {
            BuiltinName::Files => "files",
            BuiltinName::Grep => "grep",
            BuiltinName::Shell => "shell",
            BuiltinName::Git => "git",
            BuiltinName::Memory => "memory",
            BuiltinName::Todo => "todo",
            BuiltinName::Web => "web",
        }
    }

    /// Looks a built-in up by name.
    pub fn from_name(name: &str) -> Option<BuiltinName> {
        BuiltinName::ALL.iter().copied().find(|b| b.name() == name)
    }
}

/// Where a built-in runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Run {
    /// Inside the agent's process, over in-memory channels.
    #[default]
    InProcess,
    /// As a child process (`nanohermes-NAME`) over stdio.
    Process,
}

/// Which layer a file is: a project file may not trust itself or move
/// the model endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// `$NANOHERMES_HOME/config.toml`.
    User,
    /// `WORKSPACE/.nanohermes/config.toml` of a trusted project.
    Project,
}

/// Keys a project file may not set, with the reason shown.
const USER_ONLY: &[&str] = &[
    "projects",
    "base_url",
    "api_key_env",
    "model_provider",
    "model_providers",
    "serve",
];

/// Sandbox keys: only the user widens or narrows what commands may do.
const SANDBOX_KEYS: &[&str] = &[
    "sandbox",
    "sandbox_network",
    "sandbox_allowed_domains",
    "sandbox_writable",
    "sandbox_unavailable",
    "web_allowed_domains",
];

/// Parses one config file; `file` is its name as shown in errors.
pub fn parse(file: &str, text: &str, kind: FileKind) -> Result<RawConfig, ConfigError> {
    let doc = Located::parse(file, text)?;
    let raw: RawConfig = toml::from_str(text).map_err(|e| doc.explain(&e))?;
    for (key, domains) in [
        ("sandbox_allowed_domains", &raw.sandbox_allowed_domains),
        ("web_allowed_domains", &raw.web_allowed_domains),
    ] {
        if let Some(domains) = domains {
            mcp_tools::net::DomainList::parse(domains).map_err(|e| doc.error_at(&[key], e))?;
        }
    }
    if kind == FileKind::Project {
        for key in SANDBOX_KEYS {
            if doc.line(&[key]).is_some() {
                return Err(doc.error_at(
                    &[key],
                    format!(
                        "{key} is read only from your own config ($NANOHERMES_HOME/config.toml), \
                         not from a project's: a repository must not loosen the sandbox its \
                         commands run in nor where web_fetch goes; move it to your own config"
                    ),
                ));
            }
        }
        for key in USER_ONLY {
            if doc.line(&[key]).is_some() {
                let why = if *key == "serve" {
                    "a repository must not choose where your tasks and sessions are stored"
                } else {
                    "a repository must not trust itself or send your API key elsewhere"
                };
                return Err(doc.error_at(
                    &[key],
                    format!(
                        "{key} is read only from your own config ($NANOHERMES_HOME/config.toml), \
                         not from a project's: {why}; move it to your own config"
                    ),
                ));
            }
        }
    }
    check_values(&doc, &raw)?;
    for (name, server) in &raw.mcp_servers {
        super::servers::check_raw(name, server)
            .map_err(|(key, message)| doc.error_at(&["mcp_servers", name, key], message))?;
    }
    for (name, provider) in &raw.model_providers {
        super::providers::check_raw(name, provider).map_err(|(key, message)| {
            let path: &[&str] = match key {
                "" => &["model_providers", name],
                key => &["model_providers", name, key],
            };
            doc.error_at(path, message)
        })?;
    }
    for path in raw.projects.keys() {
        if !std::path::Path::new(path).is_absolute() {
            return Err(doc.error_at(
                &["projects", path],
                format!("projects.{path:?} is not an absolute path; write the project's full path"),
            ));
        }
    }
    Ok(raw)
}

/// Range checks serde cannot express.
fn check_values(doc: &Located<'_>, raw: &RawConfig) -> Result<(), ConfigError> {
    if let Some(t) = raw.temperature
        && !(0.0..=2.0).contains(&t)
    {
        return Err(doc.error_at(
            &["temperature"],
            format!("temperature = {t} is not allowed; use a number from 0 to 2"),
        ));
    }
    for (key, value) in [
        ("max_tokens", raw.max_tokens),
        ("max_iterations", raw.max_iterations),
        ("compact_threshold_chars", raw.compact_threshold_chars),
        ("compact_keep_messages", raw.compact_keep_messages),
    ] {
        if value == Some(0) {
            return Err(doc.error_at(
                &[key],
                format!("{key} = 0 is not allowed; use a whole number of at least 1"),
            ));
        }
    }
    for (key, value) in [
        ("model", &raw.model),
        ("api_key_env", &raw.api_key_env),
        ("model_provider", &raw.model_provider),
    ] {
        if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
            return Err(doc.error_at(
                &[key],
                format!("{key} = \"\" is not allowed; remove the key to use the default"),
            ));
        }
    }
    if let Some(url) = &raw.base_url
        && !is_http_url(url)
    {
        return Err(doc.error_at(
            &["base_url"],
            format!("base_url = {url:?} is not allowed; use an http:// or https:// URL such as http://localhost:11434/v1"),
        ));
    }
    // A fallback name is looked up in every directory: a path would
    // reach outside it.
    if let Some(bad) = raw
        .project_doc_fallback_filenames
        .iter()
        .flatten()
        .find(|n| n.is_empty() || *n == "." || *n == ".." || n.contains(['/', '\\']))
    {
        return Err(doc.error_at(
            &["project_doc_fallback_filenames"],
            format!(
                "project_doc_fallback_filenames has {bad:?}; give plain file names such as \"CLAUDE.md\""
            ),
        ));
    }
    for (event, groups) in raw.hooks.iter().flatten() {
        for group in groups {
            if group.hooks.iter().any(|h| h.command.trim().is_empty()) {
                return Err(doc.error_at(
                    &["hooks"],
                    format!(
                        "hooks.{event:?} has a hook with an empty command; give the command to run"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Whether `url` parses as an http(s) URL with a host.
pub fn is_http_url(url: &str) -> bool {
    url::Url::parse(url)
        .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse("~/.nanohermes/config.toml", text, FileKind::User)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn unknown_top_level_key_names_file_line_and_allowed_keys() {
        let text = "model = \"m\"\n\n\n\n\n\nmodle = \"x\"\n";
        assert_eq!(
            err(text),
            "~/.nanohermes/config.toml:7: unknown key \"modle\"; allowed keys: model, base_url, \
             api_key_env, model_provider, model_providers, fallback_model, temperature, max_tokens, stream, thinking, \
             max_iterations, max_retries, retry_base_ms, stream_idle_timeout_ms, mode, auto_approve, allow, deny, hooks, \
             project_doc_fallback_filenames, max_agent_depth, compact_threshold_chars, \
             compact_keep_messages, memory, tool_search, tool_budget_bytes, tool_budget_count, \
             always_load_tools, sandbox, sandbox_network, sandbox_allowed_domains, \
             sandbox_writable, sandbox_unavailable, web_allowed_domains, \
             mcp_servers, projects, serve"
        );
    }

    #[test]
    fn bad_mode_lists_the_modes() {
        assert_eq!(
            err("model = \"m\"\n\nmode = \"yolo\"\n"),
            "~/.nanohermes/config.toml:3: mode = \"yolo\" is not allowed; use one of default, accept-edits, plan, goal, debug"
        );
        let ok = parse("f", "mode = \"accept-edits\"", FileKind::User).unwrap();
        assert_eq!(ok.mode, Some(Mode::AcceptEdits));
        assert_eq!(Mode::from_name("acceptEdits"), Some(Mode::AcceptEdits));
        assert_eq!(Mode::names(), "default, accept-edits, plan, goal, debug");
    }

    #[test]
    fn wrong_types_and_ranges_say_what_is_expected() {
        assert_eq!(
            err("temperature = \"hot\"\n"),
            "~/.nanohermes/config.toml:1: temperature = \"hot\" is not allowed; expected a number"
        );
        assert_eq!(
            err("stream = 1\n"),
            "~/.nanohermes/config.toml:1: stream = 1 is not allowed; expected true or false"
        );
        assert_eq!(
            err("\ntemperature = 3.5\n"),
            "~/.nanohermes/config.toml:2: temperature = 3.5 is not allowed; use a number from 0 to 2"
        );
        assert_eq!(
            err("max_iterations = 0\n"),
            "~/.nanohermes/config.toml:1: max_iterations = 0 is not allowed; use a whole number of at least 1"
        );
        assert_eq!(
            err("model = \"m\"\ncompact_keep_messages = 0\n"),
            "~/.nanohermes/config.toml:2: compact_keep_messages = 0 is not allowed; use a whole number of at least 1"
        );
        let ok = parse(
            "f",
            "compact_threshold_chars = 8000\ncompact_keep_messages = 4",
            FileKind::User,
        )
        .unwrap();
        assert_eq!(
            (ok.compact_threshold_chars, ok.compact_keep_messages),
            (Some(8000), Some(4))
        );
        let mindful = parse("f", "memory = true", FileKind::User).unwrap();
        assert_eq!(mindful.memory, Some(true));
    }

    #[test]
    fn unknown_server_key_names_its_table() {
        let text = "[mcp_servers.gh]\ncommand = \"npx\"\ncomand = \"x\"\n";
        let e = err(text);
        assert!(
            e.starts_with(
                "~/.nanohermes/config.toml:3: unknown key \"comand\" in [mcp_servers.gh]; allowed keys: builtin, run, command, args,"
            ),
            "{e}"
        );
    }

    #[test]
    fn bad_builtin_and_run_list_the_choices() {
        assert_eq!(
            err("[mcp_servers.f]\nbuiltin = \"fs\"\n"),
            "~/.nanohermes/config.toml:2: mcp_servers.f.builtin = \"fs\" is not allowed; use one of files, grep, shell, git, memory, todo, web"
        );
        assert_eq!(
            err("[mcp_servers.files]\nrun = \"thread\"\n"),
            "~/.nanohermes/config.toml:2: mcp_servers.files.run = \"thread\" is not allowed; use one of in-process, process"
        );
    }

    #[test]
    fn hooks_parse_in_the_claude_code_shape() {
        let text = r#"
[[hooks.PreToolUse]]
matcher = "^(shell|files)__"
hooks = [{ type = "command", command = "./guard.sh", timeout = 30 }]
"#;
        let raw = parse("f", text, FileKind::User).unwrap();
        let groups = &raw.hooks.unwrap()[&HookEvent::PreToolUse];
        assert_eq!(groups[0].matcher.as_deref(), Some("^(shell|files)__"));
        assert_eq!(groups[0].hooks[0].command, "./guard.sh");
        let inline = r#"hooks = { PostToolUse = [{ matcher = "x", hooks = [{ type = "command", command = "y" }] }] }"#;
        assert!(parse("f", inline, FileKind::User).is_ok());
        let e = err("hooks = { BeforeTool = [] }\n");
        assert!(
            e.contains("is not allowed; use one of PreToolUse, PostToolUse"),
            "{e}"
        );
        let e = err(r#"hooks = { Stop = [{ hooks = [{ type = "http", command = "y" }] }] }"#);
        assert!(e.contains("use one of command"), "{e}");
    }

    #[test]
    fn sandbox_network_is_a_bool_or_allowlist_with_checked_domains() {
        let user = |text: &str| parse("f", text, FileKind::User);
        for (text, expect) in [
            ("sandbox_network = true", SandboxNetwork::Open(true)),
            ("sandbox_network = false", SandboxNetwork::Open(false)),
            (
                "sandbox_network = \"allowlist\"",
                SandboxNetwork::Limited(NetworkWord::Allowlist),
            ),
        ] {
            assert_eq!(user(text).unwrap().sandbox_network, Some(expect), "{text}");
        }
        let e = err("sandbox_network = \"maybe\"");
        assert!(e.contains("true, false or \"allowlist\""), "{e}");
        let raw = user("sandbox_allowed_domains = [\"crates.io\", \"*.crates.io\"]").unwrap();
        assert_eq!(raw.sandbox_allowed_domains.unwrap().len(), 2);
        let e = err("model = \"m\"\nsandbox_allowed_domains = [\"crates.io/x\"]");
        assert!(
            e.starts_with("~/.nanohermes/config.toml:2:") && e.contains("`crates.io/x`"),
            "{e}"
        );
        // A project can neither switch the allowlist on nor widen it.
        for text in [
            "sandbox_network = \"allowlist\"",
            "sandbox_allowed_domains = [\"evil.example\"]",
        ] {
            let e = parse("/w/.nanohermes/config.toml", text, FileKind::Project).unwrap_err();
            assert!(
                e.message.contains("is read only from your own config"),
                "{e}"
            );
        }
    }

    #[test]
    fn a_project_file_cannot_trust_itself_or_move_the_endpoint() {
        for (text, line) in [
            (
                "model = \"m\"\n[projects.\"/w\"]\ntrust_level = \"trusted\"\n",
                2,
            ),
            ("\nbase_url = \"https://evil.example/v1\"\n", 2),
            ("api_key_env = \"OPENAI_API_KEY\"\n", 1),
            ("model = \"m\"\nmodel_provider = \"openai\"\n", 2),
            (
                "\n\n[model_providers.openai]\nbase_url = \"http://evil.example/v1\"\n",
                3,
            ),
            ("[serve]\nstore = \"postgres://me@evil.example/db\"\n", 1),
        ] {
            let e = parse("/w/.nanohermes/config.toml", text, FileKind::Project).unwrap_err();
            assert_eq!(e.line, Some(line), "{e}");
            assert!(
                e.message.contains("is read only from your own config"),
                "{e}"
            );
        }
        assert!(
            parse(
                "f",
                "[projects.\"/w\"]\ntrust_level = \"trusted\"\n",
                FileKind::User
            )
            .is_ok()
        );
        let e = err("[projects.\"rel/w\"]\ntrust_level = \"trusted\"\n");
        assert!(
            e.contains(":1: projects.\"rel/w\" is not an absolute path"),
            "{e}"
        );
    }

    #[test]
    fn provider_tables_take_codexs_keys_and_name_the_line_of_a_bad_one() {
        let text = r#"model_provider = "llama"

[model_providers.llama]
name = "llama.cpp on the GPU box"
base_url = "http://gpu:8080/v1"
wire_api = "chat"
env_key = "LLAMA_KEY"
query_params = { api-version = "1" }
http_headers = { X-Team = "tools" }
env_http_headers = { X-Org = "LLAMA_ORG" }
request_max_retries = 4
stream_idle_timeout_ms = 60000
prompt_cache_key = false
"#;
        let raw = parse("f", text, FileKind::User).unwrap();
        let llama = &raw.model_providers["llama"];
        assert_eq!(raw.model_provider.as_deref(), Some("llama"));
        assert_eq!(
            (
                llama.wire_api,
                llama.request_max_retries,
                llama.prompt_cache_key
            ),
            (Some(super::super::WireName::Chat), Some(4), Some(false))
        );
        let e = err("[model_providers.x]\nbase_url = \"http://h/v1\"\nwire = \"chat\"\n");
        assert!(
            e.starts_with(
                "~/.nanohermes/config.toml:3: unknown key \"wire\" in [model_providers.x]; allowed keys: name, base_url,"
            ),
            "{e}"
        );
        let e = err("[model_providers.x]\nbase_url = \"http://h/v1\"\nwire_api = \"grpc\"\n");
        assert!(
            e.contains(":3: model_providers.x.wire_api = \"grpc\" is not allowed; use one of chat, responses, messages"),
            "{e}"
        );
        let e = err("model = \"m\"\n[model_providers.x]\nname = \"X\"\n");
        assert!(e.contains(":2: [model_providers.x] has no base_url"), "{e}");
        let e = err("[model_providers.x]\nbase_url = \"http://h/v1\"\nenv_key = \"sk-1\"\n");
        assert!(
            e.contains(":3: model_providers.x.env_key = \"sk-1\" is not a variable name"),
            "{e}"
        );
        let e = err("model_provider = \"\"\n");
        assert!(
            e.contains(":1: model_provider = \"\" is not allowed"),
            "{e}"
        );
    }

    #[test]
    fn a_fallback_guidance_name_must_be_a_plain_file_name() {
        let e = err("project_doc_fallback_filenames = [\"CLAUDE.md\", \"../x.md\"]\n");
        assert!(
            e.contains(":1: project_doc_fallback_filenames has \"../x.md\"; give plain file names"),
            "{e}"
        );
        let ok = parse("f", "project_doc_fallback_filenames = []\n", FileKind::User).unwrap();
        assert_eq!(ok.project_doc_fallback_filenames, Some(vec![]));
    }
}
