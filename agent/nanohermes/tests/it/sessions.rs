//! Session files through the real loop: each step appends and never
//! rewrites what is there, a changed history (compaction, /undo, /reset)
//! writes the file again, a file cut at any byte loads to its last whole
//! step, version 1 files resume and are converted, a damaged file is set
//! aside.

use nanohermes_core::agent::AgentParts;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use nanohermes_core::agent::{Agent, AgentConfig, Outcome};
use nanohermes_core::compaction::CompactionConfig;
use nanohermes_core::events::RunEvents;
use nanohermes_core::transcript::Transcript;
use nanohermes_llm::Client;
use nanohermes_session::{self as session, Keeper, Opened, SessionArgs};
use serde_json::{Value, json};

use crate::support::history::{assert_history_valid, assert_requests_valid};
use crate::support::mock_model::{MockModel, call, text, tool_calls};
use crate::support::{Capture, agent, agent_with, hub, settings};

/// After the keeper wrote a checkpoint: the file's bytes, its inode and
/// how many messages (system message included) the history had.
struct Snapshot {
    bytes: Vec<u8>,
    inode: u64,
    messages: usize,
}

/// The `RunEvents` a [`Keeper`] wraps: it sees each checkpoint after the file
/// was written.
struct Snapshots {
    path: PathBuf,
    taken: Vec<Snapshot>,
    inner: Capture,
}

impl RunEvents for Snapshots {
    fn text(&mut self, delta: &str) {
        self.inner.text(delta);
    }

    fn tool_call(&mut self, call: &nanohermes_llm::ToolCall, result: &str) {
        self.inner.tool_call(call, result);
    }

    fn notice(&mut self, line: &str) {
        self.inner.notice(line);
    }

    fn checkpoint(&mut self, messages: &Transcript) {
        self.taken.push(Snapshot {
            bytes: std::fs::read(&self.path).unwrap(),
            inode: std::fs::metadata(&self.path).unwrap().ino(),
            messages: messages.len(),
        });
    }
}

/// The session `--session path` opens, kept by a [`Keeper`] over [`Snapshots`].
fn keeper(path: &Path, workspace: &Path) -> (Opened, Keeper<Snapshots>) {
    let args = SessionArgs {
        session: Some(path.to_owned()),
        ..SessionArgs::default()
    };
    let opened = session::open(&args, workspace).unwrap();
    let ui = Keeper::new(
        Snapshots {
            path: path.to_owned(),
            taken: Vec::new(),
            inner: Capture::default(),
        },
        &opened,
    );
    (opened, ui)
}

/// What the file at `path` loads as: the history with a system message
/// in front (checked against the invariant).
fn loaded(path: &Path) -> Vec<Value> {
    let file = session::read(path).unwrap().expect("a session file");
    with_system(&file.messages)
}

fn with_system(messages: &[Value]) -> Vec<Value> {
    let mut all = vec![json!({"role": "system", "content": "s"})];
    all.extend_from_slice(messages);
    assert_history_valid(&all);
    all
}

/// `history` without its system message.
fn kept(history: &[Value]) -> Vec<Value> {
    history[1..].to_vec()
}

/// Each snapshot after the first of `taken[from..]` only added bytes to
/// the same file.
fn assert_appended(taken: &[Snapshot]) {
    for (i, pair) in taken.windows(2).enumerate() {
        assert_eq!(
            pair[1].inode,
            pair[0].inode,
            "checkpoint {}: a new file",
            i + 1
        );
        assert!(
            pair[1].bytes.len() > pair[0].bytes.len() && pair[1].bytes.starts_with(&pair[0].bytes),
            "checkpoint {}: earlier bytes changed",
            i + 1
        );
    }
}

fn reads(n: usize) -> Vec<crate::support::mock_model::Step> {
    (1..=n)
        .map(|i| {
            tool_calls(&[call(
                &format!("c{i}"),
                "read_file",
                json!({"path": "a.txt"}),
            )])
            .into()
        })
        .collect()
}

#[tokio::test]
async fn each_step_appends_to_the_file_and_never_rewrites_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let mut script = reads(5);
    script.push(text(&["read five times"]).into());
    script.push(text(&["second task done"]).into());
    let mock = MockModel::start(script).await;
    let mut agent = agent(settings(&mock), hub(dir.path(), vec![]).await);
    let path = dir.path().join(".nanohermes/sessions/s.json");
    let (_, mut ui) = keeper(&path, dir.path());

    let summary = agent.run("read a.txt five times", &mut ui).await.unwrap();
    assert_eq!(summary.outcome, Outcome::Done);
    let summary = agent.run("and now stop", &mut ui).await.unwrap();
    assert_eq!(summary.outcome, Outcome::Done);

    let taken = &ui.inner().taken;
    // Two runs: the task, five steps, the answer; the task, the answer.
    assert_eq!(taken.len(), 7 + 2);
    assert_appended(taken);
    assert_eq!(loaded(&path)[1..], agent.messages()[1..]);
    let file = session::read(&path).unwrap().unwrap();
    assert_eq!(file.usage.requests, 7);
    assert_eq!(file.version, session::VERSION);
    // The first line says what the file is.
    let text = String::from_utf8(taken[0].bytes.clone()).unwrap();
    assert!(text.starts_with("{\"session\":{\"version\":2,"), "{text}");
    assert_requests_valid(&mock.requests());
}

#[tokio::test]
async fn compaction_undo_and_reset_write_the_file_again_and_it_loads_as_the_history() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.txt"), "x".repeat(3000)).unwrap();
    let read = |id: &'static str| tool_calls(&[call(id, "read_file", json!({"path": "big.txt"}))]);
    // Step 2 goes past 4 000 characters: a summary request, then the
    // history is compacted before its checkpoint.
    let mock = MockModel::start(vec![
        read("c1").into(),
        read("c2").into(),
        text(&["summary one"]).into(),
        text(&["all read"]).into(),
        text(&["second answer"]).into(),
        text(&["after the reset"]).into(),
    ])
    .await;
    let mut agent = agent_with(
        settings(&mock),
        hub(dir.path(), vec![]).await,
        AgentParts {
            compaction: CompactionConfig {
                threshold_chars: 4000,
                keep_messages: 2,
            },
            ..Default::default()
        },
    );
    let path = dir.path().join("session.json");
    let (_, mut ui) = keeper(&path, dir.path());

    agent.run("read big.txt twice", &mut ui).await.unwrap();
    {
        let taken = &ui.inner().taken;
        assert_eq!(taken.len(), 4, "the task, two steps, the answer");
        assert_appended(&taken[..2]);
        assert_ne!(taken[2].inode, taken[1].inode, "compacted: written again");
        assert!(taken[2].messages < taken[1].messages + 2);
        assert_appended(&taken[2..]);
    }
    assert_eq!(loaded(&path)[1..], agent.messages()[1..]);
    assert!(
        agent.messages()[1]["content"]
            .as_str()
            .unwrap()
            .contains("summary one")
    );

    agent.run("one more", &mut ui).await.unwrap();
    let before_undo = std::fs::metadata(&path).unwrap().ino();
    assert!(agent.edit_history(Transcript::undo_last_turn).is_some());
    ui.checkpoint(agent.transcript());
    assert_ne!(std::fs::metadata(&path).unwrap().ino(), before_undo);
    assert_eq!(loaded(&path)[1..], agent.messages()[1..]);

    agent.edit_history(|history| history.truncate_from(1));
    ui.checkpoint(agent.transcript());
    assert_eq!(
        session::read(&path).unwrap().unwrap().messages,
        Vec::<Value>::new()
    );
    // After a rewrite, appending goes on.
    agent.run("fresh start", &mut ui).await.unwrap();
    let taken = &ui.inner().taken;
    assert_appended(&taken[taken.len() - 3..]);
    assert_eq!(kept(&loaded(&path)), kept(agent.messages()));
    assert_eq!(agent.messages().len(), 3);
    assert_requests_valid(&mock.requests());
}

#[tokio::test]
async fn a_file_cut_at_any_byte_loads_to_its_last_whole_step() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let mut script = reads(4);
    script.push(text(&["done"]).into());
    let mock = MockModel::start(script).await;
    let mut agent = agent(settings(&mock), hub(dir.path(), vec![]).await);
    let path = dir.path().join("session.json");
    let (_, mut ui) = keeper(&path, dir.path());
    agent.run("read a.txt four times", &mut ui).await.unwrap();

    let taken = &ui.inner().taken;
    let whole = taken.last().unwrap().bytes.clone();
    let history = agent.messages().to_vec();
    let cut_path = dir.path().join("cut.json");
    // The first write is atomic: every cut a kill can leave is after it.
    for cut in taken[0].bytes.len()..=whole.len() {
        // The last checkpoint whose write the cut keeps whole.
        let step = taken.iter().rev().find(|s| s.bytes.len() <= cut).unwrap();
        std::fs::write(&cut_path, &whole[..cut]).unwrap();
        let read = loaded(&cut_path);
        assert_eq!(
            read,
            with_system(&history[1..step.messages]),
            "cut at {cut}"
        );
    }
    // Resuming a cut file goes on from its last whole step.
    std::fs::write(&cut_path, &whole[..whole.len() - 3]).unwrap();
    let args = SessionArgs {
        session: Some(cut_path.clone()),
        ..SessionArgs::default()
    };
    let opened = session::open(&args, dir.path()).unwrap();
    assert_eq!(opened.warning, None);
    assert_eq!(
        opened.file.messages,
        history[1..taken[taken.len() - 2].messages]
    );
}

#[tokio::test]
async fn a_version_1_session_resumes_and_is_written_again_as_version_2() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.json");
    let earlier = vec![
        json!({"role": "user", "content": "earlier task"}),
        json!({"role": "assistant", "content": "earlier answer"}),
    ];
    let v1 = json!({
        "version": 1,
        "id": "0123-old",
        "workspace": dir.path(),
        "messages": earlier,
        "usage": {"requests": 1, "prompt_tokens": 5, "completion_tokens": 7},
    });
    std::fs::write(&path, serde_json::to_vec(&v1).unwrap()).unwrap();

    let mock = MockModel::start(vec![text(&["next answer"]).into()]).await;
    let (opened, mut ui) = keeper(&path, dir.path());
    assert!(opened.resumed() && opened.warning.is_none());
    assert_eq!(opened.file.version, 1);
    let client = Client::new(settings(&mock)).unwrap();
    let hub = hub(dir.path(), vec![]).await;
    let mut agent = Agent::resume(
        client,
        hub,
        "You are NanoHermes, in a test.",
        AgentConfig::default(),
        opened.file.messages.clone(),
    );
    agent.run("next task", &mut ui).await.unwrap();

    assert_eq!(mock.requests()[0].messages()[1..3], earlier[..]);
    let bytes = std::fs::read_to_string(&path).unwrap();
    assert!(
        bytes.starts_with("{\"session\":{\"version\":2,\"id\":\"0123-old\","),
        "{bytes}"
    );
    let file = session::read(&path).unwrap().unwrap();
    assert_eq!(file.version, session::VERSION);
    assert_eq!(file.id, "0123-old");
    assert_eq!(file.messages, agent.messages()[1..]);
    assert_eq!(file.messages.len(), 4);
    assert_eq!(
        file.usage.requests, 2,
        "the earlier task's request and this one"
    );
    assert!(file.usage.prompt_tokens >= 5 && file.usage.completion_tokens >= 7);
}

#[test]
fn a_damaged_line_before_the_last_step_sets_the_file_aside_for_run_and_is_an_error_for_serve() {
    let dir = tempfile::tempdir().unwrap();
    let store = session::SessionStore::of(dir.path());
    let mut file = session::SessionFile::new("0123-dmg", dir.path());
    file.messages = vec![
        json!({"role": "user", "content": "task"}),
        json!({"role": "assistant", "content": "answer"}),
    ];
    store.save(&file).unwrap();
    let path = store.path("0123-dmg");
    let good = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = good.lines().collect();
    lines[2] = "{\"message\":{\"role\":\"assis";
    let damaged = lines.join("\n") + "\n";
    std::fs::write(&path, &damaged).unwrap();

    // serve: an error that says so, the file as it was.
    let err = store.load("0123-dmg").unwrap_err();
    assert!(err.contains("is damaged (line 3:"), "{err}");
    assert!(
        err.ends_with("it was left untouched: start a new session"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), damaged);

    // run: a warning, a fresh session, the file kept aside.
    let args = SessionArgs {
        resume: Some("0123-dmg".into()),
        ..SessionArgs::default()
    };
    let opened = session::open(&args, dir.path()).unwrap();
    let warning = opened.warning.clone().unwrap();
    assert!(warning.contains("is damaged (line 3:"), "{warning}");
    assert!(!opened.resumed());
    assert!(!path.exists());
    let aside: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("0123-dmg.json.corrupt-")
        })
        .collect();
    assert_eq!(aside.len(), 1);
    assert_eq!(std::fs::read_to_string(aside[0].path()).unwrap(), damaged);
}

/// `nanohermes run TASK` in `workspace` on `mock`, unattended, with
/// `extra` flags; stdin is not a terminal.
async fn run_in(
    mock: &MockModel,
    workspace: &Path,
    extra: &[&str],
    task: &str,
) -> crate::support::binary::Run {
    let url = mock.base_url();
    let ws = workspace.display().to_string();
    let mut args = vec!["run", "--workspace", ws.as_str()];
    args.extend_from_slice(extra);
    args.push(task);
    crate::support::binary::nanohermes(&args, &crate::support::binary::on_mock(mock, &url)).await
}

/// A directory outside the temp directory (what a planted link would
/// point at), removed when dropped.
struct Outside(PathBuf);

impl Outside {
    fn new(name: &str) -> Outside {
        let path = PathBuf::from(format!("/var/tmp/nanohermes-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Outside(path)
    }

    fn is_empty(&self) -> bool {
        std::fs::read_dir(&self.0).unwrap().next().is_none()
    }
}

impl Drop for Outside {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The agent's own files stay out of the user's repository: the
/// `.nanohermes/` a run creates holds a `.gitignore` of `*`, so `git add
/// .` leaves the session out; a `.nanohermes/` that was there (a project's
/// committed config) is left alone and its new `sessions/` ignores itself;
/// an existing `.gitignore` is never overwritten.
#[tokio::test]
async fn the_nanohermes_directory_a_run_creates_is_ignored_by_git() {
    for (existing, gitignore_at) in [
        (None, ".nanohermes/.gitignore"),
        (
            Some(("config.toml", "# the project's\n")),
            ".nanohermes/sessions/.gitignore",
        ),
        (
            Some((".gitignore", "sessions/\n")),
            ".nanohermes/sessions/.gitignore",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        crate::support::binary::git(ws, &["init", "-q"]);
        if let Some((name, content)) = existing {
            std::fs::create_dir_all(ws.join(".nanohermes")).unwrap();
            std::fs::write(ws.join(".nanohermes").join(name), content).unwrap();
        }
        let mock = MockModel::start(vec![text(&["done"]).into()]).await;

        let run = run_in(&mock, ws, &[], "hello").await;

        assert_eq!(run.code, Some(0), "{run:#?}");
        assert_eq!(
            std::fs::read_to_string(ws.join(gitignore_at)).unwrap(),
            "*\n",
            "{existing:?}"
        );
        if let Some((name, content)) = existing {
            assert_eq!(
                std::fs::read_to_string(ws.join(".nanohermes").join(name)).unwrap(),
                content,
                "kept as it was"
            );
        }
        crate::support::binary::git(ws, &["add", "."]);
        let staged = crate::support::binary::git(ws, &["diff", "--cached", "--name-only"]);
        assert!(!staged.contains("sessions/"), "{existing:?}: {staged}");
    }
}

/// A repository that ships `.nanohermes/sessions` (or `.nanohermes`) as a
/// link to elsewhere does not get the conversation written there: the
/// run is refused with a clear error and nothing lands outside.
#[tokio::test]
async fn a_session_directory_that_is_a_symlink_is_refused() {
    for link in [".nanohermes/sessions", ".nanohermes"] {
        let outside = Outside::new("sessions-link");
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join(link).parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&outside.0, ws.join(link)).unwrap();
        let mock = MockModel::start(vec![text(&["done"]).into()]).await;

        let run = run_in(&mock, ws, &[], "hello").await;

        assert_eq!(run.code, Some(1), "{run:#?}");
        assert!(
            run.stderr.contains(&format!(
                "the session directory {} is a symbolic link",
                ws.join(link).display()
            )),
            "{}",
            run.stderr
        );
        assert!(outside.is_empty(), "{link}: something was written outside");
        assert!(mock.requests().is_empty());
    }
}

/// `--session FILE` on a file that is not a session is refused and left
/// as it was (not renamed to `FILE.corrupt-N`); a session file another
/// run holds is refused while it holds it; the hint a run prints is the
/// flag that continues it, and does.
#[tokio::test]
async fn session_file_runs_refuse_other_files_and_a_held_session_and_hint_what_works() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let notes = ws.join("notes.md");
    std::fs::write(&notes, "# my notes\n").unwrap();
    let notes_arg = notes.display().to_string();
    let mock = MockModel::start(vec![text(&["first"]).into(), text(&["second"]).into()]).await;

    let refused = run_in(&mock, ws, &["--session", &notes_arg], "hello").await;
    assert_eq!(refused.code, Some(1), "{refused:#?}");
    assert!(
        refused
            .stderr
            .contains("notes.md is not a nanohermes session file; it was left untouched"),
        "{}",
        refused.stderr
    );
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "# my notes\n");
    let names: Vec<String> = std::fs::read_dir(ws)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains("corrupt")), "{names:?}");

    let session = ws.join("s.json");
    let session_arg = session.display().to_string();
    let first = run_in(&mock, ws, &["--session", &session_arg], "one").await;
    assert_eq!(first.code, Some(0), "{first:#?}");
    let hint = format!("continue it with --session {session_arg}");
    assert!(first.stderr.contains(&hint), "{}", first.stderr);
    assert!(!first.stderr.contains("--resume"), "{}", first.stderr);

    // Another run holds the file (its lock, as a running nanohermes holds it).
    let before = std::fs::read(&session).unwrap();
    let held = std::fs::File::open(&session).unwrap();
    held.lock().unwrap();
    let busy = run_in(&mock, ws, &["--session", &session_arg], "two").await;
    assert_eq!(busy.code, Some(1), "{busy:#?}");
    assert!(
        busy.stderr.contains("is in use by another nanohermes run"),
        "{}",
        busy.stderr
    );
    assert_eq!(std::fs::read(&session).unwrap(), before);
    drop(held);

    // The hint works: the second run continues the first's conversation.
    let second = run_in(&mock, ws, &["--session", &session_arg], "two").await;
    assert_eq!(second.code, Some(0), "{second:#?}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].messages()[1]["content"], "one");
    assert_requests_valid(&requests);
}

/// Two real runs on one session file at once: the second is refused with
/// a clear error while the first (waiting on its model) holds the file,
/// and the first's turn is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_run_on_a_session_in_use_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let session = ws.join("s.json");
    let session_arg = session.display().to_string();
    let gate = ws.join("gate");
    let asked = ws.join("asked");
    let (gate_seen, asked_by) = (gate.clone(), asked.clone());
    let mock = MockModel::start(vec![
        text(&["ready"]).into(),
        text(&["slow"]).when_requested(move || {
            // Answer only once the test has tried the second run (the
            // mock's log is locked meanwhile: say so with a file).
            std::fs::write(&asked_by, "").unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while !gate_seen.exists() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }),
    ])
    .await;
    let made = run_in(&mock, ws, &["--session", &session_arg], "make it").await;
    assert_eq!(made.code, Some(0), "{made:#?}");

    let url = mock.base_url();
    let ws_arg = ws.display().to_string();
    let env = crate::support::binary::on_mock(&mock, &url);
    let first = tokio::spawn({
        let (ws_arg, session_arg) = (ws_arg.clone(), session_arg.clone());
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        async move {
            let env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            crate::support::binary::nanohermes(
                &[
                    "run",
                    "--workspace",
                    &ws_arg,
                    "--session",
                    &session_arg,
                    "first",
                ],
                &env,
            )
            .await
        }
    });
    // The first run is waiting on its model: it holds the file.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !asked.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the first run never asked"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // A plain blocking wait: the mock's hook holds a runtime worker.
    let second = std::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"))
        .args([
            "run",
            "--workspace",
            &ws_arg,
            "--session",
            &session_arg,
            "second",
        ])
        .env("NANOHERMES_HOME", crate::support::binary::TEST_HOME)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    std::fs::write(&gate, "").unwrap();
    let first = first.await.unwrap();
    let second = crate::support::binary::Run::from(second);

    assert_eq!(second.code, Some(1), "{second:#?}");
    assert!(
        second
            .stderr
            .contains("is in use by another nanohermes run"),
        "{}",
        second.stderr
    );
    assert_eq!(first.code, Some(0), "{first:#?}");
    let kept = session::read(&session).unwrap().unwrap();
    let users: Vec<&Value> = kept
        .messages
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| &m["content"])
        .collect();
    assert_eq!(users, [&json!("make it"), &json!("first")]);
}
