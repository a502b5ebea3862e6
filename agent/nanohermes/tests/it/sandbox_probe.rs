//! What the sandbox finds out about the system, through the real binary:
//! the warning at start for what is known then (Landlock), the namespaces
//! learned from the first command (refused, or run with Landlock only and
//! a warning, where the kernel refuses them), and the protection they
//! enable where it does not.

use serde_json::json;

use crate::support::binary::{TEST_HOME, git, nanohermes, on_mock, output_of, workspace_arg};
use crate::support::mock_model::{MockModel, call, text, tool_calls};
use crate::support::tool_result;

#[tokio::test]
async fn the_sandbox_warning_is_said_once_at_start_when_landlock_is_missing() {
    // Without Landlock the policy cannot be enforced: one warning at
    // start, and the command is refused (`sandbox_unavailable = "refuse"`).
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        tool_calls(&[call("c1", "run_command", json!({"command": "true"}))]).into(),
        text(&["done"]).into(),
    ])
    .await;
    let url = mock.base_url();
    let workspace = workspace_arg(dir.path());
    let mut env = on_mock(&mock, &url);
    env.push((mcp_tools::spawn::sandbox::SIMULATE_VAR, "no-landlock"));
    let run = nanohermes(&["run", "--workspace", &workspace, "go"], &env).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(
        run.stderr.matches("nanohermes: sandbox: ").count(),
        1,
        "{}",
        run.stderr
    );
    let result = tool_result(mock.requests()[1].messages(), "c1").to_owned();
    assert!(result.starts_with("ERROR"), "{result}");
}

/// Runs the real binary with `args` in a user namespace that may make no
/// more of them (`max_user_namespaces` 0), so the kernel refuses every
/// sandboxed command's namespace step, as on a system without them. Where
/// this system already refuses user namespaces, runs it as it is.
async fn without_namespaces(args: &[&str], env: &[(&str, &str)]) -> crate::support::binary::Run {
    let nested = std::process::Command::new("unshare")
        .args(["-U", "-r", "true"])
        .status()
        .is_ok_and(|s| s.success());
    let mut command = if nested {
        let mut command = tokio::process::Command::new("unshare");
        command.args([
            "-U",
            "-r",
            "sh",
            "-c",
            "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" \"$@\"",
            env!("CARGO_BIN_EXE_nanohermes"),
        ]);
        command
    } else {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"))
    };
    command.args(args).kill_on_drop(true);
    for name in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "NANOHERMES_MODEL",
        "NANOHERMES_LOG",
    ] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    output_of(&mut command).await
}

/// The model's two commands in a system without namespaces, under
/// `sandbox_unavailable = WHEN`: each writes `ran-N.txt` in the workspace
/// and tries a file outside it (and outside the temp directory).
async fn two_commands_without_namespaces(
    when: &str,
) -> (Vec<String>, tempfile::TempDir, tempfile::TempDir) {
    let (dir, home) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        format!("sandbox_unavailable = \"{when}\"\n"),
    )
    .unwrap();
    let script = |n: u8| {
        format!(
            "echo ran > ran-{n}.txt; echo x > '{}/out-{n}'",
            outside.path().display()
        )
    };
    let mock = MockModel::start(vec![
        tool_calls(&[call("c1", "run_command", json!({"command": script(1)}))]).into(),
        tool_calls(&[call("c2", "run_command", json!({"command": script(2)}))]).into(),
        text(&["done"]).into(),
    ])
    .await;
    let url = mock.base_url();
    let workspace = workspace_arg(dir.path());
    let home_dir = home.path().to_str().unwrap().to_owned();
    let mut env = on_mock(&mock, &url);
    env.push(("NANOHERMES_HOME", &home_dir));
    let run = without_namespaces(&["run", "--workspace", &workspace, "go"], &env).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    // Not known at start: no command had tried the namespaces yet.
    assert!(!run.stderr.contains("sandbox:"), "{}", run.stderr);
    let requests = mock.requests();
    let results = ["c1", "c2"]
        .iter()
        .enumerate()
        .map(|(i, id)| tool_result(requests[i + 1].messages(), id).to_owned())
        .collect();
    for n in 1..=2 {
        assert!(
            !outside.path().join(format!("out-{n}")).exists(),
            "command {n} wrote outside the workspace"
        );
    }
    (results, dir, outside)
}

#[tokio::test]
async fn without_namespaces_the_first_command_learns_it_and_is_refused() {
    let (results, dir, _outside) = two_commands_without_namespaces("refuse").await;
    for (n, result) in results.iter().enumerate() {
        assert!(
            result.contains("the command was not run: the sandbox (workspace-write, network off) cannot be enforced")
                && result.contains("namespaces"),
            "command {}: {result}",
            n + 1
        );
        assert!(
            !dir.path().join(format!("ran-{}.txt", n + 1)).exists(),
            "{result}"
        );
    }
}

#[tokio::test]
async fn without_namespaces_warn_runs_the_first_command_under_landlock_only_and_says_so() {
    let (results, dir, _outside) = two_commands_without_namespaces("warn").await;
    for (n, result) in results.iter().enumerate() {
        assert!(
            result.contains(
                "WARNING: the sandbox (workspace-write, network off) is not fully enforced"
            ) && result.contains("namespaces"),
            "command {}: {result}",
            n + 1
        );
        assert!(
            dir.path().join(format!("ran-{}.txt", n + 1)).exists(),
            "{result}"
        );
    }
}

#[tokio::test]
async fn a_command_the_agent_runs_cannot_write_git_hooks() {
    // The protected paths need the namespaces the first command found:
    // the command runs (ran.txt) and the hook is not written.
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]);
    let script = "echo ok > ran.txt; printf x > .git/hooks/pre-commit";
    let mock = MockModel::start(vec![
        tool_calls(&[call("c1", "run_command", json!({"command": script}))]).into(),
        text(&["done"]).into(),
    ])
    .await;
    let url = mock.base_url();
    let workspace = workspace_arg(dir.path());
    let run = nanohermes(
        &["run", "--workspace", &workspace, "go"],
        &on_mock(&mock, &url),
    )
    .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let result = tool_result(mock.requests()[1].messages(), "c1").to_owned();
    assert!(
        dir.path().join("ran.txt").exists(),
        "the command did not run: {result}"
    );
    assert!(
        !dir.path().join(".git/hooks/pre-commit").exists(),
        "{result}"
    );
    assert!(
        !run.stderr.contains("sandbox:"),
        "no sandbox warning: {}",
        run.stderr
    );
}

#[tokio::test]
async fn mcp_list_finds_out_whether_namespaces_work_before_any_command() {
    // No command runs in `mcp list`: it probes, and reports what it found.
    let dir = tempfile::tempdir().unwrap();
    let workspace = workspace_arg(dir.path());
    let args = ["--workspace", &workspace, "mcp", "list"];
    let with = nanohermes(&args, &[]).await;
    assert_eq!(with.code, Some(0), "{with:#?}");
    assert!(
        with.stdout
            .contains("sandbox (shell, git hooks, hooks): workspace-write, network off: enforced"),
        "{}",
        with.stdout
    );
    let without = without_namespaces(&args, &[("NANOHERMES_HOME", TEST_HOME)]).await;
    assert_eq!(without.code, Some(0), "{without:#?}");
    assert!(
        without.stdout.contains("network off: NOT enforced")
            && without.stdout.contains("namespaces"),
        "{}",
        without.stdout
    );
}

#[tokio::test]
async fn the_allowlist_is_named_at_start_and_in_mcp_list_and_a_refused_host_in_the_result() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "sandbox_network = \"allowlist\"\nsandbox_allowed_domains = [\"*.crates.io\", \"crates.io\"]\n",
    )
    .unwrap();
    let home = home.path().to_str().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let workspace = workspace_arg(dir.path());
    let list = nanohermes(
        &["--workspace", &workspace, "mcp", "list"],
        &[("NANOHERMES_HOME", &home)],
    )
    .await;
    assert!(
        list.stdout.contains(
            "sandbox (shell, git hooks, hooks): workspace-write, network allowlist (2 domains): enforced"
        ),
        "{list:#?}"
    );
    let command = "curl -sS -o /dev/null -w '%{http_code}\\n' http://unlisted.example/";
    let mock = MockModel::start(vec![
        tool_calls(&[call("c1", "run_command", json!({ "command": command }))]).into(),
        text(&["done"]).into(),
    ])
    .await;
    let url = mock.base_url();
    let mut env = on_mock(&mock, &url);
    env.push(("NANOHERMES_HOME", &home));
    let run = nanohermes(&["run", "--workspace", &workspace, "go"], &env).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(
        run.stderr.contains(
            "sandbox: network allowlist (2 domains): commands reach only crates.io, *.crates.io \
             through a local proxy"
        ),
        "{}",
        run.stderr
    );
    let result = tool_result(mock.requests()[1].messages(), "c1").to_owned();
    assert!(
        result.contains("--- stdout\n403\n")
            && result.contains("refused this command's connections to: unlisted.example."),
        "{result}"
    );
}

#[tokio::test]
async fn web_allowed_domains_reaches_web_fetch() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "web_allowed_domains = [\"docs.rs\"]\n",
    )
    .unwrap();
    let home = home.path().to_str().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let workspace = workspace_arg(dir.path());
    let mock = MockModel::start(vec![
        tool_calls(&[call(
            "c1",
            "web_fetch",
            json!({ "url": "https://unlisted.example/" }),
        )])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let url = mock.base_url();
    let mut env = on_mock(&mock, &url);
    env.push(("NANOHERMES_HOME", &home));
    let run = nanohermes(&["run", "--workspace", &workspace, "go"], &env).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    let result = tool_result(mock.requests()[1].messages(), "c1").to_owned();
    assert!(
        result.contains("unlisted.example is not in web_allowed_domains"),
        "{result}"
    );
}
