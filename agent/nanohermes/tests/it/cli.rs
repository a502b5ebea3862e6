use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::support::binary::{Run, TEST_HOME, git, nanohermes, on_mock, workspace_arg};
use crate::support::history::{assert_history_valid, assert_requests_valid};
use crate::support::mock_model::{
    MockModel, Reply, call, call_raw, call_split, status, text, tool_calls,
};
use crate::support::{fixture_server, tool_result};

#[tokio::test]
async fn a_multi_step_task_writes_and_reads_a_file_through_the_real_files_server() {
    let dir = tempfile::tempdir().unwrap();
    let source = "pub fn answer() -> u32 {\n    42\n}\n";
    let mock = MockModel::start(vec![
        Reply::Status {
            code: 429,
            headers: vec![("Retry-After".into(), "0".into())],
            body: r#"{"error":{"message":"slow down"}}"#.into(),
        }
        .into(),
        tool_calls(&[call_split(
            "call_write",
            "write_file",
            json!({"path":"src/lib.rs","content":source}),
            3,
        )])
        .into(),
        status(500, "upstream hiccup").into(),
        tool_calls(&[
            call("call_read", "read_file", json!({"path":"src/lib.rs"})),
            call("call_list", "list_dir", json!({})),
            call_raw("call_bad", "read_file", r#"{"path": src/lib.rs}"#),
        ])
        .into(),
        text(&["Wrote src/lib.rs ", "and read it back."]).into(),
    ])
    .await;
    let url = mock.base_url();
    let workspace = workspace_arg(dir.path());

    let run = nanohermes(
        &[
            "run",
            "--workspace",
            &workspace,
            "--retry-base-ms",
            "10",
            "write src/lib.rs with answer() and read it back",
        ],
        &on_mock(&mock, &url),
    )
    .await;

    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(run.stdout, "Wrote src/lib.rs and read it back.\n");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("src/lib.rs")).unwrap(),
        source
    );
    let tool_lines: Vec<_> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("tool "))
        .collect();
    assert_eq!(tool_lines.len(), 4, "{}", run.stderr);
    assert!(
        tool_lines[0].starts_with("tool write_file "),
        "{}",
        tool_lines[0]
    );
    assert!(
        tool_lines[3].contains("-> ERROR: invalid JSON arguments for `read_file`"),
        "{}",
        tool_lines[3]
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 5);
    assert_requests_valid(&requests);
    assert!(
        requests
            .iter()
            .all(|r| r.header("authorization") == Some("Bearer test-key"))
    );
    let last = requests[4].messages();
    assert!(
        tool_result(last, "call_read").contains("42"),
        "{}",
        tool_result(last, "call_read")
    );
    assert!(
        tool_result(last, "call_list").contains("src"),
        "{}",
        tool_result(last, "call_list")
    );
    assert!(tool_result(last, "call_bad").starts_with("ERROR: invalid JSON arguments"));
    assert!(
        requests[0].messages()[0]["content"]
            .as_str()
            .unwrap()
            .contains(&format!(
                "Workspace root: {}",
                dir.path().canonicalize().unwrap().display()
            ))
    );
}

#[tokio::test]
async fn the_iteration_limit_exits_with_code_3() {
    let dir = tempfile::tempdir().unwrap();
    let step = || tool_calls(&[call("call_l", "list_dir", json!({}))]).into();
    let mock = MockModel::start(vec![step(), step(), step()]).await;
    let url = mock.base_url();
    let workspace = workspace_arg(dir.path());

    let run = nanohermes(
        &[
            "run",
            "--workspace",
            &workspace,
            "--max-iterations",
            "2",
            "loop",
        ],
        &on_mock(&mock, &url),
    )
    .await;

    assert_eq!(run.code, Some(3), "{run:#?}");
    assert!(
        run.stderr
            .contains("nanohermes: reached the 2 iteration limit without finishing"),
        "{}",
        run.stderr
    );
    assert_eq!(mock.requests().len(), 2);
    assert_requests_valid(&mock.requests());
}

#[tokio::test]
async fn an_external_server_that_crashes_mid_session_does_not_end_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[call("call_crash", "fx__crash", json!({}))]).into(),
        tool_calls(&[
            call("call_echo", "fx__echo", json!({"text":"alive"})),
            call("call_list", "list_dir", json!({})),
        ])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let url = mock.base_url();
    let workspace = workspace_arg(dir.path());
    let mcp = format!("fx={}", fixture_server().display());

    let run = nanohermes(
        &[
            "run",
            "--workspace",
            &workspace,
            "--mcp",
            &mcp,
            "crash the fixture",
        ],
        &on_mock(&mock, &url),
    )
    .await;

    assert_eq!(run.code, Some(0), "{run:#?}");
    let requests = mock.requests();
    assert_requests_valid(&requests);
    assert!(
        tool_result(requests[1].messages(), "call_crash")
            .starts_with("ERROR: server fx is not running")
    );
    assert_eq!(tool_result(requests[2].messages(), "call_echo"), "alive");
}

#[tokio::test]
async fn tools_lists_every_tool_with_its_server_and_read_only_flag() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = workspace_arg(dir.path());
    let mcp = format!("fx={}", fixture_server().display());

    let run = nanohermes(&["tools", "--workspace", &workspace, "--mcp", &mcp], &[]).await;

    assert_eq!(run.code, Some(0), "{run:#?}");
    let rows: Vec<Vec<&str>> = run
        .stdout
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows[0], ["TOOL", "SERVER", "READ-ONLY", "DEFERRED"]);
    assert!(
        rows.contains(&vec!["read_file", "files", "yes", "no"]),
        "{}",
        run.stdout
    );
    assert!(
        rows.contains(&vec!["write_file", "files", "no", "no"]),
        "{}",
        run.stdout
    );
    assert!(
        rows.contains(&vec!["fx__echo", "fx", "yes", "yes"]),
        "{}",
        run.stdout
    );
    assert!(
        rows.contains(&vec!["fx__crash", "fx", "no", "yes"]),
        "{}",
        run.stdout
    );
}

/// An error is one line on stderr: no panic, no backtrace, exit code 1.
fn assert_one_line_error(run: &Run, expected: &str) {
    assert_eq!(run.code, Some(1), "{run:#?}");
    let lines: Vec<_> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("nanohermes: error: "))
        .collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].contains(expected),
        "expected {expected:?} in {:?}",
        lines[0]
    );
    assert!(
        !run.stderr.contains("panicked") && !run.stderr.contains("backtrace"),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn a_missing_api_key_for_api_openai_com_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = workspace_arg(dir.path());

    let run = nanohermes(&["run", "--workspace", &workspace, "hi"], &[]).await;

    assert_one_line_error(
        &run,
        "OPENAI_API_KEY is not set: https://api.openai.com/v1 needs an API key",
    );
}

#[tokio::test]
async fn a_rejected_api_key_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        status(401, "Incorrect API key provided: sk-wrong").into(),
    ])
    .await;
    let url = mock.base_url();
    let workspace = workspace_arg(dir.path());

    let run = nanohermes(
        &["run", "--workspace", &workspace, "hi"],
        &on_mock(&mock, &url),
    )
    .await;

    assert_one_line_error(
        &run,
        &format!(
            "the model server at {url} rejected the API key (HTTP 401): Incorrect API key provided: sk-wrong (check OPENAI_API_KEY)"
        ),
    );
    assert_eq!(mock.requests().len(), 1);
    assert_requests_valid(&mock.requests());
}

#[tokio::test]
async fn a_model_that_does_not_exist_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    let body = r#"{"error":{"message":"The model `gpt-nope` does not exist or you do not have access to it.","type":"invalid_request_error","code":"model_not_found"}}"#;
    let mock = MockModel::start(vec![
        Reply::Status {
            code: 404,
            headers: vec![],
            body: body.into(),
        }
        .into(),
    ])
    .await;
    let url = mock.base_url();
    let workspace = workspace_arg(dir.path());

    let run = nanohermes(
        &[
            "run",
            "--workspace",
            &workspace,
            "--model",
            "gpt-nope",
            "hi",
        ],
        &on_mock(&mock, &url),
    )
    .await;

    assert_one_line_error(
        &run,
        &format!("model `gpt-nope` does not exist at {url} (HTTP 404)"),
    );
    assert_eq!(mock.requests()[0].body["model"], "gpt-nope");
    assert_requests_valid(&mock.requests());
}

#[tokio::test]
async fn an_unreachable_base_url_is_a_one_line_error() {
    let dir = tempfile::tempdir().unwrap();
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let workspace = workspace_arg(dir.path());

    let run = nanohermes(
        &[
            "run",
            "--workspace",
            &workspace,
            "--retry-base-ms",
            "1",
            "hi",
        ],
        &[("OPENAI_BASE_URL", url.as_str())],
    )
    .await;

    assert_one_line_error(&run, &format!("cannot reach the model server at {url}: "));
    assert_eq!(
        run.stderr.matches("nanohermes: retrying in").count(),
        2,
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn a_missing_workspace_is_a_one_line_usage_error_exiting_2() {
    for command in ["tools", "run"] {
        let run = nanohermes(
            &[command, "--workspace", "/nonexistent/nanohermes-test", "hi"]
                [..if command == "run" { 4 } else { 3 }],
            &[("OPENAI_API_KEY", "k")],
        )
        .await;

        assert_eq!(run.code, Some(2), "{command}: {run:#?}");
        let lines: Vec<_> = run.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{}", run.stderr);
        assert!(
            lines[0].starts_with(
                "nanohermes: error: workspace /nonexistent/nanohermes-test does not exist"
            ),
            "{}",
            lines[0]
        );
    }
}

/// `serve` has no workspace of its own: `--workspace` there is a usage
/// error naming `--root`, not a flag silently ignored.
#[tokio::test]
async fn serve_refuses_a_workspace_flag_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = workspace_arg(dir.path());
    let run = nanohermes(&["serve", "--workspace", &workspace], &[]).await;
    assert_eq!(run.code, Some(2), "{run:#?}");
    assert!(
        run.stderr
            .starts_with("nanohermes: error: serve takes no --workspace")
            && run.stderr.contains("--root"),
        "{}",
        run.stderr
    );
}

/// Under `--output-format json|stream-json` every error, those before the
/// run starts too, ends stdout with one result object; the exit codes
/// stay as documented (1 an error, 2 a usage error).
#[tokio::test]
async fn every_error_under_the_json_formats_is_a_json_result() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = workspace_arg(dir.path());
    std::fs::write(dir.path().join("notes.md"), "# notes\n").unwrap();
    let notes = dir.path().join("notes.md").display().to_string();
    /// Flags, environment, exit code, what the error says.
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], i32, &'a str);
    let cases: [Case<'_>; 3] = [
        (
            &["--workspace", &workspace],
            &[],
            1,
            "OPENAI_API_KEY is not set",
        ),
        (
            &["--workspace", "/nonexistent/nanohermes-test"],
            &[("OPENAI_API_KEY", "k")],
            2,
            "workspace /nonexistent/nanohermes-test does not exist",
        ),
        (
            &["--workspace", &workspace, "--session", &notes],
            &[("OPENAI_API_KEY", "k")],
            1,
            "is not a nanohermes session file",
        ),
    ];
    for format in ["json", "stream-json", "text"] {
        for (flags, env, code, error) in &cases {
            let mut args = vec!["run", "--output-format", format];
            args.extend_from_slice(flags);
            args.push("hi");
            let run = nanohermes(&args, env).await;
            assert_eq!(run.code, Some(*code), "{format} {flags:?}: {run:#?}");
            assert!(run.stderr.contains(error), "{}", run.stderr);
            if format == "text" {
                assert_eq!(run.stdout, "", "{flags:?}");
                continue;
            }
            let lines: Vec<&str> = run.stdout.lines().collect();
            assert_eq!(lines.len(), 1, "{format} {flags:?}: {}", run.stdout);
            let result: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
            assert_eq!(result["type"], "result");
            assert_eq!(result["is_error"], true);
            assert_eq!(result["status"], "error");
            assert!(
                result["result"].as_str().unwrap().contains(error),
                "{result}"
            );
        }
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes.md")).unwrap(),
        "# notes\n"
    );
}

/// The help and agent/README.md name the same `mcp` subcommands (every
/// one clap knows), and README's exit codes say what a usage error exits.
#[tokio::test]
async fn the_help_and_the_readme_name_every_mcp_subcommand() {
    let mcp = nanohermes(&["mcp", "--help"], &[]).await;
    let names: Vec<&str> = mcp
        .stdout
        .split("Commands:")
        .nth(1)
        .unwrap()
        .split("Options:")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    assert_eq!(names.len(), 8, "{names:?}");
    let top = nanohermes(&["--help"], &[]).await;
    let line = top
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("mcp "))
        .unwrap();
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let row = readme
        .lines()
        .find_map(|l| l.strip_prefix("| `nanohermes mcp "))
        .unwrap();
    let listed: Vec<&str> = row.split('`').next().unwrap().split("\\|").collect();
    for name in &names {
        assert!(line.contains(name), "{name} missing from: {line}");
        assert!(
            listed.contains(name),
            "{name} missing from README: {listed:?}"
        );
    }
    assert!(
        readme.contains("`2` a usage or configuration error"),
        "README's exit codes"
    );
}

#[cfg(unix)]
#[tokio::test]
async fn ctrl_c_during_a_step_exits_130_after_answering_every_call() {
    use std::sync::{Arc, OnceLock};

    let dir = tempfile::tempdir().unwrap();
    let child_pid: Arc<OnceLock<u32>> = Arc::new(OnceLock::new());
    let pid = child_pid.clone();
    let mock = MockModel::start(vec![
        tool_calls(&[
            call("call_a", "list_dir", json!({})),
            call(
                "call_b",
                "write_file",
                json!({"path":"b.txt","content":"b"}),
            ),
        ])
        .when_requested(move || {
            // A terminal's Ctrl-C: SIGINT to the whole foreground group.
            let pid =
                nix::unistd::Pid::from_raw(*pid.get().expect("pid set before the request") as i32);
            nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGINT).expect("SIGINT sent");
        }),
        text(&["never asked"]).into(),
    ])
    .await;
    let url = mock.base_url();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command
        .args(["run", "--workspace"])
        .arg(dir.path())
        .arg("list and write")
        .envs(on_mock(&mock, &url))
        .env("NANOHERMES_HOME", TEST_HOME)
        .env_remove("NANOHERMES_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        // The agent leads its own group, as a shell's foreground job does.
        .process_group(0)
        .kill_on_drop(true);
    let child = command.spawn().unwrap();
    child_pid.set(child.id().unwrap()).unwrap();
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();

    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted: stopped at a step boundary"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.txt")).unwrap(),
        "b"
    );
    assert_eq!(mock.requests().len(), 1);
    assert_requests_valid(&mock.requests());
}

/// Whether `pid` is a process that has not exited (a zombie has).
fn is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// The pids the fixture wrote to `path` (itself, then its grandchildren).
fn read_pids(path: &Path) -> Vec<u32> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect()
}

/// Waits (up to a generous hang guard) until none of `pids` runs.
async fn assert_all_end(pids: &[u32]) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while pids.iter().any(|p| is_running(*p)) {
        assert!(
            std::time::Instant::now() < deadline,
            "left running: {:?}",
            pids.iter().filter(|p| is_running(**p)).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `--mcp` for the fixture with a grandchild in its group, one that called
/// setsid, and its pids written to `pid_file`.
fn fixture_tree_spec(name: &str, pid_file: &Path) -> String {
    format!(
        "{name}={} --grandchild --setsid-grandchild --pid-file {}",
        fixture_server().display(),
        pid_file.display()
    )
}

/// The names the first request declared to the model.
fn declared(request: &crate::support::mock_model::Recorded) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_normal_exit_leaves_nothing_of_an_external_server_running() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("fx.pids");
    let workspace = workspace_arg(dir.path());
    let mcp = fixture_tree_spec("fx", &pid_file);

    let run = nanohermes(&["tools", "--workspace", &workspace, "--mcp", &mcp], &[]).await;

    assert_eq!(run.code, Some(0), "{run:#?}");
    let pids = read_pids(&pid_file);
    assert_eq!(pids.len(), 3, "{pids:?}");
    assert_all_end(&pids).await;
}

#[cfg(unix)]
#[tokio::test]
async fn sigterm_ends_the_agent_and_every_process_it_started() {
    use std::sync::{Arc, OnceLock};

    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("fx.pids");
    let agent_pid: Arc<OnceLock<u32>> = Arc::new(OnceLock::new());
    let pid = agent_pid.clone();
    let mock = MockModel::start(vec![
        tool_calls(&[call("call_slow", "fx__slow", json!({"ms": 600_000}))]).when_requested(
            move || {
                let pid = nix::unistd::Pid::from_raw(*pid.get().expect("pid set") as i32);
                nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM)
                    .expect("SIGTERM sent");
            },
        ),
        text(&["never asked"]).into(),
    ])
    .await;
    let url = mock.base_url();
    let mcp = fixture_tree_spec("fx", &pid_file);
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command
        .args(["run", "--workspace"])
        .arg(dir.path())
        .args(["--mcp", &mcp, "sleep"])
        .envs(on_mock(&mock, &url))
        .env("NANOHERMES_HOME", TEST_HOME)
        .env_remove("NANOHERMES_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let child = command.spawn().unwrap();
    agent_pid.set(child.id().unwrap()).unwrap();
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();

    assert_eq!(
        output.status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let pids = read_pids(&pid_file);
    assert_eq!(pids.len(), 3, "{pids:?}");
    assert_all_end(&pids).await;
}

#[tokio::test]
async fn no_child_gets_the_model_key_or_variables_nobody_named() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[
            call("call_key", "fx__env", json!({"name": "OPENAI_API_KEY"})),
            call("call_plain", "fx__env", json!({"name": "NANOHERMES_TEST_PLAIN"})),
            call("call_home", "fx__env", json!({"name": "HOME"})),
            call(
                "call_shell",
                "run_command",
                json!({"command": "echo key=${OPENAI_API_KEY:-absent} plain=${NANOHERMES_TEST_PLAIN:-absent}"}),
            ),
        ])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let url = mock.base_url();
    let workspace = workspace_arg(dir.path());
    let mcp = format!("fx={}", fixture_server().display());
    let mut env = on_mock(&mock, &url);
    env.push(("NANOHERMES_TEST_PLAIN", "visible"));
    env.push(("HOME", "/home/nanohermes-test"));

    let run = nanohermes(
        &[
            "run",
            "--workspace",
            &workspace,
            "--mcp",
            &mcp,
            "show the environment",
        ],
        &env,
    )
    .await;

    assert_eq!(run.code, Some(0), "{run:#?}");
    let requests = mock.requests();
    assert_requests_valid(&requests);
    let last = requests[1].messages();
    assert_eq!(tool_result(last, "call_key"), "(unset)");
    // An external server gets the allow-list only.
    assert_eq!(tool_result(last, "call_plain"), "(unset)");
    assert_eq!(tool_result(last, "call_home"), "/home/nanohermes-test");
    // A shell command gets everything but secrets.
    let shell = tool_result(last, "call_shell");
    assert!(shell.contains("key=absent plain=visible"), "{shell}");
    assert!(!shell.contains("test-key"), "{shell}");
}

#[tokio::test]
async fn read_only_mode_offers_only_read_only_tools_and_still_gates_calls() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[
            call(
                "call_write",
                "write_file",
                json!({"path": "x.txt", "content": "x"}),
            ),
            call("call_read", "list_dir", json!({})),
        ])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let url = mock.base_url();
    let workspace = workspace_arg(dir.path());
    let mcp = format!("fx={}", fixture_server().display());

    let run = nanohermes(
        &[
            "run",
            "--read-only",
            "--workspace",
            &workspace,
            "--mcp",
            &mcp,
            "look around",
        ],
        &on_mock(&mock, &url),
    )
    .await;

    assert_eq!(run.code, Some(0), "{run:#?}");
    let requests = mock.requests();
    assert_requests_valid(&requests);
    let names = declared(&requests[0]);
    for offered in ["read_file", "list_dir", "git_status", "fx__echo"] {
        assert!(
            names.iter().any(|n| n == offered),
            "{offered} missing: {names:?}"
        );
    }
    for withheld in [
        "write_file",
        "run_command",
        "git_commit",
        "fx__touch",
        "fx__crash",
    ] {
        assert!(
            !names.iter().any(|n| n == withheld),
            "{withheld} offered: {names:?}"
        );
    }
    // A call to a withheld tool is still refused by the gate.
    assert!(
        tool_result(requests[1].messages(), "call_write")
            .starts_with("ERROR: `write_file` is not available in read-only mode"),
        "{}",
        tool_result(requests[1].messages(), "call_write")
    );
    assert!(!dir.path().join("x.txt").exists());

    let tools = nanohermes(
        &[
            "tools",
            "--read-only",
            "--workspace",
            &workspace,
            "--mcp",
            &mcp,
        ],
        &[],
    )
    .await;
    assert_eq!(tools.code, Some(0), "{tools:#?}");
    assert!(
        tools
            .stdout
            .lines()
            .skip(1)
            .all(|l| l.split_whitespace().nth(2) == Some("yes")),
        "{}",
        tools.stdout
    );
    assert!(tools.stdout.contains("read_file"), "{}", tools.stdout);
}

#[cfg(unix)]
#[tokio::test]
async fn ctrl_c_to_the_group_mid_commit_and_mid_external_call_lets_both_finish() {
    use std::os::unix::fs::PermissionsExt;

    let dir = tempfile::tempdir().unwrap();
    let marks = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q"]);
    git(repo, &["config", "user.name", "Test"]);
    git(repo, &["config", "user.email", "test@example.com"]);
    let started = marks.path().join("hook-started");
    let done = marks.path().join("hook-done");
    let hook = repo.join(".git/hooks/pre-commit");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ntouch '{}'\nsleep 2\ntouch '{}'\n",
            started.display(),
            done.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(repo.join("a.txt"), "a\n").unwrap();
    let pid_file = marks.path().join("fx.pids");

    // One turn, two parallel calls: a commit whose hook is slow, and an
    // external call that answers only once the hook has finished.
    let mock = MockModel::start(vec![
        tool_calls(&[
            call(
                "call_commit",
                "git_commit",
                json!({"message": "add a", "paths": ["a.txt"]}),
            ),
            call(
                "call_wait",
                "fx__wait_for_file",
                // Bounded, so a killed hook fails the test instead of hanging it.
                json!({"path": done.display().to_string(), "timeout_ms": 20_000}),
            ),
        ])
        .into(),
        text(&["never asked"]).into(),
    ])
    .await;
    let url = mock.base_url();
    let mcp = fixture_tree_spec("fx", &pid_file);
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command
        .args(["run", "--workspace"])
        .arg(repo)
        .args(["--mcp", &mcp, "commit a.txt"])
        .envs(on_mock(&mock, &url))
        .env("NANOHERMES_HOME", TEST_HOME)
        .env_remove("NANOHERMES_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        // The agent leads its own group, as a shell's foreground job does.
        .process_group(0)
        .kill_on_drop(true);
    let child = command.spawn().unwrap();
    let pgid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);

    // Both calls are in flight once the hook has started: Ctrl-C then, to
    // the whole group, as a terminal sends it.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !started.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the hook never started"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(!done.exists(), "the hook is still running");
    nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGINT).expect("SIGINT sent");
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();

    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("interrupted: stopped at a step boundary"),
        "{stderr}"
    );
    // The hook was not killed by the SIGINT: it finished and the commit landed.
    assert!(done.exists(), "{stderr}");
    assert_eq!(git(repo, &["log", "--format=%s"]).trim(), "add a");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.starts_with("tool ")).collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("tool git_commit ") && l.contains("-> ok")),
        "{stderr}"
    );
    // The external server was not killed by the SIGINT: it answered.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("tool fx__wait_for_file ") && l.ends_with("-> ok (4 bytes)")),
        "{stderr}"
    );
    assert_eq!(mock.requests().len(), 1, "stopped at the step boundary");
    assert_requests_valid(&mock.requests());
    // Then it was shut down with the agent, grandchildren and all.
    let pids = read_pids(&pid_file);
    assert_eq!(pids.len(), 3, "{pids:?}");
    assert_all_end(&pids).await;
}

#[tokio::test]
async fn a_run_keeps_its_session_and_continue_resumes_it_with_todays_system_prompt() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let mock = MockModel::start_strict(vec![
        tool_calls(&[call("c1", "read_file", json!({"path": "a.txt"}))]).into(),
        text(&["first done"]).into(),
        text(&["second done"]).into(),
        text(&["fresh after corruption"]).into(),
    ])
    .await;
    let url = mock.base_url();
    let workspace = workspace_arg(dir.path());
    let first = nanohermes(
        &["run", "--workspace", &workspace, "first task"],
        &on_mock(&mock, &url),
    )
    .await;
    assert_eq!(first.code, Some(0), "{first:#?}");
    let id = first
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("nanohermes: session ")?.split(' ').next())
        .unwrap_or_else(|| panic!("no session line: {}", first.stderr))
        .to_owned();
    let file = dir.path().join(format!(".nanohermes/sessions/{id}.json"));
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(
        !saved.contains("test-key"),
        "the key must not land in a session file"
    );

    // The guidance changed between the runs: the continued session is
    // sent today's system prompt, then the old conversation.
    std::fs::write(dir.path().join("AGENTS.md"), "Always answer in haiku.\n").unwrap();
    let second = nanohermes(
        &[
            "run",
            "--workspace",
            &workspace,
            "--continue",
            "second task",
        ],
        &on_mock(&mock, &url),
    )
    .await;
    assert_eq!(second.code, Some(0), "{second:#?}");
    let requests = mock.requests();
    let messages = requests[2].messages();
    assert!(
        messages[0]["content"]
            .as_str()
            .unwrap()
            .contains("Always answer in haiku.")
    );
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert_eq!(messages[1]["content"], "first task");
    assert_eq!(messages[5]["content"], "second task");

    // A damaged file: a warning, a fresh session, the file kept aside.
    std::fs::write(&file, "{\"version\": 1, \"messages\": [").unwrap();
    let third = nanohermes(
        &[
            "run",
            "--workspace",
            &workspace,
            "--resume",
            &id,
            "third task",
        ],
        &on_mock(&mock, &url),
    )
    .await;
    assert_eq!(third.code, Some(0), "{third:#?}");
    assert!(third.stderr.contains("is damaged"), "{}", third.stderr);
    assert_eq!(
        mock.requests()[3].messages().len(),
        2,
        "a fresh conversation"
    );
    let kept: Vec<_> = std::fs::read_dir(file.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".corrupt-"))
        .collect();
    assert_eq!(kept.len(), 1);
    assert_requests_valid(&mock.requests());

    let missing = nanohermes(
        &[
            "run",
            "--workspace",
            &workspace,
            "--resume",
            "0000-none",
            "x",
        ],
        &on_mock(&mock, &url),
    )
    .await;
    assert_eq!(missing.code, Some(1));
    assert!(
        missing
            .stderr
            .contains("--resume 0000-none: no such session"),
        "{}",
        missing.stderr
    );
}

#[tokio::test]
async fn kill_9_while_a_session_is_written_always_leaves_one_that_loads_to_a_whole_step() {
    let dir = tempfile::tempdir().unwrap();
    // A large file makes every step's write long, so kills land inside
    // writes (with a plain non-atomic write, about one round in three
    // catches a truncated file; twelve rounds almost always do).
    std::fs::write(dir.path().join("big.txt"), "x".repeat(200_000)).unwrap();
    let workspace = workspace_arg(dir.path());
    let sessions = dir.path().join(".nanohermes/sessions");
    for (round, delay_ms) in [1u64, 3, 5, 8, 11, 15, 19, 23, 29, 37, 45, 53]
        .into_iter()
        .enumerate()
    {
        let steps: Vec<_> = (0..40)
            .map(|i| {
                tool_calls(&[call(
                    &format!("r{round}c{i}"),
                    "read_file",
                    json!({"path": "big.txt"}),
                )])
                .into()
            })
            .collect();
        let mock = MockModel::start(steps).await;
        let url = mock.base_url();
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
        command
            .args(["run", "--workspace", &workspace, "--session"])
            .arg(sessions.join("s.json"))
            .arg("read it again and again")
            .env("NANOHERMES_HOME", TEST_HOME)
            .envs(on_mock(&mock, &url))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true);
        let mut child = command.spawn().unwrap();
        let target = sessions.join("s.json");
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while mock.requests().len() < 3 + round {
            assert!(
                std::time::Instant::now() < deadline,
                "the run never got going"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        child.start_kill().unwrap();
        let _ = child.wait().await;
        // Whatever the moment of the kill, the session file loads to a
        // whole step: every call answered.
        let file = nanohermes_session::read(&target)
            .unwrap_or_else(|e| panic!("round {round}: {e}"))
            .unwrap_or_else(|| panic!("round {round}: no session file"));
        assert!(!file.messages.is_empty());
        let mut history = vec![json!({"role": "system", "content": "s"})];
        history.extend(file.messages);
        assert_history_valid(&history);
    }
}

#[tokio::test]
async fn a_builtin_starts_on_its_first_call_and_one_never_called_never_starts() {
    // The memory server is the one whose start leaves a trace: it opens
    // (creates) HOME/memory.db.
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let db = home.path().join("memory.db");
    let home_path = home.path().display().to_string();
    let workspace = workspace_arg(dir.path());
    let run_with = |mock: &MockModel| {
        let url = mock.base_url();
        let workspace = workspace.clone();
        let home_path = home_path.clone();
        async move {
            let mut env = vec![
                ("OPENAI_BASE_URL", url.as_str()),
                ("OPENAI_API_KEY", "test-key"),
                ("NANOHERMES_MODEL", "main-model"),
                ("NANOHERMES_MODE", "goal"),
            ];
            env.push(("NANOHERMES_HOME", home_path.as_str()));
            nanohermes(&["run", "--workspace", &workspace, "go"], &env).await
        }
    };

    let mock = MockModel::start(vec![
        tool_calls(&[call("c1", "todo_read", json!({}))]).into(),
        text(&["done"]).into(),
    ])
    .await;
    let run = run_with(&mock).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let requests = mock.requests();
    // Declared from the first request although it never ran.
    assert!(declared(&requests[0]).contains(&"memory_save".to_owned()));
    assert!(!tool_result(requests[1].messages(), "c1").starts_with("ERROR"));
    assert!(!db.exists(), "the memory server started without a call");

    let mock = MockModel::start(vec![
        tool_calls(&[call(
            "c2",
            "memory_save",
            json!({"kind": "fact", "text": "the answer is 42"}),
        )])
        .into(),
        text(&["saved"]).into(),
    ])
    .await;
    let run = run_with(&mock).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let saved = tool_result(mock.requests()[1].messages(), "c2").to_owned();
    assert!(!saved.starts_with("ERROR"), "{saved}");
    assert!(db.exists(), "the first call started the memory server");
}

#[tokio::test]
async fn a_builtin_that_fails_on_its_first_call_says_why_and_the_run_goes_on() {
    // HOME/memory.db is a directory: the database cannot be opened.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("memory.db")).unwrap();
    let home = dir.path().display().to_string();
    let workspace = tempfile::tempdir().unwrap();
    let workspace = workspace_arg(workspace.path());
    let mock = MockModel::start(vec![
        tool_calls(&[call("c1", "memory_search", json!({"query": "x"}))]).into(),
        tool_calls(&[call("c2", "todo_read", json!({}))]).into(),
        text(&["done"]).into(),
    ])
    .await;
    let url = mock.base_url();
    let mut env = on_mock(&mock, &url);
    env.push(("NANOHERMES_HOME", home.as_str()));
    let run = nanohermes(&["run", "--workspace", &workspace, "go"], &env).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let requests = mock.requests();
    let failed = tool_result(requests[1].messages(), "c1");
    assert!(
        failed.starts_with("ERROR: server memory is not running (it failed to start: ")
            && failed.contains("cannot open the memory database"),
        "{failed}"
    );
    assert!(!tool_result(requests[2].messages(), "c2").starts_with("ERROR"));
    assert_requests_valid(&requests);
}

#[tokio::test]
async fn a_required_builtin_starts_with_the_agent_and_its_failure_stops_the_run() {
    // memory.db is a directory, and the user made memory required: the
    // agent must fail at start, before asking the model, not at a call.
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join("memory.db")).unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "[mcp_servers.memory]\nrequired = true\n",
    )
    .unwrap();
    let home = home.path().display().to_string();
    let workspace = tempfile::tempdir().unwrap();
    let workspace = workspace_arg(workspace.path());
    let mock = MockModel::start(vec![text(&["never asked"]).into()]).await;
    let url = mock.base_url();
    let mut env = on_mock(&mock, &url);
    env.push(("NANOHERMES_HOME", home.as_str()));
    let run = nanohermes(&["run", "--workspace", &workspace, "go"], &env).await;
    assert_ne!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stderr.contains("server memory") && run.stderr.contains("required"),
        "{}",
        run.stderr
    );
    assert!(mock.requests().is_empty(), "the model was asked");
}

/// What `nanohermes tools` lists is what the model gets: every name the
/// first request declares (the hub's `tool_search`, resource and prompt
/// tools, `agent_list` and `skill` among them) is a row, and the
/// deferred tools are the rest.
#[tokio::test]
async fn tools_lists_every_tool_the_model_is_declared_meta_tools_included() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = workspace_arg(dir.path());
    let skill = dir.path().join(".nanohermes/skills/release/SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    std::fs::write(
        &skill,
        "---\nname: release\ndescription: How to cut a release\n---\nSteps.\n",
    )
    .unwrap();
    let mcp = format!(
        "fx={} --many 300 --resources --agent",
        fixture_server().display()
    );
    let mock = MockModel::start(vec![text(&["done"]).into()]).await;
    let url = mock.base_url();

    let listed = nanohermes(
        &["tools", "--workspace", &workspace, "--mcp", &mcp],
        &on_mock(&mock, &url),
    )
    .await;
    let ran = nanohermes(
        &["run", "--workspace", &workspace, "--mcp", &mcp, "hi"],
        &on_mock(&mock, &url),
    )
    .await;

    assert_eq!(listed.code, Some(0), "{listed:#?}");
    assert_eq!(ran.code, Some(0), "{ran:#?}");
    let rows: Vec<Vec<&str>> = listed
        .stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    let declared = declared(&mock.requests()[0]);
    for meta in [
        "tool_search",
        "mcp_list_resources",
        "mcp_read_resource",
        "mcp_list_prompts",
        "mcp_get_prompt",
        "agent_list",
        "skill",
    ] {
        assert!(
            declared.iter().any(|d| d == meta),
            "{meta} declared: {declared:?}"
        );
    }
    for name in &declared {
        let row = rows.iter().find(|r| r[0] == name.as_str());
        let row =
            row.unwrap_or_else(|| panic!("{name} is declared but not listed:\n{}", listed.stdout));
        assert_eq!(row[3], "no", "{row:?}");
    }
    assert!(
        rows.iter()
            .any(|r| r == &["tool_search", "nanohermes", "yes", "no"]),
        "{}",
        listed.stdout
    );
    let deferred = rows.iter().filter(|r| r[3] == "yes").count();
    assert_eq!(rows.len(), declared.len() + deferred, "{}", listed.stdout);
    assert!(deferred > 0);
}
