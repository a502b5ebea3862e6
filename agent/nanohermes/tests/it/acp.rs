//! `nanohermes acp` from outside: the official ACP TypeScript SDK's client
//! (`acp/npm/client.mjs`, installed by `scripts/acp-client`) spawns the
//! real binary, drives it against the scripted model and prints what it
//! saw; these tests assert on it. Ignored unless the client is installed:
//! `scripts/test` runs them with `NANOHERMES_ACP_CLIENT` set.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::fixture_server;
use crate::support::history::{assert_history_valid, assert_requests_valid};
use crate::support::mock_model::{Figures, MockModel, Step, Stop, call, text, tool_calls};

/// The directory `scripts/acp-client` printed.
fn client_dir() -> PathBuf {
    let dir = std::env::var_os("NANOHERMES_ACP_CLIENT").unwrap_or_else(|| {
        panic!(
            "NANOHERMES_ACP_CLIENT is not set: run `export NANOHERMES_ACP_CLIENT=$(scripts/acp-client)` first"
        )
    });
    PathBuf::from(dir)
}

/// A workspace with `a.txt`, a home, the scripted model.
struct Setup {
    root: tempfile::TempDir,
    home: tempfile::TempDir,
    mock: MockModel,
}

impl Setup {
    async fn new(script: Vec<Step>) -> Setup {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
        Setup {
            root,
            home: tempfile::tempdir().unwrap(),
            mock: MockModel::start_strict(script).await,
        }
    }

    fn cwd(&self) -> PathBuf {
        self.root.path().canonicalize().unwrap()
    }

    /// Runs the client with `steps` against `nanohermes acp` in `mode`;
    /// returns the lines it printed.
    async fn client(&self, mode: &str, steps: Value) -> Vec<Value> {
        let dir = client_dir();
        let mut command = tokio::process::Command::new(dir.join("node_modules/node/bin/node"));
        command
            .arg(dir.join("client.mjs"))
            .arg(env!("CARGO_BIN_EXE_nanohermes"))
            .arg(steps.to_string())
            .current_dir(&dir)
            .env("NANOHERMES_HOME", self.home.path())
            .env("OPENAI_BASE_URL", self.mock.base_url())
            .env("NANOHERMES_MODEL", "acp-model")
            .env("NANOHERMES_MODE", mode)
            .env_remove("OPENAI_API_KEY")
            .env_remove("NANOHERMES_AGENT_DEPTH")
            .env_remove("NANOHERMES_LOG")
            .kill_on_drop(true);
        let output = tokio::time::timeout(Duration::from_secs(120), command.output())
            .await
            .expect("the ACP client finished")
            .expect("the ACP client ran");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "the ACP client failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let lines: Vec<Value> = stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        // Every session/update the agent sent passed the SDK's schemas.
        assert_eq!(
            lines.last(),
            Some(&json!({"event": "unparsed", "count": 0})),
            "{stdout}"
        );
        lines
    }

    fn session_history(&self, id: &str) -> Vec<Value> {
        let path = self
            .root
            .path()
            .join(".nanohermes/sessions")
            .join(format!("{id}.json"));
        let file = nanohermes_session::read(&path)
            .unwrap()
            .expect("a session file");
        let mut messages = vec![json!({"role": "system", "content": "s"})];
        messages.extend(file.messages);
        messages
    }
}

fn events<'a>(lines: &'a [Value], event: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["event"] == event).collect()
}

/// The updates of kind `kind` (for `toolCallId` `id`, when given).
fn updates<'a>(lines: &'a [Value], kind: &str, id: Option<&str>) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["event"] == "update" && l["update"]["sessionUpdate"] == kind)
        .map(|l| &l["update"])
        .filter(|u| id.is_none_or(|id| u["toolCallId"] == id))
        .collect()
}

/// The one finished update of call `id` (not the `in_progress` one).
fn finished<'a>(lines: &'a [Value], id: &str) -> &'a Value {
    let done: Vec<&Value> = updates(lines, "tool_call_update", Some(id))
        .into_iter()
        .filter(|u| u["status"] != "in_progress")
        .collect();
    assert_eq!(done.len(), 1, "one update for {id}: {done:?}");
    done[0]
}

fn content_text(update: &Value) -> String {
    update["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == "content")
        .map(|c| c["content"]["text"].as_str().unwrap().to_owned())
        .collect()
}

fn joined(lines: &[Value], kind: &str) -> String {
    updates(lines, kind, None)
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect()
}

fn session_id(lines: &[Value]) -> String {
    events(lines, "new")[0]["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn prompt(text: &str) -> Value {
    json!({"op": "prompt", "text": text})
}

#[tokio::test]
#[ignore = "needs the ACP client: scripts/acp-client"]
async fn a_prompt_reads_edits_as_a_diff_and_runs_a_command_the_editor_allowed_but_not_one_it_rejected()
 {
    let setup = Setup::new(vec![
        tool_calls(&[call("c1", "read_file", json!({"path": "a.txt"}))]).into(),
        tool_calls(&[call(
            "c2",
            "edit_file",
            json!({"path": "a.txt", "old_string": "alpha", "new_string": "beta"}),
        )])
        .into(),
        tool_calls(&[call(
            "c3",
            "run_command",
            json!({"command": "echo hello-acp"}),
        )])
        .into(),
        tool_calls(&[call(
            "c4",
            "run_command",
            json!({"command": "echo no > never.txt"}),
        )])
        .into(),
        text(&["all ", "done"])
            .with_thought(&["let me ", "think"])
            .into(),
    ])
    .await;
    let cwd = setup.cwd();
    let lines = setup
        .client(
            "default",
            json!([
                {"op": "initialize"},
                {"op": "new", "cwd": cwd},
                {"op": "prompt", "text": "fix a.txt", "answers": ["allow-once", "allow-once", "reject-once"]},
            ]),
        )
        .await;

    let init = &events(&lines, "initialize")[0]["result"];
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    let new = &events(&lines, "new")[0]["result"];
    assert_eq!(new["modes"]["currentModeId"], "default");
    assert_eq!(new["modes"]["availableModes"].as_array().unwrap().len(), 5);

    let read = updates(&lines, "tool_call", Some("c1"))[0];
    assert_eq!(read["kind"], "read");
    assert_eq!(read["title"], "Read a.txt");
    assert_eq!(read["locations"][0]["path"], json!(cwd.join("a.txt")));
    assert_eq!(read["rawInput"], json!({"path": "a.txt"}));
    assert!(content_text(finished(&lines, "c1")).contains("alpha"));

    assert_eq!(updates(&lines, "tool_call", Some("c2"))[0]["kind"], "edit");
    let edit = finished(&lines, "c2");
    assert_eq!(edit["status"], "completed");
    assert_eq!(
        edit["content"][0],
        json!({"type": "diff", "path": cwd.join("a.txt"), "oldText": "alpha\n", "newText": "beta\n"})
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("a.txt")).unwrap(),
        "beta\n"
    );

    // The edit and both commands were asked about, naming the calls the
    // editor was shown, with the four options.
    let asked: Vec<&Value> = events(&lines, "permission");
    let ids: Vec<&str> = asked
        .iter()
        .map(|p| p["toolCall"]["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["c2", "c3", "c4"]);
    let kinds: Vec<&str> = asked[0]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    assert_eq!(asked[1]["toolCall"]["kind"], "execute");

    let allowed = finished(&lines, "c3");
    assert_eq!(allowed["status"], "completed");
    assert!(content_text(allowed).contains("hello-acp"), "{allowed}");
    let rejected = finished(&lines, "c4");
    assert_eq!(rejected["status"], "failed");
    assert!(content_text(rejected).starts_with("ERROR: "), "{rejected}");
    assert!(!cwd.join("never.txt").exists());

    // Each call went pending → in_progress → done, the asked ones only
    // once the editor allowed them; the rejected one never ran.
    let at = |pred: &dyn Fn(&Value) -> bool| lines.iter().position(pred);
    let status_at = |id: &str, status: &str| {
        at(&|l| {
            l["update"]["toolCallId"] == id
                && l["update"]["sessionUpdate"] == "tool_call_update"
                && l["update"]["status"] == status
        })
    };
    let asked_at =
        |id: &str| at(&|l| l["event"] == "permission" && l["toolCall"]["toolCallId"] == id);
    for (id, done) in [
        ("c1", "completed"),
        ("c2", "completed"),
        ("c3", "completed"),
    ] {
        let announced =
            at(&|l| l["update"]["toolCallId"] == id && l["update"]["sessionUpdate"] == "tool_call");
        let started = status_at(id, "in_progress").unwrap_or_else(|| panic!("{id} started"));
        assert!(
            announced.unwrap() < started && started < status_at(id, done).unwrap(),
            "{id}"
        );
        if id != "c1" {
            assert!(
                asked_at(id).unwrap() < started,
                "{id} started after its answer"
            );
        }
    }
    assert_eq!(status_at("c4", "in_progress"), None);
    assert_eq!(joined(&lines, "agent_thought_chunk"), "let me think");
    assert_eq!(joined(&lines, "agent_message_chunk"), "all done");
    assert_eq!(
        events(&lines, "prompt")[0]["result"]["stopReason"],
        "end_turn"
    );
    assert_requests_valid(&setup.mock.requests());
    assert_history_valid(&setup.session_history(&session_id(&lines)));
}

#[tokio::test]
#[ignore = "needs the ACP client: scripts/acp-client"]
async fn a_cancel_during_a_command_answers_cancelled_with_the_history_valid_and_the_session_usable()
{
    let setup = Setup::new(vec![
        tool_calls(&[call(
            "c1",
            "run_command",
            json!({"command": "sleep 2; echo slept"}),
        )])
        .into(),
        text(&["after the cancel"]).into(),
    ])
    .await;
    let cwd = setup.cwd();
    let lines = setup
        .client(
            "goal",
            json!([
                {"op": "initialize"},
                {"op": "new", "cwd": cwd},
                {"op": "prompt", "text": "wait", "cancelOnKind": "execute"},
                prompt("and now?"),
            ]),
        )
        .await;
    let prompts = events(&lines, "prompt");
    assert_eq!(prompts[0]["result"]["stopReason"], "cancelled");
    // The command that was running was answered before the prompt ended.
    let done = finished(&lines, "c1");
    assert!(content_text(done).contains("slept"), "{done}");
    // The next prompt is not cancelled by the old request, and the model
    // never saw a request between the cancel and it.
    assert_eq!(prompts[1]["result"]["stopReason"], "end_turn");
    let requests = setup.mock.requests();
    assert_eq!(requests.len(), 2);
    assert_requests_valid(&requests);
    let history = setup.session_history(&session_id(&lines));
    assert_history_valid(&history);
    assert_eq!(history.last().unwrap()["content"], "after the cancel");
}

#[tokio::test]
#[ignore = "needs the ACP client: scripts/acp-client"]
async fn a_session_loaded_after_a_restart_replays_its_history_and_continues() {
    let setup = Setup::new(vec![
        tool_calls(&[call("c1", "read_file", json!({"path": "a.txt"}))]).into(),
        text(&["first answer"]).into(),
        text(&["second answer"]).into(),
    ])
    .await;
    let cwd = setup.cwd();
    let first = setup
        .client(
            "default",
            json!([
                {"op": "initialize"},
                {"op": "new", "cwd": cwd},
                prompt("read a.txt"),
                {"op": "exit"},
            ]),
        )
        .await;
    assert_eq!(events(&first, "exit")[0]["code"], 0);
    let id = session_id(&first);

    let second = setup
        .client(
            "default",
            json!([
                {"op": "initialize"},
                {"op": "load", "cwd": cwd, "sessionId": id},
                prompt("and again"),
            ]),
        )
        .await;
    let loaded = &events(&second, "load")[0]["result"];
    assert_eq!(loaded["modes"]["currentModeId"], "default");
    // The replay comes before the load's answer, in the history's order.
    let load_at = second.iter().position(|l| l["event"] == "load").unwrap();
    let replayed: Vec<&str> = second[..load_at]
        .iter()
        .filter(|l| l["event"] == "update")
        .map(|l| l["update"]["sessionUpdate"].as_str().unwrap())
        .collect();
    assert_eq!(
        replayed,
        [
            "user_message_chunk",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk"
        ]
    );
    assert_eq!(
        joined(&second[..load_at], "user_message_chunk"),
        "read a.txt"
    );
    assert!(content_text(finished(&second[..load_at], "c1")).contains("alpha"));
    assert_eq!(
        joined(&second[..load_at], "agent_message_chunk"),
        "first answer"
    );
    assert_eq!(
        joined(&second[load_at..], "agent_message_chunk"),
        "second answer"
    );
    // The model saw the first conversation in the continued one.
    let requests = setup.mock.requests();
    let last = requests.last().unwrap().messages();
    assert!(last.iter().any(|m| m["content"] == "first answer"));
    assert_requests_valid(&requests);
    assert_history_valid(&setup.session_history(&id));
}

#[tokio::test]
#[ignore = "needs the ACP client: scripts/acp-client"]
async fn the_editors_mcp_servers_join_the_configured_ones_without_replacing_them() {
    let setup = Setup::new(vec![
        tool_calls(&[
            call("c1", "fx__echo", json!({"text": "from the config"})),
            call("c2", "fx-editor__echo", json!({"text": "from the editor"})),
            call("c3", "ed__echo", json!({"text": "another one"})),
            call("c4", "fx__pids", json!({})),
            call("c5", "fx-editor__pids", json!({})),
            call(
                "c6",
                "todo_write",
                json!({"todos": [
                    {"content": "echo", "status": "completed"},
                    {"content": "report", "status": "in_progress"},
                ]}),
            ),
        ])
        .into(),
        text(&["ok"]).into(),
    ])
    .await;
    let fixture = fixture_server();
    std::fs::write(
        setup.home.path().join("config.toml"),
        format!(
            "[mcp_servers.fx]\ncommand = {:?}\nenabled_tools = [\"echo\"]\n",
            fixture.display().to_string()
        ),
    )
    .unwrap();
    let editor_server = |name: &str| json!({"name": name, "command": fixture, "args": [], "env": [{"name": "FIXTURE_NOTE", "value": "x"}]});
    let cwd = setup.cwd();
    let lines = setup
        .client(
            "goal",
            json!([
                {"op": "initialize"},
                {"op": "new", "cwd": cwd, "mcpServers": [editor_server("fx"), editor_server("ed")]},
                prompt("echo"),
            ]),
        )
        .await;
    for (id, said) in [
        ("c1", "from the config"),
        ("c2", "from the editor"),
        ("c3", "another one"),
    ] {
        let done = finished(&lines, id);
        assert_eq!(done["status"], "completed", "{done}");
        assert!(content_text(done).contains(said), "{done}");
    }
    // The configured fx keeps its narrowing (echo only): the editor's fx,
    // renamed, did not replace it.
    let narrowed = finished(&lines, "c4");
    assert_eq!(narrowed["status"], "failed", "{narrowed}");
    assert_eq!(finished(&lines, "c5")["status"], "completed");
    // The todo list is the editor's plan.
    assert_eq!(updates(&lines, "tool_call", Some("c6"))[0]["kind"], "think");
    assert_eq!(
        updates(&lines, "plan", None),
        [&json!({"sessionUpdate": "plan", "entries": [
            {"content": "echo", "priority": "medium", "status": "completed"},
            {"content": "report", "priority": "medium", "status": "in_progress"},
        ]})]
    );
}

#[tokio::test]
#[ignore = "needs the ACP client: scripts/acp-client"]
async fn malformed_and_unknown_messages_are_answered_with_errors_and_the_session_goes_on() {
    let setup = Setup::new(vec![
        text(&["still here"]).into(),
        text(&["I will not"]).with_stop(Stop::Refusal).into(),
    ])
    .await;
    // The responses wire reports a refusal as such (chat has no finish
    // reason for it).
    std::fs::write(
        setup.home.path().join("config.toml"),
        format!(
            "model_provider = \"mock\"\n[model_providers.mock]\nbase_url = {:?}\nwire_api = \"responses\"\n",
            setup.mock.base_url()
        ),
    )
    .unwrap();
    let cwd = setup.cwd();
    let lines = setup
        .client(
            "default",
            json!([
                {"op": "initialize"},
                {"op": "new", "cwd": cwd},
                {"op": "raw", "line": "{this is not json", "id": null},
                {"op": "raw", "line": r#"{"jsonrpc":"2.0","id":"raw-1","method":"session/fly","params":{}}"#, "id": "raw-1"},
                {"op": "raw", "line": r#"{"jsonrpc":"2.0","id":"raw-2","method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}"#, "id": "raw-2"},
                {"op": "mode", "modeId": "bogus"},
                {"op": "mode", "modeId": "plan"},
                prompt("are you there?"),
                {"op": "prompt", "prompt": [
                    {"type": "text", "text": "see"},
                    {"type": "resource_link", "uri": "file:///x/b.rs", "name": "b.rs"},
                    {"type": "resource", "resource": {"uri": "file:///x/c.rs", "text": "fn c() {}"}},
                ]},
                {"op": "prompt", "prompt": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]},
            ]),
        )
        .await;
    let raw: Vec<&Value> = events(&lines, "raw");
    assert_eq!(raw[0]["message"]["error"]["code"], -32700);
    assert_eq!(raw[0]["message"]["id"], Value::Null);
    assert_eq!(raw[1]["message"]["error"]["code"], -32601);
    assert_eq!(raw[2]["message"]["error"]["code"], -32002);
    let errors = events(&lines, "error");
    assert_eq!(errors[0]["op"], "mode");
    assert_eq!(errors[0]["code"], -32602);
    assert_eq!(events(&lines, "mode")[0]["result"], json!({}));
    let prompts = events(&lines, "prompt");
    assert_eq!(prompts[0]["result"]["stopReason"], "end_turn");
    assert_eq!(prompts[1]["result"]["stopReason"], "refusal");
    assert_eq!(errors[1]["op"], "prompt");
    assert_eq!(errors[1]["code"], -32602);
    // The resource link and the embedded resource reached the model.
    let requests = setup.mock.requests();
    let user = requests[1].body.to_string();
    assert!(user.contains("[resource: b.rs](file:///x/b.rs)"), "{user}");
    assert!(user.contains("fn c() {}"), "{user}");
    assert_eq!(
        joined(&lines, "agent_message_chunk"),
        "still hereI will not"
    );
}

#[tokio::test]
#[ignore = "needs the ACP client: scripts/acp-client"]
async fn allow_always_and_reject_always_hold_for_the_rest_of_the_session() {
    let setup = Setup::new(vec![
        tool_calls(&[call("c1", "run_command", json!({"command": "echo one"}))]).into(),
        text(&["1"]).into(),
        tool_calls(&[
            call("c2", "run_command", json!({"command": "echo two"})),
            call("c3", "write_file", json!({"path": "b.txt", "content": "b"})),
        ])
        .into(),
        text(&["2"]).into(),
        tool_calls(&[call(
            "c4",
            "write_file",
            json!({"path": "c.txt", "content": "c"}),
        )])
        .into(),
        text(&["3"]).into(),
    ])
    .await;
    let cwd = setup.cwd();
    let lines = setup
        .client(
            "default",
            json!([
                {"op": "initialize"},
                {"op": "new", "cwd": cwd},
                {"op": "prompt", "text": "one", "answers": ["allow-always"]},
                {"op": "prompt", "text": "two", "answers": ["reject-always"]},
                {"op": "prompt", "text": "three"},
            ]),
        )
        .await;
    let asked: Vec<&str> = events(&lines, "permission")
        .iter()
        .map(|p| p["toolCall"]["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(asked, ["c1", "c3"]);
    assert_eq!(finished(&lines, "c1")["status"], "completed");
    assert_eq!(finished(&lines, "c2")["status"], "completed");
    assert_eq!(finished(&lines, "c3")["status"], "failed");
    assert_eq!(finished(&lines, "c4")["status"], "failed");
    // The command allowed always started with its step, unasked; the
    // writes rejected always never started.
    let started = |id: &str| {
        updates(&lines, "tool_call_update", Some(id))
            .iter()
            .any(|u| u["status"] == "in_progress")
    };
    assert!(started("c1") && started("c2"));
    assert!(!started("c3") && !started("c4"));
    assert!(!cwd.join("b.txt").exists() && !cwd.join("c.txt").exists());
    for prompt in events(&lines, "prompt") {
        assert_eq!(prompt["result"]["stopReason"], "end_turn");
    }
}

#[tokio::test]
#[ignore = "needs the ACP client: scripts/acp-client"]
async fn slash_commands_are_offered_and_answered_without_the_model() {
    let setup = Setup::new(vec![
        tool_calls(&[call("c1", "run_command", json!({"command": "echo ran"}))]).into(),
        text(&["ran it"]).into(),
    ])
    .await;
    let cwd = setup.cwd();
    let lines = setup
        .client(
            "default",
            json!([
                {"op": "initialize"},
                {"op": "new", "cwd": cwd},
                prompt("/mode goal"),
                prompt("run it"),
                prompt("/undo"),
                prompt("/fly"),
            ]),
        )
        .await;
    // Offered after the session's answer.
    let new_at = lines.iter().position(|l| l["event"] == "new").unwrap();
    let offered = updates(&lines[new_at..], "available_commands_update", None);
    let names: Vec<&str> = offered[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"undo") && names.contains(&"mode"),
        "{names:?}"
    );
    assert_eq!(
        updates(&lines, "current_mode_update", None),
        [&json!({"sessionUpdate": "current_mode_update", "currentModeId": "goal"})]
    );
    // In goal mode the command ran without a question.
    assert!(events(&lines, "permission").is_empty());
    assert_eq!(finished(&lines, "c1")["status"], "completed");
    let said = joined(&lines, "agent_message_chunk");
    assert!(
        said.starts_with(
            "mode: goalran itundone: the last task and 4 messages removed/fly is not a command"
        ),
        "{said}"
    );
    for prompt in events(&lines, "prompt") {
        assert_eq!(prompt["result"]["stopReason"], "end_turn");
    }
    assert_eq!(setup.mock.requests().len(), 2);
    assert_eq!(setup.session_history(&session_id(&lines)).len(), 1);
}

/// The `$defs` of one of the SDK's copies of the ACP schema
/// (`schema.json`: stable, `schema.unstable.json`: with the drafts).
fn sdk_schema(file: &str) -> Value {
    let path = client_dir()
        .join("node_modules/@agentclientprotocol/sdk/schema/v1")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str::<Value>(&text).unwrap()["$defs"].clone()
}

#[tokio::test]
#[ignore = "needs the ACP client: scripts/acp-client"]
async fn a_prompts_answer_carries_the_token_usage_its_model_requests_reported() {
    let first = Figures {
        input: 1_200,
        output: 30,
        cached: 800,
        cache_write: 0,
        reasoning: 12,
    };
    let second = Figures {
        input: 1_500,
        output: 7,
        cached: 1_200,
        cache_write: 0,
        reasoning: 0,
    };
    let setup = Setup::new(vec![
        tool_calls(&[call("c1", "read_file", json!({"path": "a.txt"}))])
            .with_usage(first)
            .into(),
        text(&["read"]).with_usage(second).into(),
    ])
    .await;
    let cwd = setup.cwd();
    let lines = setup
        .client(
            "default",
            json!([
                {"op": "initialize"},
                {"op": "new", "cwd": cwd},
                prompt("read a.txt"),
                prompt("/help"),
            ]),
        )
        .await;
    let answers = events(&lines, "prompt");
    let usage = &answers[0]["result"]["usage"];
    assert_eq!(
        usage,
        &json!({
            "totalTokens": 2_737,
            "inputTokens": 2_700,
            "outputTokens": 37,
            "thoughtTokens": 12,
            "cachedReadTokens": 2_000,
        }),
        "{lines:?}"
    );
    // A slash command asks no model: no usage.
    assert_eq!(answers[1]["result"], json!({"stopReason": "end_turn"}));
    // The stable v1 client took the answer with the field (no error), and
    // the field is the unstable schema's `PromptResponse.usage`, named as
    // it names them.
    assert_eq!(answers[0]["result"]["stopReason"], "end_turn");
    let unstable = sdk_schema("schema.unstable.json");
    let known = unstable["Usage"]["properties"].as_object().unwrap();
    for key in usage.as_object().unwrap().keys() {
        assert!(
            known.contains_key(key),
            "{key} is not in the schema's Usage"
        );
    }
    for key in unstable["Usage"]["required"].as_array().unwrap() {
        assert!(
            usage.get(key.as_str().unwrap()).is_some(),
            "{key} is required"
        );
    }
    assert!(
        unstable["PromptResponse"]["properties"]["usage"].is_object(),
        "the unstable PromptResponse has usage"
    );
    // The stable schema does not forbid extra fields in the answer.
    let stable = sdk_schema("schema.json");
    assert_ne!(
        stable["PromptResponse"]["additionalProperties"],
        json!(false)
    );
}
