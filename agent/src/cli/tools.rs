//! `nanohermes tools`.

use std::io::Write;
use std::process::ExitCode;

use super::table::table;
use crate::config::Config;
use crate::hub::{Hub, HubConfig};
use crate::ui::{TerminalUi, Ui};

/// `nanohermes tools`: the merged tool list, one tool per line: the tools
/// the model would be offered under the current policy (mode, `allow`,
/// `deny`; `--read-only` is plan mode), and which of them are deferred
/// behind `tool_search`.
pub async fn tools(config: Config) -> anyhow::Result<ExitCode> {
    let policy = config.agent.policy;
    let hub = Hub::start(HubConfig {
        offered: Some(policy.clone()),
        ..config.hub
    })
    .await?;
    let mut ui = TerminalUi::default();
    for warning in hub.warnings() {
        ui.notice(warning);
    }
    let rows: Vec<Vec<String>> = hub
        .tools()
        .iter()
        .filter(|t| policy.allows(&t.name, &t.facts()))
        .map(|t| {
            vec![
                t.name.clone(),
                t.server.clone(),
                if t.read_only { "yes" } else { "no" }.to_owned(),
                if hub.deferred().iter().any(|d| d.name == t.name) {
                    "yes"
                } else {
                    "no"
                }
                .to_owned(),
            ]
        })
        .collect();
    let text = table(&["TOOL", "SERVER", "READ-ONLY", "DEFERRED"], &rows);
    let mut out = std::io::stdout().lock();
    let written = out.write_all(text.as_bytes()).and_then(|()| out.flush());
    drop(out);
    hub.shutdown().await;
    written?;
    Ok(ExitCode::SUCCESS)
}
