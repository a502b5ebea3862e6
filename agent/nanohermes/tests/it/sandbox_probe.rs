//! The sandbox's namespace probe through the real binary: the warning at
//! start, the agent answering the probe as a forked child does, the yes
//! kept between runs, and the protection it enables.

use serde_json::json;

use crate::support::binary::{git, nanohermes, on_mock, workspace_arg};
use crate::support::mock_model::{MockModel, call, text, tool_calls};
use crate::support::tool_result;

#[tokio::test]
async fn the_sandbox_warning_is_said_once_at_start_whether_or_not_the_probe_had_answered() {
    // Without Landlock the policy cannot be enforced: one warning at
    // start, and the command is refused (`sandbox_unavailable = "refuse"`).
    // The namespace probe still starts a child, so the warning usually comes from
    // the probe's own thread, after the start.
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

#[tokio::test]
async fn the_agent_binary_answers_the_namespace_probe_as_a_forked_child_does() {
    // The agent probes by starting itself (posix_spawn, no fork of the
    // agent); this test binary probes the old way, forking. They agree.
    use mcp_tools::spawn::sandbox::{PROBE_ARG, Support};
    let forked = Support::probe().namespaces.clone();
    let run = nanohermes(&[PROBE_ARG], &[]).await;
    assert_eq!(
        run.code == Some(0),
        forked.is_ok(),
        "{run:#?} against {forked:?}"
    );
    assert!(run.stdout.is_empty() && run.stderr.is_empty(), "{run:#?}");
}

#[tokio::test]
async fn a_second_run_reuses_the_namespace_probes_yes_and_a_tampered_entry_is_probed_again() {
    // The probe's child execs `true` from PATH: a `true` that notes each
    // run tells from outside whether a run probed.
    use mcp_tools::spawn::sandbox::{PROBE_CACHE_VAR, Support};
    let (bin, cache, dir) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let marks = bin.path().join("probes.log");
    let fake_true = bin.path().join("true");
    std::fs::write(
        &fake_true,
        format!("#!/bin/sh\necho probed >> '{}'\n", marks.display()),
    )
    .unwrap();
    std::fs::set_permissions(
        &fake_true,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // The cache is used only in a directory closed to others.
    std::fs::set_permissions(
        cache.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let cache_dir = cache.path().to_str().unwrap().to_owned();
    let workspace = workspace_arg(dir.path());
    // A command waits for the probe, so every run's probe has answered.
    let run_once = || async {
        let mock = MockModel::start(vec![
            tool_calls(&[call("c1", "run_command", json!({"command": "echo ran"}))]).into(),
            text(&["done"]).into(),
        ])
        .await;
        let url = mock.base_url();
        let mut env = on_mock(&mock, &url);
        env.extend([
            ("PATH", path.as_str()),
            (PROBE_CACHE_VAR, cache_dir.as_str()),
        ]);
        let run = nanohermes(&["run", "--workspace", &workspace, "go"], &env).await;
        assert_eq!(run.code, Some(0), "{run:#?}");
        let probes = std::fs::read_to_string(&marks)
            .unwrap_or_default()
            .lines()
            .count();
        let _ = std::fs::remove_file(&marks);
        probes
    };
    let entries = || {
        std::fs::read_dir(cache.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect::<Vec<_>>()
    };
    assert_eq!(run_once().await, 1, "the first run probes");
    if Support::probe().namespaces.is_err() {
        // A no is never kept: every run probes again.
        assert!(entries().is_empty(), "{:?}", entries());
        assert_eq!(run_once().await, 1);
        return;
    }
    let kept = entries();
    assert_eq!(kept.len(), 1, "one yes kept: {kept:?}");
    assert_eq!(run_once().await, 0, "the second run reuses the yes");
    std::fs::write(&kept[0], "nanohermes namespace probe v1\nboot forged\n").unwrap();
    assert_eq!(
        run_once().await,
        1,
        "an entry for another key is probed again"
    );
    let rewritten = std::fs::read_to_string(&kept[0]).unwrap();
    assert!(!rewritten.contains("forged"), "{rewritten}");
    assert_eq!(run_once().await, 0);
}

#[tokio::test]
async fn a_command_the_agent_runs_cannot_write_git_hooks() {
    // The protected paths need the namespaces the agent's own probe found:
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
