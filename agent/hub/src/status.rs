//! What `nanohermes mcp list` shows per server: where it runs and its state.

use nanohermes_config::{ServerSpec, Transport};

use super::HubConfig;
use super::era::Era;

/// One configured server as the hub sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// Its configured name.
    pub name: String,
    /// Where it runs: `in-process`, `process: CMD ARGS…` or `http: URL`.
    pub where_: String,
    /// Running, failed or disabled.
    pub state: ServerState,
}

/// Whether a server is up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerState {
    /// Connected and listed.
    Running {
        /// How many of its tools are offered (after `enabled_tools` and
        /// `disabled_tools`).
        tools: usize,
        /// The protocol era the connection speaks.
        era: Era,
    },
    /// It did not start (or died since).
    Failed {
        /// The one-line reason, with the tail of its stderr when it wrote any.
        reason: String,
    },
    /// `enabled = false`: not started.
    Disabled,
}

/// Where a server would run, from its spec alone (a disabled server, or one
/// that failed before it had a launch recipe).
pub(crate) fn describe_spec(spec: &ServerSpec, config: &HubConfig) -> String {
    match &spec.transport {
        Transport::InProcess => "in-process".to_owned(),
        Transport::BuiltinProcess => format!(
            "process: {} builtin {}",
            config.builtin_exe.display(),
            spec.builtin.map_or(spec.name.as_str(), |b| b.name())
        ),
        Transport::Stdio(stdio) => {
            let mut words = vec![stdio.command.clone()];
            words.extend(stdio.args.iter().cloned());
            format!("process: {}", words.join(" "))
        }
        Transport::Http(http) => format!("http: {}", http.url),
    }
}
