//! Prompt-cache figures per wire, from what the scripted model saw.
//!
//! The agent runs a 12-step task (a reasoning turn and a tool call per
//! step, then the answer) on each wire through a `[model_providers]` table,
//! against the scripted model in its thinking mode with usage accounted the
//! way each provider does ([`mock_model::Options`]): OpenAI serves the
//! longest common prefix with an earlier request of the same
//! `prompt_cache_key`, in 128-token blocks from 1024 tokens; Anthropic reads
//! what an earlier request wrote at a `cache_control` breakpoint. The share
//! is over every request after the first (the first can only write).
//! A second run with a small compaction threshold shows what a compaction
//! costs: the prompt bytes that the request after it could not read from
//! the cache.

use std::process::Stdio;

use nanohermes_llm::WireApi;
use serde_json::json;

use crate::agent_runs::{Placement, Setting};
use crate::bins::Bins;
use crate::mock_model::{MockModel, Options, Recorded, Reply, Step, call, text, tool_calls};
use crate::stats::{Table, bytes};

/// Tool steps before the answer: 11 + 1 = the 12-step task.
const TOOL_STEPS: usize = 11;

/// Every wire's row of figures.
pub async fn figures(bins: &Bins, table: &mut Table) -> anyhow::Result<()> {
    for wire in WireApi::ALL {
        let requests = run(bins, wire, None).await?;
        let later = &requests[1..];
        let share = ratio(
            later.iter().map(|r| r.cached_bytes).sum(),
            later.iter().map(|r| r.prompt_bytes).sum(),
        );
        table.row(
            &format!("{wire}: prompt bytes served from cache after the first request, 12 steps"),
            format!("{:.1} %", share * 100.0),
            format!(
                "Codex: 91.5 % per session; per request min {:.1} %",
                later
                    .iter()
                    .map(|r| ratio(r.cached_bytes, r.prompt_bytes))
                    .fold(1.0_f64, f64::min)
                    * 100.0
            ),
            "≥ 95 %",
        );
        let mean = requests.iter().map(|r| r.body_len).sum::<usize>() / requests.len();
        table.row(
            &format!("{wire}: request bytes per step (mean; last)"),
            bytes(mean as u64),
            format!(
                "last {}",
                bytes(requests.last().map_or(0, |r| r.body_len) as u64)
            ),
            "",
        );

        let compacted = run(bins, wire, Some(4_000)).await?;
        let after: Vec<&Recorded> = compacted
            .windows(2)
            .filter(|pair| is_summary(&pair[0]))
            .map(|pair| &pair[1])
            .collect();
        let missed: usize = after
            .iter()
            .map(|r| r.prompt_bytes - r.cached_bytes)
            .sum::<usize>()
            / after.len().max(1);
        let written: usize =
            after.iter().map(|r| r.cache_write_bytes).sum::<usize>() / after.len().max(1);
        table.row(
            &format!("{wire}: cost of one compaction (prompt bytes not read from cache after it)"),
            bytes(missed as u64),
            format!(
                "{} compactions; reported cache writes {} each",
                after.len(),
                bytes(written as u64)
            ),
            "",
        );
    }
    Ok(())
}

/// `part / whole`, 0 when there is no whole.
fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// A compaction's summary request: the one request sent without tools.
fn is_summary(request: &Recorded) -> bool {
    request.body.get("tools").is_none()
}

/// The task: a thought and a tool call per step, then the answer.
fn script() -> Vec<Step> {
    let tools = [
        ("read_file", json!({"path": "README.md"})),
        ("list_dir", json!({})),
        ("todo_read", json!({})),
    ];
    let mut replies = Vec::new();
    for step in 0..TOOL_STEPS {
        let (name, arguments) = &tools[step % tools.len()];
        let id = format!("call_{step}");
        replies.push(
            tool_calls(&[call(&id, name, arguments.clone())])
                .with_thought(&["Looking at the project before ", "the next step."]),
        );
    }
    replies.push(text(&["Done: the project is a small bench fixture."]));
    replies
        .into_iter()
        .map(|r| r.in_one_piece().into())
        .collect()
}

/// A compaction's summary, wherever one is asked for.
fn summary() -> Reply {
    text(&["Summary: read README.md, listed the root and read the todo list."]).in_one_piece()
}

/// One run of the task on `wire`; `compact_at` sets a compaction threshold.
async fn run(bins: &Bins, wire: WireApi, compact_at: Option<u32>) -> anyhow::Result<Vec<Recorded>> {
    let setting = Setting::new(bins, Placement::InProcess)?;
    let options = Options {
        keep_alive: true,
        thinking: true,
        accounted_usage: true,
        toolless: Some(summary),
        ..Options::default()
    };
    let mock = MockModel::with_options(options, script()).await;
    let config_path = setting.home().join("config.toml");
    let earlier = std::fs::read_to_string(&config_path)?;
    let mut config = format!("model_provider = \"bench\"\n{earlier}");
    if let Some(threshold) = compact_at {
        config =
            format!("compact_threshold_chars = {threshold}\ncompact_keep_messages = 4\n{config}");
    }
    config.push_str(&format!(
        "\n[model_providers.bench]\nbase_url = \"{}\"\nwire_api = \"{wire}\"\nenv_key = \"BENCH_MODEL_KEY\"\n",
        mock.base_url()
    ));
    std::fs::write(&config_path, config)?;
    let status = tokio::process::Command::new(bins.agent())
        .args(["run", "--thinking", "--workspace"])
        .arg(setting.workspace())
        .arg("look around the project")
        .env("BENCH_MODEL_KEY", "bench")
        .env("NANOHERMES_MODE", "goal")
        .env("NANOHERMES_HOME", setting.home())
        .env_remove("OPENAI_BASE_URL")
        .env_remove("NANOHERMES_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await?;
    let requests = mock.requests();
    if let Some(refused) = requests.iter().find_map(|r| r.refused.as_ref()) {
        anyhow::bail!("{wire}: the scripted model refused a request: {refused}");
    }
    anyhow::ensure!(status.success(), "{wire}: nanohermes run failed: {status}");
    anyhow::ensure!(
        requests.iter().filter(|r| !is_summary(r)).count() == TOOL_STEPS + 1,
        "{wire}: the agent made {} requests for a {}-step task",
        requests.len(),
        TOOL_STEPS + 1
    );
    Ok(requests)
}
