//! The attack table: a repository planted so that plain git starts a
//! program (checked first, so no test passes vacuously), then the real
//! `nanohermes-git` binary's read-only tools called over MCP, twice: with
//! the kernel sandbox (as shipped) and with the sandbox simulated away (the
//! hardened environment alone). The program would write a marker OUTSIDE
//! the temp directory; it must never appear. Layouts pointing out of the
//! root must be refused, and nothing outside the root may be printed.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::attack_support::{Outside, Setup, call, every_read_call, git_ok, plain_git, server};
use crate::support::Repo;

/// A planted repository.
struct Trap {
    /// Keeps the temp directories alive.
    _repos: Vec<Repo>,
    outside: Outside,
    /// The workspace root given to the server.
    root: PathBuf,
    /// The marker the planted program writes.
    marker: &'static str,
    /// Every tool must refuse this repository.
    refused: bool,
    /// Text from outside the root that no answer may contain.
    secret: Option<String>,
}

impl Trap {
    fn new(repo: Repo, outside: Outside, marker: &'static str) -> Trap {
        Trap {
            root: repo.path().canonicalize().unwrap(),
            _repos: vec![repo],
            outside,
            marker,
            refused: false,
            secret: None,
        }
    }
}

/// `same.txt` and `changed.txt` committed, a change to `staged.txt` staged.
fn base() -> Repo {
    let repo = Repo::new();
    repo.write("same.txt", "same\n");
    repo.write("changed.txt", "one\n");
    repo.write("staged.txt", "one\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "start"]);
    repo.write("staged.txt", "two\n");
    repo.git(&["add", "staged.txt"]);
    repo
}

/// Makes status and diff read the files again: `same.txt` rewritten with
/// its content (stat-dirty, so it is hashed through any filter),
/// `changed.txt` changed.
fn dirty(dir: &Path) {
    std::fs::write(dir.join("same.txt"), "same\n").unwrap();
    std::fs::write(dir.join("changed.txt"), "changed again\n").unwrap();
}

/// Runs plain git's read commands in `dir` and checks that they fire the
/// trap; then forgets the marker and dirties the files again.
fn check_fires(trap: &Trap, dir: &Path) {
    let mut said = String::new();
    for args in [
        &["status"][..],
        &["diff"],
        &["diff", "--cached"],
        &["diff", "HEAD"],
    ] {
        dirty(dir);
        said.push_str(&plain_git(dir, args));
    }
    assert!(
        trap.outside.fired(trap.marker),
        "the trap {} does not fire for plain git in {}:\n{said}",
        trap.marker,
        dir.display()
    );
    trap.outside.reset(trap.marker);
    dirty(dir);
}

async fn attack(setup: Setup, trap: Trap) {
    let client = server(&trap.root, setup, None).await;
    let mut answers = every_read_call(&client).await;
    if trap.refused {
        let (is_error, text) = call(
            &client,
            "git_commit",
            json!({"message": "x", "paths": ["."]}),
        )
        .await;
        answers.push(("git_commit".into(), is_error, text));
    }
    client.cancel().await.unwrap();
    let shown = format!("{answers:#?}");
    assert!(
        !trap.outside.fired(trap.marker),
        "{setup:?}: a planted program ran: {}\n{shown}",
        std::fs::read_to_string(trap.outside.marker(trap.marker)).unwrap_or_default()
    );
    if let Some(secret) = &trap.secret {
        for (call, _, text) in &answers {
            assert!(
                !text.contains(secret.as_str()),
                "{setup:?}: {call} printed a file outside the root:\n{text}"
            );
        }
    }
    for (call, is_error, text) in &answers {
        if trap.refused {
            assert!(
                *is_error && text.starts_with("refused: "),
                "{setup:?}: {call} was not refused:\n{text}"
            );
        } else if call.starts_with("git_status") || call == "git_diff {}" {
            assert!(!is_error, "{setup:?}: {call} failed:\n{text}");
        }
    }
}

macro_rules! attack {
    ($name:ident, $build:expr) => {
        mod $name {
            use super::*;

            #[tokio::test]
            async fn sandboxed() {
                attack(Setup::Sandboxed, $build()).await;
            }

            #[tokio::test]
            async fn hardening_alone() {
                attack(Setup::HardeningAlone, $build()).await;
            }
        }
    };
}

/// A filter driver named `a=b` (`-c filter.a=b.clean=` would set
/// `filter.a`), named by `.gitattributes` and `.git/info/attributes`.
fn filter_named_a_eq_b() -> Trap {
    let repo = base();
    let outside = Outside::new();
    let program = outside.program("filter");
    repo.write(".gitattributes", "* filter=a=b\n");
    repo.write(".git/info/attributes", "* filter=a=b\n");
    repo.git(&["config", "filter.a=b.clean", &program]);
    repo.git(&["config", "filter.a=b.smudge", &program]);
    let trap = Trap::new(repo, outside, "filter");
    check_fires(&trap, &trap.root.clone());
    trap
}
attack!(
    filter_named_a_eq_b_in_config_and_attributes,
    filter_named_a_eq_b
);

/// A filter named only by `.git/info/attributes` (read whatever the
/// attribute source), defined in a file the config includes.
fn filter_via_info_attributes() -> Trap {
    let repo = base();
    let outside = Outside::new();
    let program = outside.program("filter");
    repo.write(".git/info/attributes", "* filter=ev\n");
    repo.write(
        ".git/included.cfg",
        &format!("[filter \"ev\"]\n\tclean = {program}\n"),
    );
    repo.git(&["config", "include.path", "included.cfg"]);
    let trap = Trap::new(repo, outside, "filter");
    check_fires(&trap, &trap.root.clone());
    trap
}
attack!(
    filter_via_info_attributes_and_an_include,
    filter_via_info_attributes
);

fn fsmonitor() -> Trap {
    let repo = base();
    let outside = Outside::new();
    repo.git(&["config", "core.fsmonitor", &outside.program("fsmonitor")]);
    let trap = Trap::new(repo, outside, "fsmonitor");
    check_fires(&trap, &trap.root.clone());
    trap
}
attack!(fsmonitor_hook, fsmonitor);

fn textconv() -> Trap {
    let repo = base();
    let outside = Outside::new();
    repo.write(".gitattributes", "* diff=ev\n");
    repo.write(".git/info/attributes", "* diff=ev\n");
    repo.git(&["config", "diff.ev.textconv", &outside.program("textconv")]);
    let trap = Trap::new(repo, outside, "textconv");
    check_fires(&trap, &trap.root.clone());
    trap
}
attack!(textconv_driver, textconv);

fn external_diff() -> Trap {
    let repo = base();
    let outside = Outside::new();
    let program = outside.program("extdiff");
    repo.write(".git/info/attributes", "* diff=ev\n");
    repo.git(&["config", "diff.ev.command", &program]);
    repo.git(&["config", "diff.external", &program]);
    let trap = Trap::new(repo, outside, "extdiff");
    check_fires(&trap, &trap.root.clone());
    trap
}
attack!(external_diff_driver, external_diff);

fn hook(name: &str, script: &str) {
    use std::os::unix::fs::PermissionsExt;
    let path = Path::new(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\nexec '{script}' \"$@\"\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `post-index-change` runs whenever git writes the index, which a plain
/// `git status` does to refresh stat information.
fn post_index_change_hook() -> Trap {
    let repo = base();
    let outside = Outside::new();
    let target = repo.path().join(".git/hooks/post-index-change");
    hook(target.to_str().unwrap(), &outside.program("hook"));
    let trap = Trap::new(repo, outside, "hook");
    check_fires(&trap, &trap.root.clone());
    trap
}
attack!(post_index_change_hook_in_git_hooks, post_index_change_hook);

fn hooks_path() -> Trap {
    let repo = base();
    let outside = Outside::new();
    let target = repo.path().join(".husky/post-index-change");
    hook(target.to_str().unwrap(), &outside.program("hook"));
    repo.git(&["config", "core.hooksPath", ".husky"]);
    let trap = Trap::new(repo, outside, "hook");
    check_fires(&trap, &trap.root.clone());
    trap
}
attack!(hook_in_a_core_hooks_path_directory, hooks_path);

/// Names the filter `ev` for every file in the git directory's
/// `info/attributes` too, which no attribute source switches off: only
/// not entering the repository keeps its filter from running.
fn name_filter_in_info_attributes(work_tree: &Path) {
    let path = git_ok(work_tree, &["rev-parse", "--git-path", "info/attributes"]);
    let path = work_tree.join(path.trim());
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "* filter=ev\n").unwrap();
}

/// A repository at `dir` (inside the outer one) with its own filter and
/// fsmonitor; plain git inside it fires them.
fn nested_trap(outer: &Repo, outside: &Outside, dir: &str) -> PathBuf {
    let nested = outer.path().join(dir);
    std::fs::create_dir_all(&nested).unwrap();
    git_ok(&nested, &["init", "-q", "-b", "main"]);
    std::fs::write(nested.join(".gitattributes"), "* filter=ev\n").unwrap();
    std::fs::write(nested.join("same.txt"), "same\n").unwrap();
    std::fs::write(nested.join("changed.txt"), "one\n").unwrap();
    git_ok(&nested, &["add", "-A"]);
    git_ok(
        &nested,
        &[
            "-c",
            "user.name=n",
            "-c",
            "user.email=n@e",
            "commit",
            "-qm",
            "n",
        ],
    );
    name_filter_in_info_attributes(&nested);
    let program = outside.program("nested");
    git_ok(&nested, &["config", "filter.ev.clean", &program]);
    git_ok(&nested, &["config", "core.fsmonitor", &program]);
    nested
}

/// An untracked repository inside the workspace (a command can make one).
fn nested_untracked_repository() -> Trap {
    let repo = base();
    let outside = Outside::new();
    let nested = nested_trap(&repo, &outside, "vendor/nested");
    let trap = Trap::new(repo, outside, "nested");
    check_fires(&trap, &nested);
    trap
}
attack!(
    nested_untracked_repository_with_a_filter,
    nested_untracked_repository
);

/// The same repository recorded as a gitlink (what `git add .` makes of
/// an embedded repository): plain `git status` enters it.
fn embedded_repository() -> Trap {
    let repo = base();
    let outside = Outside::new();
    let nested = nested_trap(&repo, &outside, "embedded");
    repo.git(&["add", "embedded"]);
    repo.git(&["commit", "-qm", "embed", "--", "embedded"]);
    let trap = Trap::new(repo, outside, "nested");
    check_fires(&trap, &trap.root.clone());
    dirty(&nested);
    trap
}
attack!(embedded_repository_with_a_filter, embedded_repository);

fn submodule() -> Trap {
    let source = Repo::new();
    source.write(".gitattributes", "* filter=ev\n");
    source.commit_file("same.txt", "same\n", "sub");
    let repo = base();
    let outside = Outside::new();
    repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        source.path().to_str().unwrap(),
        "sub",
    ]);
    repo.git(&["commit", "-qm", "add sub", "--", "sub", ".gitmodules"]);
    let sub = repo.path().join("sub");
    name_filter_in_info_attributes(&sub);
    let program = outside.program("submodule");
    git_ok(&sub, &["config", "filter.ev.clean", &program]);
    git_ok(&sub, &["config", "core.fsmonitor", &program]);
    let mut trap = Trap::new(repo, outside, "submodule");
    trap._repos.push(source);
    check_fires(&trap, &trap.root.clone());
    dirty(&sub);
    trap
}
attack!(submodule_with_a_filter, submodule);

/// A repository declaring a partial clone whose staged blob is missing: a
/// diff would fetch it through `core.sshCommand`.
fn partial_clone() -> Trap {
    let repo = base();
    let outside = Outside::new();
    let blob = repo.git(&["rev-parse", ":staged.txt"]).trim().to_owned();
    std::fs::remove_file(
        repo.path()
            .join(".git/objects")
            .join(&blob[..2])
            .join(&blob[2..]),
    )
    .unwrap();
    repo.git(&["config", "extensions.partialClone", "origin"]);
    repo.git(&["config", "remote.origin.url", "ssh://example.invalid/x"]);
    repo.git(&["config", "remote.origin.promisor", "true"]);
    repo.git(&["config", "core.sshCommand", &outside.failing_program("ssh")]);
    let trap = Trap::new(repo, outside, "ssh");
    check_fires(&trap, &trap.root.clone());
    trap
}
attack!(partial_clone_fetching_through_ssh_command, partial_clone);

/// A shipped `.git` whose work tree is `/`: a file outside the root is
/// tracked and changed, so plain `git diff` prints it.
fn worktree_is_slash() -> Trap {
    let repo = Repo::new();
    let outside = Outside::new();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "TOPSECRET-one\n").unwrap();
    let git_dir = repo.path().join(".git");
    let relative = secret
        .strip_prefix("/")
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let at_slash = |args: &[&str]| {
        let mut all = vec!["--git-dir", git_dir.to_str().unwrap(), "--work-tree", "/"];
        all.extend_from_slice(args);
        git_ok(Path::new("/"), &all);
    };
    at_slash(&["add", "--", &relative]);
    at_slash(&["commit", "-qm", "steal"]);
    repo.git(&["config", "core.worktree", "/"]);
    std::fs::write(&secret, "TOPSECRET-two\n").unwrap();
    let plain = plain_git(repo.path(), &["diff"]);
    assert!(plain.contains("TOPSECRET-two"), "plain git: {plain}");
    let mut trap = Trap::new(repo, outside, "none");
    trap.refused = true;
    trap.secret = Some("TOPSECRET".into());
    trap
}
attack!(core_worktree_pointing_at_slash, worktree_is_slash);

/// `.git/commondir` naming a git directory outside the workspace, whose
/// config defines a filter the work tree's `.gitattributes` names.
fn commondir_outside() -> Trap {
    let repo = Repo::new();
    repo.write(".gitattributes", "* filter=ev\n");
    repo.commit_file("same.txt", "same\n", "start");
    let outside = Outside::new();
    let common = outside.path().join("common.git");
    std::fs::create_dir_all(&common).unwrap();
    let git_dir = repo.path().join(".git");
    for part in ["objects", "refs", "config"] {
        std::fs::rename(git_dir.join(part), common.join(part)).unwrap();
    }
    std::fs::write(git_dir.join("commondir"), format!("{}\n", common.display())).unwrap();
    let program = outside.program("common");
    git_ok(repo.path(), &["config", "filter.ev.clean", &program]);
    assert!(common.join("config").exists() && !git_dir.join("config").exists());
    let mut trap = Trap::new(repo, outside, "common");
    trap.refused = true;
    check_fires(&trap, &trap.root.clone());
    trap
}
attack!(commondir_pointing_outside_the_root, commondir_outside);

/// A filter defined in `.git/config.worktree` (read when
/// `extensions.worktreeConfig` is on), named by `.git/info/attributes`.
fn filter_in_config_worktree() -> Trap {
    let repo = base();
    let outside = Outside::new();
    repo.write(".git/info/attributes", "* filter=ev\n");
    repo.git(&["config", "extensions.worktreeConfig", "true"]);
    repo.git(&[
        "config",
        "--worktree",
        "filter.ev.clean",
        &outside.program("filter"),
    ]);
    assert!(repo.path().join(".git/config.worktree").exists());
    let trap = Trap::new(repo, outside, "filter");
    check_fires(&trap, &trap.root.clone());
    trap
}
attack!(filter_defined_in_config_worktree, filter_in_config_worktree);
