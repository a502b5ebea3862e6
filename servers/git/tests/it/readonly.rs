//! Attacks through the repository itself: a `.git/config` that makes git
//! start programs, and hooks that look for secrets or leave processes.

use std::path::Path;

use serde_json::json;

use crate::support::{Repo, client, ok};

/// A script that appends its arguments to `marker` and passes stdin
/// through (so a filter still works as a filter).
fn evil_script(dir: &Path, marker: &Path) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("evil.sh");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\necho \"ran $*\" >> '{}'\ncat\n",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// A repository whose config runs `script` from fsmonitor, an external
/// diff, a textconv driver and a filter driver; `a.txt` is modified and
/// stat-dirty, so status and diff have to hash it.
fn booby_trapped(script: &str) -> Repo {
    let repo = Repo::new();
    repo.write(".gitattributes", "* filter=evil diff=evil\n");
    repo.commit_file("a.txt", "one\n", "first");
    repo.commit_file("a.txt", "two\n", "second");
    for (key, value) in [
        ("core.fsmonitor", script),
        ("diff.external", script),
        ("diff.evil.textconv", script),
        ("diff.evil.command", script),
        ("filter.evil.clean", script),
        ("filter.evil.smudge", script),
        ("log.showSignature", "true"),
        ("gpg.program", script),
    ] {
        repo.git(&["config", key, value]);
    }
    repo.write("a.txt", "three\n");
    repo
}

#[tokio::test]
async fn read_only_tools_run_nothing_the_repository_configures() {
    let scripts = tempfile::tempdir().unwrap();
    let marker = scripts.path().join("ran");
    let script = evil_script(scripts.path(), &marker);
    let repo = booby_trapped(&script);

    // The trap works: plain git runs the script.
    repo.git(&["status"]);
    repo.git(&["diff"]);
    assert!(marker.exists(), "the booby trap did not fire for plain git");
    std::fs::remove_file(&marker).unwrap();
    repo.write("a.txt", "four\n");

    let client = client(repo.path()).await;
    ok(&client, "git_status", json!({})).await;
    let diff = ok(&client, "git_diff", json!({})).await;
    assert!(diff.contains("+four"), "{diff}");
    ok(
        &client,
        "git_diff",
        json!({"path": "a.txt", "against": "HEAD~1"}),
    )
    .await;
    ok(&client, "git_diff", json!({"staged": true})).await;
    ok(&client, "git_log", json!({})).await;
    ok(&client, "git_log", json!({"path": "a.txt"})).await;
    assert!(
        !marker.exists(),
        "a read-only tool ran a configured program:\n{}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
}

#[allow(unsafe_code)]
fn set_secret_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for (name, value) in [
            ("OPENAI_API_KEY", "sk-leak"),
            ("GITHUB_TOKEN", "ghp-leak"),
            ("ORDINARY_SETTING", "plain"),
        ] {
            // SAFETY: set once under a `Once`; the other tests of this
            // binary only read the environment when they spawn git.
            unsafe { std::env::set_var(name, value) };
        }
    });
}

#[tokio::test]
async fn a_commit_still_runs_hooks_and_they_get_no_secrets() {
    set_secret_env();
    let repo = Repo::new();
    let dump = repo.path().join(".git/hook-env");
    repo.hook(
        "pre-commit",
        &format!("#!/bin/sh\nenv > '{}'\n", dump.display()),
    );
    repo.write("a.txt", "one\n");
    let client = client(repo.path()).await;
    ok(
        &client,
        "git_commit",
        json!({"message": "add a", "paths": ["a.txt"]}),
    )
    .await;
    let env = std::fs::read_to_string(&dump).expect("the pre-commit hook did not run");
    assert!(
        !env.contains("OPENAI_API_KEY") && !env.contains("-leak"),
        "{env}"
    );
    assert!(!env.contains("GITHUB_TOKEN"), "{env}");
    assert!(
        env.contains("ORDINARY_SETTING=plain") && env.contains("PATH="),
        "{env}"
    );
}

#[tokio::test]
async fn nothing_a_hook_starts_outlives_the_commit() {
    let repo = Repo::new();
    let token = format!("300.{}77", std::process::id());
    repo.hook(
        "pre-commit",
        &format!("#!/bin/sh\nsetsid sleep {token} &\n(sh -c 'sleep {token} &' &)\nsleep 0.3\n"),
    );
    repo.write("a.txt", "one\n");
    let client = client(repo.path()).await;
    ok(
        &client,
        "git_commit",
        json!({"message": "add a", "paths": ["a.txt"]}),
    )
    .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !with_token(&token).is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        with_token(&token).is_empty(),
        "left behind: {:?}",
        with_token(&token)
    );
}

fn with_token(token: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = stat
            .rfind(')')
            .is_none_or(|i| stat[i + 2..].starts_with('Z'));
        if !zombie && cmdline.split(|b| *b == 0).any(|a| a == token.as_bytes()) {
            found.push(pid);
        }
    }
    found
}
