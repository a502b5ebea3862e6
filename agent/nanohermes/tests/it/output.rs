use std::path::Path;

use serde_json::{Value, json};

use crate::support::binary::{Run, finish};
use crate::support::history::assert_requests_valid;
use crate::support::mock_model::{
    MockModel, call, call_raw, chunk, sse, status, text, tool_call_frames, tool_calls, usage_frame,
};

const TEST_HOME: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/nanohermes-home");

/// `nanohermes run --output-format FORMAT --workspace DIR …` on the mock,
/// leading its own process group (as a shell's foreground job does).
fn command(
    mock: &MockModel,
    dir: &Path,
    format: &str,
    extra: &[&str],
    task: &str,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command
        .args(["run", "--output-format", format, "--workspace"])
        .arg(dir)
        .args(extra)
        .arg(task)
        .env("NANOHERMES_HOME", TEST_HOME)
        .env_remove("NANOHERMES_FALLBACK_MODEL")
        .env_remove("NANOHERMES_LOG")
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "test-key")
        .env("NANOHERMES_MODEL", "main-model")
        .env("NANOHERMES_MODE", "goal")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    command
}

async fn run(mock: &MockModel, dir: &Path, format: &str, extra: &[&str], task: &str) -> Run {
    finish(command(mock, dir, format, extra, task).spawn().unwrap()).await
}

/// Every stdout line, parsed: a line that is not one JSON object fails.
fn events(run: &Run) -> Vec<Value> {
    assert!(run.stdout.ends_with('\n'), "{run:#?}");
    run.stdout
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {line}\n{run:#?}"));
            assert!(value.is_object(), "{line}");
            value
        })
        .collect()
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["type"].as_str().expect("every event has a type"))
        .collect()
}

#[tokio::test]
async fn stream_json_lines_all_parse_and_follow_init_assistant_user_result() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the answer is 42\n").unwrap();
    // One turn with text and two calls (one with broken arguments), then
    // the answer.
    let mut frames = tool_call_frames(&[
        call("call_read", "read_file", json!({"path": "notes.txt"})),
        call_raw("call_bad", "read_file", r#"{"path": notes}"#),
    ]);
    frames.insert(1, chunk(json!({"content": "Let me look. "}), None));
    frames.push(chunk(json!({}), Some("tool_calls")));
    frames.push(usage_frame());
    let mock = MockModel::start(vec![sse(&frames).into(), text(&["It is ", "42."]).into()]).await;

    let run = run(&mock, dir.path(), "stream-json", &[], "what is the answer").await;

    assert_eq!(run.code, Some(0), "{run:#?}");
    let events = events(&run);
    assert_eq!(
        kinds(&events),
        ["system", "assistant", "user", "user", "assistant", "result"],
        "{}",
        run.stdout
    );
    let init = &events[0];
    assert_eq!(init["subtype"], "init");
    // The run keeps a session: its id is in every event that names one.
    let session = init["session_id"].as_str().unwrap().to_owned();
    assert!(!session.is_empty());
    assert_eq!(init["model"], "main-model");
    let tools: Vec<&str> = init["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(tools.contains(&"read_file"), "{tools:?}");
    let servers = init["mcp_servers"].as_array().unwrap();
    assert!(
        servers.iter().any(|s| s["status"] == "connected"),
        "{servers:?}"
    );

    // The assistant event: its text, both calls as tool_use blocks, and
    // that request's usage.
    let first = &events[1]["message"];
    assert_eq!(first["role"], "assistant");
    assert_eq!(
        first["content"][0],
        json!({"type":"text","text":"Let me look. "})
    );
    let read_use = &first["content"][1];
    assert_eq!(read_use["type"], "tool_use");
    assert_eq!(read_use["name"], "read_file");
    assert_eq!(read_use["input"], json!({"path": "notes.txt"}));
    let bad_use = &first["content"][2];
    assert_eq!(
        bad_use["input"],
        json!({}),
        "broken arguments are shown as {{}}"
    );
    assert_eq!(first["stop_reason"], "tool_use");
    assert_eq!(
        first["usage"],
        json!({"input_tokens":100,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,
               "output_tokens":10,"reasoning_output_tokens":0})
    );

    // The round trip: each result names its call's id.
    let read_result = &events[2]["message"]["content"][0];
    assert_eq!(events[2]["message"]["role"], "user");
    assert_eq!(read_result["type"], "tool_result");
    assert_eq!(read_result["tool_use_id"], read_use["id"]);
    assert!(
        read_result["content"]
            .as_str()
            .unwrap()
            .contains("the answer is 42"),
        "{read_result}"
    );
    assert_eq!(read_result["is_error"], false);
    let bad_result = &events[3]["message"]["content"][0];
    assert_eq!(bad_result["tool_use_id"], bad_use["id"]);
    assert_eq!(bad_result["is_error"], true);
    assert!(
        bad_result["content"]
            .as_str()
            .unwrap()
            .starts_with("ERROR: invalid JSON arguments"),
        "{bad_result}"
    );

    let last = &events[4]["message"];
    assert_eq!(last["content"], json!([{"type":"text","text":"It is 42."}]));
    assert_eq!(last["stop_reason"], "end_turn");
    assert_eq!(
        last["usage"],
        json!({"input_tokens":100,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,
               "output_tokens":10,"reasoning_output_tokens":0})
    );

    let result = &events[5];
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "It is 42.");
    assert!(!result["session_id"].as_str().unwrap().is_empty());
    assert_eq!(result["num_turns"], 2);
    assert!(result["duration_ms"].is_u64(), "{result}");
    assert!(
        result["duration_api_ms"].as_u64().unwrap() <= result["duration_ms"].as_u64().unwrap(),
        "{result}"
    );
    assert_eq!(result["usage"]["input_tokens"], 200);
    assert_eq!(result["usage"]["output_tokens"], 20);
    assert_eq!(result["usage"]["requests"], 2);
    // Notices and tool lines stay off stdout.
    assert!(
        run.stderr.contains("nanohermes: usage: 2 requests"),
        "{}",
        run.stderr
    );
    assert_requests_valid(&mock.requests());
}

#[tokio::test]
async fn stream_json_ends_with_error_max_turns_at_the_iteration_limit_and_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let step = || tool_calls(&[call("call_l", "list_dir", json!({}))]).into();
    let mock = MockModel::start(vec![step(), step(), step()]).await;

    let run = run(
        &mock,
        dir.path(),
        "stream-json",
        &["--max-iterations", "2"],
        "loop",
    )
    .await;

    assert_eq!(run.code, Some(3), "{run:#?}");
    let events = events(&run);
    assert_eq!(
        kinds(&events),
        ["system", "assistant", "user", "assistant", "user", "result"],
        "{}",
        run.stdout
    );
    let result = events.last().unwrap();
    assert_eq!(result["subtype"], "error_max_turns");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["num_turns"], 2);
    assert!(
        run.stderr.contains("reached the 2 iteration limit"),
        "{}",
        run.stderr
    );
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn json_prints_only_one_result_object_when_the_run_ends() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[call("call_l", "list_dir", json!({}))]).into(),
        text(&["All ", "done."]).into(),
    ])
    .await;

    let run = run(&mock, dir.path(), "json", &[], "list").await;

    assert_eq!(run.code, Some(0), "{run:#?}");
    let events = events(&run);
    assert_eq!(events.len(), 1, "{}", run.stdout);
    let result = &events[0];
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["status"], "done");
    assert_eq!(result["result"], "All done.");
    assert!(!result["session_id"].as_str().unwrap().is_empty());
    assert_eq!(result["num_turns"], 2);
    assert_eq!(
        result["usage"],
        json!({"input_tokens":200,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,
               "output_tokens":20,"reasoning_output_tokens":0,"requests":2,
               "requests_without_usage":0})
    );
    assert!(result["duration_ms"].is_u64(), "{result}");
    assert!(result["duration_api_ms"].is_u64(), "{result}");
    // The tool line still goes to stderr, as in the text format.
    assert!(
        run.stderr.contains("tool list_dir {} -> ok"),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn json_reports_a_failed_model_request_as_an_error_result_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![status(400, "the model does not exist").into()]).await;

    let run = run(&mock, dir.path(), "json", &[], "anything").await;

    assert_eq!(run.code, Some(1), "{run:#?}");
    let events = events(&run);
    assert_eq!(events.len(), 1, "{}", run.stdout);
    let result = &events[0];
    assert_eq!(result["subtype"], "error_during_execution");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["status"], "error");
    assert!(
        result["result"]
            .as_str()
            .unwrap()
            .contains("the model does not exist"),
        "{result}"
    );
    assert!(run.stderr.contains("nanohermes: error: "), "{}", run.stderr);
}

#[tokio::test]
async fn stream_json_reports_an_interrupt_as_error_during_execution_and_exits_130() {
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
    let child = command(&mock, dir.path(), "stream-json", &[], "list and write")
        .spawn()
        .unwrap();
    child_pid.set(child.id().unwrap()).unwrap();

    let run = finish(child).await;

    assert_eq!(run.code, Some(130), "{run:#?}");
    let events = events(&run);
    // The step in flight finished: both calls answered, then the result.
    assert_eq!(
        kinds(&events),
        ["system", "assistant", "user", "user", "result"],
        "{}",
        run.stdout
    );
    let result = events.last().unwrap();
    assert_eq!(result["subtype"], "error_during_execution");
    assert_eq!(result["status"], "interrupted");
    assert_eq!(result["is_error"], true);
    assert_eq!(mock.requests().len(), 1);
}

/// Denied calls look denied: without a terminal, a write in the default
/// mode and a command in accept-edits are errors on their tool line and
/// in stream-json (`is_error: true`), nothing is written, and the run
/// ends by saying how many calls nobody could approve and how to allow
/// them.
#[tokio::test]
async fn a_call_nobody_could_approve_is_shown_as_denied_and_counted_at_the_end() {
    for (mode, tool, arguments, way) in [
        (
            "default",
            "write_file",
            json!({"path": "w.txt", "content": "x"}),
            "--mode accept-edits",
        ),
        (
            "accept-edits",
            "run_command",
            json!({"command": "touch ran.txt"}),
            "--mode goal",
        ),
    ] {
        for format in ["stream-json", "text"] {
            let dir = tempfile::tempdir().unwrap();
            let mock = MockModel::start(vec![
                tool_calls(&[call("c_denied", tool, arguments.clone())]).into(),
                text(&["done"]).into(),
            ])
            .await;
            let mut command = command(&mock, dir.path(), format, &[], "go");
            command
                .env("NANOHERMES_MODE", mode)
                .stdin(std::process::Stdio::null());
            let run = finish(command.spawn().unwrap()).await;

            assert_eq!(run.code, Some(0), "{run:#?}");
            if format == "stream-json" {
                let events = events(&run);
                let result = events
                    .iter()
                    .find(|e| e["type"] == "user")
                    .map(|e| &e["message"]["content"][0])
                    .unwrap();
                assert_eq!(result["is_error"], true, "{mode}: {result}");
                let last = events.last().unwrap();
                assert_eq!(
                    last["permission_denials"],
                    json!([{"tool_name": tool, "tool_use_id": "c_denied", "tool_input": arguments}]),
                    "{last}"
                );
                assert!(
                    result["content"]
                        .as_str()
                        .unwrap()
                        .starts_with("ERROR: Command denied"),
                    "{result}"
                );
            } else {
                let line = run
                    .stderr
                    .lines()
                    .find(|l| l.starts_with(&format!("tool {tool} ")))
                    .unwrap_or_else(|| panic!("{}", run.stderr));
                assert!(line.contains("-> ERROR: Command denied"), "{line}");
            }
            assert!(
                run.stderr.contains(&format!(
                    "nanohermes: 1 tool call was denied because nobody could approve them (no terminal to ask on): {tool}; to let such calls run, use "
                )),
                "{}",
                run.stderr
            );
            assert!(run.stderr.contains(way), "{mode}: {}", run.stderr);
            assert!(!dir.path().join("w.txt").exists() && !dir.path().join("ran.txt").exists());
            assert_requests_valid(&mock.requests());
        }
    }
}
