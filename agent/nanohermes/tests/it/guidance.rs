//! Project guidance on real directories: AGENTS.md layering from the home
//! and every directory down to the workspace, symlinks counted once,
//! CLAUDE.md fallbacks, NANOHERMES.md, the 20 000-char cap, skills; and
//! through the real binary, what the first request carries and the `skill`
//! tool.

use std::path::Path;
use std::time::Duration;

use nanohermes_core::prompt::{self, Guidance, GuidanceSources, guidance};
use serde_json::json;

use crate::support::history::assert_requests_valid;
use crate::support::mock_model::{MockModel, call, text, tool_calls};
use crate::support::tool_result;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn sources(home: &Path) -> GuidanceSources {
    GuidanceSources {
        home: Some(home.to_path_buf()),
        ..GuidanceSources::default()
    }
}

fn rendered(workspace: &Path, sources: &GuidanceSources) -> (Guidance, String) {
    let guidance = prompt::load(workspace, sources);
    let prompt = prompt::system_prompt(workspace, &guidance);
    (guidance, prompt)
}

fn position(prompt: &str, needle: &str) -> usize {
    prompt
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} missing from:\n{prompt}"))
}

#[test]
fn agents_md_layers_from_home_then_outermost_to_the_workspace_then_nanohermes_md() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let workspace = root.path().join("outer/inner/ws");
    std::fs::create_dir_all(&workspace).unwrap();
    write(&home.join("AGENTS.md"), "RULE-HOME");
    write(&root.path().join("outer/AGENTS.md"), "RULE-OUTER");
    write(&root.path().join("outer/inner/ws/AGENTS.md"), "RULE-WS");
    write(&workspace.join("NANOHERMES.md"), "RULE-NANOHERMES");
    let workspace = workspace.canonicalize().unwrap();

    let (guidance, prompt) = rendered(&workspace, &sources(&home));
    assert!(guidance.warnings.is_empty(), "{:?}", guidance.warnings);
    assert_eq!(guidance.docs.len(), 4, "{:?}", guidance.docs);
    let order: Vec<usize> = ["RULE-HOME", "RULE-OUTER", "RULE-WS", "RULE-NANOHERMES"]
        .iter()
        .map(|rule| position(&prompt, rule))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}\n{prompt}");
    assert!(position(&prompt, "# Project guidance") < order[0]);
    // Each file is headed by its path, so the model knows where a rule applies.
    assert!(prompt.contains(&format!("## {}\n", workspace.join("AGENTS.md").display())));
}

#[test]
fn an_agents_md_reached_through_a_symlink_is_counted_once_and_one_leading_out_is_refused() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let workspace = root.path().join("outer/ws");
    std::fs::create_dir_all(workspace.join("docs")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    write(&root.path().join("outer/AGENTS.md"), "SHARED-RULE");
    write(&workspace.join("docs/agents.md"), "WS-RULE");
    // Inside its own tree: the workspace's AGENTS.md is its docs file, and
    // NANOHERMES.md is the same file again.
    std::os::unix::fs::symlink("docs/agents.md", workspace.join("AGENTS.md")).unwrap();
    std::os::unix::fs::symlink("AGENTS.md", workspace.join("NANOHERMES.md")).unwrap();
    // Out of its tree: the home's AGENTS.md leads outside NANOHERMES_HOME.
    std::os::unix::fs::symlink(root.path().join("outer/AGENTS.md"), home.join("AGENTS.md"))
        .unwrap();
    let workspace = workspace.canonicalize().unwrap();

    let (guidance, prompt) = rendered(&workspace, &sources(&home));
    assert_eq!(guidance.docs.len(), 2, "{:?}", guidance.docs);
    assert_eq!(prompt.matches("SHARED-RULE").count(), 1, "{prompt}");
    assert_eq!(prompt.matches("WS-RULE").count(), 1, "{prompt}");
    assert_eq!(guidance.docs[0].path, root.path().join("outer/AGENTS.md"));
    assert_eq!(guidance.docs[1].path, workspace.join("AGENTS.md"));
    assert_eq!(guidance.warnings.len(), 1, "{:?}", guidance.warnings);
    assert!(
        guidance.warnings[0].starts_with(&format!(
            "skipped {}: it leads to",
            home.join("AGENTS.md").display()
        )),
        "{:?}",
        guidance.warnings
    );
}

#[test]
fn claude_md_is_read_only_where_there_is_no_agents_md_and_the_names_are_configurable() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("home");
    let workspace = root.path().join("outer/ws");
    write(&root.path().join("outer/AGENTS.md"), "OUTER-AGENTS");
    write(&root.path().join("outer/CLAUDE.md"), "OUTER-CLAUDE");
    write(&workspace.join("CLAUDE.md"), "WS-CLAUDE");
    write(&workspace.join("GUIDE.md"), "WS-GUIDE");
    let workspace = workspace.canonicalize().unwrap();

    let (_, prompt) = rendered(&workspace, &sources(&home));
    assert!(
        prompt.contains("OUTER-AGENTS") && prompt.contains("WS-CLAUDE"),
        "{prompt}"
    );
    assert!(
        !prompt.contains("OUTER-CLAUDE"),
        "AGENTS.md wins in its directory"
    );
    assert!(!prompt.contains("WS-GUIDE"));

    let configured = GuidanceSources {
        fallback_filenames: vec!["GUIDE.md".into(), "CLAUDE.md".into()],
        ..sources(&home)
    };
    let (_, prompt) = rendered(&workspace, &configured);
    assert!(
        prompt.contains("WS-GUIDE") && !prompt.contains("WS-CLAUDE"),
        "{prompt}"
    );

    let none = GuidanceSources {
        fallback_filenames: Vec::new(),
        ..sources(&home)
    };
    let (guidance, _) = rendered(&workspace, &none);
    assert_eq!(
        guidance.docs.len(),
        1,
        "AGENTS.md only: {:?}",
        guidance.docs
    );
}

#[test]
fn the_whole_guidance_is_capped_at_20000_chars_with_a_notice() {
    let root = tempfile::tempdir().unwrap();
    let workspace = root.path().join("ws");
    // Multi-byte characters: the cap counts characters and never splits one.
    write(&root.path().join("AGENTS.md"), &"é".repeat(15_000));
    write(
        &workspace.join("AGENTS.md"),
        &format!("{}INNER-END", "x".repeat(15_000)),
    );
    let workspace = workspace.canonicalize().unwrap();

    let (guidance, prompt) = rendered(&workspace, &sources(&root.path().join("home")));
    assert_eq!(guidance.docs.len(), 2);
    let base = prompt::system_prompt(&workspace, &Guidance::default());
    let added = prompt[base.len()..].chars().count();
    assert!(
        prompt.contains(guidance::TRUNCATED),
        "{}",
        &prompt[prompt.len() - 200..]
    );
    assert!(
        !prompt.contains("INNER-END"),
        "the innermost file is the one cut"
    );
    assert!(
        (guidance::MAX_GUIDANCE_CHARS..guidance::MAX_GUIDANCE_CHARS + 400).contains(&added),
        "{added} chars added"
    );
}

#[test]
fn an_unreadable_guidance_file_is_skipped_with_a_warning() {
    let root = tempfile::tempdir().unwrap();
    let workspace = root.path().join("ws");
    // A directory named AGENTS.md exists but is no text (root can read any
    // file, so permissions would not make this fail).
    std::fs::create_dir_all(workspace.join("AGENTS.md")).unwrap();
    write(&workspace.join("NANOHERMES.md"), "STILL-READ");
    write(
        &workspace.join(".nanohermes/skills/broken/SKILL.md"),
        "no front matter\n",
    );
    let workspace = workspace.canonicalize().unwrap();

    let (guidance, prompt) = rendered(&workspace, &sources(&root.path().join("home")));
    assert!(prompt.contains("STILL-READ"), "{prompt}");
    assert_eq!(guidance.warnings.len(), 2, "{:?}", guidance.warnings);
    assert!(
        guidance.warnings[0].starts_with(&format!(
            "skipped {}: it is not a regular file but a directory",
            workspace.join("AGENTS.md").display()
        )),
        "{:?}",
        guidance.warnings
    );
    assert!(guidance.warnings[1].contains("has no `description:`"));
    assert!(guidance.skills.is_empty());
}

/// Runs `nanohermes run` on the mock with `home` as NANOHERMES_HOME.
async fn run(
    home: &Path,
    workspace: &Path,
    mock: &MockModel,
    extra: &[&str],
) -> std::process::Output {
    run_with(home, workspace, mock, extra, &[], Duration::from_secs(60)).await
}

/// [`run`] with more environment and a bound on how long it may take.
async fn run_with(
    home: &Path,
    workspace: &Path,
    mock: &MockModel,
    extra: &[&str],
    env: &[(&str, &str)],
    bound: Duration,
) -> std::process::Output {
    let workspace = workspace.display().to_string();
    let mut args = vec!["run", "--workspace", &workspace];
    args.extend(extra);
    args.push("do the task");
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
    command
        .args(&args)
        .env("NANOHERMES_HOME", home)
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "test-key")
        .env("NANOHERMES_MODEL", "main-model")
        .env_remove("NANOHERMES_LOG")
        .envs(env.iter().copied())
        .kill_on_drop(true);
    tokio::time::timeout(bound, command.output())
        .await
        .expect("nanohermes finished")
        .expect("nanohermes ran")
}

fn system_text(request: &crate::support::mock_model::Recorded) -> String {
    request.messages()[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn declared(request: &crate::support::mock_model::Recorded) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_claude_md_only_project_reaches_the_first_request_and_costs_its_size() {
    let home = tempfile::tempdir().unwrap();
    let bare = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let conventions =
        "# Conventions\n- Run `cargo test -p app` before you say done.\n- Never edit generated/.\n";
    write(&project.path().join("CLAUDE.md"), conventions);

    let mut sizes = Vec::new();
    for (workspace, carries) in [(bare.path(), false), (project.path(), true)] {
        let mock = MockModel::start(vec![text(&["done"]).into()]).await;
        let out = run(home.path(), workspace, &mock, &[]).await;
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let requests = mock.requests();
        assert_requests_valid(&requests);
        let system = system_text(&requests[0]);
        assert_eq!(
            system.contains("- Never edit generated/."),
            carries,
            "{system}"
        );
        assert_eq!(system.contains("CLAUDE.md\n"), carries, "{system}");
        assert!(
            !declared(&requests[0]).contains(&"skill".to_owned()),
            "no skills, no tool"
        );
        sizes.push(requests[0].body_len);
    }
    // The guidance costs its own size plus a short header on every request.
    let (without, with) = (sizes[0], sizes[1]);
    eprintln!(
        "first request: {without} bytes without guidance, {with} with a {}-byte CLAUDE.md",
        conventions.len()
    );
    assert!(with > without + conventions.len(), "{with} vs {without}");
    assert!(
        with < without + conventions.len() + 600,
        "{with} vs {without}"
    );
}

#[tokio::test]
async fn a_skill_is_listed_by_name_and_loaded_in_full_by_the_skill_tool_even_read_only() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let body = "---\nname: release\ndescription: Cut a release (tag, changelog, publish)\n---\n\n# Release\n1. Bump the version in Cargo.toml.\n2. STEP-TWO-ONLY-IN-THE-BODY\n";
    write(
        &project.path().join(".nanohermes/skills/release/SKILL.md"),
        body,
    );
    write(
        &home.path().join("skills/notes/SKILL.md"),
        "---\nname: notes\ndescription: \"Write meeting notes\"\n---\nNOTES-BODY\n",
    );
    let mock = MockModel::start(vec![
        tool_calls(&[
            call("call_skill", "skill", json!({"name": "release"})),
            call("call_missing", "skill", json!({"name": "deploy"})),
        ])
        .into(),
        text(&["done"]).into(),
    ])
    .await;

    let out = run(home.path(), project.path(), &mock, &["--read-only"]).await;
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = mock.requests();
    assert_requests_valid(&requests);
    let system = system_text(&requests[0]);
    assert!(system.contains("# Skills\n"), "{system}");
    assert!(
        system.contains(
            "- notes: Write meeting notes\n- release: Cut a release (tag, changelog, publish)\n"
        ),
        "{system}"
    );
    assert!(
        !system.contains("STEP-TWO-ONLY-IN-THE-BODY"),
        "only the list is in the prompt"
    );
    let skill_tool = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "skill")
        .cloned()
        .expect("skill declared in read-only mode");
    assert_eq!(
        skill_tool["function"]["parameters"]["properties"]["name"]["enum"],
        json!(["notes", "release"])
    );

    let messages = requests[1].messages();
    let loaded = tool_result(messages, "call_skill");
    assert!(loaded.starts_with("Skill release ("), "{loaded}");
    assert!(loaded.ends_with(body), "{loaded}");
    assert_eq!(
        tool_result(messages, "call_missing"),
        "ERROR: no skill named deploy; the skills are: notes, release"
    );
}

/// A guidance attack through the real binary: the run must finish within
/// `bound` with exit 0, the model's requests must not contain `secret`,
/// and stderr must name the skipped file in one line.
async fn assert_skipped_and_not_sent(
    workspace: &Path,
    skipped: &Path,
    why: &str,
    env: &[(&str, &str)],
    secret: &str,
) {
    let home = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![text(&["done"]).into()]).await;
    let out = run_with(
        home.path(),
        workspace,
        &mock,
        &[],
        env,
        Duration::from_secs(30),
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let requests = mock.requests();
    assert!(!requests.is_empty());
    for request in &requests {
        let body = serde_json::to_string(&request.body).unwrap();
        assert!(
            !body.contains(secret),
            "the secret reached the model: {body}"
        );
    }
    let line = stderr
        .lines()
        .find(|l| l.contains(&format!("skipped {}", skipped.display())))
        .unwrap_or_else(|| panic!("no skip line for {}: {stderr}", skipped.display()));
    assert!(line.contains(why), "{line}");
}

#[tokio::test]
async fn an_agents_md_linked_to_proc_self_environ_never_reaches_the_model() {
    let project = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/proc/self/environ", project.path().join("AGENTS.md")).unwrap();
    write(&project.path().join("NANOHERMES.md"), "STILL-READ");
    let secret = "environ-secret-5f1c0d";
    let workspace = project.path().canonicalize().unwrap();
    assert_skipped_and_not_sent(
        &workspace,
        &workspace.join("AGENTS.md"),
        "it leads to /proc/",
        &[("NANOHERMES_TEST_SECRET", secret)],
        secret,
    )
    .await;
}

#[tokio::test]
async fn a_nanohermes_md_linked_to_a_credentials_file_outside_the_workspace_is_not_read() {
    // The credentials live outside the temp directory, as a user's do.
    let outside = tempfile::Builder::new()
        .prefix("nanohermes-creds-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let credentials = outside.path().join("credentials.json");
    let secret = "oauth-refresh-token-9a7e";
    std::fs::write(&credentials, format!("{{\"refresh_token\": \"{secret}\"}}")).unwrap();
    let project = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(&credentials, project.path().join("NANOHERMES.md")).unwrap();
    let workspace = project.path().canonicalize().unwrap();
    assert_skipped_and_not_sent(
        &workspace,
        &workspace.join("NANOHERMES.md"),
        &format!(
            "it leads to {}",
            credentials.canonicalize().unwrap().display()
        ),
        &[],
        secret,
    )
    .await;
}

#[tokio::test]
async fn an_agents_md_that_is_a_fifo_does_not_hang_the_run() {
    let project = tempfile::tempdir().unwrap();
    let fifo = project.path().join("AGENTS.md");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let workspace = project.path().canonicalize().unwrap();
    // Nothing ever opens the FIFO's other end: a blocking open would wait
    // forever, so the 30 s bound would fail the test.
    assert_skipped_and_not_sent(
        &workspace,
        &workspace.join("AGENTS.md"),
        "not a regular file but a FIFO",
        &[],
        "never-written",
    )
    .await;
}

#[test]
fn a_project_skill_linked_outside_the_workspace_is_skipped_with_one_line() {
    let outside = tempfile::Builder::new()
        .prefix("nanohermes-skill-")
        .tempdir_in("/var/tmp")
        .unwrap();
    let secret = outside.path().join("SKILL.md");
    write(
        &secret,
        "---\nname: leak\ndescription: SECRET-DESCRIPTION\n---\nSECRET-BODY\n",
    );
    let project = tempfile::tempdir().unwrap();
    let skill = project.path().join(".nanohermes/skills/leak");
    std::fs::create_dir_all(&skill).unwrap();
    std::os::unix::fs::symlink(&secret, skill.join("SKILL.md")).unwrap();
    let workspace = project.path().canonicalize().unwrap();

    let (guidance, prompt) = rendered(&workspace, &sources(&project.path().join("home")));
    assert!(guidance.skills.is_empty(), "{:?}", guidance.skills);
    assert!(!prompt.contains("SECRET"), "{prompt}");
    assert_eq!(guidance.warnings.len(), 1, "{:?}", guidance.warnings);
    assert!(
        guidance.warnings[0].starts_with(&format!(
            "skipped {}: it leads to {}",
            workspace.join(".nanohermes/skills/leak/SKILL.md").display(),
            secret.canonicalize().unwrap().display()
        )),
        "{:?}",
        guidance.warnings
    );
}
