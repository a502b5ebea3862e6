//! The first request's byte budget through the real binary: every request
//! carries every declaration, so the tool texts and schemas are paid on
//! every turn. A byte count, not a timing: deterministic.

use std::time::Duration;

use serde_json::Value;

use crate::support::history::assert_requests_valid;
use crate::support::mock_model::{MockModel, text};

/// The goal of issue 16: the first request with every built-in declared.
const FIRST_REQUEST_BUDGET: usize = 10_240;

/// Every built-in server's tools, as the default config declares them.
const BUILTIN_TOOLS: &[&str] = &[
    "apply_patch",
    "edit_file",
    "list_dir",
    "read_file",
    "write_file",
    "glob",
    "grep",
    "run_command",
    "task_start",
    "task_output",
    "task_kill",
    "git_status",
    "git_diff",
    "git_log",
    "git_commit",
    "todo_read",
    "todo_write",
    "memory_save",
    "memory_search",
    "memory_list",
    "memory_forget",
    "web_fetch",
];

/// One line per declared tool: its compact JSON size and name, largest first.
fn per_tool_sizes(body: &Value) -> String {
    let mut sizes: Vec<(usize, String)> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| {
            let size = serde_json::to_string(tool).map_or(0, |s| s.len());
            let name = tool["function"]["name"].as_str().unwrap_or("?").to_owned();
            (size, name)
        })
        .collect();
    sizes.sort_by(|a, b| b.cmp(a));
    sizes
        .iter()
        .map(|(size, name)| format!("  {size:5}  {name}\n"))
        .collect()
}

#[tokio::test]
async fn the_first_request_with_every_builtin_declared_fits_in_10_kb() {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![text(&["done"]).into()]).await;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command
        .arg("run")
        .arg("--workspace")
        .arg(workspace.path())
        .arg("do the task")
        .env("NANOHERMES_HOME", home.path())
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "test-key")
        .env_remove("NANOHERMES_MODEL")
        .env_remove("NANOHERMES_MODE")
        .env_remove("NANOHERMES_LOG")
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("nanohermes finished")
        .expect("nanohermes ran");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = mock.requests();
    assert_requests_valid(&requests);
    let first = &requests[0];
    let declared: Vec<&str> = first.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    let missing: Vec<&&str> = BUILTIN_TOOLS
        .iter()
        .filter(|name| !declared.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "not declared: {missing:?}; declared: {declared:?}"
    );
    let system = first.messages()[0]["content"].as_str().map_or(0, str::len);
    eprintln!(
        "first request: {} bytes ({} tools, system prompt {system} bytes)",
        first.body_len,
        declared.len()
    );
    assert!(
        first.body_len <= FIRST_REQUEST_BUDGET,
        "the first request is {} bytes, over the {FIRST_REQUEST_BUDGET}-byte budget \
         (system prompt {system} bytes); per tool:\n{}",
        first.body_len,
        per_tool_sizes(&first.body)
    );
}
