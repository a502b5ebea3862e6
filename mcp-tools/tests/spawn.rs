//! `mcp_tools::spawn` with this test process as a child subreaper (the
//! fast path: orphans come back here). `spawn_plain.rs` runs the same
//! attacks without the subreaper.

mod spawn_support;

use std::process::Stdio;
use std::time::Duration;

use mcp_tools::spawn::{self, EnvPolicy, ProcessTree};
use spawn_support::{attacks, eventually, unique_sleep, with_token, zombie_children};
use tokio::io::AsyncReadExt;

fn subreaper() {
    spawn::become_subreaper().unwrap();
}

async fn run_env(policy: &EnvPolicy) -> String {
    let mut cmd = spawn::command("env", policy);
    cmd.stdout(Stdio::piped());
    let (mut child, _tree) = cmd.spawn().unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .await
        .unwrap();
    child.wait().await.unwrap();
    out
}

fn names(env: &str) -> Vec<&str> {
    env.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(n, _)| n)
        .collect()
}

/// Sets the attack variables once for the whole test process.
fn set_secret_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for (name, value) in [
            ("OPENAI_API_KEY", "sk-test"),
            ("GITHUB_TOKEN", "ghp-test"),
            ("AWS_SECRET_ACCESS_KEY", "aws-test"),
            ("my_password", "hunter2"),
            ("DB_CREDENTIALS", "db-test"),
            ("NANOHERMES_TEST_MODEL_VAR", "model-key"),
            ("ORDINARY_SETTING", "plain"),
        ] {
            set_var(name, value);
        }
        spawn::withhold("NANOHERMES_TEST_MODEL_VAR");
    });
}

#[allow(unsafe_code)]
fn set_var(name: &str, value: &str) {
    // SAFETY: called once, before any test thread spawns a child, under a
    // `Once`; nothing else in this test binary reads the environment
    // concurrently except through spawns that follow it.
    unsafe { std::env::set_var(name, value) }
}

#[tokio::test]
async fn scrubbed_children_get_no_secrets_but_everything_else() {
    set_secret_env();
    let env = run_env(&EnvPolicy::ScrubSecrets).await;
    let names = names(&env);
    for secret in [
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "my_password",
        "DB_CREDENTIALS",
        "NANOHERMES_TEST_MODEL_VAR",
    ] {
        assert!(!names.contains(&secret), "{secret} leaked:\n{env}");
    }
    for kept in ["PATH", "HOME", "ORDINARY_SETTING", "NANOHERMES_SPAWN"] {
        assert!(names.contains(&kept), "{kept} missing:\n{env}");
    }
}

#[tokio::test]
async fn allow_listed_children_get_only_the_list_and_the_named_pairs() {
    set_secret_env();
    let env = run_env(&EnvPolicy::AllowList(vec![(
        "SERVER_API_KEY".into(),
        "named".into(),
    )]))
    .await;
    let mut names = names(&env);
    names.sort_unstable();
    assert!(names.contains(&"PATH") && names.contains(&"HOME"), "{env}");
    assert!(env.contains("SERVER_API_KEY=named\n"), "{env}");
    for name in &names {
        assert!(
            [
                "HOME", "PATH", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR", "TZ"
            ]
            .contains(name)
                || name.starts_with("LC_")
                || *name == "SERVER_API_KEY"
                || *name == "NANOHERMES_SPAWN",
            "{name} is not on the allow-list:\n{env}"
        );
    }
}

#[tokio::test]
async fn a_child_leads_its_own_process_group() {
    let mut cmd = spawn::command("sh", &EnvPolicy::ScrubSecrets);
    cmd.arg("-c")
        .arg("ps -o pgid= -p $$")
        .stdout(Stdio::piped());
    let (child, tree) = cmd.spawn().unwrap();
    let out = child.wait_with_output().await.unwrap();
    let pgid: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert_eq!(pgid, tree.pgid());
    assert_ne!(pgid, nix::unistd::getpgrp().as_raw());
}

async fn leave_behind(script: &str) -> ProcessTree {
    let mut cmd = spawn::command("sh", &EnvPolicy::ScrubSecrets);
    cmd.arg("-c").arg(script);
    let (mut child, tree) = cmd.spawn().unwrap();
    assert!(child.wait().await.unwrap().success());
    tree
}

#[tokio::test]
async fn killing_a_tree_kills_every_orphan_it_left() {
    subreaper();
    for (name, _) in attacks("x") {
        let token = unique_sleep();
        let script = attacks(&token)
            .into_iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1;
        let tree = leave_behind(&script).await;
        assert!(
            eventually(|| !with_token(&token).is_empty()),
            "{name}: the attack did not start"
        );
        tree.kill();
        assert!(
            eventually(|| with_token(&token).is_empty()),
            "{name}: left behind {:?}",
            with_token(&token)
        );
    }
}

#[tokio::test]
async fn dropping_a_tree_kills_a_running_command_and_its_escapees() {
    subreaper();
    let token = unique_sleep();
    let mut cmd = spawn::command("sh", &EnvPolicy::ScrubSecrets);
    cmd.arg("-c")
        .arg(format!("setsid sleep {token} & sleep {token}"));
    let (_child, tree) = cmd.spawn().unwrap();
    assert!(eventually(|| with_token(&token).len() == 2));
    drop(tree);
    assert!(eventually(|| with_token(&token).is_empty()));
}

#[tokio::test]
async fn orphans_are_reaped_without_stealing_a_leaders_status() {
    subreaper();
    // Orphans that die on their own while leaders exit with known codes.
    let mut runs = Vec::new();
    for code in 0..12 {
        let mut cmd = spawn::command("sh", &EnvPolicy::ScrubSecrets);
        cmd.arg("-c").arg(format!(
            "(sleep 0.2 &) ; setsid sleep 0.1 & sleep 0.3; exit {code}"
        ));
        runs.push((code, cmd.spawn().unwrap()));
    }
    for (code, (mut child, tree)) in runs {
        let status = child.wait().await.unwrap();
        assert_eq!(status.code(), Some(code));
        drop(tree);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        eventually(|| zombie_children().is_empty()),
        "unreaped: {:?}",
        zombie_children()
    );
}

#[tokio::test]
async fn a_command_handed_out_and_adopted_is_killed_with_its_tree() {
    subreaper();
    let token = unique_sleep();
    let mut cmd = spawn::command("sh", &EnvPolicy::ScrubSecrets);
    cmd.arg("-c")
        .arg(format!("setsid sleep {token} & sleep {token}"));
    let (mut command, marker) = cmd.into_command();
    let child = command.spawn().unwrap();
    let tree = ProcessTree::adopt(child.id().unwrap(), marker);
    assert!(eventually(|| with_token(&token).len() == 2));
    tree.kill();
    assert!(eventually(|| with_token(&token).is_empty()));
}
