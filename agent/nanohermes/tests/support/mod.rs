//! Shared test support: the scripted model, the history invariant, the
//! fixture MCP server, and an agent wired to all of them.

#![allow(dead_code)]

pub mod binary;
pub mod history;
pub mod mock_model;
pub mod oauth_server;
pub mod sse_retry_server;

use std::path::{Path, PathBuf};
use std::time::Duration;

use nanohermes_config::{BuiltinName, Origin, ServerSpec, StdioSpec, Transport};
use nanohermes_core::agent::{Agent, AgentConfig};
use nanohermes_core::events::{RunEvents, tool_line};
use nanohermes_hub::{Hub, HubConfig};
use nanohermes_llm::{Client, ModelSettings, RetryPolicy, ToolCall, WireApi};

use mock_model::MockModel;

/// The fixture stdio MCP server (`examples/fixture_server.rs`), which
/// `cargo test` builds next to the test binaries.
pub fn fixture_server() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let path = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps")
        .join("examples")
        .join(format!("fixture_server{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is missing: run `cargo test -p nanohermes` (it builds examples)",
        path.display()
    );
    path
}

/// The fixture mounted as external server `name` (from `--mcp`, so trusted).
pub fn fixture(name: &str) -> ServerSpec {
    stdio_spec(name, &fixture_server().display().to_string(), &[])
}

/// An external stdio server `name` running `command args`, as a `--mcp`
/// flag would give it, with a generous startup timeout (a hang guard).
pub fn stdio_spec(name: &str, command: &str, args: &[&str]) -> ServerSpec {
    ServerSpec {
        name: name.to_owned(),
        origin: Origin::Flag,
        builtin: None,
        transport: Transport::Stdio(StdioSpec {
            command: command.to_owned(),
            args: args.iter().map(|a| a.to_string()).collect(),
            ..StdioSpec::default()
        }),
        startup_timeout: Duration::from_secs(20),
        ..ServerSpec::default_builtin(BuiltinName::Files)
    }
}

/// A hub with the files server in `workspace` and the given external servers.
pub async fn hub(workspace: &Path, external: Vec<ServerSpec>) -> Hub {
    let mut servers = vec![ServerSpec::default_builtin(BuiltinName::Files)];
    servers.extend(external);
    let config = HubConfig::new(workspace, servers);
    let hub = Hub::start(config).await.expect("hub starts");
    // The fixture collides two of its own tool names on purpose.
    let unexpected: Vec<_> = hub
        .warnings()
        .iter()
        .filter(|w| !w.contains("which is taken"))
        .collect();
    assert!(unexpected.is_empty(), "hub warnings: {unexpected:?}");
    hub
}

/// Model settings aimed at the mock, with fast retries.
pub fn settings(mock: &MockModel) -> ModelSettings {
    let mut settings = ModelSettings::new(mock.base_url(), "main-model");
    settings.api_key = Some("test-key".into());
    settings.retry = RetryPolicy {
        max_retries: 2,
        base_delay: Duration::from_millis(10),
    };
    settings
}

/// [`settings`] on `wire`: the mock answers each wire at its own path.
/// Thinking stays off, as the mock's default [`mock_model::Options`]
/// expect (a Responses model without reasoning refuses the
/// `include` that thinking asks for).
pub fn settings_on(mock: &MockModel, wire: WireApi) -> ModelSettings {
    let mut settings = settings(mock);
    settings.wire = wire;
    settings
}

/// Runs the scenario `async fn NAME(wire: WireApi)` written before it as
/// three `#[tokio::test]`s, `NAME::chat`, `NAME::responses` and
/// `NAME::messages`, each on its wire (the mock renders a scripted turn in
/// the wire of the request's path). The scenario stays an ordinary
/// function, so rustfmt and the compiler see it as written.
// The other test binaries share this module and run no scenario.
#[allow(unused_macros)]
macro_rules! on_every_wire {
    ($name:ident) => {
        mod $name {
            #[tokio::test]
            async fn chat() {
                super::$name($crate::support::mock_model::WireApi::Chat).await;
            }

            #[tokio::test]
            async fn responses() {
                super::$name($crate::support::mock_model::WireApi::Responses).await;
            }

            #[tokio::test]
            async fn messages() {
                super::$name($crate::support::mock_model::WireApi::Messages).await;
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use on_every_wire;

/// An agent on the mock with `hub`, 40 iterations, allow-all.
pub fn agent(settings: ModelSettings, hub: Hub) -> Agent<Hub> {
    agent_with(settings, hub, AgentConfig::default())
}

/// An agent on the mock with `hub` and `parts` (an [`AgentConfig`], or
/// every part).
pub fn agent_with(
    settings: ModelSettings,
    hub: Hub,
    parts: impl Into<nanohermes_core::agent::AgentParts>,
) -> Agent<Hub> {
    let client = Client::new(settings).expect("http client");
    Agent::new(client, hub, "You are NanoHermes, in a test.", parts)
}

/// A [`RunEvents`] that keeps everything it is told.
#[derive(Debug, Default)]
pub struct Capture {
    pub text: String,
    pub tool_lines: Vec<String>,
    pub notices: Vec<String>,
}

impl RunEvents for Capture {
    fn text(&mut self, delta: &str) {
        self.text.push_str(delta);
    }

    fn tool_call(&mut self, call: &ToolCall, result: &str) {
        self.tool_lines.push(tool_line(call, result));
    }

    fn notice(&mut self, line: &str) {
        self.notices.push(line.to_owned());
    }
}

/// The `content` of the tool message answering `id` in `messages`.
pub fn tool_result<'a>(messages: &'a [serde_json::Value], id: &str) -> &'a str {
    messages
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no tool result for {id}"))
}
