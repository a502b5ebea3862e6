//! No process outlives the agent, however it dies: the real `nanohermes
//! run`, driven by the scripted model playing an obedient, injected model,
//! starts a background task whose processes leave their group, clear
//! their environment (so no marker finds them) and double-fork; then the
//! agent is SIGKILLed. The sandbox's PID namespace takes them all down.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::binary::{TEST_HOME, on_mock};
use crate::support::mock_model::{MockModel, call, text, tool_calls};

/// Live processes with `token` as one of their arguments.
fn with_token(token: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let live = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
        });
        let marked = std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == token.as_bytes()));
        if live && marked {
            found.push(pid);
        }
    }
    found
}

#[tokio::test]
async fn nothing_a_command_started_survives_a_sigkill_of_the_agent() {
    let dir = tempfile::tempdir().unwrap();
    let token = format!("300.{}55", std::process::id());
    let escapes = format!(
        "setsid env -i sh -c 'sleep {token} & sleep {token}' &\n\
         (env -i sh -c 'setsid sleep {token} &' &)\n\
         sleep {token}"
    );
    let agent_pid: Arc<OnceLock<u32>> = Arc::new(OnceLock::new());
    let pid = agent_pid.clone();
    let watched = token.clone();
    let mock = MockModel::start(vec![
        tool_calls(&[call("call_t", "task_start", json!({"command": escapes}))]).into(),
        text(&["never answered"]).when_requested(move || {
            // The task runs: wait for all its processes, then kill the agent
            // without letting it run any code.
            let deadline = Instant::now() + Duration::from_secs(20);
            while with_token(&watched).len() < 4 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let pid = nix::unistd::Pid::from_raw(*pid.get().expect("pid set") as i32);
            nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("SIGKILL sent");
        }),
    ])
    .await;
    let url = mock.base_url();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command
        .args(["run", "--mode", "goal", "--workspace"])
        .arg(dir.path())
        .arg("start the dev server")
        .envs(on_mock(&mock, &url))
        .env("NANOHERMES_HOME", TEST_HOME)
        .env_remove("NANOHERMES_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let child = command.spawn().unwrap();
    agent_pid.set(child.id().unwrap()).unwrap();
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        output.status.signal(),
        Some(9),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(mock.requests().len() >= 2, "the task never ran");
    let deadline = Instant::now() + Duration::from_secs(20);
    while !with_token(&token).is_empty() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        with_token(&token).is_empty(),
        "left behind: {:?}",
        with_token(&token)
    );
}
