//! The shell tools over real MCP (in-process client), running real
//! commands in real temp directories.

mod common;

use std::path::Path;

use common::{call, eventually, group_members, pgid_of, unique_sleep, with_token};
use mcp_tools::ToolContext;
use mcp_tools::schema::{check_schema_file, tools_document};
use nanohermes_shell::ShellServer;
use rmcp::RoleClient;
use rmcp::service::RunningService;
use serde_json::json;

async fn connect(root: &Path) -> RunningService<RoleClient, ()> {
    connect_with(ToolContext::new(root).unwrap()).await
}

async fn connect_with(ctx: ToolContext) -> RunningService<RoleClient, ()> {
    mcp_tools::in_process::connect(ShellServer::new(ctx))
        .await
        .unwrap()
}

#[tokio::test]
async fn a_command_reports_its_exit_code_and_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let (text, is_error) = call(&client, "run_command", json!({"command": "echo hello"})).await;
    assert!(!is_error);
    assert!(text.starts_with("exit code: 0 ("), "{text}");
    assert!(text.ends_with(" s)\n--- stdout\nhello\n"), "{text}");
}

#[tokio::test]
async fn a_non_zero_exit_is_a_normal_result_with_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let (text, is_error) = call(
        &client,
        "run_command",
        json!({"command": "echo out; echo oops >&2; exit 3"}),
    )
    .await;
    assert!(!is_error);
    assert!(text.starts_with("exit code: 3 ("), "{text}");
    assert!(
        text.ends_with("--- stdout\nout\n--- stderr\noops\n"),
        "{text}"
    );
}

#[tokio::test]
async fn a_command_without_output_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let (text, _) = call(&client, "run_command", json!({"command": "true"})).await;
    assert!(text.ends_with("(no output)\n"), "{text}");
}

#[tokio::test]
async fn commands_run_in_the_root_or_in_a_cwd_inside_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let root = dir.path().canonicalize().unwrap();
    let client = connect(dir.path()).await;
    let (text, _) = call(&client, "run_command", json!({"command": "pwd"})).await;
    assert!(
        text.contains(&format!("--- stdout\n{}\n", root.display())),
        "{text}"
    );
    let (text, _) = call(
        &client,
        "run_command",
        json!({"command": "pwd", "cwd": "sub"}),
    )
    .await;
    assert!(
        text.contains(&format!("--- stdout\n{}\n", root.join("sub").display())),
        "{text}"
    );
    let (text, is_error) = call(
        &client,
        "run_command",
        json!({"command": "pwd", "cwd": ".."}),
    )
    .await;
    assert!(is_error);
    assert!(
        text.starts_with("path escapes the workspace root"),
        "{text}"
    );
    let (text, is_error) = call(
        &client,
        "run_command",
        json!({"command": "pwd", "cwd": "nope"}),
    )
    .await;
    assert!(is_error);
    assert!(text.starts_with("cwd is not a directory: nope"), "{text}");
}

#[tokio::test]
async fn stdin_is_empty() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let (text, _) = call(&client, "run_command", json!({"command": "cat; echo end"})).await;
    assert!(text.starts_with("exit code: 0"), "{text}");
    assert!(text.ends_with("--- stdout\nend\n"), "{text}");
}

// The command's own pids (`$$`, `$!`) are those of its PID namespace,
// meaningless outside: these tests find its processes by a unique argument.

#[tokio::test]
async fn a_timeout_kills_the_command_and_its_grandchildren() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let token = unique_sleep();
    let (text, is_error) = call(
        &client,
        "run_command",
        json!({
            "command": format!("sleep {token} & echo started; sleep {token}"),
            "timeout_secs": 1
        }),
    )
    .await;
    assert!(!is_error);
    assert!(
        text.starts_with(
            "timed out after 1 s: the command and every process it started were killed\n"
        ),
        "{text}"
    );
    assert!(text.contains("--- stdout\nstarted\n"), "{text}");
    assert!(
        eventually(|| with_token(&token).is_empty()).await,
        "left behind: {:?}",
        with_token(&token)
    );
}

#[tokio::test]
async fn a_cancelled_call_kills_the_command_and_its_grandchildren() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let token = unique_sleep();
    {
        // Dropping the call future sends notifications/cancelled.
        let running = call(
            &client,
            "run_command",
            json!({"command": format!("sleep {token} & sleep {token}")}),
        );
        tokio::pin!(running);
        let started = async {
            while with_token(&token).len() < 2 {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            }
        };
        tokio::select! {
            _ = &mut running => panic!("the command should still be running"),
            _ = started => {}
        }
    }
    assert!(
        eventually(|| with_token(&token).is_empty()).await,
        "survived the cancellation: {:?}",
        with_token(&token)
    );
}

#[tokio::test]
async fn background_processes_die_when_the_command_exits() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let token = unique_sleep();
    // The background sleep keeps stdout open: reading must not wait for it.
    let (text, _) = call(
        &client,
        "run_command",
        json!({"command": format!("sleep {token} & echo done")}),
    )
    .await;
    assert!(text.starts_with("exit code: 0"), "{text}");
    assert!(text.ends_with("--- stdout\ndone\n"), "{text}");
    assert!(
        eventually(|| with_token(&token).is_empty()).await,
        "left behind: {:?}",
        with_token(&token)
    );
}

#[tokio::test]
async fn long_output_is_clamped_keeping_head_and_tail() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = ToolContext::new(dir.path()).unwrap();
    ctx.max_output = 2_000;
    let client = connect_with(ctx).await;
    let (text, _) = call(&client, "run_command", json!({"command": "seq 1 200000"})).await;
    assert!(text.contains("--- stdout\n1\n2\n3\n"), "{text}");
    assert!(text.ends_with("199999\n200000\n"), "{text}");
    assert!(text.contains(" bytes omitted ...]"), "{text}");
    assert!(text.len() < 2_300, "{} bytes", text.len());
}

#[tokio::test]
async fn both_streams_share_the_output_budget() {
    let dir = tempfile::tempdir().unwrap();
    let mut ctx = ToolContext::new(dir.path()).unwrap();
    ctx.max_output = 2_000;
    let client = connect_with(ctx).await;
    let (text, _) = call(
        &client,
        "run_command",
        json!({"command": "seq 1 100000; seq 1 100000 >&2; echo LAST >&2"}),
    )
    .await;
    let (stdout, stderr) = text.split_once("--- stderr\n").unwrap();
    assert!(stdout.contains("100000\n"), "{text}");
    assert!(stderr.ends_with("LAST\n"), "{text}");
    assert!(text.len() < 2_300, "{} bytes", text.len());
}

#[tokio::test]
async fn concurrent_commands_do_not_block_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    // The first command can only finish once the second one has run.
    let waiter = call(
        &client,
        "run_command",
        json!({"command": "while [ ! -f flag ]; do sleep 0.05; done; echo saw flag", "timeout_secs": 30}),
    );
    let setter = async {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        call(&client, "run_command", json!({"command": "touch flag"})).await
    };
    let ((waited, _), (set, _)) = tokio::join!(waiter, setter);
    assert!(set.starts_with("exit code: 0"), "{set}");
    assert!(waited.starts_with("exit code: 0"), "{waited}");
    assert!(waited.ends_with("saw flag\n"), "{waited}");
}

#[tokio::test]
async fn a_task_runs_in_the_background_until_killed() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let (started, is_error) = call(
        &client,
        "task_start",
        json!({"command": "echo hello; echo warn >&2; sleep 1000 & sleep 1000"}),
    )
    .await;
    assert!(!is_error);
    assert!(
        started.starts_with("started task 1 (process group "),
        "{started}"
    );
    let pgid = pgid_of(&started);

    let mut seen = String::new();
    for _ in 0..200 {
        let (text, _) = call(&client, "task_output", json!({"id": 1})).await;
        assert!(text.starts_with("status: running for "), "{text}");
        seen.push_str(&text);
        if seen.contains("hello\n") && seen.contains("warn\n") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        seen.contains("hello\n") && seen.contains("warn\n"),
        "{seen}"
    );
    // Output is handed out once.
    let (text, _) = call(&client, "task_output", json!({"id": 1})).await;
    assert!(text.ends_with("(no new output)\n"), "{text}");
    // Two sleeps (sh may have exec'd the last one).
    assert!(group_members(pgid).len() >= 2);

    let (text, is_error) = call(&client, "task_kill", json!({"id": 1})).await;
    assert!(!is_error);
    assert!(
        text.starts_with("status: killed by signal 15 (stopped by task_kill)\n"),
        "{text}"
    );
    assert!(eventually(|| group_members(pgid).is_empty()).await);
    let (text, _) = call(&client, "task_output", json!({"id": 1})).await;
    assert!(text.starts_with("status: killed by signal 15"), "{text}");
}

#[tokio::test]
async fn a_finished_task_reports_its_exit_code_and_last_output() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let (started, _) = call(
        &client,
        "task_start",
        json!({"command": "echo bye; exit 7"}),
    )
    .await;
    let pgid = pgid_of(&started);
    let mut seen = String::new();
    let mut last = String::new();
    for _ in 0..200 {
        last = call(&client, "task_output", json!({"id": 1})).await.0;
        seen.push_str(&last);
        if !last.starts_with("status: running") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        last.starts_with("status: exit code: 7\ncommand: echo bye; exit 7\n"),
        "{last}"
    );
    assert!(seen.contains("--- new output\nbye\n"), "{seen}");
    assert!(group_members(pgid).is_empty());
}

#[tokio::test]
async fn an_unknown_task_id_is_an_error_listing_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let (text, is_error) = call(&client, "task_output", json!({"id": 9})).await;
    assert!(is_error);
    assert_eq!(
        text,
        "no task with id 9: no tasks have been started (use task_start)"
    );
    call(&client, "task_start", json!({"command": "true"})).await;
    let (text, is_error) = call(&client, "task_kill", json!({"id": 9})).await;
    assert!(is_error);
    assert_eq!(text, "no task with id 9; known task ids: 1");
}

#[tokio::test]
async fn tasks_die_when_the_server_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let (started, _) = call(
        &client,
        "task_start",
        json!({"command": "sleep 1000 & sleep 1000"}),
    )
    .await;
    let pgid = pgid_of(&started);
    assert!(eventually(|| group_members(pgid).len() >= 2).await);
    client.cancel().await.unwrap();
    assert!(eventually(|| group_members(pgid).is_empty()).await);
}

#[tokio::test]
async fn annotations_are_honest() {
    let dir = tempfile::tempdir().unwrap();
    let client = connect(dir.path()).await;
    let tools = client.list_all_tools().await.unwrap();
    let hints = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        let a = tool.annotations.clone().unwrap();
        (a.read_only_hint, a.destructive_hint, a.open_world_hint)
    };
    assert_eq!(hints("run_command"), (Some(false), Some(true), Some(true)));
    assert_eq!(hints("task_start"), (Some(false), Some(true), Some(true)));
    assert_eq!(hints("task_output"), (Some(true), Some(false), Some(false)));
    assert_eq!(hints("task_kill"), (Some(false), Some(true), Some(false)));
}

#[tokio::test]
async fn schema_file_matches_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let doc = tools_document(
        "shell",
        ShellServer::new(ToolContext::new(dir.path()).unwrap()),
    )
    .await
    .unwrap();
    check_schema_file(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/shell.json"),
        &doc,
    )
    .unwrap();
}
