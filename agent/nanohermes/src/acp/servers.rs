//! The MCP servers an editor passes in `session/new`: turned into server
//! specs and added to the configured ones, never replacing one. They are
//! the user's own choice (their editor's settings), so they are treated
//! as a `--mcp` flag is ([`Origin::Flag`]): their annotations are
//! believed, they run under the same sandbox, and the model's and the
//! providers' keys are withheld from them as from every child.

use std::collections::BTreeMap;

use serde_json::Value;

use super::rpc::RpcError;
use nanohermes_config::servers::{
    DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, HttpSpec, Origin, ServerSpec, StdioSpec,
    Transport,
};

/// The `mcpServers` of `session/new` (stdio and HTTP; SSE is not
/// advertised and is refused).
pub fn from_acp(servers: &Value) -> Result<Vec<ServerSpec>, RpcError> {
    let Some(servers) = servers.as_array() else {
        return if servers.is_null() {
            Ok(Vec::new())
        } else {
            Err(RpcError::invalid_params("mcpServers must be an array"))
        };
    };
    servers.iter().map(spec).collect()
}

fn pairs(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|pair| {
            Some((
                pair.get("name")?.as_str()?.to_owned(),
                pair.get("value")?.as_str()?.to_owned(),
            ))
        })
        .collect()
}

fn spec(server: &Value) -> Result<ServerSpec, RpcError> {
    let field = |key: &str| server.get(key).and_then(Value::as_str);
    let name = field("name")
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| RpcError::invalid_params("an MCP server needs a name"))?;
    let transport = match field("type") {
        None | Some("stdio") => {
            let command = field("command").ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "MCP server {name}: a stdio server needs a command"
                ))
            })?;
            let args = server
                .get("args")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect();
            Transport::Stdio(StdioSpec {
                command: command.to_owned(),
                args,
                env: pairs(server.get("env")),
                ..StdioSpec::default()
            })
        }
        Some("http") => {
            let url = field("url")
                .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
                .ok_or_else(|| {
                    RpcError::invalid_params(format!(
                        "MCP server {name}: an http server needs an http(s) url"
                    ))
                })?;
            Transport::Http(HttpSpec {
                url: url.to_owned(),
                headers: pairs(server.get("headers")),
                ..HttpSpec::default()
            })
        }
        Some(other) => {
            return Err(RpcError::invalid_params(format!(
                "MCP server {name}: transport {other:?} is not supported (stdio and http are; see mcpCapabilities)"
            )));
        }
    };
    Ok(ServerSpec {
        name: server_name(name),
        origin: Origin::Flag,
        builtin: None,
        transport,
        enabled: true,
        required: false,
        startup_timeout: DEFAULT_STARTUP_TIMEOUT,
        tool_timeout: DEFAULT_TOOL_TIMEOUT,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        description: None,
        always_load: false,
    })
}

/// A server name its tools can be prefixed with: letters, digits, `_`
/// and `-`, no `__`.
fn server_name(name: &str) -> String {
    let mut clean: String = name
        .trim()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    while clean.contains("__") {
        clean = clean.replace("__", "_");
    }
    clean
}

/// Adds the editor's servers after the configured ones; one named like a
/// configured server (or an earlier one) is renamed `NAME-editor`,
/// `NAME-editor2`…, so it never replaces one. Returns a line per rename.
pub fn merge(configured: &mut Vec<ServerSpec>, editor: Vec<ServerSpec>) -> Vec<String> {
    let mut warnings = Vec::new();
    for mut server in editor {
        let taken = |name: &str, all: &[ServerSpec]| all.iter().any(|s| s.name == name);
        if taken(&server.name, configured) {
            let original = server.name.clone();
            let mut n = 1;
            loop {
                let candidate = if n == 1 {
                    format!("{original}-editor")
                } else {
                    format!("{original}-editor{n}")
                };
                if !taken(&candidate, configured) {
                    server.name = candidate;
                    break;
                }
                n += 1;
            }
            warnings.push(format!(
                "the editor's MCP server {original} is named like a configured one; it runs as {} (its tools are {}__TOOL)",
                server.name, server.name
            ));
        }
        configured.push(server);
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn editor_servers_become_specs_and_are_added_beside_the_configured_ones() {
        let specs = from_acp(&json!([
            {"name": "echo", "command": "/bin/echo-server", "args": ["--x"], "env": [{"name": "A", "value": "1"}]},
            {"type": "http", "name": "my docs", "url": "https://docs.example/mcp", "headers": [{"name": "X-Key", "value": "k"}]},
        ]))
        .unwrap();
        let Transport::Stdio(stdio) = &specs[0].transport else {
            panic!()
        };
        assert_eq!(
            (stdio.command.as_str(), stdio.args.clone()),
            ("/bin/echo-server", vec!["--x".to_owned()])
        );
        assert_eq!(stdio.env.get("A").map(String::as_str), Some("1"));
        assert_eq!(specs[1].name, "my_docs");
        let Transport::Http(http) = &specs[1].transport else {
            panic!()
        };
        assert_eq!(http.headers.get("X-Key").map(String::as_str), Some("k"));
        assert!(specs.iter().all(|s| s.origin == Origin::Flag && s.enabled));

        let mut configured = vec![specs[0].clone()];
        configured[0].origin = Origin::Default;
        let warnings = merge(&mut configured, specs.clone());
        let names: Vec<&str> = configured.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["echo", "echo-editor", "my_docs"]);
        assert_eq!(
            configured[0].origin,
            Origin::Default,
            "the configured one stays"
        );
        assert_eq!(warnings.len(), 1);
    }

    #[test]
    fn unsupported_or_incomplete_servers_are_refused() {
        for bad in [
            json!([{"type": "sse", "name": "a", "url": "https://x"}]),
            json!([{"name": "a"}]),
            json!([{"type": "http", "name": "a", "url": "ftp://x"}]),
            json!([{"command": "x"}]),
            json!({"a": 1}),
        ] {
            assert!(from_acp(&bad).is_err(), "{bad}");
        }
        assert_eq!(from_acp(&Value::Null).unwrap(), Vec::new());
    }
}
