//! Resolved server specs: what to start, how, and where the entry came from.
//!
//! A `[mcp_servers.NAME]` table ([`RawServer`]), a `.mcp.json` entry and a
//! `--mcp` flag all end up as one [`ServerSpec`]. The seven built-ins are
//! the bottom layer, so `[mcp_servers.files] enabled = false` disables one
//! and `run = "process"` / `url = …` / `command = …` moves or replaces it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::diag::ConfigError;
use super::raw::{BuiltinName, RawServer, Run, is_http_url};

/// Default time a server has to start and list its tools (Codex's default).
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time one tool call may take (Codex's default).
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// Where a server entry came from. The hub believes tool annotations
/// (read-only, destructive) only from servers the user chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// One of the seven built-ins, not mentioned in any file.
    Default,
    /// The user's own `$NANOHERMES_HOME/config.toml`.
    UserConfig(PathBuf),
    /// A trusted project's `.nanohermes/config.toml`.
    ProjectConfig(PathBuf),
    /// A trusted project's `.mcp.json`.
    McpJson(PathBuf),
    /// A `--mcp` flag.
    Flag,
    /// An `--agent` flag: a `--mcp` server expected to offer `run_task`.
    AgentFlag,
}

impl Origin {
    /// Whether the entry came from a project's files rather than from the user.
    pub fn is_project(&self) -> bool {
        matches!(self, Origin::ProjectConfig(_) | Origin::McpJson(_))
    }

    /// A short description for `nanohermes mcp list`: "built-in", "--mcp", or the file.
    pub fn describe(&self) -> String {
        match self {
            Origin::Default => "built-in".to_owned(),
            Origin::Flag => "--mcp".to_owned(),
            Origin::AgentFlag => "--agent".to_owned(),
            Origin::UserConfig(p) | Origin::ProjectConfig(p) | Origin::McpJson(p) => {
                p.display().to_string()
            }
        }
    }
}

/// A program started over stdio.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StdioSpec {
    /// The program (looked up in `PATH`).
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Variables set for it, on top of the hub's minimal environment.
    pub env: BTreeMap<String, String>,
    /// Names of the agent's variables passed through.
    pub env_vars: Vec<String>,
    /// Its working directory (absolute); `None` is the workspace.
    pub cwd: Option<PathBuf>,
}

/// A Streamable HTTP endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HttpSpec {
    /// The endpoint, `http://` or `https://`.
    pub url: String,
    /// The variable whose value is sent as `Authorization: Bearer …`.
    pub bearer_token_env_var: Option<String>,
    /// Headers with fixed values.
    pub headers: BTreeMap<String, String>,
    /// Headers whose values are read from these variables at connect time.
    pub env_headers: BTreeMap<String, String>,
    /// The protocol era to speak, when pinned (`nanohermes mcp probe
    /// --protocol`): no probe, no era cache. `None` probes and remembers.
    pub era: Option<crate::Era>,
    /// OAuth client registration and scopes (used when no static token is set).
    pub oauth: OAuthSpec,
}

/// The `oauth_*` keys of an HTTP server.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OAuthSpec {
    /// `oauth_client_id`.
    pub client_id: Option<String>,
    /// `oauth_client_secret_env_var`.
    pub client_secret_env_var: Option<String>,
    /// The secret itself, given by a caller that has it in hand (the probe,
    /// from the conformance suite's context); no config key sets it.
    pub client_secret: Option<String>,
    /// `oauth_client_metadata_url`.
    pub client_metadata_url: Option<String>,
    /// `oauth_scopes`.
    pub scopes: Vec<String>,
    /// `oauth_callback_port` (0: any).
    pub callback_port: u16,
}

/// How the hub reaches the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// A built-in, inside the agent's process.
    InProcess,
    /// A built-in as its own child process (`nanohermes-NAME` over stdio).
    BuiltinProcess,
    /// An external program over stdio.
    Stdio(StdioSpec),
    /// A server over Streamable HTTP (a remote built-in or a third-party server).
    Http(HttpSpec),
}

/// One server to start, resolved and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// The name; its tools are `NAME__TOOL`.
    pub name: String,
    /// Where the entry came from (the layer that chose what runs).
    pub origin: Origin,
    /// The built-in this entry runs, if any (also for one reached over HTTP).
    pub builtin: Option<BuiltinName>,
    /// How to reach it.
    pub transport: Transport,
    /// false: listed by `nanohermes mcp list` but not started.
    pub enabled: bool,
    /// true: start-up fails when this server cannot start.
    pub required: bool,
    /// Time to start and list tools.
    pub startup_timeout: Duration,
    /// Time for one tool call.
    pub tool_timeout: Duration,
    /// When set, only these tools are offered.
    pub enabled_tools: Option<Vec<String>>,
    /// These tools are never offered.
    pub disabled_tools: Vec<String>,
    /// What the server is for (`description`), shown by `agent_list`.
    pub description: Option<String>,
    /// Its tools are never deferred behind `tool_search` (`always_load`).
    pub always_load: bool,
}

impl ServerSpec {
    /// The entry for a built-in nobody configured: in-process, defaults.
    pub fn default_builtin(builtin: BuiltinName) -> ServerSpec {
        ServerSpec {
            name: builtin.name().to_owned(),
            origin: Origin::Default,
            builtin: Some(builtin),
            transport: Transport::InProcess,
            enabled: true,
            required: false,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            description: None,
            always_load: false,
        }
    }
}

/// Whether `name` may name a server (it prefixes its tools' names).
pub fn is_valid_name(name: &str) -> bool {
    crate::is_valid_server_name(name)
}

/// Whether `name` is a plausible environment variable name.
pub fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether the table sets anything that decides what runs; such a table
/// replaces an earlier layer's entry instead of adjusting it.
pub fn sets_transport(raw: &RawServer) -> bool {
    raw.builtin.is_some()
        || raw.run.is_some()
        || raw.command.is_some()
        || raw.args.is_some()
        || raw.env.is_some()
        || raw.env_vars.is_some()
        || raw.cwd.is_some()
        || raw.url.is_some()
        || raw.bearer_token_env_var.is_some()
        || raw.http_headers.is_some()
        || raw.env_http_headers.is_some()
        || raw.oauth_client_id.is_some()
        || raw.oauth_client_secret_env_var.is_some()
        || raw.oauth_client_metadata_url.is_some()
        || raw.oauth_scopes.is_some()
        || raw.oauth_callback_port.is_some()
}

/// Lays `top` over `base`: settings (timeouts, enabled, required, tool
/// lists) adjust it; a table that [sets the transport](sets_transport)
/// replaces it.
pub fn overlay(base: &mut RawServer, top: RawServer) {
    if sets_transport(&top) {
        *base = top;
        return;
    }
    macro_rules! take {
        ($($field:ident),*) => { $( if top.$field.is_some() { base.$field = top.$field; } )* };
    }
    take!(
        startup_timeout_sec,
        startup_timeout_ms,
        tool_timeout_sec,
        enabled,
        required,
        enabled_tools,
        disabled_tools,
        description,
        always_load
    );
}

/// Checks one table on its own; the error is the offending key and the message.
pub fn check_raw(name: &str, raw: &RawServer) -> Result<(), (&'static str, String)> {
    if !is_valid_name(name) {
        return Err((
            "",
            format!(
                "server name {name:?} is not allowed; use letters, digits, `_` or `-`, without `__` (it prefixes the tools' names)"
            ),
        ));
    }
    let stdio_key = [
        ("args", raw.args.is_some()),
        ("env", raw.env.is_some()),
        ("env_vars", raw.env_vars.is_some()),
        ("cwd", raw.cwd.is_some()),
    ]
    .into_iter()
    .find(|(_, set)| *set)
    .map(|(k, _)| k);
    let http_key = [
        ("bearer_token_env_var", raw.bearer_token_env_var.is_some()),
        ("http_headers", raw.http_headers.is_some()),
        ("env_http_headers", raw.env_http_headers.is_some()),
        ("oauth_client_id", raw.oauth_client_id.is_some()),
        (
            "oauth_client_secret_env_var",
            raw.oauth_client_secret_env_var.is_some(),
        ),
        (
            "oauth_client_metadata_url",
            raw.oauth_client_metadata_url.is_some(),
        ),
        ("oauth_scopes", raw.oauth_scopes.is_some()),
        ("oauth_callback_port", raw.oauth_callback_port.is_some()),
    ]
    .into_iter()
    .find(|(_, set)| *set)
    .map(|(k, _)| k);
    if raw.command.is_some() && raw.url.is_some() {
        return Err((
            "url",
            format!(
                "[mcp_servers.{name}] sets both command and url; keep command (a program over stdio) or url (Streamable HTTP)"
            ),
        ));
    }
    if let Some(b) = raw.builtin {
        if raw.command.is_some() {
            return Err((
                "command",
                format!(
                    "[mcp_servers.{name}] sets builtin = \"{}\" and command; use run = \"process\" to run the built-in as a child process, or drop builtin to replace it with your command",
                    b.name()
                ),
            ));
        }
        if let Some(key) = stdio_key {
            return Err((
                key,
                format!(
                    "[mcp_servers.{name}]: {key} is for a command; a built-in takes run or url"
                ),
            ));
        }
    }
    if raw.run.is_some() {
        let builtin = raw.builtin.or_else(|| BuiltinName::from_name(name));
        if builtin.is_none() || raw.command.is_some() {
            return Err((
                "run",
                format!(
                    "[mcp_servers.{name}]: run is for a built-in; add builtin = \"files\" (or another of files, grep, shell, git, memory, todo, web), or remove run"
                ),
            ));
        }
        if raw.url.is_some() {
            return Err((
                "run",
                format!(
                    "[mcp_servers.{name}] sets both run and url; a built-in reached over url runs elsewhere, remove run"
                ),
            ));
        }
    }
    if let Some(url) = &raw.url {
        if !is_http_url(url) {
            return Err((
                "url",
                format!(
                    "url = {url:?} is not allowed; use an http:// or https:// URL such as https://host/mcp"
                ),
            ));
        }
        if let Some(key) = stdio_key {
            return Err((
                key,
                format!("[mcp_servers.{name}]: {key} is for a command, not for a url server"),
            ));
        }
    }
    if raw.command.is_some()
        && let Some(key) = http_key
    {
        return Err((
            key,
            format!("[mcp_servers.{name}]: {key} is for a url server, not for a command"),
        ));
    }
    if raw
        .description
        .as_deref()
        .is_some_and(|d| d.trim().is_empty())
    {
        return Err((
            "description",
            "description = \"\" is not allowed; say in a few words what the server is for, or remove the key"
                .to_owned(),
        ));
    }
    if raw.command.as_deref().is_some_and(|c| c.trim().is_empty()) {
        return Err((
            "command",
            "command = \"\" is not allowed; name the program to start".to_owned(),
        ));
    }
    for (key, secs) in [
        ("startup_timeout_sec", raw.startup_timeout_sec),
        ("tool_timeout_sec", raw.tool_timeout_sec),
    ] {
        if let Some(s) = secs
            && !(s.is_finite() && s > 0.0 && s <= 86_400.0)
        {
            return Err((
                key,
                format!(
                    "{key} = {s} is not allowed; use a number of seconds above 0 (at most 86400)"
                ),
            ));
        }
    }
    if raw.startup_timeout_ms == Some(0) {
        return Err((
            "startup_timeout_ms",
            "startup_timeout_ms = 0 is not allowed; use a number of milliseconds above 0"
                .to_owned(),
        ));
    }
    let env_names = raw
        .env_vars
        .iter()
        .flatten()
        .map(|v| ("env_vars", v))
        .chain(raw.env.iter().flat_map(|m| m.keys()).map(|k| ("env", k)))
        .chain(
            raw.bearer_token_env_var
                .iter()
                .map(|v| ("bearer_token_env_var", v)),
        )
        .chain(
            raw.oauth_client_secret_env_var
                .iter()
                .map(|v| ("oauth_client_secret_env_var", v)),
        )
        .chain(
            raw.env_http_headers
                .iter()
                .flat_map(|m| m.values())
                .map(|v| ("env_http_headers", v)),
        );
    for (key, var) in env_names {
        if !is_env_name(var) {
            return Err((
                key,
                format!(
                    "{key}: {var:?} is not a variable name; use letters, digits and `_`, not starting with a digit"
                ),
            ));
        }
    }
    Ok(())
}

/// Turns a merged table into a spec; `file` names it in errors and
/// `workspace` anchors a relative `cwd`.
pub fn resolve(
    name: &str,
    raw: RawServer,
    origin: Origin,
    file: &str,
    workspace: &Path,
) -> Result<ServerSpec, ConfigError> {
    check_raw(name, &raw).map_err(|(_, m)| ConfigError::at(file, None, m))?;
    let builtin = raw.builtin.or_else(|| {
        (raw.command.is_none() && raw.url.is_none())
            .then(|| BuiltinName::from_name(name))
            .flatten()
    });
    let transport = if let Some(url) = raw.url {
        Transport::Http(HttpSpec {
            url,
            bearer_token_env_var: raw.bearer_token_env_var,
            headers: raw.http_headers.unwrap_or_default(),
            env_headers: raw.env_http_headers.unwrap_or_default(),
            era: None,
            oauth: OAuthSpec {
                client_id: raw.oauth_client_id,
                client_secret_env_var: raw.oauth_client_secret_env_var,
                client_secret: None,
                client_metadata_url: raw.oauth_client_metadata_url,
                scopes: raw.oauth_scopes.unwrap_or_default(),
                callback_port: raw.oauth_callback_port.unwrap_or(0),
            },
        })
    } else if let Some(command) = raw.command {
        Transport::Stdio(StdioSpec {
            command,
            args: raw.args.unwrap_or_default(),
            env: raw.env.unwrap_or_default(),
            env_vars: raw.env_vars.unwrap_or_default(),
            cwd: raw.cwd.map(|c| workspace.join(c)),
        })
    } else if builtin.is_some() {
        match raw.run.unwrap_or_default() {
            Run::InProcess => Transport::InProcess,
            Run::Process => Transport::BuiltinProcess,
        }
    } else {
        return Err(ConfigError::at(
            file,
            None,
            format!(
                "[mcp_servers.{name}] has no command, url or builtin; add command = \"PROGRAM\" (stdio) or url = \"https://host/mcp\""
            ),
        ));
    };
    let startup_timeout = match (raw.startup_timeout_sec, raw.startup_timeout_ms) {
        (Some(s), _) => Duration::from_secs_f64(s),
        (None, Some(ms)) => Duration::from_millis(ms),
        (None, None) => DEFAULT_STARTUP_TIMEOUT,
    };
    Ok(ServerSpec {
        name: name.to_owned(),
        origin,
        builtin,
        transport,
        enabled: raw.enabled.unwrap_or(true),
        required: raw.required.unwrap_or(false),
        startup_timeout,
        tool_timeout: raw
            .tool_timeout_sec
            .map_or(DEFAULT_TOOL_TIMEOUT, Duration::from_secs_f64),
        enabled_tools: raw.enabled_tools,
        disabled_tools: raw.disabled_tools.unwrap_or_default(),
        description: raw.description,
        always_load: raw.always_load.unwrap_or(false),
    })
}

/// Parses `--mcp 'NAME=COMMAND ARGS…'` (shell-style quoting) or
/// `--mcp NAME=https://host/mcp`.
pub fn parse_mcp_flag(spec: &str) -> Result<ServerSpec, ConfigError> {
    parse_server_flag("--mcp", spec, Origin::Flag)
}

/// Parses `--agent 'NAME=COMMAND ARGS…'` or `--agent NAME=https://host/mcp`
/// exactly as `--mcp`: an MCP agent whose `run_task` becomes
/// `NAME__run_task` (the hub warns when it offers none).
pub fn parse_agent_flag(spec: &str) -> Result<ServerSpec, ConfigError> {
    parse_server_flag("--agent", spec, Origin::AgentFlag)
}

fn parse_server_flag(flag: &str, spec: &str, origin: Origin) -> Result<ServerSpec, ConfigError> {
    let fail = |m: String| ConfigError::at(flag, None, m);
    let usage = format!("use {flag} 'NAME=COMMAND ARGS...' or {flag} NAME=https://host/mcp");
    let Some(words) = shlex::split(spec) else {
        return Err(fail(format!("{spec:?} has unbalanced quotes; {usage}")));
    };
    let Some((first, rest)) = words.split_first() else {
        return Err(fail(format!("the value is empty; {usage}")));
    };
    let Some((name, target)) = first.split_once('=') else {
        return Err(fail(format!("{spec:?} has no NAME=; {usage}")));
    };
    if !is_valid_name(name) {
        return Err(fail(format!(
            "server name {name:?} is not allowed; use letters, digits, `_` or `-`, without `__`"
        )));
    }
    let mut raw = RawServer::default();
    if target.starts_with("http://") || target.starts_with("https://") {
        if !rest.is_empty() {
            return Err(fail(format!(
                "{name}={target} is a URL and takes no arguments; {usage}"
            )));
        }
        raw.url = Some(target.to_owned());
    } else if target.is_empty() {
        return Err(fail(format!("{name}= has no command; {usage}")));
    } else {
        raw.command = Some(target.to_owned());
        raw.args = Some(rest.to_vec());
    }
    // A flag has no cwd to anchor, so none is relative to anything.
    resolve(name, raw, origin, flag, Path::new("."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_flag_keeps_quoted_words_together() {
        let spec = parse_mcp_flag(r#"docs="/opt/my tools/server" --root 'my dir' -v"#).unwrap();
        assert_eq!(spec.origin, Origin::Flag);
        let Transport::Stdio(stdio) = spec.transport else {
            panic!("{spec:?}")
        };
        assert_eq!(stdio.command, "/opt/my tools/server");
        assert_eq!(stdio.args, ["--root", "my dir", "-v"]);
        let remote = parse_mcp_flag("docs=https://host.example/mcp").unwrap();
        assert!(
            matches!(remote.transport, Transport::Http(ref h) if h.url == "https://host.example/mcp")
        );
    }

    #[test]
    fn agent_flag_parses_as_mcp_and_names_itself() {
        let spec = parse_agent_flag("helper=nanohermes serve --root 'my dir'").unwrap();
        assert_eq!(
            (spec.name.as_str(), &spec.origin),
            ("helper", &Origin::AgentFlag)
        );
        assert_eq!(spec.origin.describe(), "--agent");
        let Transport::Stdio(stdio) = spec.transport else {
            panic!("{spec:?}")
        };
        assert_eq!(
            (stdio.command.as_str(), stdio.args.as_slice()),
            (
                "nanohermes",
                ["serve", "--root", "my dir"].map(String::from).as_slice()
            )
        );
        assert_eq!(
            parse_agent_flag("helper").unwrap_err().to_string(),
            "--agent: \"helper\" has no NAME=; use --agent 'NAME=COMMAND ARGS...' or --agent NAME=https://host/mcp"
        );
    }

    #[test]
    fn a_description_is_a_setting_and_must_say_something() {
        let mut base = RawServer {
            command: Some("agent".into()),
            description: Some("first".into()),
            ..RawServer::default()
        };
        overlay(
            &mut base,
            RawServer {
                description: Some("Reviews code".into()),
                ..RawServer::default()
            },
        );
        assert_eq!(
            (base.command.as_deref(), base.description.as_deref()),
            (Some("agent"), Some("Reviews code")),
            "a description alone adjusts the entry"
        );
        let spec = resolve("a", base, Origin::Flag, "f", Path::new("/w")).unwrap();
        assert_eq!(spec.description.as_deref(), Some("Reviews code"));
        let empty = RawServer {
            command: Some("agent".into()),
            description: Some(" ".into()),
            ..RawServer::default()
        };
        assert_eq!(check_raw("a", &empty).unwrap_err().0, "description");
    }

    #[test]
    fn mcp_flag_errors_say_how_to_write_it() {
        for (spec, wanted) in [
            (
                "docs=x 'open",
                "--mcp: \"docs=x 'open\" has unbalanced quotes; use --mcp 'NAME=COMMAND ARGS...' or --mcp NAME=https://host/mcp",
            ),
            (
                "docs",
                "--mcp: \"docs\" has no NAME=; use --mcp 'NAME=COMMAND ARGS...' or --mcp NAME=https://host/mcp",
            ),
            (
                "a__b=x",
                "--mcp: server name \"a__b\" is not allowed; use letters, digits, `_` or `-`, without `__`",
            ),
            (
                "d=https://h/mcp extra",
                "--mcp: d=https://h/mcp is a URL and takes no arguments; use --mcp 'NAME=COMMAND ARGS...' or --mcp NAME=https://host/mcp",
            ),
        ] {
            assert_eq!(parse_mcp_flag(spec).unwrap_err().to_string(), wanted);
        }
    }

    #[test]
    fn command_xor_url_and_builtin_rules() {
        let both = RawServer {
            command: Some("x".into()),
            url: Some("https://h/mcp".into()),
            ..RawServer::default()
        };
        assert_eq!(check_raw("s", &both).unwrap_err().0, "url");
        let builtin_cmd = RawServer {
            builtin: Some(BuiltinName::Files),
            command: Some("x".into()),
            ..RawServer::default()
        };
        assert!(
            check_raw("f", &builtin_cmd)
                .unwrap_err()
                .1
                .contains("run = \"process\"")
        );
        let stray_run = RawServer {
            run: Some(Run::Process),
            ..RawServer::default()
        };
        assert_eq!(check_raw("mine", &stray_run).unwrap_err().0, "run");
        assert!(
            check_raw("files", &stray_run).is_ok(),
            "a built-in's own name implies builtin"
        );
        let bad_var = RawServer {
            command: Some("x".into()),
            env_vars: Some(vec!["A-B".into()]),
            ..RawServer::default()
        };
        assert_eq!(check_raw("s", &bad_var).unwrap_err().0, "env_vars");
    }

    #[test]
    fn settings_adjust_and_transport_replaces() {
        let mut base = RawServer {
            command: Some("gh-server".into()),
            env: Some([("K".to_owned(), "v".to_owned())].into()),
            ..RawServer::default()
        };
        overlay(
            &mut base,
            RawServer {
                enabled: Some(false),
                ..RawServer::default()
            },
        );
        assert_eq!(
            (base.command.as_deref(), base.enabled),
            (Some("gh-server"), Some(false))
        );
        overlay(
            &mut base,
            RawServer {
                url: Some("https://h/mcp".into()),
                ..RawServer::default()
            },
        );
        assert_eq!((base.command, base.env, base.enabled), (None, None, None));
    }

    #[test]
    fn a_builtin_name_without_transport_is_that_builtin() {
        let ws = Path::new("/w");
        let moved = RawServer {
            run: Some(Run::Process),
            ..RawServer::default()
        };
        let spec = resolve("git", moved, Origin::Flag, "f", ws).unwrap();
        assert_eq!(
            (spec.builtin, spec.transport),
            (Some(BuiltinName::Git), Transport::BuiltinProcess)
        );
        let e = resolve("mine", RawServer::default(), Origin::Flag, "f", ws).unwrap_err();
        assert!(e.message.contains("has no command, url or builtin"), "{e}");
    }
}
