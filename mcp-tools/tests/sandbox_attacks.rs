//! Attacks on what decides what runs later, from a real `sh` in the real
//! sandbox: the workspace's whole git directory, nested repositories, the
//! `core.hooksPath` directory, every `.nanohermes`, `hooks.json` and
//! `.mcp.json`; the commit and reader profiles; the network namespace (UDP
//! to a socket the test binds on the host's loopback); and a process tree
//! that must die with its waiter, with no marker to find it by.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use mcp_tools::spawn::sandbox::Support;
use mcp_tools::spawn::{
    self, Confined, EnvPolicy, Sandbox, SandboxMode, SandboxPolicy, WhenUnavailable,
};

/// A workspace under the target directory (workspace-write may write the
/// system temp directory) and an outside directory under `$HOME`.
struct Dirs {
    _base: tempfile::TempDir,
    root: PathBuf,
    outside: tempfile::TempDir,
}

fn dirs() -> Dirs {
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = base.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir(&root).unwrap();
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap();
    let outside = tempfile::Builder::new()
        .prefix("nanohermes-attack-")
        .tempdir_in(home)
        .unwrap();
    Dirs {
        _base: base,
        root,
        outside,
    }
}

static OWN_TEMP: std::sync::LazyLock<tempfile::TempDir> =
    std::sync::LazyLock::new(|| tempfile::tempdir().unwrap());

fn policy(mode: SandboxMode, network: bool) -> SandboxPolicy {
    SandboxPolicy {
        mode,
        network,
        temp_dir: Some(OWN_TEMP.path().canonicalize().unwrap()),
        ..SandboxPolicy::default()
    }
}

/// Runs `script` with `sh -c` in `root` under `sandbox`: whether it exited
/// 0, and its stdout and stderr.
async fn run(sandbox: &Sandbox, root: &Path, script: &str) -> (bool, String) {
    let mut command = spawn::command("sh", &EnvPolicy::ScrubSecrets);
    command
        .arg("-c")
        .arg(script)
        .current_dir(root)
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

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A repository with everything an attacker would want to plant into:
/// `core.hooksPath = .husky`, a submodule's git dir, a nested repository,
/// a nested `.nanohermes`, a `hooks.json` and a `.mcp.json`.
fn planted_workspace(root: &Path) {
    git(root, &["init", "-q"]);
    git(root, &["config", "core.hooksPath", ".husky"]);
    for dir in [
        ".husky",
        ".git/modules/m",
        "nested",
        "sub/.nanohermes",
        "pkg",
    ] {
        std::fs::create_dir_all(root.join(dir)).unwrap();
    }
    std::fs::write(root.join(".git/modules/m/config"), "[core]\n").unwrap();
    git(&root.join("nested"), &["init", "-q"]);
    std::fs::write(root.join("sub/.nanohermes/config.toml"), "a = 1\n").unwrap();
    std::fs::write(root.join("pkg/hooks.json"), "{}\n").unwrap();
    std::fs::write(root.join(".mcp.json"), "{}\n").unwrap();
}

/// Every file and directory under `root`, with contents: what must not change.
fn snapshot(root: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
    let mut all = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                stack.push(path.clone());
                all.push((path, None));
            } else {
                all.push((path.clone(), std::fs::read(&path).ok()));
            }
        }
    }
    all.sort();
    all
}

/// The attacks: each writes (or swaps away) something that decides what
/// runs later.
const ATTACKS: &[&str] = &[
    "echo /elsewhere > .git/commondir",
    "echo '[core] fsmonitor = evil' > .git/config.worktree",
    "echo '* filter=evil' > .git/info/attributes",
    "echo '[core] worktree = /' >> .git/modules/m/config",
    "echo x > .git/objects/x",
    "echo ref > .git/refs/heads/evil",
    "echo ref: refs/heads/evil > .git/HEAD",
    "printf '#!/bin/sh\\necho pwned\\n' > .husky/pre-commit",
    "rm -rf .husky",
    "echo '[core] hooksPath = /tmp' >> nested/.git/config",
    "printf '#!/bin/sh\\n' > nested/.git/hooks/pre-commit",
    "mv nested nested-old && mkdir -p nested/.git && echo x > nested/.git/config",
    "echo 'hooks = 1' > sub/.nanohermes/config.toml",
    "mv sub sub-old && mkdir -p sub/.nanohermes && echo x > sub/.nanohermes/config.toml",
    "echo '{\"hooks\": 1}' > pkg/hooks.json",
    "mv pkg pkg-old",
    "echo '{\"mcpServers\": {}}' > .mcp.json",
    "rm -f .mcp.json",
    "mv .mcp.json mcp-old.json",
    "echo x > .nanohermes/config.toml",
];

#[tokio::test]
async fn a_command_cannot_write_what_decides_what_runs_later() {
    let dirs = dirs();
    planted_workspace(&dirs.root);
    let sandbox = Sandbox::new(policy(SandboxMode::WorkspaceWrite, false), &dirs.root);
    // The first command makes the agent's directory, ignored by git.
    assert!(run(&sandbox, &dirs.root, "true").await.0);
    let before = snapshot(&dirs.root);
    for attack in ATTACKS {
        let (ok, out) = run(&sandbox, &dirs.root, attack).await;
        assert!(!ok, "{attack}: allowed: {out}");
        assert!(
            out.contains("Read-only file system")
                || out.contains("busy")
                || out.contains("Permission denied"),
            "{attack}: {out}"
        );
        assert_eq!(snapshot(&dirs.root), before, "{attack} changed the tree");
    }
    assert_eq!(
        std::fs::read_to_string(dirs.root.join(".nanohermes/.gitignore")).unwrap(),
        "*\n"
    );
    // Ordinary work still works, next to every protected thing.
    let (ok, out) = run(
        &sandbox,
        &dirs.root,
        "echo a > src.txt && echo b > nested/file && echo c > pkg/other.json \
         && mkdir -p sub/x && echo d > sub/x/y && mv src.txt moved.txt && cat moved.txt",
    )
    .await;
    assert!(ok && out == "a\n", "{out}");
    // And outside the workspace, nothing.
    let target = dirs.outside.path().join("f");
    let (ok, _) = run(
        &sandbox,
        &dirs.root,
        &format!("echo x > '{}'", target.display()),
    )
    .await;
    assert!(!ok && !target.exists());
}

#[tokio::test]
async fn a_refused_write_under_git_points_to_git_commit() {
    let dirs = dirs();
    git(&dirs.root, &["init", "-q"]);
    let sandbox = Sandbox::new(policy(SandboxMode::WorkspaceWrite, false), &dirs.root);
    let (ok, out) = run(&sandbox, &dirs.root, "echo x > a && git add a").await;
    assert!(!ok, "{out}");
    let note = sandbox.explain_failure(ok, &out).unwrap();
    assert!(
        note.contains("use the git_commit tool") && note.contains("ask the user"),
        "{note}"
    );
}

#[tokio::test]
async fn a_commit_writes_git_state_but_not_what_git_runs() {
    let dirs = dirs();
    planted_workspace(&dirs.root);
    let commit =
        Sandbox::new(policy(SandboxMode::WorkspaceWrite, false), &dirs.root).for_git_commit();
    let (ok, out) = run(
        &commit,
        &dirs.root,
        "echo hi > a.txt && git add a.txt && \
         git -c user.name=t -c user.email=t@t commit -q -m first && git log --oneline | wc -l",
    )
    .await;
    assert!(ok && out.trim() == "1", "{out}");
    // (A `commondir` or `config.worktree` that does not exist yet is not
    // protected here: git must create files at the top of its directory.)
    for attack in [
        "echo '* filter=evil' > .git/info/attributes",
        "echo x >> .git/modules/m/config",
        "echo x >> .git/config",
        "printf '#!/bin/sh\\n' > .git/hooks/post-commit",
        "printf '#!/bin/sh\\n' > .husky/post-commit",
        "echo x >> nested/.git/config",
        "echo x > pkg/hooks.json",
        "mv .git .git-old",
    ] {
        let (ok, out) = run(&commit, &dirs.root, attack).await;
        assert!(!ok, "{attack}: allowed in the commit's sandbox: {out}");
    }
}

#[tokio::test]
async fn the_reader_writes_nothing_and_has_no_network_even_for_full_access() {
    let dirs = dirs();
    git(&dirs.root, &["init", "-q"]);
    let full = Sandbox::new(SandboxPolicy::full_access(), &dirs.root);
    let reader = full.reader();
    assert_eq!(reader.policy().mode, SandboxMode::ReadOnly);
    assert!(!reader.policy().network);
    assert_eq!(reader.policy().when_unavailable, WhenUnavailable::Warn);
    let (ok, out) = run(&reader, &dirs.root, "git status --short && echo x > f").await;
    assert!(!ok && !dirs.root.join("f").exists(), "{out}");
    let (ok, out) = run(&reader, &dirs.root, "cat /proc/net/dev").await;
    assert!(ok && !out.contains("eth") && out.contains("lo:"), "{out}");
    // A user who asked for refusal keeps it; on a system without the
    // kernel's parts, the reader of a full-access user warns instead.
    let strict = Sandbox::new(policy(SandboxMode::WorkspaceWrite, true), &dirs.root);
    assert_eq!(
        strict.reader().policy().when_unavailable,
        WhenUnavailable::Refuse
    );
    let bare = Support {
        landlock_abi: 0,
        namespaces: Err("simulated".to_owned()),
    };
    let old = Sandbox::with_support(SandboxPolicy::full_access(), &dirs.root, bare).reader();
    let mut command = spawn::command("true", &EnvPolicy::ScrubSecrets);
    assert!(matches!(old.confine(&mut command), Ok(Confined::Partly(_))));
}

/// Sends one UDP datagram to 127.0.0.1:`port` from a sandboxed command
/// (bash's /dev/udp) and reports whether the host's socket received it.
async fn udp_reaches_the_host(sandbox: &Sandbox, root: &Path) -> (bool, String) {
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    let port = socket.local_addr().unwrap().port();
    let (_, out) = run(
        sandbox,
        root,
        &format!("bash -c 'echo leak > /dev/udp/127.0.0.1/{port}'"),
    )
    .await;
    let mut buf = [0u8; 64];
    (socket.recv(&mut buf).is_ok(), out)
}

#[tokio::test]
async fn network_off_stops_udp_and_name_lookups_and_on_lets_them_through() {
    let dirs = dirs();
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly] {
        let off = Sandbox::new(policy(mode, false), &dirs.root);
        let (received, out) = udp_reaches_the_host(&off, &dirs.root).await;
        assert!(!received, "{mode:?}: a datagram left the sandbox: {out}");
        assert!(out.contains("unreachable"), "{out}");
        // No interface but a loopback that is down: no resolver is reachable.
        let (ok, out) = run(
            &off,
            &dirs.root,
            "getent hosts nanohermes-test.example.com || echo failed",
        )
        .await;
        assert!(ok && out.trim() == "failed", "{out}");
        let (_, out) = run(&off, &dirs.root, "cat /proc/net/route; cat /proc/net/dev").await;
        assert!(!out.contains("eth") && !out.contains("00000000\t"), "{out}");
    }
    let on = Sandbox::new(policy(SandboxMode::WorkspaceWrite, true), &dirs.root);
    let (received, out) = udp_reaches_the_host(&on, &dirs.root).await;
    assert!(received, "with the network on, UDP must work: {out}");
}

/// The cost of confining one command on a big tree: the walk for protected
/// paths, `git config` for `core.hooksPath`, the namespaces and the extra
/// fork. Run by hand: `NANOHERMES_BIG_TREE=DIR cargo test -p mcp-tools
/// --test sandbox_attacks cost -- --ignored --nocapture`.
#[tokio::test]
#[ignore = "a measurement: needs NANOHERMES_BIG_TREE"]
#[allow(clippy::print_stdout)] // A measurement prints its figures.
async fn cost_of_one_sandboxed_command_on_a_big_tree() {
    let root = PathBuf::from(std::env::var_os("NANOHERMES_BIG_TREE").unwrap());
    let n = 20;
    for (label, policy) in [
        (
            "workspace-write",
            policy(SandboxMode::WorkspaceWrite, false),
        ),
        ("read-only", policy(SandboxMode::ReadOnly, false)),
        ("danger-full-access", SandboxPolicy::full_access()),
    ] {
        let sandbox = Sandbox::new(policy, &root);
        let mut confine = std::time::Duration::ZERO;
        let started = std::time::Instant::now();
        for _ in 0..n {
            let mut command = spawn::command("true", &EnvPolicy::ScrubSecrets);
            command.current_dir(&root);
            let t = std::time::Instant::now();
            assert!(sandbox.confine(&mut command).is_ok());
            confine += t.elapsed();
            let (child, _tree) = command.spawn().unwrap();
            assert!(child.wait_with_output().await.unwrap().status.success());
        }
        println!(
            "{label}: confine {:?}/command, confine+spawn+wait {:?}/command",
            confine / n,
            started.elapsed() / n
        );
    }
}

/// A repository whose config includes a FIFO nobody writes: finding its
/// `core.hooksPath` must not hang the command's start (git would wait on
/// the FIFO forever); the command runs, bounded. On a thread of its own,
/// so a hang fails the test instead of stopping it.
#[test]
fn a_config_include_that_is_a_fifo_does_not_hang_a_command() {
    let dirs = dirs();
    git(&dirs.root, &["init", "-q"]);
    let fifo = dirs.root.join("included.cfg");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    git(
        &dirs.root,
        &["config", "include.path", fifo.to_str().unwrap()],
    );
    let sandbox = Sandbox::new(policy(SandboxMode::WorkspaceWrite, false), &dirs.root);
    let root = dirs.root.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _ = tx.send(runtime.block_on(run(&sandbox, &root, "echo ran")));
    });
    let ran = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("a FIFO in the repository's config hung the command's start");
    assert_eq!(ran, (true, "ran\n".to_owned()));
}
