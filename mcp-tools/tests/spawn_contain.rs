//! Containment by a PID namespace: every process a sandboxed command
//! starts dies with it, even one that left its group (`setsid`), cleared
//! its environment (`env -i`, so it carries no marker) and was orphaned (a
//! double fork), and this test process is no subreaper. The only thing
//! killed from outside is the leader the spawn returned (what the reaper's
//! `kill -KILL -<group>`, tokio's `kill_on_drop` or a SIGKILL of the
//! owner's tree amounts to for it).

mod spawn_support;

use std::process::Stdio;

use mcp_tools::spawn::{self, Confined, EnvPolicy, Sandbox, SandboxMode, SandboxPolicy};
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use spawn_support::{eventually, unique_sleep, with_token};

fn sandbox(root: &std::path::Path, mode: SandboxMode) -> Sandbox {
    let policy = SandboxPolicy {
        mode,
        temp_dir: Some(std::env::temp_dir()),
        ..SandboxPolicy::default()
    };
    Sandbox::new(policy, root)
}

/// Starts the escapes under `mode`: returns the leader's pid, the child
/// (to reap) and the token its escaped processes carry.
async fn start_escapes(
    root: &std::path::Path,
    mode: SandboxMode,
) -> (i32, tokio::process::Child, spawn::ProcessTree, String) {
    let token = unique_sleep();
    let script = format!(
        "setsid env -i sh -c 'sleep {token} & wait' &\n\
         (env -i sh -c 'sleep {token} &' &)\n\
         setsid env -i sh -c '(sleep {token} &) ; sleep {token}' &\n\
         sleep {token}"
    );
    let mut command = spawn::command("sh", &EnvPolicy::ScrubSecrets);
    command
        .arg("-c")
        .arg(script)
        .current_dir(root)
        .stdout(Stdio::null());
    assert_eq!(
        sandbox(root, mode).confine(&mut command),
        Ok(Confined::Fully)
    );
    let (child, tree) = command.spawn().unwrap();
    let leader = tree.pgid();
    assert!(
        eventually(|| with_token(&token).len() == 5),
        "started: {:?}",
        with_token(&token)
    );
    (leader, child, tree, token)
}

#[tokio::test]
async fn everything_a_command_started_dies_when_its_leader_is_killed() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        let (leader, mut child, tree, token) = start_escapes(dir.path(), mode).await;
        kill(Pid::from_raw(leader), Signal::SIGKILL).unwrap();
        child.wait().await.unwrap();
        assert!(
            eventually(|| with_token(&token).is_empty()),
            "{mode:?}: left behind: {:?}",
            with_token(&token)
        );
        drop(tree);
    }
}

#[tokio::test]
async fn sigterm_to_the_group_ends_the_whole_command_at_once() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (leader, mut child, _tree, token) =
        start_escapes(dir.path(), SandboxMode::WorkspaceWrite).await;
    killpg(Pid::from_raw(leader), Signal::SIGTERM).unwrap();
    let status = tokio::time::timeout(std::time::Duration::from_secs(5), child.wait())
        .await
        .expect("SIGTERM did not end the command")
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(15));
    assert!(eventually(|| with_token(&token).is_empty()));
}

#[tokio::test]
async fn the_waiter_reports_the_commands_exit_and_output() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut command = spawn::command("sh", &EnvPolicy::ScrubSecrets);
    command
        .arg("-c")
        .arg("echo out; echo err >&2; echo $$; exit 3")
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    sandbox(dir.path(), SandboxMode::WorkspaceWrite)
        .confine(&mut command)
        .unwrap();
    let (child, _tree) = command.spawn().unwrap();
    let out = child.wait_with_output().await.unwrap();
    assert_eq!(out.status.code(), Some(3));
    // pid 1: the command leads a PID namespace of its own.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n1\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
    // A program that cannot start is reported as such by the spawn.
    let mut missing = spawn::command("/nonexistent/program", &EnvPolicy::ScrubSecrets);
    missing.current_dir(dir.path());
    sandbox(dir.path(), SandboxMode::WorkspaceWrite)
        .confine(&mut missing)
        .unwrap();
    let err = missing.spawn().unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound, "{err}");
}
