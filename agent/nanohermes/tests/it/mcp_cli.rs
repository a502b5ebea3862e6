//! The configuration wiring and `nanohermes mcp`, through the real binary:
//! a temp `NANOHERMES_HOME`, real config files, the fixture server as a
//! real child process, the scripted model where a model is needed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::support::binary::{Run, output_of};
use crate::support::history::assert_requests_valid;
use crate::support::mock_model::{MockModel, call, text, tool_calls};
use crate::support::{fixture_server, tool_result};

/// A home for the agent and a workspace, both fresh temp dirs.
struct World {
    _root: tempfile::TempDir,
    home: PathBuf,
    workspace: PathBuf,
}

impl World {
    fn new() -> World {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        let home = base.join("nh-home");
        let workspace = base.join("repo");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&workspace).unwrap();
        World {
            _root: root,
            home,
            workspace,
        }
    }

    fn user_config(&self) -> PathBuf {
        self.home.join("config.toml")
    }

    fn write_user(&self, text: &str) {
        std::fs::write(self.user_config(), text).unwrap();
    }

    fn trust(&self) -> String {
        format!(
            "[projects.{:?}]\ntrust_level = \"trusted\"\n",
            self.workspace.display().to_string()
        )
    }

    fn mcp_json_with_fixture(&self) {
        let json = json!({"mcpServers": {"fixture": {
            "command": fixture_server().display().to_string(),
            "args": []
        }}});
        std::fs::write(self.workspace.join(".mcp.json"), json.to_string()).unwrap();
    }

    /// Runs the real binary in the workspace with this home and `env`,
    /// nothing of the caller's model settings.
    async fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
        // `--workspace` first: after `mcp add NAME --` it would be the command's.
        command
            .arg("--workspace")
            .arg(&self.workspace)
            .args(args)
            .env("NANOHERMES_HOME", &self.home)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        for name in [
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "OPENAI_MODEL",
            "NANOHERMES_MODEL",
            "NANOHERMES_FALLBACK_MODEL",
            "NANOHERMES_MODE",
            "NANOHERMES_LOG",
        ] {
            command.env_remove(name);
        }
        command.envs(env.iter().copied());
        output_of(&mut command).await
    }
}

fn on_mock(url: &str) -> Vec<(&str, &str)> {
    vec![
        ("OPENAI_BASE_URL", url),
        ("OPENAI_API_KEY", "test-key"),
        ("NANOHERMES_MODEL", "main-model"),
    ]
}

/// A model that calls `tool` once with `{"text": "through the config"}`, then finishes.
async fn echo_model(tool: &str) -> MockModel {
    MockModel::start(vec![
        tool_calls(&[call(
            "call_echo",
            tool,
            json!({"text": "through the config"}),
        )])
        .into(),
        text(&["done"]).into(),
    ])
    .await
}

fn names(request: &crate::support::mock_model::Recorded) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_trusted_projects_mcp_json_server_is_used_end_to_end() {
    let w = World::new();
    // The fixture's tools and the 22 built-ins pass the 40-tool budget;
    // this test is about the .mcp.json wiring, not deferral.
    w.write_user(&format!("tool_budget_count = 100\n{}", w.trust()));
    w.mcp_json_with_fixture();
    // The user trusts the file's content, as it is now.
    let trusted = w.run(&["trust"], &[]).await;
    assert_eq!(trusted.code, Some(0), "{trusted:#?}");
    let mock = echo_model("fixture__echo").await;
    let url = mock.base_url();

    let run = w
        .run(&["run", "echo through the fixture"], &on_mock(&url))
        .await;

    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(run.stdout, "done\n");
    let requests = mock.requests();
    assert_requests_valid(&requests);
    assert!(names(&requests[0]).contains(&"fixture__echo".to_owned()));
    assert_eq!(
        tool_result(requests[1].messages(), "call_echo"),
        "through the config"
    );
    assert!(!run.stderr.contains("skipped"), "{}", run.stderr);
}

#[tokio::test]
async fn an_untrusted_projects_mcp_json_is_skipped_with_one_line_saying_how_to_trust_it() {
    let w = World::new();
    w.mcp_json_with_fixture();

    let run = w.run(&["tools"], &[]).await;

    assert_eq!(run.code, Some(0), "{run:#?}");
    assert!(!run.stdout.contains("fixture__"), "{}", run.stdout);
    let notices: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("not a trusted project"))
        .collect();
    let ws = w.workspace.display();
    assert_eq!(
        notices,
        [format!(
            "nanohermes: skipped {ws}/.mcp.json because {ws} is not a trusted project; to trust it, run `nanohermes trust --workspace {ws}` (or answer yes when asked on a terminal)"
        )]
    );
    // Without a terminal nothing is asked and nothing is recorded.
    assert!(!w.user_config().exists());

    // The command from the notice trusts it, showing what it trusted.
    let command = notices[0].split('`').nth(1).unwrap();
    let args = shlex::split(command).unwrap();
    assert_eq!(args[..2], ["nanohermes", "trust"]);
    let args: Vec<&str> = args[1..].iter().map(String::as_str).collect();
    let trusting = w.run(&args, &[]).await;
    assert_eq!(trusting.code, Some(0), "{trusting:#?}");
    assert_eq!(
        trusting.stdout,
        format!("trusted {ws} as it is now:\n  {ws}/.mcp.json\n")
    );
    let trusted = w.run(&["tools"], &[]).await;
    assert!(trusted.stdout.contains("fixture__echo"), "{trusted:#?}");
}

#[tokio::test]
async fn on_a_terminal_the_first_run_asks_and_records_the_answer() {
    // util-linux `script` gives the agent a real pseudo-terminal.
    if !Path::new("/usr/bin/script").exists() {
        eprintln!("skipped: /usr/bin/script (util-linux) is not installed");
        return;
    }
    let w = World::new();
    w.mcp_json_with_fixture();
    let inner = shlex::try_join([
        env!("CARGO_BIN_EXE_nanohermes"),
        "--workspace",
        w.workspace.to_str().unwrap(),
        "tools",
    ])
    .unwrap();
    let mut command = tokio::process::Command::new("/usr/bin/script");
    command
        .args(["-qec", &inner, "/dev/null"])
        .env("NANOHERMES_HOME", &w.home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().unwrap();
    // Typed ahead: the terminal keeps it until the question reads it.
    let mut stdin = child.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stdin, b"yes\n")
        .await
        .unwrap();
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("script finished")
        .unwrap();
    let screen = String::from_utf8_lossy(&output.stdout);

    assert!(screen.contains("Trust this project? [y/N]"), "{screen}");
    assert!(
        screen.contains("fixture__echo"),
        "trusted at once: {screen}"
    );
    assert_eq!(
        std::fs::read_to_string(w.user_config()).unwrap(),
        w.trust(),
        "the answer is recorded"
    );
    // Decided: no question next time, even without a terminal.
    let again = w.run(&["tools"], &[]).await;
    assert!(again.stdout.contains("fixture__echo"), "{again:#?}");
    drop(stdin);
}

#[tokio::test]
async fn a_config_with_an_unknown_key_exits_2_naming_the_file_and_line() {
    let w = World::new();
    w.write_user("model = \"m\"\n\n[mcp_servers.gh]\ncommand = \"gh\"\ncomand = \"x\"\n");

    let run = w.run(&["tools"], &[]).await;

    assert_eq!(run.code, Some(2), "{run:#?}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", run.stderr);
    assert!(
        lines[0].starts_with(&format!(
            "nanohermes: error: {}:5: unknown key \"comand\" in [mcp_servers.gh]; allowed keys: builtin, run, command,",
            w.user_config().display()
        )),
        "{}",
        lines[0]
    );
}

#[tokio::test]
async fn a_file_value_survives_when_the_flag_is_not_given_and_the_flag_wins_when_it_is() {
    let w = World::new();
    w.write_user("model = \"from-the-file\"\nmax_iterations = 1\n");
    let script = || {
        vec![
            tool_calls(&[call("c1", "list_dir", json!({}))]).into(),
            text(&["unreached"]).into(),
        ]
    };
    let mock = MockModel::start(script()).await;
    let url = mock.base_url();
    let env = [("OPENAI_BASE_URL", url.as_str())];

    let run = w.run(&["run", "go"], &env).await;

    assert_eq!(
        run.code,
        Some(3),
        "max_iterations = 1 from the file: {run:#?}"
    );
    assert_eq!(mock.requests()[0].body["model"], "from-the-file");

    let mock = MockModel::start(script()).await;
    let url = mock.base_url();
    let env = [("OPENAI_BASE_URL", url.as_str())];
    let run = w
        .run(&["run", "--model", "from-the-flag", "go"], &env)
        .await;
    assert_eq!(run.code, Some(3), "{run:#?}");
    assert_eq!(mock.requests()[0].body["model"], "from-the-flag");
}

#[tokio::test]
async fn api_key_env_names_the_variable_and_no_child_gets_it() {
    let w = World::new();
    let mock = MockModel::start(vec![
        tool_calls(&[call(
            "call_shell",
            "run_command",
            json!({"command": "echo key=${MY_MODEL_AUTH:-absent}"}),
        )])
        .into(),
        text(&["done"]).into(),
    ])
    .await;
    let url = mock.base_url();
    w.write_user(&format!(
        // auto_approve: without a terminal the shell would be denied.
        "api_key_env = \"MY_MODEL_AUTH\"\nbase_url = \"{url}\"\nauto_approve = true\n"
    ));

    let run = w.run(&["run", "go"], &[("MY_MODEL_AUTH", "sk-mine")]).await;

    assert_eq!(run.code, Some(0), "{run:#?}");
    let requests = mock.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer sk-mine"),
        "the key comes from the variable api_key_env names"
    );
    // MY_MODEL_AUTH matches no secret pattern: it is withheld by name.
    let shell = tool_result(requests[1].messages(), "call_shell");
    assert!(shell.contains("key=absent"), "{shell}");
}

#[tokio::test]
async fn mcp_flag_with_a_quoted_path_containing_spaces_works_end_to_end() {
    let w = World::new();
    let dir = w.workspace.join("my tools");
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join("fixture server");
    std::fs::copy(fixture_server(), &program).unwrap();
    let flag = format!("fx='{}'", program.display());
    let mock = echo_model("fx__echo").await;
    let url = mock.base_url();

    let run = w
        .run(&["run", "--mcp", &flag, "echo"], &on_mock(&url))
        .await;

    assert_eq!(run.code, Some(0), "{run:#?}");
    let requests = mock.requests();
    assert_requests_valid(&requests);
    assert_eq!(
        tool_result(requests[1].messages(), "call_echo"),
        "through the config"
    );
}

/// Whether `pid` is alive (not a zombie).
fn is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// Every live process whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
                && is_running(*pid)
        })
        .collect()
}

/// Waits (up to a generous hang guard) until none of `pids` runs.
async fn assert_all_end(pids: &[u32]) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while pids.iter().any(|p| is_running(*p)) {
        assert!(
            std::time::Instant::now() < deadline,
            "left running: {:?}",
            pids.iter().filter(|p| is_running(**p)).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn column<'a>(stdout: &'a str, name: &str) -> Vec<&'a str> {
    stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in\n{stdout}"))
        .split_whitespace()
        .collect()
}

#[tokio::test]
async fn mcp_add_list_get_call_remove_round_trip() {
    let w = World::new();
    let fixture = fixture_server().display().to_string();
    w.write_user("# my settings\nmodel = \"m\"\n");

    let added = w
        .run(
            &[
                "mcp",
                "add",
                "fixture",
                "--env",
                "GREETING=hi",
                "--",
                &fixture,
                "--page-size",
                "3",
            ],
            &[],
        )
        .await;
    assert_eq!(added.code, Some(0), "{added:#?}");
    let text = std::fs::read_to_string(w.user_config()).unwrap();
    assert!(
        text.starts_with("# my settings\nmodel = \"m\"\n\n[mcp_servers.fixture]\n"),
        "{text}"
    );

    let again = w.run(&["mcp", "add", "fixture", "--", "other"], &[]).await;
    assert_eq!(
        again.code,
        Some(2),
        "an existing name needs --force: {again:#?}"
    );
    assert!(
        again.stderr.contains("already exists; pass --force"),
        "{}",
        again.stderr
    );

    let list = w.run(&["mcp", "list"], &[]).await;
    assert_eq!(list.code, Some(0), "{list:#?}");
    let row = column(&list.stdout, "fixture");
    assert!(row.contains(&"ok"), "{}", list.stdout);
    let files = column(&list.stdout, "files");
    assert!(
        files.contains(&"in-process") && files.contains(&"ok"),
        "{}",
        list.stdout
    );

    let get = w
        .run(&["mcp", "get", "fixture"], &[("SECRET_TOKEN", "s3cret")])
        .await;
    assert_eq!(get.code, Some(0), "{get:#?}");
    assert!(get.stdout.contains(&fixture), "{}", get.stdout);
    assert!(
        get.stdout.contains(&w.user_config().display().to_string()),
        "the origin file: {}",
        get.stdout
    );
    let withheld = get
        .stdout
        .lines()
        .find(|l| l.starts_with("withheld"))
        .unwrap_or_else(|| panic!("{}", get.stdout));
    assert!(withheld.contains("SECRET_TOKEN"), "{withheld}");
    assert!(!get.stdout.contains("s3cret"), "values are never shown");

    let call = w
        .run(
            &[
                "mcp",
                "call",
                "fixture",
                "echo",
                r#"{"text":"hello from the CLI"}"#,
            ],
            &[],
        )
        .await;
    assert_eq!(call.code, Some(0), "{call:#?}");
    assert_eq!(call.stdout, "hello from the CLI\n");
    let env = w
        .run(
            &["mcp", "call", "fixture", "env", r#"{"name":"GREETING"}"#],
            &[],
        )
        .await;
    assert_eq!(
        env.stdout, "hi\n",
        "the --env pair reaches the server: {env:#?}"
    );

    // A built-in in-process, and a result that ends its own line: one newline.
    std::fs::write(w.workspace.join("note.txt"), "hi\n").unwrap();
    let builtin = w
        .run(
            &[
                "mcp",
                "call",
                "files",
                "read_file",
                r#"{"path":"note.txt"}"#,
            ],
            &[],
        )
        .await;
    assert_eq!(builtin.code, Some(0), "{builtin:#?}");
    assert!(
        builtin.stdout.ends_with("hi\n") && !builtin.stdout.ends_with("\n\n"),
        "{builtin:#?}"
    );

    let failed = w.run(&["mcp", "call", "fixture", "fail", "{}"], &[]).await;
    assert_eq!(failed.code, Some(1), "{failed:#?}");
    assert!(!failed.stderr.is_empty(), "the error text: {failed:#?}");
    let not_object = w.run(&["mcp", "call", "fixture", "echo", "[1]"], &[]).await;
    assert_eq!(not_object.code, Some(1), "{not_object:#?}");
    assert!(
        not_object.stderr.contains("one JSON object"),
        "{}",
        not_object.stderr
    );

    let removed = w.run(&["mcp", "remove", "fixture"], &[]).await;
    assert_eq!(removed.code, Some(0), "{removed:#?}");
    assert_eq!(
        std::fs::read_to_string(w.user_config()).unwrap(),
        "# my settings\nmodel = \"m\"\n"
    );
    let list = w.run(&["mcp", "list"], &[]).await;
    assert!(
        !list.stdout.lines().any(|l| l.starts_with("fixture ")),
        "{}",
        list.stdout
    );
    let builtin = w.run(&["mcp", "remove", "files"], &[]).await;
    assert_eq!(builtin.code, Some(1), "{builtin:#?}");
    assert!(
        builtin.stderr.contains("enabled = false"),
        "{}",
        builtin.stderr
    );
}

#[tokio::test]
async fn mcp_add_with_a_url_writes_the_codex_keys() {
    let w = World::new();
    let run = w
        .run(
            &[
                "mcp",
                "add",
                "docs",
                "--url",
                "https://mcp.example.com/mcp",
                "--bearer-token-env-var",
                "DOCS_TOKEN",
            ],
            &[],
        )
        .await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_eq!(
        std::fs::read_to_string(w.user_config()).unwrap(),
        "[mcp_servers.docs]\nurl = \"https://mcp.example.com/mcp\"\nbearer_token_env_var = \"DOCS_TOKEN\"\n"
    );
}

#[tokio::test]
async fn mcp_list_leaves_no_process_behind() {
    let w = World::new();
    let pid_file = w.workspace.join("fx.pids");
    w.write_user(&format!(
        "[mcp_servers.fixture]\ncommand = {:?}\nargs = [\"--grandchild\", \"--setsid-grandchild\", \"--pid-file\", {:?}]\n",
        fixture_server().display().to_string(),
        pid_file.display().to_string()
    ));

    let list = w.run(&["mcp", "list"], &[]).await;

    assert_eq!(list.code, Some(0), "{list:#?}");
    assert!(
        column(&list.stdout, "fixture").contains(&"ok"),
        "{}",
        list.stdout
    );
    let pids: Vec<u32> = std::fs::read_to_string(&pid_file)
        .unwrap()
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(
        pids.len(),
        3,
        "the server and its two grandchildren: {pids:?}"
    );
    assert_all_end(&pids).await;
    // And nothing else that was started with this test's paths.
    let needle = pid_file.display().to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !processes_mentioning(&needle).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "left running: {:?}",
            processes_mentioning(&needle)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn mcp_list_starts_every_builtin_for_real_and_reports_one_that_fails() {
    // A run starts a built-in on its first call; `mcp list` reports what a
    // real start finds: HOME/memory.db is a directory, so memory fails.
    let w = World::new();
    std::fs::create_dir(w.home.join("memory.db")).unwrap();

    let list = w.run(&["mcp", "list"], &[]).await;

    assert_eq!(list.code, Some(0), "{list:#?}");
    let memory = column(&list.stdout, "memory").join(" ");
    assert!(
        memory.contains("failed") && memory.contains("cannot open the memory database"),
        "{}",
        list.stdout
    );
    assert!(
        column(&list.stdout, "files").contains(&"ok"),
        "{}",
        list.stdout
    );
}

/// `mcp get` of a NanoHermes subagent says what it inherits (names only),
/// and no longer lists those as withheld; another server inherits nothing.
#[tokio::test]
async fn mcp_get_names_what_a_nanohermes_subagent_inherits() {
    let w = World::new();
    std::fs::write(
        w.user_config(),
        "[mcp_servers.reviewer]\ncommand = \"nanohermes\"\nargs = [\"serve\", \"--root\", \".\"]\n\
         [mcp_servers.other]\ncommand = \"python3\"\nargs = [\"serve\"]\n",
    )
    .unwrap();
    let env = [
        ("OPENAI_API_KEY", "sk-inherit"),
        ("OPENAI_BASE_URL", "http://127.0.0.1:1/v1"),
    ];
    let get = w.run(&["mcp", "get", "reviewer"], &env).await;
    assert_eq!(get.code, Some(0), "{get:#?}");
    let line = |out: &str, key: &str| {
        out.lines()
            .find(|l| l.starts_with(key))
            .unwrap_or_default()
            .to_owned()
    };
    let inherits = line(&get.stdout, "inherits:");
    for name in [
        "OPENAI_BASE_URL",
        "NANOHERMES_MODEL",
        "OPENAI_API_KEY",
        "NANOHERMES_HOME",
    ] {
        assert!(inherits.contains(name), "{}", get.stdout);
    }
    assert!(
        !line(&get.stdout, "withheld").contains("OPENAI_API_KEY"),
        "{}",
        get.stdout
    );
    assert!(!get.stdout.contains("sk-inherit"), "values are never shown");

    let other = w.run(&["mcp", "get", "other"], &env).await;
    assert_eq!(other.code, Some(0), "{other:#?}");
    assert_eq!(line(&other.stdout, "inherits:"), "", "{}", other.stdout);
    assert!(
        line(&other.stdout, "withheld").contains("OPENAI_API_KEY"),
        "{}",
        other.stdout
    );
}
