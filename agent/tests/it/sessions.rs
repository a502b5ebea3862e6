//! Session files through the real loop: each step appends and never
//! rewrites what is there, a changed history (compaction, /undo, /reset)
//! writes the file again, a file cut at any byte loads to its last whole
//! step, version 1 files resume and are converted, a damaged file is set
//! aside.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use nanohermes::agent::{Agent, AgentConfig, Outcome};
use nanohermes::compaction::CompactionConfig;
use nanohermes::llm::Client;
use nanohermes::session::{self, Keeper, Opened, SessionArgs};
use nanohermes::transcript::Transcript;
use nanohermes::ui::Ui;
use serde_json::{Value, json};

use crate::support::history::{assert_history_valid, assert_requests_valid};
use crate::support::mock_model::{MockModel, call, text, tool_calls};
use crate::support::{Capture, agent, hub, settings};

/// After the keeper wrote a checkpoint: the file's bytes, its inode and
/// how many messages (system message included) the history had.
struct Snapshot {
    bytes: Vec<u8>,
    inode: u64,
    messages: usize,
}

/// The `Ui` a [`Keeper`] wraps: it sees each checkpoint after the file
/// was written.
struct Snapshots {
    path: PathBuf,
    taken: Vec<Snapshot>,
    inner: Capture,
}

impl Ui for Snapshots {
    fn text(&mut self, delta: &str) {
        self.inner.text(delta);
    }

    fn tool_call(&mut self, call: &nanohermes::llm::ToolCall, result: &str) {
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
    let mut agent =
        agent(settings(&mock), hub(dir.path(), vec![]).await).with_compaction(CompactionConfig {
            threshold_chars: 4000,
            keep_messages: 2,
        });
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
    assert!(agent.undo().is_some());
    ui.checkpoint(agent.transcript());
    assert_ne!(std::fs::metadata(&path).unwrap().ino(), before_undo);
    assert_eq!(loaded(&path)[1..], agent.messages()[1..]);

    agent.reset();
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
