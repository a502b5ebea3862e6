//! Reasoning through the real binary, configured only by
//! `[model_providers]` tables as a Codex user writes them: each wire's
//! reasoning is kept with its turn, in the session file too, and sent back
//! verbatim when the session is resumed on the same provider (the strict
//! scripted model refuses a tool turn without it); resumed on another
//! provider it is dropped, never forged; it is shown as `thinking` in
//! stream-json and never part of the answer.

use std::path::Path;
use std::time::Duration;

use nanohermes_llm::WireApi;
use serde_json::{Value, json};

use crate::support::history::assert_wire_requests_valid;
use crate::support::mock_model::{MockModel, Options, Recorded, call, text, tool_calls};

/// A deadlock guard, not a speed claim.
const HANG_GUARD: Duration = Duration::from_secs(60);

/// Writes a config whose provider `name` speaks `wire` at `mock`.
fn provider_table(name: &str, wire: WireApi, mock: &MockModel) -> String {
    format!(
        "[model_providers.{name}]\nname = \"{name}\"\nbase_url = \"{}\"\nwire_api = \"{wire}\"\nenv_key = \"TEST_PROVIDER_KEY\"\n",
        mock.base_url()
    )
}

/// `nanohermes` with `home`, in `workspace`, with the provider key set.
async fn nanohermes(home: &Path, workspace: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command
        .arg("--workspace")
        .arg(workspace)
        .args(args)
        .env("NANOHERMES_HOME", home)
        .env("TEST_PROVIDER_KEY", "k")
        .env("NANOHERMES_MODE", "goal")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    for name in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "NANOHERMES_MODEL",
        "NANOHERMES_PROVIDER",
        "NANOHERMES_LOG",
    ] {
        command.env_remove(name);
    }
    let output = tokio::time::timeout(HANG_GUARD, command.output())
        .await
        .expect("nanohermes finished")
        .expect("nanohermes ran");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A reasoning model on every tool turn and its answer.
fn reasoning_script(tag: &str) -> Vec<crate::support::mock_model::Step> {
    vec![
        tool_calls(&[
            call(&format!("{tag}_a"), "list_dir", json!({})),
            call(
                &format!("{tag}_b"),
                "read_file",
                json!({"path": "notes.txt"}),
            ),
        ])
        .with_thought(&["I should look ", "at the notes."])
        .into(),
        text(&["The notes say hello."])
            .with_thought(&["They say hello."])
            .into(),
    ]
}

fn thinking_mock_options() -> Options {
    Options {
        thinking: true,
        ..Options::default()
    }
}

/// Every request was accepted by the strict model and valid for its wire.
fn accepted(requests: &[Recorded], wire: WireApi) {
    for request in requests {
        assert!(request.refused.is_none(), "refused: {:?}", request.refused);
    }
    assert_wire_requests_valid(requests, wire);
}

/// The session id the run's last line names (`--resume ID`).
fn session_id(stderr: &str) -> String {
    let at = stderr.rfind("--resume ").expect("a resumable session") + "--resume ".len();
    stderr[at..]
        .split_whitespace()
        .next()
        .unwrap()
        .trim_end_matches(|c: char| !c.is_alphanumeric() && c != '-')
        .to_owned()
}

async fn resumed_on_the_same_provider_replays_and_on_another_drops(wire: WireApi, other: WireApi) {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().canonicalize().unwrap();
    let (home, workspace) = (base.join("home"), base.join("ws"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("notes.txt"), "hello\n").unwrap();
    let first = MockModel::with_options(thinking_mock_options(), {
        let mut script = reasoning_script("t1");
        script.extend(reasoning_script("t2"));
        script
    })
    .await;
    let second = MockModel::with_options(thinking_mock_options(), reasoning_script("t3")).await;
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model_provider = \"first\"\n\n{}\n{}",
            provider_table("first", wire, &first),
            provider_table("second", other, &second)
        ),
    )
    .unwrap();

    let (code, stdout, stderr) = nanohermes(
        &home,
        &workspace,
        &[
            "run",
            "--thinking",
            "--output-format",
            "stream-json",
            "read the notes",
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{stderr}");
    let events: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let assistant: Vec<&Value> = events.iter().filter(|e| e["type"] == "assistant").collect();
    assert_eq!(
        assistant[0]["message"]["content"][0],
        json!({"type": "thinking", "thinking": "I should look at the notes."}),
        "{stdout}"
    );
    let result = events.last().unwrap();
    assert_eq!(
        result["result"], "The notes say hello.",
        "never the reasoning"
    );
    let id = session_id(&stderr);

    // Resumed on the same provider: the strict model refuses a tool turn
    // whose reasoning did not come back verbatim, so acceptance is proof.
    let (code, _, stderr) = nanohermes(
        &home,
        &workspace,
        &["run", "--thinking", "--resume", &id, "read them again"],
    )
    .await;
    assert_eq!(code, Some(0), "{stderr}");
    let requests = first.requests();
    assert_eq!(requests.len(), 4, "{stderr}");
    accepted(&requests, wire);

    // Resumed on another provider: the first provider's reasoning is
    // dropped (a strict model of another wire would refuse a forged one).
    let (code, stdout, stderr) = nanohermes(
        &home,
        &workspace,
        &[
            "run",
            "--thinking",
            "--provider",
            "second",
            "--resume",
            &id,
            "once more",
        ],
    )
    .await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("The notes say hello."), "{stdout}");
    let requests = second.requests();
    assert_eq!(requests.len(), 2, "{stderr}");
    accepted(&requests, other);
    let sent = requests[0].body.to_string();
    for foreign in ["enc_", "sig_", "I should look at the notes."] {
        assert!(
            !sent.contains(foreign),
            "{wire} reasoning reached {other}: {foreign}"
        );
    }
}

#[tokio::test]
async fn chat_reasoning_is_replayed_on_chat_and_dropped_on_messages() {
    resumed_on_the_same_provider_replays_and_on_another_drops(WireApi::Chat, WireApi::Messages)
        .await;
}

#[tokio::test]
async fn responses_reasoning_is_replayed_on_responses_and_dropped_on_chat() {
    resumed_on_the_same_provider_replays_and_on_another_drops(WireApi::Responses, WireApi::Chat)
        .await;
}

#[tokio::test]
async fn messages_reasoning_is_replayed_on_messages_and_dropped_on_responses() {
    resumed_on_the_same_provider_replays_and_on_another_drops(
        WireApi::Messages,
        WireApi::Responses,
    )
    .await;
}
