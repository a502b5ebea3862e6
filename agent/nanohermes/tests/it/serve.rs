//! `nanohermes serve` from outside: an rmcp client spawns the real binary
//! (stdio, both protocol eras; and HTTP), points it at the scripted model
//! and calls `run_task`. Progress, cancellation at the step boundary,
//! sessions resumed after a killed server, concurrent tasks, task handles
//! (polled, cancelled, surviving a restart), approvals answered by the
//! host, the roots, the recursion guard, and one NanoHermes using another.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction, GetTaskParams,
    Implementation, ProgressNotificationParam, ProtocolVersion, TaskPayload, TaskStatus,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt as _, NotificationContext, RequestContext, RoleClient,
    RunningService,
};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData as McpError, ServiceExt as _};
use serde_json::{Map, Value, json};

use crate::support::history::{assert_history_valid, assert_requests_valid};
use crate::support::mock_model::{MockModel, Step, call, text, tool_calls};

/// A deadlock guard, not a speed claim.
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Era {
    Legacy,
    Modern,
}

/// The host: records progress and approval questions, answers them with
/// `answer`, and declares the tasks extension when `tasks` is set.
#[derive(Clone)]
pub(crate) struct Host {
    pub(crate) progress: Arc<Mutex<Vec<(f64, String)>>>,
    pub(crate) asked: Arc<Mutex<Vec<String>>>,
    pub(crate) answer: ElicitationAction,
    pub(crate) tasks: bool,
    /// Whether the host declares elicitation (it answers either way).
    pub(crate) elicitation: bool,
}

impl Host {
    pub(crate) fn new() -> Host {
        Host {
            progress: Arc::default(),
            asked: Arc::default(),
            answer: ElicitationAction::Decline,
            tasks: false,
            elicitation: true,
        }
    }

    fn progress(&self) -> Vec<(f64, String)> {
        self.progress.lock().unwrap().clone()
    }
}

impl ClientHandler for Host {
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            self.asked.lock().unwrap().push(message.clone());
        }
        Ok(ElicitResult::new(self.answer.clone()))
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let message = params.message.clone().unwrap_or_default();
        self.progress
            .lock()
            .unwrap()
            .push((params.progress, message));
    }

    fn get_info(&self) -> ClientConfig {
        let mut capabilities = if self.elicitation {
            ClientCapabilities::builder().enable_elicitation().build()
        } else {
            ClientCapabilities::default()
        };
        if self.tasks {
            capabilities.extensions = ClientCapabilities::builder()
                .enable_tasks()
                .build()
                .extensions;
        }
        ClientConfig::new(capabilities, Implementation::new("test-host", "1.0"))
    }
}

/// A workspace, a NANOHERMES_HOME and the scripted model, for one test.
pub(crate) struct Setup {
    pub(crate) root: tempfile::TempDir,
    pub(crate) home: tempfile::TempDir,
    pub(crate) mock: MockModel,
}

impl Setup {
    pub(crate) async fn new(script: Vec<Step>) -> Setup {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("a.txt"), "alpha\n").unwrap();
        Setup {
            root,
            home: tempfile::tempdir().unwrap(),
            mock: MockModel::start_strict(script).await,
        }
    }

    pub(crate) fn root(&self) -> PathBuf {
        self.root.path().canonicalize().unwrap()
    }

    /// `nanohermes serve --root ROOT` with the model environment.
    pub(crate) fn command(&self, mode: &str, extra: &[(&str, &str)]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
        command
            .arg("serve")
            .arg("--root")
            .arg(self.root.path())
            .env("NANOHERMES_HOME", self.home.path())
            .env("OPENAI_BASE_URL", self.mock.base_url())
            .env("NANOHERMES_MODEL", "served-model")
            .env("NANOHERMES_MODE", mode)
            .env_remove("OPENAI_API_KEY")
            .env_remove("NANOHERMES_AGENT_DEPTH")
            .env_remove("NANOHERMES_LOG")
            .kill_on_drop(true);
        command.envs(extra.iter().copied());
        command
    }

    /// Starts the server and connects `host` in `era`; also returns the
    /// server's pid.
    pub(crate) async fn connect(
        &self,
        era: Era,
        host: Host,
        mode: &str,
    ) -> (RunningService<RoleClient, Host>, u32) {
        let transport = TokioChildProcess::new(self.command(mode, &[])).unwrap();
        let pid = transport.id().unwrap();
        let client = match era {
            Era::Legacy => host.serve(transport).await.unwrap(),
            Era::Modern => host
                .serve_with_lifecycle(
                    transport,
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    },
                )
                .await
                .unwrap(),
        };
        (client, pid)
    }

    fn session_file(&self, id: &str) -> PathBuf {
        self.root
            .path()
            .join(".nanohermes/sessions")
            .join(format!("{id}.json"))
    }

    /// Waits until the workspace's only session ends with a tool result
    /// containing `text`; returns its id.
    async fn session_ending_in_tool_result(&self, text: &str) -> String {
        let dir = self.root.path().join(".nanohermes/sessions");
        let only = || -> Option<String> {
            let entry = std::fs::read_dir(&dir).ok()?.flatten().next()?;
            Some(entry.path().file_stem()?.to_string_lossy().into_owned())
        };
        until("a session file", || only().is_some()).await;
        let session = only().unwrap();
        until("the command's result in the session", || {
            self.session_messages(&session).last().is_some_and(|m| {
                m["role"] == "tool" && m["content"].as_str().unwrap_or("").contains(text)
            })
        })
        .await;
        session
    }

    /// The history a session file holds.
    fn session_messages(&self, id: &str) -> Vec<Value> {
        nanohermes_session::read(&self.session_file(id))
            .unwrap()
            .map(|file| file.messages)
            .unwrap_or_default()
    }
}

/// A session's history (no system message) against the history invariant.
fn assert_session_valid(history: &[Value]) {
    let mut messages = vec![json!({"role": "system", "content": "s"})];
    messages.extend_from_slice(history);
    assert_history_valid(&messages);
}

pub(crate) fn run_task(arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    CallToolRequestParams::new("run_task").with_arguments(arguments)
}

/// The structured output of a `run_task` result.
pub(crate) fn output(result: &CallToolResult) -> Map<String, Value> {
    result
        .structured_content
        .as_ref()
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_else(|| panic!("no structuredContent in {result:?}"))
}

fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

pub(crate) async fn ask(
    client: &RunningService<RoleClient, Host>,
    params: CallToolRequestParams,
) -> CallToolResult {
    tokio::time::timeout(HANG_GUARD, client.call_tool(params))
        .await
        .expect("run_task answered")
        .expect("run_task succeeded")
}

/// Waits until `condition` holds (checked every 20 ms), or panics after
/// the hang guard.
pub(crate) async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + HANG_GUARD;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn kill(pid: u32) {
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
}

#[tokio::test]
async fn run_task_reports_each_step_as_progress_and_returns_its_structured_output_in_both_eras() {
    for era in [Era::Legacy, Era::Modern] {
        let setup = Setup::new(vec![
            tool_calls(&[call("c1", "read_file", json!({"path": "a.txt"}))]).into(),
            tool_calls(&[call("c2", "grep", json!({"pattern": "alpha"}))]).into(),
            text(&["all ", "done"]).into(),
        ])
        .await;
        let host = Host::new();
        let (client, _) = setup.connect(era, host.clone(), "goal").await;

        let tools = client.list_all_tools().await.unwrap();
        assert_eq!(tools.len(), 1, "{era:?}");
        let tool = &tools[0];
        assert_eq!(tool.name, "run_task");
        let annotations = tool.annotations.clone().unwrap();
        assert_eq!(
            (annotations.destructive_hint, annotations.open_world_hint),
            (Some(true), Some(true))
        );
        assert!(tool.output_schema.is_some());

        let result = ask(&client, run_task(json!({"task": "read a.txt"}))).await;
        assert_eq!(result.is_error, Some(false), "{era:?}: {result:?}");
        assert_eq!(text_of(&result), "all done");
        let out = output(&result);
        assert_eq!(out["status"], "completed");
        assert_eq!(out["final_text"], "all done");
        assert_eq!(
            (out["iterations"].as_u64(), out["tool_calls"].as_u64()),
            (Some(3), Some(2))
        );
        assert_eq!(out["usage"]["requests"], 3);
        let session = out["session_id"].as_str().unwrap().to_owned();

        until("three progress notes", || host.progress().len() == 3).await;
        let progress = host.progress();
        assert!(progress.windows(2).all(|w| w[0].0 < w[1].0), "{progress:?}");
        assert_eq!(progress[0].1, "step 1: read_file a.txt");
        assert_eq!(progress[1].1, "step 2: grep alpha");
        assert_eq!(progress[2].1, "step 3: answering");

        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(setup.session_file(&session))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let history = setup.session_messages(&session);
        assert_eq!(history.len(), 6, "user, 2 × (assistant, tool), assistant");
        assert_requests_valid(&setup.mock.requests());
        assert_eq!(setup.mock.requests()[0].body["model"], "served-model");
        let _ = client.cancel().await;
    }
}

#[tokio::test]
async fn a_cancelled_run_stops_at_the_step_boundary_and_its_session_continues_after_a_restart() {
    let setup = Setup::new(vec![
        tool_calls(&[call(
            "c1",
            "run_command",
            json!({"command": "sleep 1; echo slept"}),
        )])
        .into(),
        text(&["resumed"]).into(),
    ])
    .await;
    let host = Host::new();
    let (client, pid) = setup.connect(Era::Legacy, host.clone(), "goal").await;

    // Dropping the call sends notifications/cancelled once step 1 runs.
    let started = client.call_tool_once(run_task(json!({"task": "first task"})));
    tokio::select! {
        answer = started => panic!("the run was to be cancelled, it answered {answer:?}"),
        () = until("step 1", || !host.progress().is_empty()) => {}
    }
    // The command finishes (nothing is cut mid-step) and its result is the
    // last message written; then the loop stops without asking again.
    let session = setup.session_ending_in_tool_result("slept").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        setup.mock.requests().len(),
        1,
        "no request after the interrupt"
    );
    let history = setup.session_messages(&session);
    assert_session_valid(&history);

    kill(pid);
    drop(client);
    let (client, _) = setup.connect(Era::Legacy, Host::new(), "goal").await;
    let result = ask(
        &client,
        run_task(json!({"task": "go on", "session_id": session})),
    )
    .await;
    let out = output(&result);
    assert_eq!(
        (out["status"].as_str(), out["final_text"].as_str()),
        (Some("completed"), Some("resumed"))
    );
    assert_eq!(out["session_id"], session.as_str());
    let requests = setup.mock.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1].messages();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "user"]);
    assert_eq!(messages[1]["content"], "first task");
    assert_eq!(messages[4]["content"], "go on");
    assert_requests_valid(&requests);
    let _ = client.cancel().await;
}

#[tokio::test]
async fn two_concurrent_tasks_keep_their_own_histories_and_sessions() {
    let setup = Setup::new(vec![
        tool_calls(&[call("c1", "read_file", json!({"path": "a.txt"}))]).into(),
        tool_calls(&[call("c1", "read_file", json!({"path": "a.txt"}))]).into(),
        text(&["done"]).into(),
        text(&["done"]).into(),
    ])
    .await;
    let (client, _) = setup.connect(Era::Modern, Host::new(), "goal").await;
    let (a, b) = tokio::join!(
        ask(&client, run_task(json!({"task": "task A"}))),
        ask(&client, run_task(json!({"task": "task B"}))),
    );
    let (a, b) = (output(&a), output(&b));
    assert_eq!(
        (a["status"].as_str(), b["status"].as_str()),
        (Some("completed"), Some("completed"))
    );
    assert_ne!(a["session_id"], b["session_id"]);
    for (out, task) in [(&a, "task A"), (&b, "task B")] {
        let history = setup.session_messages(out["session_id"].as_str().unwrap());
        let users: Vec<&Value> = history.iter().filter(|m| m["role"] == "user").collect();
        assert_eq!(users.len(), 1);
        assert_eq!(users[0]["content"], task);
        assert_session_valid(&history);
    }
    for request in setup.mock.requests() {
        let users = request
            .messages()
            .iter()
            .filter(|m| m["role"] == "user")
            .count();
        assert_eq!(
            users,
            1,
            "a request mixed two tasks: {:?}",
            request.messages()
        );
    }
    assert_requests_valid(&setup.mock.requests());
    let _ = client.cancel().await;
}

/// Polls `tasks/get` until the task ends.
async fn poll(client: &RunningService<RoleClient, Host>, id: &str) -> rmcp::model::DetailedTask {
    let deadline = tokio::time::Instant::now() + HANG_GUARD;
    loop {
        let task = client.get_task(GetTaskParams::new(id)).await.unwrap().task;
        if task.status().is_terminal() {
            return task;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "task {id} never ended"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Starts `run_task` as a task and returns its handle.
async fn start_task(client: &RunningService<RoleClient, Host>, arguments: Value) -> String {
    match client.call_tool_once(run_task(arguments)).await.unwrap() {
        CallToolResponse::Task(created) => {
            assert_eq!(created.task.status, TaskStatus::Working);
            assert!(created.task.poll_interval_ms.is_some());
            created.task.task_id
        }
        other => panic!("expected a task handle, got {other:?}"),
    }
}

fn completed_output(task: &rmcp::model::DetailedTask) -> Map<String, Value> {
    match &task.payload {
        TaskPayload::Completed { result } => result["structuredContent"]
            .as_object()
            .cloned()
            .unwrap_or_else(|| panic!("no structuredContent in {result:?}")),
        other => panic!("expected a completed task, got {other:?}"),
    }
}

#[tokio::test]
async fn a_task_handle_is_polled_to_completion_and_another_is_cancelled() {
    let setup = Setup::new(vec![
        tool_calls(&[call("c1", "read_file", json!({"path": "a.txt"}))]).into(),
        text(&["task done"]).into(),
        text(&["legacy done"]).into(),
        tool_calls(&[call("c2", "run_command", json!({"command": "sleep 1"}))]).into(),
    ])
    .await;
    let host = Host {
        tasks: true,
        ..Host::new()
    };
    let (client, _) = setup.connect(Era::Modern, host, "goal").await;

    let id = start_task(&client, json!({"task": "read it"})).await;
    let task = poll(&client, &id).await;
    assert_eq!(task.status(), TaskStatus::Completed);
    let out = completed_output(&task);
    assert_eq!(
        (out["status"].as_str(), out["final_text"].as_str()),
        (Some("completed"), Some("task done"))
    );

    // A 2025-11-25 host that declares the extension anyway (as the MCP
    // Inspector CLI does) gets the result, not a handle.
    let legacy = Host {
        tasks: true,
        ..Host::new()
    };
    let (legacy, _) = setup.connect(Era::Legacy, legacy, "goal").await;
    match legacy
        .call_tool_once(run_task(json!({"task": "blocking"})))
        .await
        .unwrap()
    {
        CallToolResponse::Complete(result) => {
            assert_eq!(output(&result)["final_text"], "legacy done")
        }
        other => panic!("a legacy host got {other:?}"),
    }
    let _ = legacy.cancel().await;

    let id = start_task(&client, json!({"task": "sleep"})).await;
    until("the sleep to start", || setup.mock.requests().len() == 4).await;
    client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .unwrap();
    let task = poll(&client, &id).await;
    assert_eq!(task.status(), TaskStatus::Cancelled);
    // Stopped at the boundary: the command's result is in the session and
    // the model was not asked again.
    let err = client
        .cancel_task(CancelTaskParams::new(&id))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("already ended"), "{err}");
    assert_eq!(setup.mock.requests().len(), 4);
    assert_requests_valid(&setup.mock.requests());
    let _ = client.cancel().await;
}

#[tokio::test]
async fn a_task_handle_outlives_a_killed_server_and_says_how_to_continue() {
    let setup = Setup::new(vec![
        tool_calls(&[call("c1", "run_command", json!({"command": "sleep 30"}))]).into(),
    ])
    .await;
    let host = Host {
        tasks: true,
        ..Host::new()
    };
    let (client, pid) = setup.connect(Era::Modern, host.clone(), "goal").await;
    let id = start_task(&client, json!({"task": "long"})).await;
    until("the command to start", || setup.mock.requests().len() == 1).await;
    kill(pid);
    drop(client);

    let (client, _) = setup.connect(Era::Modern, host, "goal").await;
    let task = poll(&client, &id).await;
    let out = completed_output(&task);
    assert_eq!(out["status"], "interrupted");
    let session = out["session_id"].as_str().unwrap();
    assert!(out["final_text"].as_str().unwrap().contains(session));
    assert!(setup.session_file(session).exists());
    let err = client
        .get_task(GetTaskParams::new("no-such-task"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no task"), "{err}");
    let _ = client.cancel().await;
}

#[tokio::test]
async fn an_approval_is_asked_of_the_host_in_each_era_and_its_answer_is_honoured() {
    for era in [Era::Legacy, Era::Modern] {
        for answer in [ElicitationAction::Accept, ElicitationAction::Decline] {
            let setup = Setup::new(vec![
                tool_calls(&[call(
                    "c1",
                    "run_command",
                    json!({"command": "echo approved-ran"}),
                )])
                .into(),
                text(&["finished"]).into(),
            ])
            .await;
            let host = Host {
                answer: answer.clone(),
                ..Host::new()
            };
            let (client, _) = setup.connect(era, host.clone(), "default").await;
            let result = ask(&client, run_task(json!({"task": "run it"}))).await;
            assert_eq!(output(&result)["status"], "completed", "{era:?} {answer:?}");
            let asked = host.asked.lock().unwrap().clone();
            assert_eq!(asked.len(), 1, "{era:?} {answer:?}: {asked:?}");
            // Written for a host's dialog, not the terminal's prompt.
            assert!(
                asked[0].starts_with(
                    "The NanoHermes agent working on your task wants to call the tool `run_command` with these arguments:\n{\"command\":\"echo approved-ran\"}\nAccept to run this one call"
                ),
                "{}",
                asked[0]
            );
            assert!(!asked[0].contains("[y]es"), "{}", asked[0]);
            let requests = setup.mock.requests();
            let tool_result = requests[1].messages().last().unwrap()["content"]
                .as_str()
                .unwrap()
                .to_owned();
            if answer == ElicitationAction::Accept {
                assert!(
                    tool_result.contains("approved-ran"),
                    "{era:?}: {tool_result}"
                );
            } else {
                assert_eq!(
                    tool_result,
                    "ERROR: Command denied by the user. Do not retry it; ask what to do instead."
                );
            }
            assert_requests_valid(&requests);
            let _ = client.cancel().await;
        }
    }
}

#[tokio::test]
async fn a_host_that_declared_no_elicitation_is_never_asked_and_the_call_is_denied() {
    // The Python SDK without an elicitation callback fails the whole call
    // with "Elicitation not supported" when it is asked anyway.
    for era in [Era::Legacy, Era::Modern] {
        let setup = Setup::new(vec![
            tool_calls(&[call(
                "c1",
                "run_command",
                json!({"command": "echo should-not-run > ran.txt"}),
            )])
            .into(),
            text(&["finished"]).into(),
        ])
        .await;
        let host = Host {
            answer: ElicitationAction::Accept,
            elicitation: false,
            ..Host::new()
        };
        let (client, _) = setup.connect(era, host.clone(), "default").await;
        let result = ask(&client, run_task(json!({"task": "run it"}))).await;
        assert_eq!(output(&result)["status"], "completed", "{era:?}");
        assert!(host.asked.lock().unwrap().is_empty(), "{era:?}: asked");
        let requests = setup.mock.requests();
        assert_eq!(
            requests[1].messages().last().unwrap()["content"],
            nanohermes_core::policy::approval::UNANSWERED,
            "{era:?}"
        );
        assert!(!setup.root().join("ran.txt").exists());
        let _ = client.cancel().await;
    }
}

#[tokio::test]
async fn a_forged_request_state_is_refused() {
    let setup = Setup::new(vec![]).await;
    let (client, _) = setup.connect(Era::Modern, Host::new(), "goal").await;
    let mut params = run_task(json!({"task": "x"}));
    params.request_state = Some("rs2.forged.state".into());
    let err = client.call_tool_once(params).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("requestState is not one this server issued"),
        "{err}"
    );
    assert!(setup.mock.requests().is_empty());
    let _ = client.cancel().await;
}

#[tokio::test]
async fn workspaces_outside_the_roots_bad_sessions_and_bad_modes_are_refused() {
    let setup = Setup::new(vec![]).await;
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), setup.root.path().join("link-out")).unwrap();
    let (client, _) = setup.connect(Era::Legacy, Host::new(), "goal").await;
    // A session file damaged before its last step: refused, left as it is.
    let damaged = "{\"session\":{\"version\":2,\"id\":\"0123-dmgd\",\"workspace\":\"/\"}}\n\
                   {\"message\":{\"role\":\"us\n{\"end\":1}\n";
    std::fs::create_dir_all(setup.session_file("0123-dmgd").parent().unwrap()).unwrap();
    std::fs::write(setup.session_file("0123-dmgd"), damaged).unwrap();
    let cases = [
        (
            json!({"task": "x", "workspace": outside.path()}),
            "is outside the directories",
        ),
        (
            json!({"task": "x", "workspace": "link-out"}),
            "is outside the directories",
        ),
        (
            json!({"task": "x", "workspace": "../"}),
            "is outside the directories",
        ),
        (
            json!({"task": "x", "session_id": "../../etc/passwd"}),
            "is not a session id",
        ),
        (
            json!({"task": "x", "session_id": "0123-abcd"}),
            "no session 0123-abcd",
        ),
        (
            json!({"task": "x", "session_id": "0123-dmgd"}),
            "is damaged (line 2:",
        ),
        (
            json!({"task": "x", "mode": "yolo"}),
            "mode \"yolo\" is not one of",
        ),
    ];
    for (arguments, expected) in cases {
        let result = ask(&client, run_task(arguments.clone())).await;
        assert_eq!(result.is_error, Some(true), "{arguments}");
        let out = output(&result);
        assert_eq!(out["status"], "error");
        assert!(
            out["final_text"].as_str().unwrap().contains(expected),
            "{arguments}: {out:?}"
        );
    }
    let err = client
        .call_tool(run_task(json!({"job": "x"})))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("run_task arguments"), "{err}");
    assert_eq!(
        std::fs::read_to_string(setup.session_file("0123-dmgd")).unwrap(),
        damaged
    );
    // A workspace inside the root is fine (and needs no model to refuse
    // nothing: the script is empty, so the model request fails).
    std::fs::create_dir(setup.root.path().join("sub")).unwrap();
    let result = ask(&client, run_task(json!({"task": "x", "workspace": "sub"}))).await;
    let out = output(&result);
    assert_eq!(out["status"], "error");
    assert!(
        out["final_text"]
            .as_str()
            .unwrap()
            .starts_with("the model request failed"),
        "{out:?}"
    );
    assert!(setup.root().join("sub/.nanohermes/sessions").is_dir());
    let _ = client.cancel().await;
}

#[tokio::test]
async fn a_task_may_narrow_the_servers_mode_but_never_widen_it() {
    let setup = Setup::new(vec![text(&["narrowed"]).into()]).await;
    let (client, _) = setup.connect(Era::Legacy, Host::new(), "default").await;
    for wider in ["accept-edits", "goal"] {
        let result = ask(&client, run_task(json!({"task": "x", "mode": wider}))).await;
        assert_eq!(result.is_error, Some(true), "{wider}");
        let text = output(&result)["final_text"].as_str().unwrap().to_owned();
        assert!(
            text.contains(&format!(
                "mode {wider} allows more than this server's mode default"
            )),
            "{text}"
        );
    }
    assert!(setup.mock.requests().is_empty());
    let result = ask(&client, run_task(json!({"task": "x", "mode": "plan"}))).await;
    assert_eq!(output(&result)["final_text"], "narrowed");
    let _ = client.cancel().await;
}

#[tokio::test]
async fn a_server_beyond_the_depth_limit_takes_no_task() {
    let setup = Setup::new(vec![]).await;
    let transport =
        TokioChildProcess::new(setup.command("goal", &[("NANOHERMES_AGENT_DEPTH", "4")])).unwrap();
    let client = Host::new().serve(transport).await.unwrap();
    let result = ask(&client, run_task(json!({"task": "x"}))).await;
    let out = output(&result);
    assert_eq!(out["status"], "error");
    assert!(
        out["final_text"]
            .as_str()
            .unwrap()
            .contains("max_agent_depth = 3"),
        "{out:?}"
    );
    assert!(setup.mock.requests().is_empty());
    let _ = client.cancel().await;
}

/// Starts `serve --http 127.0.0.1:0` and reads the address it printed.
async fn serve_http(setup: &Setup) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt as _;
    let mut command = setup.command("goal", &[]);
    command
        .args(["--http", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    let line = tokio::time::timeout(HANG_GUARD, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let url = line
        .split("serving MCP at ")
        .nth(1)
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

#[tokio::test]
async fn over_http_forged_hosts_are_refused_and_run_task_works() {
    use rmcp::transport::StreamableHttpClientTransport;
    let setup = Setup::new(vec![text(&["over http"]).into()]).await;
    let (_child, url) = serve_http(&setup).await;
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    let http = reqwest::Client::new();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let forged = http
        .post(&url)
        .header("Host", "evil.example")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);
    let foreign = http
        .post(&url)
        .header("Origin", "https://evil.example")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(foreign.status(), 403);

    let host = Host::new();
    let client = host
        .clone()
        .serve(StreamableHttpClientTransport::from_uri(url.as_str()))
        .await
        .unwrap();
    let result = ask(&client, run_task(json!({"task": "hello"}))).await;
    assert_eq!(output(&result)["final_text"], "over http");
    until("progress over http", || !host.progress().is_empty()).await;
    let _ = client.cancel().await;
}

/// Runs `nanohermes run TASK` in `root` on the scripted model, with a user
/// config that mounts `nanohermes serve --root ROOT` as subagent `name`
/// (`extra` adds keys to its table).
async fn run_with_subagent(
    root: &tempfile::TempDir,
    home: &tempfile::TempDir,
    mock: &MockModel,
    name: &str,
    extra: &str,
    task: &str,
) -> std::process::Output {
    let config = format!(
        "[mcp_servers.{name}]\ncommand = {:?}\nargs = [\"serve\", \"--root\", {:?}]\n{extra}env_vars = [\"OPENAI_BASE_URL\", \"NANOHERMES_HOME\", \"NANOHERMES_MODE\"]\n",
        env!("CARGO_BIN_EXE_nanohermes"),
        root.path().display().to_string(),
    );
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    tokio::time::timeout(
        HANG_GUARD,
        tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"))
            .arg("--workspace")
            .arg(root.path())
            .args(["run", task])
            .env("NANOHERMES_HOME", home.path())
            .env("OPENAI_BASE_URL", mock.base_url())
            .env("NANOHERMES_MODE", "goal")
            .env_remove("OPENAI_API_KEY")
            .env_remove("NANOHERMES_AGENT_DEPTH")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap()
    .unwrap()
}

#[tokio::test]
async fn one_nanohermes_hands_a_task_to_another_through_serve() {
    let root = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    // The parent asks its subagent; the subagent (the same scripted model)
    // answers; the parent reports.
    let mock = MockModel::start_strict(vec![
        tool_calls(&[call(
            "p1",
            "helper__run_task",
            json!({"task": "count the files"}),
        )])
        .into(),
        text(&["the helper counted one file"]).into(),
        text(&["parent done"]).into(),
    ])
    .await;
    let output = run_with_subagent(
        &root,
        &home,
        &mock,
        "helper",
        "description = \"counts files\"\n",
        "delegate the count",
    )
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "parent done"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "{stderr}");
    // The child's conversation is its own: one user message, the task.
    assert_eq!(requests[1].messages()[1]["content"], "count the files");
    assert_eq!(requests[1].messages().len(), 2);
    // The parent received the child's answer as the tool result.
    let parent_tool = requests[2].messages().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        parent_tool.contains("the helper counted one file"),
        "{parent_tool}"
    );
    let names: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        names.contains(&"helper__run_task") && names.contains(&"agent_list"),
        "{names:?}"
    );
    assert_requests_valid(&requests);
}

#[tokio::test]
async fn a_task_waiting_for_approval_shows_input_required_and_tasks_update_answers_it() {
    let setup = Setup::new(vec![
        tool_calls(&[call(
            "c1",
            "run_command",
            json!({"command": "echo task-approved"}),
        )])
        .into(),
        text(&["finished"]).into(),
    ])
    .await;
    let host = Host {
        tasks: true,
        ..Host::new()
    };
    let (client, _) = setup.connect(Era::Modern, host, "default").await;
    let id = start_task(&client, json!({"task": "run it"})).await;
    let deadline = tokio::time::Instant::now() + HANG_GUARD;
    let requests = loop {
        let task = client.get_task(GetTaskParams::new(&id)).await.unwrap().task;
        if let TaskPayload::InputRequired { input_requests } = &task.payload {
            assert_eq!(task.status(), TaskStatus::InputRequired);
            break input_requests.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline && !task.status().is_terminal(),
            "never asked: {task:?} {:?}",
            setup
                .mock
                .requests()
                .last()
                .map(|r| r.messages().last().cloned())
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let question = serde_json::to_value(&requests["approval"]).unwrap();
    assert_eq!(question["method"], "elicitation/create");
    assert!(
        question["params"]["message"]
            .as_str()
            .unwrap()
            .contains("run_command")
    );

    let wrong = [("other".to_owned(), json!({"action": "accept"}))].into();
    let err = client
        .update_task(rmcp::model::UpdateTaskParams::new(&id, wrong))
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("waits for the input request(s) approval"),
        "{err}"
    );
    let answer = [("approval".to_owned(), json!({"action": "accept"}))].into();
    client
        .update_task(rmcp::model::UpdateTaskParams::new(&id, answer))
        .await
        .unwrap();
    let out = completed_output(&poll(&client, &id).await);
    assert_eq!(out["final_text"], "finished");
    let requests = setup.mock.requests();
    let result = requests[1].messages().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(result.contains("task-approved"), "{result}");
    assert_requests_valid(&requests);
    let _ = client.cancel().await;
}

#[tokio::test]
async fn over_http_a_closed_response_stream_interrupts_the_run_at_the_step_boundary() {
    use futures::StreamExt as _;
    let setup = Setup::new(vec![
        tool_calls(&[call(
            "c1",
            "run_command",
            json!({"command": "sleep 1; echo slept"}),
        )])
        .into(),
        text(&["never asked"]).into(),
    ])
    .await;
    let (_child, url) = serve_http(&setup).await;
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {
            "name": "run_task",
            "arguments": {"task": "sleep over http"},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                "progressToken": "p1"
            }
        }
    });
    let response = reqwest::Client::new()
        .post(&url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "run_task")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut stream = response.bytes_stream();
    let mut seen = String::new();
    while !seen.contains("notifications/progress") {
        let chunk = tokio::time::timeout(HANG_GUARD, stream.next())
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("stream ended: {seen}"))
            .unwrap();
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(
        seen.contains("step 1: run_command sleep 1; echo slept"),
        "{seen}"
    );
    drop(stream);

    let session = setup.session_ending_in_tool_result("").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        setup.mock.requests().len(),
        1,
        "no request after the stream closed"
    );
    assert_session_valid(&setup.session_messages(&session));
}

#[tokio::test]
async fn an_agent_that_mounts_itself_stops_at_max_agent_depth() {
    let root = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let down = |id: &str| -> Step {
        tool_calls(&[call(id, "self__run_task", json!({"task": "go deeper"}))]).into()
    };
    // Depths 0, 1 and 2 each hand the task down; depth 3 has no subagent
    // to hand it to and answers; then each level answers in turn.
    let mock = MockModel::start_strict(vec![
        down("d0"),
        down("d1"),
        down("d2"),
        text(&["bottom"]).into(),
        text(&["2 done"]).into(),
        text(&["1 done"]).into(),
        text(&["top done"]).into(),
    ])
    .await;
    let output = run_with_subagent(&root, &home, &mock, "self", "", "recurse").await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "top done");
    let requests = mock.requests();
    assert_eq!(requests.len(), 7, "{stderr}");
    let offers_self = |r: &crate::support::mock_model::Recorded| {
        r.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["function"]["name"] == "self__run_task")
    };
    assert!(requests[..3].iter().all(offers_self));
    assert!(
        !offers_self(&requests[3]),
        "depth 3 must not mount itself again"
    );
    assert_requests_valid(&requests);
}
