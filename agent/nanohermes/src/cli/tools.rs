//! `nanohermes tools`, and the rows the interactive `/tools` shows too.

use std::io::Write;
use std::process::ExitCode;

use super::table::table;
use crate::config::Config;
use nanohermes_core::events::{RunEvents, TerminalUi};
use nanohermes_core::policy::Policy;
use nanohermes_hub::{Hub, HubConfig};

/// What the hub's own tools (`tool_search`, the resource and prompt
/// tools, `agent_list`, `skill`) show as their server.
pub const HUB_SERVER: &str = "nanohermes";

/// One tool the model is offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfferedTool {
    /// The name the model calls.
    pub name: String,
    /// Its server ([`HUB_SERVER`] for the hub's own tools).
    pub server: String,
    /// Whether it counts as read-only.
    pub read_only: bool,
    /// Not declared yet: found with `tool_search`.
    pub deferred: bool,
}

impl OfferedTool {
    /// One line for `/tools`: `name (server, read-only, deferred: …)`.
    pub fn line(&self) -> String {
        let ro = if self.read_only { ", read-only" } else { "" };
        let deferred = if self.deferred {
            ", deferred: found with tool_search"
        } else {
            ""
        };
        format!("{} ({}{ro}{deferred})", self.name, self.server)
    }
}

/// What the model gets from `hub` under `policy`: every declaration the
/// requests carry (the servers' tools and the hub's own meta-tools, as
/// they are declared now), then the deferred tools `tool_search` finds.
/// Read from the declarations themselves, so the list cannot leave out
/// what the model is sent.
pub fn offered(hub: &Hub, policy: &Policy) -> Vec<OfferedTool> {
    let mut rows: Vec<OfferedTool> = hub
        .declarations()
        .iter()
        .filter_map(|d| d["function"]["name"].as_str())
        .map(|name| match hub.tool(name) {
            Some(tool) => OfferedTool {
                name: name.to_owned(),
                server: tool.server.clone(),
                read_only: tool.read_only,
                deferred: false,
            },
            None => OfferedTool {
                name: name.to_owned(),
                server: HUB_SERVER.to_owned(),
                read_only: hub.facts(name).is_some_and(|f| f.read_only),
                deferred: false,
            },
        })
        .collect();
    for tool in hub.deferred() {
        let allowed = hub
            .tool(&tool.name)
            .is_some_and(|t| policy.allows(&t.name, &t.facts()));
        if allowed && !rows.iter().any(|r| r.name == tool.name) {
            rows.push(OfferedTool {
                name: tool.name.clone(),
                server: tool.server.clone(),
                read_only: hub.tool(&tool.name).is_some_and(|t| t.read_only),
                deferred: true,
            });
        }
    }
    rows
}

/// `nanohermes tools`: the tools the model would be offered under the
/// current policy (mode, `allow`, `deny`; `--read-only` is plan mode),
/// one a line, the hub's own tools and the skills' `skill` included, and
/// which of them are deferred behind `tool_search`.
pub async fn tools(config: Config) -> anyhow::Result<ExitCode> {
    let policy = config.agent.policy;
    // The skills guidance finds become the `skill` tool, as in a run.
    let guidance = nanohermes_core::prompt::load(&config.workspace, &config.guidance);
    let hub = Hub::start(HubConfig {
        offered: Some(policy.clone()),
        skills: guidance.skills,
        ..config.hub
    })
    .await?;
    let mut ui = TerminalUi::default();
    for warning in hub.warnings() {
        ui.notice(warning);
    }
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_owned();
    let rows: Vec<Vec<String>> = offered(&hub, &policy)
        .into_iter()
        .map(|t| vec![t.name, t.server, yes_no(t.read_only), yes_no(t.deferred)])
        .collect();
    let text = table(&["TOOL", "SERVER", "READ-ONLY", "DEFERRED"], &rows);
    let mut out = std::io::stdout().lock();
    let written = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    drop(out);
    hub.shutdown().await;
    written?;
    Ok(ExitCode::SUCCESS)
}
