//! `nanohermes mcp list`, `get` and `call`: the servers started for real,
//! then shut down (the hub kills every process tree it started).

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{Context as _, bail};
use serde_json::Value;

use super::super::table::table;
use crate::app::Setup;
use nanohermes_config::{ServerSpec, Transport};
use nanohermes_hub::{Hub, ServerState};

/// `mcp list`: every configured server with where it runs, its status and
/// tool count after a real handshake, its era, and where it was configured.
pub async fn list(setup: Setup) -> anyhow::Result<ExitCode> {
    let specs = setup.config.hub.servers.clone();
    // No command has run here to find out whether namespaces work: ask.
    mcp_tools::spawn::sandbox::Support::probe();
    let sandbox =
        mcp_tools::spawn::Sandbox::new(setup.config.hub.sandbox.clone(), &setup.config.workspace)
            .status();
    let model_line = setup.config.model_line();
    let mut config = setup.config.hub;
    // Reported as found by a real start, built-ins too.
    config.builtins_on_first_use = false;
    let hub = Hub::start(config).await?;
    let rows: Vec<Vec<String>> = hub
        .status()
        .into_iter()
        .map(|status| {
            let (state, tools, era) = match &status.state {
                ServerState::Running { tools, era } => {
                    ("ok".to_owned(), tools.to_string(), era.to_string())
                }
                ServerState::Failed { reason } => {
                    (format!("failed: {reason}"), "-".into(), "-".into())
                }
                ServerState::Disabled => ("disabled".to_owned(), "-".into(), "-".into()),
            };
            let origin = specs
                .iter()
                .find(|s| s.name == status.name)
                .map_or_else(String::new, |s| s.origin.describe());
            // The failure reason is the longest cell: last, so the columns stay readable.
            vec![status.name, status.where_, tools, era, origin, state]
        })
        .collect();
    hub.shutdown().await;
    let mut text = table(&["NAME", "RUNS", "TOOLS", "ERA", "ORIGIN", "STATUS"], &rows);
    // The shell's commands and git's hooks run in it: say whether it holds.
    let _ = writeln!(text, "\nsandbox (shell, git hooks, hooks): {sandbox}");
    let _ = writeln!(text, "{model_line}");
    print(&text)
}

/// `mcp get NAME`: the resolved entry, its origin and the variables it
/// does not get. Nothing is started.
pub fn get(setup: Setup, name: &str) -> anyhow::Result<ExitCode> {
    let spec = find(&setup, name)?;
    let hub = &setup.config.hub;
    // Another NanoHermes gets this agent's model settings (hub/agents.rs).
    let inherited: Vec<String> = match (&spec.transport, &hub.subagent_model) {
        (Transport::Stdio(stdio), Some(model))
            if nanohermes_hub::is_nanohermes_serve(stdio, &hub.builtin_exe, hub.serve_command) =>
        {
            model.env().into_iter().map(|(name, _)| name).collect()
        }
        _ => Vec::new(),
    };
    let withheld: Vec<String> = Hub::withheld_env(spec)
        .into_iter()
        .filter(|name| !inherited.contains(name))
        .collect();
    let mut text = describe(spec, &withheld);
    if !inherited.is_empty() {
        text.push_str(&format!(
            "inherits: {} (this agent's model settings: a NanoHermes subagent; the entry's env \
             overrides them)\n",
            inherited.join(", ")
        ));
    }
    print(&text)
}

/// `mcp call NAME TOOL JSON`: starts only that server, calls the tool once,
/// prints the result's text. A tool error (`isError`) or arguments that are
/// not one JSON object exit 1 with the error's text.
pub async fn call(
    setup: Setup,
    name: &str,
    tool: &str,
    arguments: &str,
) -> anyhow::Result<ExitCode> {
    let arguments = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => map,
        Ok(other) => bail!(
            "the arguments must be one JSON object such as '{{\"path\": \"src\"}}', got {}",
            kind(&other)
        ),
        Err(e) => bail!(
            "the arguments are not valid JSON ({e}); pass one JSON object such as '{{\"path\": \"src\"}}'"
        ),
    };
    let mut spec = find(&setup, name)?.clone();
    // Asked for by name: start it even when disabled, and fail with its
    // start-up error (stderr tail included) rather than a warning.
    spec.enabled = true;
    spec.required = true;
    let mut config = setup.config.hub;
    config.servers = vec![spec];
    let hub = Hub::start(config).await?;
    let result = hub.call_raw(name, tool, arguments).await;
    hub.shutdown().await;
    let result = result?;
    let text = nanohermes_hub::result::render(&result, usize::MAX);
    if result.is_error == Some(true) {
        bail!("{}", text.strip_prefix("ERROR: ").unwrap_or(&text));
    }
    // One newline at the end, whether or not the tool wrote one.
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    print(&format!("{text}{newline}"))
}

pub(super) fn find<'a>(setup: &'a Setup, name: &str) -> anyhow::Result<&'a ServerSpec> {
    let servers = &setup.config.hub.servers;
    servers.iter().find(|s| s.name == name).with_context(|| {
        let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        format!(
            "there is no server {name:?}; configured: {} (`nanohermes mcp add` adds one)",
            names.join(", ")
        )
    })
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The entry as `key: value` lines. Variable values are never shown:
/// they may be tokens.
fn describe(spec: &ServerSpec, withheld: &[String]) -> String {
    let mut out = String::new();
    let mut line = |key: &str, value: String| {
        let _ = writeln!(out, "{key}: {value}");
    };
    line("name", spec.name.clone());
    line("origin", spec.origin.describe());
    if let Some(builtin) = spec.builtin {
        line("builtin", builtin.name().to_owned());
    }
    let names = |map: &std::collections::BTreeMap<String, String>| {
        map.keys().cloned().collect::<Vec<_>>().join(", ")
    };
    match &spec.transport {
        Transport::InProcess => line("runs", "in-process".to_owned()),
        Transport::BuiltinProcess => line("runs", "process (nanohermes builtin)".to_owned()),
        Transport::Stdio(stdio) => {
            line("runs", "stdio".to_owned());
            line("command", stdio.command.clone());
            line("args", json_list(&stdio.args));
            line("env", names(&stdio.env));
            line("env_vars", stdio.env_vars.join(", "));
            line(
                "cwd",
                stdio
                    .cwd
                    .as_ref()
                    .map_or("(the workspace)".to_owned(), |c| c.display().to_string()),
            );
        }
        Transport::Http(http) => {
            line("runs", "http".to_owned());
            line("url", http.url.clone());
            line(
                "bearer_token_env_var",
                http.bearer_token_env_var.clone().unwrap_or_default(),
            );
            line("http_headers", names(&http.headers));
            line(
                "env_http_headers",
                http.env_headers
                    .iter()
                    .map(|(h, v)| format!("{h} from {v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
            );
        }
    }
    line("enabled", spec.enabled.to_string());
    line("required", spec.required.to_string());
    line(
        "startup_timeout_sec",
        spec.startup_timeout.as_secs_f64().to_string(),
    );
    line(
        "tool_timeout_sec",
        spec.tool_timeout.as_secs_f64().to_string(),
    );
    if let Some(tools) = &spec.enabled_tools {
        line("enabled_tools", tools.join(", "));
    }
    if !spec.disabled_tools.is_empty() {
        line("disabled_tools", spec.disabled_tools.join(", "));
    }
    line(
        "withheld",
        if withheld.is_empty() {
            "(none)".to_owned()
        } else {
            withheld.join(", ")
        },
    );
    out
}

fn json_list(items: &[String]) -> String {
    Value::Array(items.iter().cloned().map(Value::String).collect()).to_string()
}

fn print(text: &str) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nanohermes_config::parse_mcp_flag;

    #[test]
    fn describe_names_variables_but_never_shows_values() {
        let mut spec = parse_mcp_flag("docs='/opt/my srv' --root x").unwrap();
        if let Transport::Stdio(stdio) = &mut spec.transport {
            stdio.env.insert("TOKEN".into(), "s3cret".into());
        }
        let text = describe(&spec, &["AWS_SECRET".to_owned()]);
        assert!(
            text.contains("command: /opt/my srv\nargs: [\"--root\",\"x\"]\nenv: TOKEN\n"),
            "{text}"
        );
        assert!(
            text.contains("origin: --mcp\n") && text.ends_with("withheld: AWS_SECRET\n"),
            "{text}"
        );
        assert!(!text.contains("s3cret"));
    }
}
