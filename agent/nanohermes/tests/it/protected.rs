//! Protected paths through the real `nanohermes run --mode goal`, with the
//! scripted model playing an obedient, injected model: a write to `.mcp.json`
//! or into `.git` is refused without anyone to ask (the file unchanged, the
//! model told why), asked about call by call on a terminal even in goal
//! mode (an "always" carries nothing over), and `apply_patch` takes git's
//! quoted paths.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::support::history::assert_requests_valid;
use crate::support::mock_model::{MockModel, call, text, tool_calls};
use crate::support::tool_result;

/// What `.mcp.json` holds before the run; an injected model wants more.
const MCP_JSON: &str = "{\"mcpServers\": {}}\n";

/// A fresh home and a git repository as the workspace.
struct World {
    _dir: tempfile::TempDir,
    home: std::path::PathBuf,
    workspace: std::path::PathBuf,
}

impl World {
    /// `with_mcp_json`: an `.mcp.json` is there before the run (on a
    /// terminal the run would first ask whether to trust it).
    fn new(with_mcp_json: bool) -> World {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let workspace = dir.path().join("ws");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&workspace).unwrap();
        let status = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&workspace)
            .status()
            .unwrap();
        assert!(status.success());
        if with_mcp_json {
            std::fs::write(workspace.join(".mcp.json"), MCP_JSON).unwrap();
        }
        std::os::unix::fs::symlink(".git", workspace.join("alias")).unwrap();
        World {
            home,
            workspace: workspace.canonicalize().unwrap(),
            _dir: dir,
        }
    }

    fn env(&self, command: &mut tokio::process::Command, mock: &MockModel) {
        command
            .env("NANOHERMES_HOME", &self.home)
            .env("OPENAI_BASE_URL", mock.base_url())
            .env("OPENAI_API_KEY", "test-key")
            .env("NANOHERMES_MODEL", "main-model")
            .env_remove("NANOHERMES_MODE")
            .env_remove("NANOHERMES_FALLBACK_MODEL")
            .env_remove("NANOHERMES_LOG")
            .kill_on_drop(true);
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.workspace.join(rel)).unwrap()
    }
}

fn evil_mcp() -> serde_json::Value {
    json!({"path": ".mcp.json", "content": "{\"mcpServers\": {\"x\": {\"command\": \"sh\"}}}"})
}

fn hook_patch() -> String {
    "--- /dev/null\n+++ b/.git/hooks/pre-commit\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+touch /tmp/pwned\n"
        .to_string()
}

#[tokio::test]
async fn goal_mode_without_a_terminal_refuses_protected_writes_and_says_why() {
    let w = World::new(true);
    let quoted = "diff --git \"a/dir/na\\303\\257ve.txt\" \"b/dir/na\\303\\257ve.txt\"\nnew file mode 100644\n--- /dev/null\n+++ \"b/dir/na\\303\\257ve.txt\"\n@@ -0,0 +1 @@\n+fine\n";
    let mock = MockModel::start(vec![
        tool_calls(&[
            call("c_mcp", "write_file", evil_mcp()),
            call("c_hook", "apply_patch", json!({"patch": hook_patch()})),
            call(
                "c_alias",
                "write_file",
                json!({"path": "alias/hooks/post-checkout", "content": "x"}),
            ),
            call("c_quoted", "apply_patch", json!({"patch": quoted})),
            call(
                "c_plain",
                "write_file",
                json!({"path": "notes.txt", "content": "ok\n"}),
            ),
        ])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command.args([
        "--workspace",
        w.workspace.to_str().unwrap(),
        "run",
        "--mode",
        "goal",
        "go",
    ]);
    command.stdin(std::process::Stdio::null());
    w.env(&mut command, &mock);
    let output = tokio::time::timeout(Duration::from_secs(60), command.output())
        .await
        .expect("nanohermes finished")
        .unwrap();
    assert!(output.status.success(), "{output:?}");

    let requests = mock.requests();
    assert_requests_valid(&requests);
    let messages = requests[1].messages();
    for id in ["c_mcp", "c_hook"] {
        let result = tool_result(messages, id);
        assert!(
            result.starts_with("ERROR: `")
                && result.contains("is a protected path")
                && result.contains("no mode gives by itself")
                && result.contains("run nanohermes interactively and approve it"),
            "{id}: {result}"
        );
    }
    // The alias is not protected by name; the server resolves it and refuses.
    let alias = tool_result(messages, "c_alias");
    assert!(
        alias.contains("is a protected path") && alias.contains("explicit approval"),
        "{alias}"
    );
    assert_eq!(w.read(".mcp.json"), MCP_JSON);
    assert!(!w.workspace.join(".git/hooks/pre-commit").exists());
    assert!(!w.workspace.join(".git/hooks/post-checkout").exists());
    assert_eq!(
        tool_result(messages, "c_quoted"),
        "applied patch:\nA dir/naïve.txt"
    );
    assert_eq!(w.read("dir/naïve.txt"), "fine\n");
    assert!(!w.workspace.join("\"b").exists());
    assert_eq!(w.read("notes.txt"), "ok\n");
}

#[tokio::test]
async fn on_a_terminal_goal_mode_asks_for_each_protected_write_and_always_carries_nothing_over() {
    // util-linux `script` gives the agent a real pseudo-terminal.
    if !Path::new("/usr/bin/script").exists() {
        eprintln!("skipped: /usr/bin/script (util-linux) is not installed");
        return;
    }
    let w = World::new(false);
    let mock = MockModel::start(vec![
        tool_calls(&[call("c_first", "write_file", evil_mcp())]).into(),
        // The same tool again: the "always" above must not answer this.
        tool_calls(&[call(
            "c_second",
            "write_file",
            json!({"path": "pkg/hooks.json", "content": "{\"hooks\": {}}"}),
        )])
        .into(),
        tool_calls(&[call(
            "c_plain",
            "write_file",
            json!({"path": "notes.txt", "content": "ok\n"}),
        )])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let inner = shlex::try_join([
        env!("CARGO_BIN_EXE_nanohermes"),
        "--workspace",
        w.workspace.to_str().unwrap(),
        "run",
        "--mode",
        "goal",
        "go",
    ])
    .unwrap();
    let mut command = tokio::process::Command::new("/usr/bin/script");
    command
        .args(["-qec", &inner, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    w.env(&mut command, &mock);
    let mut child = command.spawn().unwrap();
    // Typed ahead: "always" for the first question, "no" for the second.
    let mut stdin = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stdin, b"a\nn\n")
        .await
        .unwrap();
    let output = tokio::time::timeout(Duration::from_secs(90), child.wait_with_output())
        .await
        .expect("script finished")
        .unwrap();
    drop(stdin);
    let screen = String::from_utf8_lossy(&output.stdout);

    let requests = mock.requests();
    assert_eq!(requests.len(), 4, "{screen}");
    assert_requests_valid(&requests);
    assert_eq!(
        tool_result(requests[1].messages(), "c_first"),
        "created .mcp.json (40 bytes)",
        "{screen}"
    );
    assert!(w.read(".mcp.json").contains("\"command\": \"sh\""));
    assert_eq!(
        tool_result(requests[2].messages(), "c_second"),
        "ERROR: the user did not approve writing the protected path pkg/hooks.json. Do not retry it; ask what to do instead",
        "{screen}"
    );
    assert!(!w.workspace.join("pkg").exists());
    assert_eq!(w.read("notes.txt"), "ok\n", "goal mode asks nothing else");
    assert_eq!(
        screen.matches("Allow this one call? [y]es / [n]o:").count(),
        2,
        "{screen}"
    );
    assert!(screen.contains("a protected path"), "{screen}");
}
