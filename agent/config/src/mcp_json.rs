//! The `mcpServers` JSON that Claude Code (`.mcp.json`), Claude Desktop,
//! Cursor and gemini-cli write, read unchanged into [`RawServer`] tables.
//!
//! `${VAR}` and `${VAR:-default}` are expanded in `command`, `args`, `env`,
//! `cwd`, `url` and `headers`, as Claude Code does; a variable that is
//! unset and has no default is an error naming it. Keys other hosts add
//! that NanoHermes has no use for are ignored with a warning, so a file
//! shared with a team keeps working.
//!
//! The model provider's key variable ([`parse_guarded`]'s `key_vars`:
//! `OPENAI_API_KEY` and the configured `api_key_env`) is never expanded
//! into a project's server: it expands to nothing, with a warning. At trust
//! time [`expansions`] lists every variable a file would pass to which
//! server's which field.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::diag::ConfigError;
use super::raw::RawServer;

/// What a `.mcp.json` yields: its servers, in name order, and warnings.
#[derive(Debug, Default)]
pub struct McpJson {
    /// `(name, table)` for each usable entry.
    pub servers: Vec<(String, RawServer)>,
    /// One line per ignored key or skipped entry.
    pub warnings: Vec<String>,
}

/// Keys read from an entry.
const KNOWN: &[&str] = &[
    "command",
    "args",
    "env",
    "cwd",
    "type",
    "url",
    "httpUrl",
    "headers",
    "timeout",
    "includeTools",
    "excludeTools",
    "disabled",
    "description",
];
/// Keys other hosts write that mean nothing here; ignored without a warning.
const IGNORED: &[&str] = &["trust", "alwaysAllow", "autoApprove"];

/// Parses `text`; `file` names it in errors, `env` answers `${VAR}`.
pub fn parse(
    file: &str,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<McpJson, ConfigError> {
    parse_guarded(file, text, env, &[])
}

/// [`parse`], where each of `key_vars` (the model provider's key) expands
/// to nothing, with one warning per server that asks for it.
pub fn parse_guarded(
    file: &str,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    key_vars: &[String],
) -> Result<McpJson, ConfigError> {
    let mut out = parse_with(file, text, env, key_vars)?;
    for found in scan(text) {
        if key_vars.contains(&found.var) {
            out.warnings.push(format!(
                "{file}: server {:?}: ${{{}}} in {} is the model provider's key; it is never passed to another server and expands to nothing",
                found.server, found.var, found.field
            ));
        }
    }
    Ok(out)
}

/// One `${VAR}` a `.mcp.json` entry uses.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Found {
    server: String,
    field: String,
    var: String,
}

/// Every `${VAR}` in every entry's expanded fields, in file order.
fn scan(text: &str) -> Vec<Found> {
    let Ok(Value::Object(top)) = serde_json::from_str::<Value>(text) else {
        return Vec::new();
    };
    let Some(Value::Object(servers)) = top.get("mcpServers") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (server, entry) in servers {
        let Some(entry) = entry.as_object() else {
            continue;
        };
        for (key, value) in entry {
            let mut push = |field: String, s: &str| {
                for var in vars_in(s) {
                    out.push(Found {
                        server: server.clone(),
                        field: field.clone(),
                        var,
                    });
                }
            };
            match (key.as_str(), value) {
                ("command" | "cwd" | "url" | "httpUrl", Value::String(s)) => push(key.clone(), s),
                ("args", Value::Array(items)) => {
                    for item in items.iter().filter_map(Value::as_str) {
                        push("args".to_owned(), item);
                    }
                }
                ("env" | "headers", Value::Object(map)) => {
                    for (name, v) in map {
                        if let Some(v) = v.as_str() {
                            push(format!("{key} {name}"), v);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The variable names of `${NAME}` and `${NAME:-default}` in `s`.
fn vars_in(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        let inner = &after[..end];
        let var = inner.split_once(":-").map_or(inner, |(v, _)| v);
        if super::servers::is_env_name(var) {
            out.push(var.to_owned());
        }
        rest = &after[end + 1..];
    }
    out
}

/// One line per variable `text` (a `.mcp.json`) expands, for the trust
/// question: `GITHUB_TOKEN → server "github", headers Authorization`; a
/// variable in `key_vars` is marked as expanding to nothing.
pub fn expansions(text: &str, key_vars: &[String]) -> Vec<String> {
    scan(text)
        .into_iter()
        .map(|f| {
            let blocked = if key_vars.contains(&f.var) {
                " (the model provider's key: never passed, expands to nothing)"
            } else {
                ""
            };
            format!("{} → server {:?}, {}{blocked}", f.var, f.server, f.field)
        })
        .collect()
}

fn parse_with(
    file: &str,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    key_vars: &[String],
) -> Result<McpJson, ConfigError> {
    let doc: Value = serde_json::from_str(text)
        .map_err(|e| ConfigError::at(file, Some(e.line()), format!("invalid JSON: {e}")))?;
    let Some(top) = doc.as_object() else {
        return Err(ConfigError::at(
            file,
            Some(1),
            "the file must be a JSON object with an \"mcpServers\" object",
        ));
    };
    let mut out = McpJson::default();
    for key in top.keys().filter(|k| *k != "mcpServers") {
        out.warnings.push(format!(
            "{file}: ignored key {key:?}; only \"mcpServers\" is read"
        ));
    }
    let Some(servers) = top.get("mcpServers") else {
        return Ok(out);
    };
    let Some(servers) = servers.as_object() else {
        return Err(ConfigError::at(
            file,
            line_of_key(text, "mcpServers"),
            "\"mcpServers\" must be an object of servers by name",
        ));
    };
    for (name, entry) in servers {
        let line = line_of_key(text, name);
        let at = |m: String| ConfigError::at(file, line, m);
        let Some(entry) = entry.as_object() else {
            return Err(at(format!(
                "server {name:?} must be an object with \"command\" or \"url\""
            )));
        };
        for key in entry.keys() {
            if !KNOWN.contains(&key.as_str()) && !IGNORED.contains(&key.as_str()) {
                out.warnings.push(format!(
                    "{file}: server {name:?}: ignored key {key:?}; NanoHermes reads {}",
                    KNOWN.join(", ")
                ));
            }
        }
        match entry_to_raw(name, entry, env, key_vars) {
            Ok(Some(raw)) => {
                super::servers::check_raw(name, &raw).map_err(|(_, m)| at(m))?;
                out.servers.push((name.clone(), raw));
            }
            Ok(None) => out.warnings.push(format!(
                "{file}: server {name:?} skipped: type \"sse\" (the legacy HTTP+SSE transport) is not supported; if the server also speaks Streamable HTTP, write \"type\": \"http\""
            )),
            Err(m) => {
                // Point at the field the message starts with, when it names one.
                let field = m.split(':').next().filter(|f| KNOWN.contains(f));
                let line = field.and_then(|f| line_of_key_after(text, name, f)).or(line);
                return Err(ConfigError::at(file, line, format!("server {name:?}: {m}")));
            }
        }
    }
    Ok(out)
}

/// One entry as a table; `None` for an entry skipped on purpose (SSE).
fn entry_to_raw(
    name: &str,
    entry: &Map<String, Value>,
    env: &dyn Fn(&str) -> Option<String>,
    key_vars: &[String],
) -> Result<Option<RawServer>, String> {
    let x =
        |s: &str, what: &str| expand_guarded(s, env, key_vars).map_err(|e| format!("{what}: {e}"));
    let kind = opt_str(entry, "type")?;
    let mut raw = RawServer::default();
    let url = match (opt_str(entry, "url")?, opt_str(entry, "httpUrl")?) {
        (Some(_), Some(_)) => return Err("has both \"url\" and \"httpUrl\"; keep one".to_owned()),
        (u, h) => u.or(h),
    };
    match kind.as_deref() {
        None | Some("stdio" | "http" | "streamable-http" | "streamableHttp") => {}
        Some("sse") => return Ok(None),
        Some(other) => {
            return Err(format!(
                "\"type\": {other:?} is not allowed; use \"stdio\" or \"http\" (\"streamable-http\" also works)"
            ));
        }
    }
    if let Some(command) = opt_str(entry, "command")? {
        if kind.as_deref().is_some_and(|k| k != "stdio") {
            return Err(format!(
                "has \"command\" but \"type\": {:?}; a command is \"type\": \"stdio\"",
                kind.unwrap_or_default()
            ));
        }
        raw.command = Some(x(&command, "command")?);
        if let Some(args) = opt_strings(entry, "args")? {
            raw.args = Some(
                args.iter()
                    .map(|a| x(a, "args"))
                    .collect::<Result<_, _>>()?,
            );
        }
        if let Some(vars) = opt_map(entry, "env")? {
            let env = vars
                .into_iter()
                .map(|(k, v)| Ok((k, x(&v, "env")?)))
                .collect::<Result<_, String>>()?;
            raw.env = Some(env);
        }
        if let Some(cwd) = opt_str(entry, "cwd")? {
            raw.cwd = Some(x(&cwd, "cwd")?);
        }
    } else if let Some(url) = url {
        if kind.as_deref() == Some("stdio") {
            return Err("is \"type\": \"stdio\" but has no \"command\"".to_owned());
        }
        raw.url = Some(x(&url, "url")?);
        if let Some(headers) = opt_map(entry, "headers")? {
            let headers = headers
                .into_iter()
                .map(|(k, v)| Ok((k, x(&v, "headers")?)))
                .collect::<Result<_, String>>()?;
            raw.http_headers = Some(headers);
        }
    } else {
        return Err(format!(
            "has neither \"command\" nor \"url\"; give one (server {name:?} cannot start otherwise)"
        ));
    }
    if let Some(ms) = entry.get("timeout") {
        let ms = ms
            .as_f64()
            .filter(|ms| *ms > 0.0)
            .ok_or("\"timeout\" must be a number of milliseconds above 0")?;
        raw.tool_timeout_sec = Some(ms / 1000.0);
    }
    raw.enabled_tools = opt_strings(entry, "includeTools")?;
    raw.disabled_tools = opt_strings(entry, "excludeTools")?;
    if let Some(disabled) = entry.get("disabled") {
        let disabled = disabled
            .as_bool()
            .ok_or("\"disabled\" must be true or false")?;
        raw.enabled = Some(!disabled);
    }
    // Not expanded: it is text for the model, not a setting.
    raw.description = opt_str(entry, "description")?;
    Ok(Some(raw))
}

/// Expands `${VAR}` and `${VAR:-default}` (the default also when VAR is
/// empty, as in a shell). A `$` not followed by `{` stays as it is.
pub fn expand(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    expand_guarded(text, env, &[])
}

/// [`expand`], where each variable in `blocked` expands to nothing (its
/// default too): the model provider's key never reaches another server.
pub fn expand_guarded(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    blocked: &[String],
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("{text:?} has \"${{\" without a closing \"}}\""));
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        if !super::servers::is_env_name(var) {
            return Err(format!(
                "\"${{{inner}}}\" is not a variable; write ${{NAME}} or ${{NAME:-default}}"
            ));
        }
        if blocked.iter().any(|b| b == var) {
            rest = &after[end + 1..];
            continue;
        }
        match (env(var).filter(|v| !v.is_empty()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(d)) => out.push_str(d),
            (None, None) => {
                return Err(format!(
                    "${{{var}}} is not set; set {var} in the environment or write ${{{var}:-default}}"
                ));
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn opt_str(entry: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("{key:?} must be a string")),
    }
}

fn opt_strings(entry: &Map<String, Value>, key: &str) -> Result<Option<Vec<String>>, String> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or(format!("{key:?} must be an array of strings"))
            })
            .collect::<Result<_, _>>()
            .map(Some),
        Some(_) => Err(format!("{key:?} must be an array of strings")),
    }
}

fn opt_map(
    entry: &Map<String, Value>,
    key: &str,
) -> Result<Option<BTreeMap<String, String>>, String> {
    match entry.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(format!("{key:?} values must be strings ({k:?} is not)")),
            })
            .collect::<Result<_, _>>()
            .map(Some),
        Some(_) => Err(format!("{key:?} must be an object of strings")),
    }
}

/// The line of the first `"field"` after the server's `"name"`.
fn line_of_key_after(text: &str, name: &str, field: &str) -> Option<usize> {
    let start = text.find(&serde_json::to_string(name).ok()?)?;
    let offset = text[start..].find(&serde_json::to_string(field).ok()?)?;
    Some(super::diag::line_of(text, start + offset))
}

/// The line where `"key":` first appears, to point errors at an entry.
fn line_of_key(text: &str, key: &str) -> Option<usize> {
    let quoted = serde_json::to_string(key).ok()?;
    text.find(&quoted).map(|i| super::diag::line_of(text, i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(var: &str) -> Option<String> {
        match var {
            "TOKEN" => Some("t0k".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expansion_follows_claude_code() {
        assert_eq!(expand("Bearer ${TOKEN}", &env).unwrap(), "Bearer t0k");
        assert_eq!(
            expand("${HOST:-localhost}:${PORT:-80}", &env).unwrap(),
            "localhost:80"
        );
        assert_eq!(expand("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(expand("$HOME and $", &env).unwrap(), "$HOME and $");
        assert_eq!(
            expand("${MISSING}", &env).unwrap_err(),
            "${MISSING} is not set; set MISSING in the environment or write ${MISSING:-default}"
        );
        assert!(
            expand("${OPEN", &env)
                .unwrap_err()
                .contains("without a closing")
        );
        assert!(
            expand("${1X}", &env)
                .unwrap_err()
                .contains("is not a variable")
        );
    }

    #[test]
    fn entries_map_to_codex_keys() {
        let text = r#"{
  "mcpServers": {
    "fs": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${ROOT:-.}"], "env": {"K": "${TOKEN}"} },
    "docs": { "type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}, "includeTools": ["search"] },
    "old": { "type": "sse", "url": "https://example.com/sse" },
    "gem": { "httpUrl": "https://g.example/mcp", "timeout": 5000, "trust": true, "color": "red", "description": "Reviews ${NOT_EXPANDED}" }
  }
}"#;
        let out = parse(".mcp.json", text, &env).unwrap();
        let names: Vec<_> = out.servers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["docs", "fs", "gem"]);
        let fs = &out.servers[1].1;
        assert_eq!(fs.args.as_ref().unwrap()[2], ".");
        assert_eq!(fs.env.as_ref().unwrap()["K"], "t0k");
        let docs = &out.servers[0].1;
        assert_eq!(
            docs.http_headers.as_ref().unwrap()["Authorization"],
            "Bearer t0k"
        );
        assert_eq!(
            docs.enabled_tools.as_deref(),
            Some(&["search".to_owned()][..])
        );
        assert_eq!(out.servers[2].1.tool_timeout_sec, Some(5.0));
        assert_eq!(
            out.servers[2].1.description.as_deref(),
            Some("Reviews ${NOT_EXPANDED}")
        );
        assert_eq!(out.warnings.len(), 2, "{:?}", out.warnings);
        assert!(out.warnings[0].contains("ignored key \"color\""));
        assert!(out.warnings[1].contains("\"old\" skipped: type \"sse\""));
    }

    #[test]
    fn an_unset_variable_names_file_line_server_and_variable() {
        let text = "{\n  \"mcpServers\": {\n    \"gh\": { \"command\": \"gh-mcp\", \"env\": {\"T\": \"${GH_TOKEN}\"} }\n  }\n}\n";
        assert_eq!(
            parse(".mcp.json", text, &env).unwrap_err().to_string(),
            ".mcp.json:3: server \"gh\": env: ${GH_TOKEN} is not set; set GH_TOKEN in the environment or write ${GH_TOKEN:-default}"
        );
    }

    #[test]
    fn bad_entries_are_errors() {
        let bad = |entry: &str| {
            let text = format!("{{\"mcpServers\": {{\"s\": {entry}}}}}");
            parse("f", &text, &env).unwrap_err().to_string()
        };
        assert!(
            bad(r#"{"type": "ws", "url": "https://h"}"#)
                .contains("\"type\": \"ws\" is not allowed; use \"stdio\" or \"http\"")
        );
        assert!(bad(r#"{"args": ["x"]}"#).contains("has neither \"command\" nor \"url\""));
        assert!(bad(r#"{"command": 3}"#).contains("\"command\" must be a string"));
        assert!(bad(r#"{"url": "ftp://h/x"}"#).contains("use an http:// or https:// URL"));
        assert!(
            parse("f", "{\"mcpServers\": [1,", &env)
                .unwrap_err()
                .to_string()
                .starts_with("f:1: invalid JSON")
        );
    }
}
