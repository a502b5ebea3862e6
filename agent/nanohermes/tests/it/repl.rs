//! The interactive mode through a real pseudo-terminal (util-linux
//! `script`): tasks stream their answers over one kept history, the slash
//! commands, Ctrl-C during a slow tool and twice at the prompt.

use nanohermes_core::agent::AgentParts;
use nanohermes_core::transcript::Transcript;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::history::assert_requests_valid;
use crate::support::mock_model::{MockModel, call, text, tool_calls};
use crate::support::tool_result;

/// Generous: only there to turn a hang into a failure.
const HANG: Duration = Duration::from_secs(90);

/// `nanohermes` (no command) on a pseudo-terminal, with what it printed.
struct Terminal {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    screen: Arc<Mutex<String>>,
    /// Where the next `expect` starts looking.
    seen: usize,
    _dir: tempfile::TempDir,
    home: PathBuf,
    workspace: PathBuf,
    env: Vec<(String, String)>,
}

impl Terminal {
    /// Starts the agent against `mock`; `config` is the user's config.toml.
    fn start(mock: &MockModel, config: &str, env: &[(&str, &str)]) -> Option<Terminal> {
        if !Path::new("/usr/bin/script").exists() {
            eprintln!("skipped: /usr/bin/script (util-linux) is not installed");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let workspace = dir.path().join("ws");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&workspace).unwrap();
        let workspace = workspace.canonicalize().unwrap();
        std::fs::write(home.join("config.toml"), config).unwrap();
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let (child, stdin, screen) = spawn(mock, &home, &workspace, &env, &[]);
        Some(Terminal {
            child,
            stdin,
            screen,
            seen: 0,
            _dir: dir,
            home,
            workspace,
            env,
        })
    }

    /// A new agent in the same home and workspace (after the last one exited).
    fn again(&mut self, mock: &MockModel, args: &[&str]) {
        let (child, stdin, screen) = spawn(mock, &self.home, &self.workspace, &self.env, args);
        (self.child, self.stdin, self.screen, self.seen) = (child, stdin, screen, 0);
    }

    fn screen(&self) -> String {
        self.screen.lock().unwrap().clone()
    }

    /// Waits until `needle` appears after what earlier expectations saw.
    async fn expect(&mut self, needle: &str) {
        let deadline = tokio::time::Instant::now() + HANG;
        loop {
            let screen = self.screen();
            if let Some(at) = screen[self.seen..].find(needle) {
                self.seen += at + needle.len();
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "never saw {needle:?} on the screen:\n{screen}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Types `keys` (a line ends with `\r`, as the Enter key sends it).
    async fn type_keys(&mut self, keys: &str) {
        self.stdin.write_all(keys.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Waits for the prompt, then types `line` and Enter.
    async fn line(&mut self, line: &str) {
        self.expect("> ").await;
        self.type_keys(&format!("{line}\r")).await;
    }

    async fn wait(&mut self) -> (std::process::ExitStatus, String) {
        let status = tokio::time::timeout(HANG, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("the agent did not exit:\n{}", self.screen()))
            .unwrap();
        // The reader ends with the terminal.
        tokio::time::sleep(Duration::from_millis(100)).await;
        (status, self.screen())
    }
}

/// `script` running `nanohermes --workspace WS ARGS…` with `env`, and the
/// screen it fills.
fn spawn(
    mock: &MockModel,
    home: &Path,
    workspace: &Path,
    env: &[(String, String)],
    args: &[&str],
) -> (
    tokio::process::Child,
    tokio::process::ChildStdin,
    Arc<Mutex<String>>,
) {
    // `exec`: the agent itself is the terminal's foreground process,
    // so the terminal's Ctrl-C reaches it and no shell in between.
    let mut words = vec![
        env!("CARGO_BIN_EXE_nanohermes"),
        "--workspace",
        workspace.to_str().unwrap(),
    ];
    words.extend_from_slice(args);
    let inner = format!("exec {}", shlex::try_join(words).unwrap());
    let mut command = tokio::process::Command::new("/usr/bin/script");
    command
        .args(["-qec", &inner, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .env("NANOHERMES_HOME", home)
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "test-key")
        .env("NANOHERMES_MODEL", "main-model")
        .env("TERM", "xterm")
        .env_remove("NANOHERMES_MODE")
        .env_remove("NANOHERMES_FALLBACK_MODEL")
        .env_remove("NANOHERMES_LOG")
        .env_remove("NO_COLOR")
        .kill_on_drop(true);
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().unwrap();
    let stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let screen = Arc::new(Mutex::new(String::new()));
    let sink = screen.clone();
    tokio::spawn(async move {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf).await {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    (child, stdin, screen)
}

fn user_texts(messages: &[Value]) -> Vec<&str> {
    messages
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str())
        .collect()
}

#[tokio::test]
async fn tasks_stream_over_one_history_undo_removes_a_turn_usage_and_exit() {
    let mock = MockModel::start(vec![
        text(&["Hel", "lo there"]).into(),
        text(&["second answer"]).into(),
        text(&["third answer"]).into(),
    ])
    .await;
    let Some(mut t) = Terminal::start(&mock, "", &[("NO_COLOR", "1")]) else {
        return;
    };
    t.expect("type a task, /help for the commands").await;
    t.line("first task").await;
    t.expect("Hello there").await;
    t.line("second task").await;
    t.expect("second answer").await;
    t.line("/undo").await;
    t.expect("undone: the last task and 2 messages removed")
        .await;
    t.line("/usage").await;
    t.expect("usage: ").await;
    t.line("/help").await;
    t.expect("/mode MODE").await;
    t.line("/nope").await;
    t.expect("/nope is not a command").await;
    t.line("/mode plan").await;
    t.expect("mode: plan").await;
    t.line("/tools").await;
    t.expect("read_file (files, read-only)").await;
    t.line("third task").await;
    t.expect("third answer").await;
    t.line("/exit").await;
    let (status, screen) = t.wait().await;
    assert!(status.success(), "{status:?}\n{screen}");
    assert!(screen.contains("session "), "{screen}");
    assert!(
        !screen.contains("\x1b[33m") && !screen.contains("\x1b[2mtool"),
        "NO_COLOR: {screen:?}"
    );

    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "{screen}");
    assert_requests_valid(&requests);
    let declared = |i: usize| -> Vec<String> {
        requests[i].body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert!(declared(1).iter().any(|n| n == "write_file"));
    // /mode plan: only read-only tools are offered from then on.
    assert!(declared(2).iter().any(|n| n == "read_file"));
    assert!(
        !declared(2).iter().any(|n| n == "write_file"),
        "{:?}",
        declared(2)
    );
    // One history: the second request carries the first turn.
    assert_eq!(
        user_texts(requests[1].messages()),
        ["first task", "second task"]
    );
    // /undo took the second turn out of what the model sees next.
    let third = requests[2].messages();
    assert_eq!(user_texts(third), ["first task", "third task"], "{third:?}");
    assert!(
        third
            .iter()
            .all(|m| m["content"].as_str() != Some("second answer")),
        "{third:?}"
    );
    // The session file follows: the kept history has the third turn and not the second.
    let sessions: Vec<_> = std::fs::read_dir(t.workspace.join(".nanohermes/sessions"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(sessions.len(), 1);
    let file = nanohermes_session::read(&sessions[0].path())
        .unwrap()
        .unwrap();
    assert_eq!(user_texts(&file.messages), ["first task", "third task"]);
}

#[tokio::test]
async fn ctrl_c_during_a_slow_tool_keeps_a_valid_history_and_twice_at_the_prompt_exits() {
    let mock = MockModel::start(vec![
        tool_calls(&[call(
            "c_slow",
            "run_command",
            json!({"command": "touch started; sleep 2; echo slept"}),
        )])
        .into(),
        text(&["after the interrupt"]).into(),
    ])
    .await;
    let Some(mut t) = Terminal::start(&mock, "auto_approve = true\n", &[]) else {
        return;
    };
    t.line("slow task").await;
    // The tool is running: Ctrl-C now.
    let started = t.workspace.join("started");
    let deadline = tokio::time::Instant::now() + HANG;
    while !started.exists() {
        assert!(tokio::time::Instant::now() < deadline, "{}", t.screen());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    t.type_keys("\x03").await;
    t.expect("interrupted — the conversation was kept").await;
    assert_eq!(mock.requests().len(), 1, "stopped at the step boundary");
    t.line("go on").await;
    t.expect("after the interrupt").await;
    t.expect("> ").await;
    t.type_keys("\x03").await;
    t.expect("press Ctrl-C again to exit").await;
    t.type_keys("\x03").await;
    let (status, screen) = t.wait().await;
    assert!(status.success(), "{status:?}\n{screen}");
    // The spinner ran while the tool did.
    assert!(screen.contains("working…"), "{screen:?}");
    // Colour on a terminal without NO_COLOR.
    assert!(
        screen.contains("\x1b[33mnanohermes: interrupted — the conversation was kept"),
        "{screen:?}"
    );

    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "{screen}");
    assert_requests_valid(&requests);
    let messages = requests[1].messages();
    let slow = tool_result(messages, "c_slow");
    assert!(slow.trim_end().ends_with("slept"), "{slow}");
    assert_eq!(user_texts(messages), ["slow task", "go on"]);
}

#[tokio::test]
async fn undo_removes_whole_turns_from_the_end_and_never_a_compaction_summary() {
    use crate::support::history::assert_history_valid;
    use crate::support::{Capture, agent_with, hub, settings};
    use nanohermes_core::compaction::CompactionConfig;

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "x").unwrap();
    let mock = MockModel::start(vec![
        text(&["one"]).into(),
        tool_calls(&[call("c_read", "read_file", json!({"path": "a.txt"}))]).into(),
        text(&["two"]).into(),
        text(&["the summary"]).into(),
        text(&["three"]).into(),
    ])
    .await;
    let mut agent = agent_with(
        settings(&mock),
        hub(dir.path(), vec![]).await,
        AgentParts {
            compaction: CompactionConfig {
                keep_messages: 4,
                ..CompactionConfig::default()
            },
            ..Default::default()
        },
    );
    let mut ui = Capture::default();
    assert_eq!(
        agent.edit_history(Transcript::undo_last_turn),
        None,
        "no turn yet"
    );
    agent.run("task one", &mut ui).await.unwrap();
    agent.run("task two", &mut ui).await.unwrap();
    // [system, u1, a1, u2, call, result, a2]: the last four stay, the
    // first turn becomes the summary.
    assert_eq!(agent.compact().await, 2);
    agent.run("task three", &mut ui).await.unwrap();
    let roles = |a: &nanohermes_core::agent::Agent<_>| -> Vec<String> {
        a.messages()
            .iter()
            .map(|m| m["role"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        roles(&agent),
        [
            "system",
            "user",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant"
        ]
    );

    assert_eq!(agent.edit_history(Transcript::undo_last_turn), Some(2));
    assert_history_valid(agent.messages());
    // The second turn: its user message, the call, its result, the answer.
    assert_eq!(agent.edit_history(Transcript::undo_last_turn), Some(4));
    assert_history_valid(agent.messages());
    assert!(nanohermes_core::compaction::is_compaction_message(
        &agent.messages()[1]
    ));
    assert_eq!(agent.messages().len(), 2);
    assert_eq!(
        agent.edit_history(Transcript::undo_last_turn),
        None,
        "the summary is not a turn"
    );
    assert_eq!(agent.messages().len(), 2);
    assert_eq!(agent.edit_history(|history| history.truncate_from(1)), 1);
    assert_eq!(roles(&agent), ["system"]);
    agent.into_tools().shutdown().await;
}

#[tokio::test]
async fn continue_picks_the_conversation_up_and_a_call_is_approved_at_the_prompt() {
    let first = MockModel::start(vec![text(&["first answer"]).into()]).await;
    let Some(mut t) = Terminal::start(&first, "", &[]) else {
        return;
    };
    t.line("remember this").await;
    t.expect("first answer").await;
    t.line("/exit").await;
    let (status, screen) = t.wait().await;
    assert!(status.success(), "{status:?}\n{screen}");

    let second = MockModel::start(vec![
        tool_calls(&[call(
            "c_run",
            "run_command",
            json!({"command": "echo approved > ok.txt"}),
        )])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    t.again(&second, &["--continue"]);
    t.expect("continuing session").await;
    t.line("do it").await;
    // The default mode asks; the answer is read while the editor is idle.
    t.expect("Allow? [y]es / [n]o / [a]lways for run_command:")
        .await;
    t.type_keys("y\r").await;
    t.expect("done").await;
    t.line("/exit").await;
    let (status, screen) = t.wait().await;
    assert!(status.success(), "{status:?}\n{screen}");
    assert!(t.workspace.join("ok.txt").exists(), "{screen}");

    let requests = second.requests();
    assert_eq!(requests.len(), 2, "{screen}");
    assert_requests_valid(&requests);
    assert_eq!(
        user_texts(requests[0].messages()),
        ["remember this", "do it"]
    );
    assert!(
        !tool_result(requests[1].messages(), "c_run").starts_with("ERROR"),
        "{screen}"
    );
}

#[tokio::test]
async fn without_a_terminal_lines_come_from_stdin_and_nothing_is_painted() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mock = MockModel::start(vec![text(&["plain answer"]).into()]).await;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command
        .args(["--workspace", dir.path().to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .env("NANOHERMES_HOME", &home)
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "test-key")
        .env("NANOHERMES_MODEL", "main-model")
        .env_remove("NANOHERMES_MODE")
        .env_remove("NO_COLOR")
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"hello\n/usage\n").await.unwrap();
    // End of input ends the session.
    drop(stdin);
    let output = tokio::time::timeout(HANG, child.wait_with_output())
        .await
        .expect("nanohermes finished")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{output:?}");
    assert!(stdout.contains("plain answer"), "{stdout}");
    assert!(stdout.contains("usage: "), "{stdout}");
    assert!(
        !stderr.contains('\x1b'),
        "no colour off a terminal: {stderr:?}"
    );
    assert!(!stderr.contains("working…"), "no spinner: {stderr:?}");
    assert!(stderr.contains("session "), "{stderr}");
    assert_eq!(mock.requests().len(), 1);
}

/// The approval question is readable: the spinner stops (and its line is
/// cleared) while the question waits, instead of drawing `⠏ working…`
/// over it; a `n` answer shows the call as denied.
#[tokio::test]
async fn the_spinner_stops_while_the_approval_question_waits() {
    let mock = MockModel::start(vec![
        tool_calls(&[call(
            "c_write",
            "write_file",
            json!({"path": "w.txt", "content": "x"}),
        )])
        .into(),
        text(&["all done"]).into(),
    ])
    .await;
    let Some(mut t) = Terminal::start(&mock, "", &[("NO_COLOR", "1")]) else {
        return;
    };
    t.line("write it").await;
    t.expect("Allow? [y]es / [n]o / [a]lways for write_file:")
        .await;
    let asked_at = t.seen;
    // Several spinner frames' time (one each 100 ms).
    tokio::time::sleep(Duration::from_millis(600)).await;
    let after = t.screen()[asked_at..].to_owned();
    assert!(
        !after.contains("working"),
        "the spinner drew over the question: {after:?}"
    );
    let before = &t.screen()[..asked_at];
    let question_line = before.rsplit('\n').next().unwrap();
    assert!(
        question_line.starts_with("Allow? [y]es"),
        "the question starts its own line: {question_line:?}"
    );
    t.type_keys("n\r").await;
    t.expect("tool write_file").await;
    t.expect("-> ERROR: Command denied by the user").await;
    t.expect("all done").await;
    t.line("/exit").await;
    let (status, screen) = t.wait().await;
    assert!(status.success(), "{screen}");
    assert!(!t.workspace.join("w.txt").exists());
    assert_requests_valid(&mock.requests());
}

/// A resume hint is printed only when it resumes: leaving before any task
/// prints none (there is no session to continue); after a task, the
/// `--resume ID` printed continues the conversation.
#[tokio::test]
async fn the_resume_hint_is_printed_only_when_it_works() {
    let mock = MockModel::start(vec![
        text(&["first answer"]).into(),
        text(&["second answer"]).into(),
    ])
    .await;
    let Some(mut t) = Terminal::start(&mock, "", &[("NO_COLOR", "1")]) else {
        return;
    };
    t.line("/exit").await;
    let (status, screen) = t.wait().await;
    assert!(status.success(), "{screen}");
    assert!(!screen.contains("continue it with"), "{screen}");
    assert!(
        !t.workspace.join(".nanohermes/sessions").exists()
            || std::fs::read_dir(t.workspace.join(".nanohermes/sessions"))
                .unwrap()
                .all(|e| e.unwrap().file_name() == ".gitignore")
    );

    // /tools lists what the model is declared: the `skill` tool too.
    let skill = t.workspace.join(".nanohermes/skills/release/SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    std::fs::write(
        &skill,
        "---\nname: release\ndescription: Cut a release\n---\nSteps.\n",
    )
    .unwrap();
    t.again(&mock, &[]);
    t.line("/tools").await;
    t.expect("skill (nanohermes, read-only)").await;
    t.line("first task").await;
    t.expect("first answer").await;
    t.line("/exit").await;
    let (status, screen) = t.wait().await;
    assert!(status.success(), "{screen}");
    let id = screen
        .split("continue it with --resume ")
        .nth(1)
        .unwrap_or_else(|| panic!("no hint: {screen}"))
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();

    t.again(&mock, &["--resume", &id]);
    t.expect("continuing session").await;
    t.line("second task").await;
    t.expect("second answer").await;
    t.line("/exit").await;
    let (status, screen) = t.wait().await;
    assert!(status.success(), "{screen}");
    let requests = mock.requests();
    assert_eq!(
        user_texts(requests[1].messages()),
        ["first task", "second task"]
    );
}
