//! The sandbox on the real kernel: real `sh` children confined by
//! Landlock and a mount namespace, writing into real directories and
//! connecting to a real listener. The directories live under the target
//! directory, not the system temp directory, which workspace-write may
//! write.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use mcp_tools::spawn::sandbox::Support;
use mcp_tools::spawn::{
    self, Confined, EnvPolicy, Sandbox, SandboxMode, SandboxPolicy, WhenUnavailable,
};

/// A workspace root, a sibling directory and a home, side by side.
struct Dirs {
    _base: tempfile::TempDir,
    root: PathBuf,
    sibling: PathBuf,
    home: PathBuf,
}

fn dirs() -> Dirs {
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let path = base.path().canonicalize().unwrap();
    let (root, sibling, home) = (path.join("ws"), path.join("sibling"), path.join("home"));
    for dir in [&root, &sibling, &home] {
        std::fs::create_dir(dir).unwrap();
    }
    Dirs {
        _base: base,
        root,
        sibling,
        home,
    }
}

/// The temp directory the tests' sandboxes may write: one of their own,
/// since the checkout (and so every test directory) may lie under `/tmp`.
static OWN_TEMP: std::sync::LazyLock<tempfile::TempDir> =
    std::sync::LazyLock::new(|| tempfile::tempdir().unwrap());

fn own_temp() -> PathBuf {
    OWN_TEMP.path().canonicalize().unwrap()
}

fn policy(mode: SandboxMode, network: bool) -> SandboxPolicy {
    SandboxPolicy {
        mode,
        network,
        temp_dir: Some(own_temp()),
        ..SandboxPolicy::default()
    }
}

/// Runs `script` with `sh -c` in `cwd` under `sandbox`, HOME set to
/// `home`; returns whether it exited 0 and its stdout and stderr.
async fn run_in(sandbox: &Sandbox, cwd: &Path, home: &Path, script: &str) -> (bool, String) {
    let mut command = spawn::command("sh", &EnvPolicy::ScrubSecrets);
    command
        .arg("-c")
        .arg(script)
        .current_dir(cwd)
        .env("HOME", home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    assert_eq!(sandbox.confine(&mut command), Ok(Confined::Fully));
    let (child, _tree) = command.spawn().unwrap();
    let out = child.wait_with_output().await.unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

async fn run(sandbox: &Sandbox, dirs: &Dirs, script: &str) -> (bool, String) {
    run_in(sandbox, &dirs.root, &dirs.home, script).await
}

fn workspace_write(dirs: &Dirs) -> Sandbox {
    Sandbox::new(policy(SandboxMode::WorkspaceWrite, false), &dirs.root)
}

#[test]
fn this_kernel_enforces_every_part_of_the_sandbox() {
    let support = Support::probe();
    assert!(support.landlock_abi >= 6, "{support:?}");
    assert_eq!(support.namespaces, Ok(()));
}

#[tokio::test]
async fn writes_inside_the_root_succeed_and_outside_it_fail() {
    let dirs = dirs();
    let sandbox = workspace_write(&dirs);
    let (ok, out) = run(
        &sandbox,
        &dirs,
        "echo in > inside && mkdir -p a/b && echo deep > a/b/c && cat inside a/b/c",
    )
    .await;
    assert!(ok && out == "in\ndeep\n", "{out}");

    for target in [dirs.home.join("f"), dirs.sibling.join("f")] {
        let (ok, out) = run(&sandbox, &dirs, &format!("echo x > '{}'", target.display())).await;
        assert!(!ok && out.contains("Permission denied"), "{out}");
        assert!(!target.exists());
    }
    let (ok, _) = run(&sandbox, &dirs, "echo x > \"$HOME/.bashrc\"").await;
    assert!(!ok && !dirs.home.join(".bashrc").exists());
    // Moving or linking a file out is refused as well.
    let (ok, _) = run(
        &sandbox,
        &dirs,
        &format!("mv inside '{}'", dirs.sibling.display()),
    )
    .await;
    assert!(!ok && dirs.root.join("inside").exists());
}

#[tokio::test]
async fn a_symlink_inside_the_root_does_not_lead_out() {
    let dirs = dirs();
    std::os::unix::fs::symlink(&dirs.sibling, dirs.root.join("out")).unwrap();
    std::fs::write(dirs.sibling.join("existing"), "keep").unwrap();
    let sandbox = workspace_write(&dirs);
    let (ok, out) = run(&sandbox, &dirs, "echo x > out/new").await;
    assert!(!ok && out.contains("Permission denied"), "{out}");
    let (ok, _) = run(&sandbox, &dirs, "echo x > out/existing; : > out/existing").await;
    assert!(!ok);
    assert!(!dirs.sibling.join("new").exists());
    assert_eq!(
        std::fs::read_to_string(dirs.sibling.join("existing")).unwrap(),
        "keep"
    );
}

#[tokio::test]
async fn the_system_temp_dir_is_writable_in_workspace_write_only() {
    let dirs = dirs();
    let script = format!(
        "f=$(mktemp -p '{}') && echo x > \"$f\" && cat \"$f\" && rm \"$f\"",
        own_temp().display()
    );
    let (ok, out) = run(&workspace_write(&dirs), &dirs, &script).await;
    assert!(ok && out == "x\n", "{out}");
    let read_only = Sandbox::new(policy(SandboxMode::ReadOnly, false), &dirs.root);
    let (ok, out) = run(&read_only, &dirs, &script).await;
    assert!(!ok, "{out}");
}

#[tokio::test]
async fn read_only_writes_nothing_but_its_private_tmpdir() {
    let dirs = dirs();
    let sandbox = Sandbox::new(policy(SandboxMode::ReadOnly, false), &dirs.root);
    let (ok, out) = run(&sandbox, &dirs, "echo x > in_root").await;
    assert!(!ok && out.contains("Permission denied"), "{out}");
    assert!(!dirs.root.join("in_root").exists());
    let (ok, out) = run(
        &sandbox,
        &dirs,
        "echo x > \"$TMPDIR/scratch\" && cat \"$TMPDIR/scratch\" && echo \"$TMPDIR\"",
    )
    .await;
    assert!(ok && out.starts_with("x\n"), "{out}");
    assert!(!out.contains(dirs.root.to_str().unwrap()), "{out}");
}

fn git(root: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(root)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

#[tokio::test]
async fn git_hooks_git_config_and_nanohermes_are_not_writable() {
    let dirs = dirs();
    git(&dirs.root, &["init", "-q"]);
    std::fs::create_dir(dirs.root.join(".nanohermes")).unwrap();
    std::fs::write(dirs.root.join(".nanohermes/config.toml"), "model = \"m\"\n").unwrap();
    let config_before = std::fs::read_to_string(dirs.root.join(".git/config")).unwrap();
    let sandbox = workspace_write(&dirs);
    for script in [
        "printf '#!/bin/sh\\necho pwned\\n' > .git/hooks/pre-commit",
        "cd .git/hooks && echo x > pre-commit",
        "cp /bin/true .git/hooks/post-checkout",
        "echo '[core] hooksPath = /tmp/evil' >> .git/config",
        "git config core.hooksPath /tmp/evil",
        "rm -f .git/config",
        "mv .git/hooks .git/old-hooks",
        "mv .git .git-old",
        "rm -rf .git",
        "echo 'hooks = 1' >> .nanohermes/config.toml",
        "mkdir .nanohermes/sessions",
        "mv .nanohermes .nh-old",
    ] {
        let (ok, out) = run(&sandbox, &dirs, script).await;
        assert!(!ok, "{script}: {out}");
    }
    assert!(!dirs.root.join(".git/hooks/pre-commit").exists());
    assert!(!dirs.root.join(".git/hooks/post-checkout").exists());
    assert!(dirs.root.join(".git/hooks").is_dir());
    assert_eq!(
        std::fs::read_to_string(dirs.root.join(".git/config")).unwrap(),
        config_before
    );
    assert_eq!(
        std::fs::read_to_string(dirs.root.join(".nanohermes/config.toml")).unwrap(),
        "model = \"m\"\n"
    );
    assert!(!dirs.root.join(".nanohermes/sessions").exists());
}

#[tokio::test]
async fn a_build_and_a_commit_still_run_inside_the_sandbox() {
    let dirs = dirs();
    git(&dirs.root, &["init", "-q"]);
    let sandbox = workspace_write(&dirs);
    let (ok, out) = run(
        &sandbox,
        &dirs,
        "mkdir build && echo x > build/out && cat build/out",
    )
    .await;
    assert!(ok && out == "x\n", "{out}");
    let commit = "echo hi > a.txt && git add a.txt && \
                  git -c user.name=t -c user.email=t@t commit -q -m first && git log --oneline | wc -l";
    // A command cannot write git's state; the git server's commit can.
    let (ok, out) = run(&sandbox, &dirs, commit).await;
    assert!(!ok && out.contains("Read-only file system"), "{out}");
    let note = sandbox.explain_failure(ok, &out).unwrap();
    assert!(note.contains("git_commit"), "{note}");
    let (ok, out) = run(&sandbox.for_git_commit(), &dirs, commit).await;
    assert!(ok && out.trim() == "1", "{out}");
}

#[tokio::test]
async fn a_nanohermes_dir_that_did_not_exist_is_made_and_protected() {
    let dirs = dirs();
    let sandbox = workspace_write(&dirs);
    let (ok, _) = run(
        &sandbox,
        &dirs,
        "mkdir -p .nanohermes && echo 'x' > .nanohermes/config.toml",
    )
    .await;
    assert!(!ok);
    assert!(dirs.root.join(".nanohermes").is_dir());
    assert!(!dirs.root.join(".nanohermes/config.toml").exists());
}

/// A `bash` command connecting to 127.0.0.1:`port` (bash's /dev/tcp).
fn connect_script(port: u16) -> String {
    format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected'")
}

#[tokio::test]
async fn the_network_is_refused_when_off_and_allowed_when_on() {
    let dirs = dirs();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let off = workspace_write(&dirs);
    let (ok, out) = run(&off, &dirs, &connect_script(port)).await;
    assert!(!ok && out.contains("Permission denied"), "{out}");
    let note = off.explain_failure(ok, &out).unwrap();
    assert!(
        note.contains("network off") && note.contains("sandbox_network = true"),
        "{note}"
    );

    let on = Sandbox::new(policy(SandboxMode::WorkspaceWrite, true), &dirs.root);
    let (ok, out) = run(&on, &dirs, &connect_script(port)).await;
    assert!(ok && out == "connected\n", "{out}");
}

#[tokio::test]
async fn a_command_cannot_signal_processes_outside_its_own_tree() {
    let dirs = dirs();
    let sandbox = workspace_write(&dirs);
    let me = std::process::id();
    let (ok, out) = run(&sandbox, &dirs, &format!("kill -0 {me}")).await;
    assert!(!ok, "{out}");
    let (ok, out) = run(&sandbox, &dirs, "sleep 5 & kill $! && echo killed").await;
    assert!(ok && out == "killed\n", "{out}");
}

#[tokio::test]
async fn a_refused_write_gets_a_note_naming_the_mode_and_the_keys() {
    let dirs = dirs();
    let sandbox = workspace_write(&dirs);
    let (ok, out) = run(
        &sandbox,
        &dirs,
        &format!("echo x > '{}/f'", dirs.sibling.display()),
    )
    .await;
    let note = sandbox.explain_failure(ok, &out).unwrap();
    assert!(
        note.contains("(workspace-write, network off)") && note.contains("sandbox_writable"),
        "{note}"
    );
    assert_eq!(sandbox.explain_failure(true, &out), None);
    assert_eq!(sandbox.explain_failure(false, "error: no such file"), None);
}

fn old_kernel() -> Support {
    Support {
        landlock_abi: 0,
        namespaces: Err("simulated".to_owned()),
    }
}

#[tokio::test]
async fn without_landlock_refuse_refuses_with_a_clear_message() {
    let dirs = dirs();
    let sandbox = Sandbox::with_support(
        policy(SandboxMode::WorkspaceWrite, false),
        &dirs.root,
        old_kernel(),
    );
    assert!(
        sandbox.status().contains("NOT enforced"),
        "{}",
        sandbox.status()
    );
    assert!(sandbox.startup_warning().is_some());
    let mut command = spawn::command("true", &EnvPolicy::ScrubSecrets);
    let refusal = sandbox.confine(&mut command).unwrap_err();
    assert!(
        refusal.starts_with(
            "the command was not run: the sandbox (workspace-write, network off) cannot be enforced"
        ) && refusal.contains("no Landlock")
            && refusal.contains("sandbox_unavailable = \"warn\""),
        "{refusal}"
    );
}

#[tokio::test]
async fn without_landlock_warn_runs_unconfined_and_says_so() {
    let dirs = dirs();
    let warn = SandboxPolicy {
        when_unavailable: WhenUnavailable::Warn,
        ..policy(SandboxMode::WorkspaceWrite, false)
    };
    let sandbox = Sandbox::with_support(warn, &dirs.root, old_kernel());
    let target = dirs.sibling.join("f");
    let mut command = spawn::command("sh", &EnvPolicy::ScrubSecrets);
    command
        .arg("-c")
        .arg(format!("echo x > '{}'", target.display()))
        .current_dir(&dirs.root);
    let Ok(Confined::Partly(warning)) = sandbox.confine(&mut command) else {
        panic!("expected a warning");
    };
    assert!(
        warning.starts_with(
            "WARNING: the sandbox (workspace-write, network off) is not fully enforced"
        ),
        "{warning}"
    );
    let (child, _tree) = command.spawn().unwrap();
    assert!(child.wait_with_output().await.unwrap().status.success());
    assert!(target.exists(), "unconfined, as the warning says");
}

#[test]
fn danger_full_access_confines_nothing_and_says_so() {
    let dirs = dirs();
    let sandbox = Sandbox::new(SandboxPolicy::full_access(), &dirs.root);
    assert_eq!(sandbox.status(), "danger-full-access (no sandbox)");
    assert_eq!(sandbox.startup_warning(), None);
}

/// A sandbox made before any command has tried the namespaces (as the
/// servers make theirs at start) assumes them; its first command is the
/// test, and runs fully confined: no write outside the root, none into the
/// git directory. What it found is what the explicit probe finds.
#[tokio::test]
async fn the_first_command_finds_out_what_the_probe_would_and_is_confined_by_it() {
    let dirs = dirs();
    std::fs::create_dir_all(dirs.root.join(".git/hooks")).unwrap();
    let early = Sandbox::new(policy(SandboxMode::WorkspaceWrite, false), &dirs.root);
    assert!(early.missing().is_empty(), "{:?}", early.missing());
    let target = dirs.sibling.join("f");
    let (ok, text) = run(
        &early,
        &dirs,
        &format!(
            "echo x > '{}' || printf x > .git/hooks/pre-commit",
            target.display()
        ),
    )
    .await;
    assert!(
        !ok && !target.exists() && !dirs.root.join(".git/hooks/pre-commit").exists(),
        "a write outside the root or into .git was allowed: {text}"
    );
    assert_eq!(Support::known(), Support::probe());
}
