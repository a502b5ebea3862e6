//! The MCP client hub against real servers: the in-process files server and
//! `examples/fixture_server.rs` as a child process over stdio.
//!
//! The fixture is an example of this package, so `cargo test -p nanohermes`
//! builds it to `target/<profile>/examples/`; [`fixture_server`] finds it next
//! to this test's executable. When a test is run on its own with
//! `--test hub`, cargo does not build examples: build it first with
//! `cargo build -p nanohermes --example fixture_server`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use nanohermes_config::{BuiltinName, Origin, ServerSpec, StdioSpec, Transport};
use nanohermes_hub::{Builtin, Hub, HubConfig, MAX_RESTARTS, ToolInfo};
use serde_json::{Map, Value, json};

/// Generous: a deadlock guard, not a speed claim.
const STARTUP: Duration = Duration::from_secs(30);

fn fixture_server() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/hub-HASH → target/<profile>/examples/fixture_server
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test executable lives in target/<profile>/deps");
    let path = profile_dir
        .join("examples")
        .join(format!("fixture_server{}", std::env::consts::EXE_SUFFIX));
    assert!(
        path.exists(),
        "{} is missing: run `cargo test -p nanohermes` (which builds examples) or \
         `cargo build -p nanohermes --example fixture_server` first",
        path.display()
    );
    path
}

fn fixture(name: &str, args: &[&str]) -> ServerSpec {
    let mut spec = stdio(name, &fixture_server().display().to_string(), args);
    if let Transport::Stdio(stdio) = &mut spec.transport {
        stdio
            .env
            .insert("FIXTURE_GREETING".to_string(), "hello from env".to_string());
    }
    spec
}

/// An external stdio server as `--mcp` gives it.
fn stdio(name: &str, command: &str, args: &[&str]) -> ServerSpec {
    ServerSpec {
        name: name.to_string(),
        origin: Origin::Flag,
        builtin: None,
        transport: Transport::Stdio(StdioSpec {
            command: command.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            ..StdioSpec::default()
        }),
        startup_timeout: STARTUP,
        ..ServerSpec::default_builtin(BuiltinName::Files)
    }
}

fn builtin_spec(builtin: Builtin) -> ServerSpec {
    let name = BuiltinName::from_name(builtin.name()).expect("a built-in's name");
    ServerSpec {
        startup_timeout: STARTUP,
        ..ServerSpec::default_builtin(name)
    }
}

fn config(workspace: &Path, builtins: &[Builtin], external: Vec<ServerSpec>) -> HubConfig {
    let mut servers: Vec<ServerSpec> = builtins.iter().copied().map(builtin_spec).collect();
    servers.extend(external);
    HubConfig::new(workspace, servers)
}

async fn start(workspace: &Path, builtins: &[Builtin], external: Vec<ServerSpec>) -> Hub {
    Hub::start(config(workspace, builtins, external))
        .await
        .expect("hub starts")
}

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, got {other}"),
    }
}

fn names(tools: &[ToolInfo]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

/// Every `$ref`, `$defs` or `$schema` key anywhere in `value`.
fn schema_leftovers(value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                if ["$ref", "$defs", "$schema", "definitions"].contains(&key.as_str()) {
                    found.push(key.clone());
                }
                found.extend(schema_leftovers(inner));
            }
        }
        Value::Array(items) => items.iter().for_each(|v| found.extend(schema_leftovers(v))),
        _ => {}
    }
    found
}

fn pid_is_alive(pid: &str) -> bool {
    std::process::Command::new("kill")
        .args(["-0", pid])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether `pid` is a process that has not exited (a zombie has).
fn is_running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the parenthesised command name.
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// Waits (up to a generous hang guard) until none of `pids` runs.
async fn assert_all_end(pids: &[u32]) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while pids.iter().any(|p| is_running(*p)) {
        assert!(
            std::time::Instant::now() < deadline,
            "still running: {:?}",
            pids.iter().filter(|p| is_running(**p)).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The process group of `pid`, from /proc.
fn pgid_of(pid: u32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    // state ppid pgrp ...
    rest.split_whitespace().nth(2).unwrap().parse().unwrap()
}

fn pid_list(text: &str) -> Vec<u32> {
    text.split_whitespace()
        .map(|p| {
            p.parse()
                .unwrap_or_else(|_| panic!("not a pid list: {text}"))
        })
        .collect()
}

#[test]
fn the_hub_can_be_shared_across_tasks() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Hub>();
}

#[tokio::test]
async fn builtin_and_external_tools_are_merged_in_a_fixed_order() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), &[Builtin::Files], vec![fixture("fx", &[])]).await;
    let names = names(hub.tools());
    let files: Vec<&str> = hub
        .tools()
        .iter()
        .filter(|t| t.server == "files")
        .map(|t| t.name.as_str())
        .collect();
    assert!(
        files.contains(&"read_file") && files.contains(&"write_file"),
        "{files:?}"
    );
    assert!(files.is_sorted(), "a server's tools are sorted: {files:?}");
    let first_external = names.iter().position(|n| n.starts_with("fx__")).unwrap();
    assert_eq!(
        first_external,
        files.len(),
        "built-ins come first: {names:?}"
    );
    for tool in &hub.tools()[first_external..] {
        assert_eq!(tool.server, "fx");
        assert!(tool.name.starts_with("fx__"), "{}", tool.name);
    }
    let echo = hub.tool("fx__echo").expect("fx__echo is declared");
    assert_eq!(echo.raw_name, "echo");
    assert_eq!(echo.description, "Echo the text back.");
    assert!(echo.read_only);
    assert!(!hub.tool("fx__touch").unwrap().read_only);
    assert!(hub.tool("read_file").unwrap().read_only);
    assert!(!hub.tool("write_file").unwrap().read_only);
    assert!(
        hub.warnings().iter().all(|w| !w.contains("failed")),
        "{:?}",
        hub.warnings()
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn every_name_is_valid_and_collisions_are_renamed_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), &[Builtin::Files], vec![fixture("fx", &[])]).await;
    for tool in hub.tools() {
        let name = &tool.name;
        assert!((1..=64).contains(&name.len()), "{name}");
        assert!(
            name.starts_with(|c: char| c.is_ascii_alphabetic()),
            "{name}"
        );
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
    }
    // `dotted.name` sorts before `dotted_name`, so it keeps the plain name.
    assert_eq!(hub.tool("fx__dotted_name").unwrap().raw_name, "dotted.name");
    assert_eq!(
        hub.tool("fx__dotted_name_2").unwrap().raw_name,
        "dotted_name"
    );
    assert!(
        hub.warnings()
            .iter()
            .any(|w| w.contains("dotted_name") && w.contains("fx__dotted_name_2")),
        "{:?}",
        hub.warnings()
    );
    let long = hub
        .tools()
        .iter()
        .find(|t| t.raw_name.starts_with("a_tool_whose_name"))
        .unwrap();
    assert_eq!(long.name.len(), 64, "{}", long.name);
    assert_eq!(hub.call(&long.name.clone(), Map::new()).await, "long");
    assert_eq!(
        hub.call("fx__dotted_name_2", Map::new()).await,
        "underscore"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn declarations_are_openai_functions_with_sanitised_schemas() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), &[Builtin::Files], vec![fixture("fx", &[])]).await;
    assert_eq!(hub.declarations().len(), hub.tools().len());
    for (declaration, tool) in hub.declarations().iter().zip(hub.tools()) {
        assert_eq!(declaration["type"], "function");
        assert_eq!(declaration["function"]["name"], tool.name.as_str());
        assert_eq!(
            declaration["function"]["description"],
            tool.description.as_str()
        );
        let parameters = &declaration["function"]["parameters"];
        assert_eq!(parameters["type"], "object", "{}", tool.name);
        assert!(parameters["properties"].is_object(), "{}", tool.name);
        assert_eq!(
            schema_leftovers(parameters),
            Vec::<String>::new(),
            "{}",
            tool.name
        );
    }
    let odd = hub
        .declarations()
        .iter()
        .find(|d| d["function"]["name"] == "fx__odd_schema")
        .unwrap();
    assert_eq!(
        odd["function"]["parameters"],
        json!({"type": "object", "properties": {"item": {"type": "object", "properties": {
            "label": {"type": "string"},
            "children": {"type": "array", "items": {"type": "object", "properties": {}}}
        }}}})
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn tools_are_listed_across_pages() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(
        dir.path(),
        &[],
        vec![
            fixture("whole", &[]),
            fixture("paged", &["--page-size", "2"]),
        ],
    )
    .await;
    let whole: Vec<&str> = hub
        .tools()
        .iter()
        .filter(|t| t.server == "whole")
        .map(|t| t.raw_name.as_str())
        .collect();
    let paged: Vec<&str> = hub
        .tools()
        .iter()
        .filter(|t| t.server == "paged")
        .map(|t| t.raw_name.as_str())
        .collect();
    assert!(whole.len() > 4, "{whole:?}");
    assert_eq!(paged, whole);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_call_is_routed_to_its_external_server() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), &[Builtin::Files], vec![fixture("fx", &[])]).await;
    assert_eq!(
        hub.call("fx__echo", args(json!({"text": "ping"}))).await,
        "ping"
    );
    assert_eq!(
        hub.call("fx__env", args(json!({"name": "FIXTURE_GREETING"})))
            .await,
        "hello from env"
    );
    let cwd = hub.call("fx__cwd", Map::new()).await;
    assert_eq!(
        Path::new(&cwd).canonicalize().unwrap(),
        dir.path().canonicalize().unwrap(),
        "external servers start in the workspace"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn the_files_builtin_writes_and_reads_real_files() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), &[Builtin::Files], vec![]).await;
    let written = hub
        .call(
            "write_file",
            args(json!({"path": "notes/a.txt", "content": "alpha\n"})),
        )
        .await;
    assert!(!written.starts_with("ERROR"), "{written}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("notes/a.txt")).unwrap(),
        "alpha\n"
    );
    let read = hub
        .call("read_file", args(json!({"path": "notes/a.txt"})))
        .await;
    assert!(read.contains("alpha"), "{read}");
    let outside = hub.call("read_file", args(json!({"path": "../x"}))).await;
    assert!(outside.starts_with("ERROR: "), "{outside}");
    hub.shutdown().await;
}

#[tokio::test]
async fn results_are_rendered_for_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), &[], vec![fixture("fx", &[])]).await;
    assert_eq!(
        hub.call("fx__image", Map::new()).await,
        "[image: image/png, 5 bytes]"
    );
    assert_eq!(
        hub.call("fx__structured", Map::new()).await,
        r#"{"answer":42}"#
    );
    assert_eq!(
        hub.call("fx__fail", Map::new()).await,
        "ERROR: it failed on purpose; try echo"
    );
    let bad_args = hub.call("fx__echo", args(json!({"txt": 1}))).await;
    assert!(bad_args.starts_with("ERROR: "), "{bad_args}");
    assert!(
        bad_args.contains("text"),
        "names the missing field: {bad_args}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn long_results_are_clamped_to_max_output() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), &[], vec![fixture("fx", &[])]);
    config.max_output = 100;
    let hub = Hub::start(config).await.unwrap();
    let out = hub
        .call("fx__echo", args(json!({"text": "y".repeat(500)})))
        .await;
    assert!(out.starts_with(&"y".repeat(100)), "{out}");
    assert!(out.ends_with("[... 400 more bytes omitted]"), "{out}");
    hub.shutdown().await;
}

#[tokio::test]
async fn an_unknown_tool_names_the_available_ones() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), &[Builtin::Files], vec![]).await;
    let out = hub.call("delete_everything", Map::new()).await;
    assert!(
        out.starts_with("ERROR: unknown tool delete_everything; available tools: "),
        "{out}"
    );
    assert!(
        out.contains("read_file") && out.contains("write_file"),
        "{out}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_that_dies_mid_call_is_reported_then_restarted_once() {
    assert_eq!(MAX_RESTARTS, 1);
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), &[Builtin::Files], vec![fixture("fx", &[])]).await;
    let first_pid = hub.call("fx__pid", Map::new()).await;

    // The call during which the server dies: what failed (its exit code,
    // the call), its last stderr line, what to check; no rmcp internals.
    let command = fixture_server().display().to_string();
    assert_eq!(
        hub.call("fx__crash", Map::new()).await,
        format!(
            "ERROR: server fx is not running (it exited with code 3 during the call to crash; \
             its stderr ended with: fixture_server: crash requested, exiting with 3; check its \
             command: `{command}`); it will be restarted on the next call"
        )
    );
    assert!(!hub.is_running("fx"));
    // The built-in server is not affected.
    let listed = hub.call("list_dir", Map::new()).await;
    assert!(!listed.starts_with("ERROR"), "{listed}");

    // The next call restarts it and goes through.
    let second_pid = hub.call("fx__pid", Map::new()).await;
    assert!(second_pid.parse::<u32>().is_ok(), "{second_pid}");
    assert_ne!(second_pid, first_pid, "a new process");
    assert!(hub.is_running("fx"));
    assert_eq!(
        hub.call("fx__echo", args(json!({"text": "back"}))).await,
        "back"
    );

    // A second death is final.
    let stays_down = format!(
        "ERROR: server fx is not running (it exited with code 3 during the call to crash; \
         its stderr ended with: fixture_server: crash requested, exiting with 3; check its \
         command: `{command}`); it was already restarted once and stays down"
    );
    assert_eq!(hub.call("fx__crash", Map::new()).await, stays_down);
    assert_eq!(
        hub.call("fx__echo", args(json!({"text": "x"}))).await,
        stays_down
    );
    let listed = hub.call("list_dir", Map::new()).await;
    assert!(!listed.starts_with("ERROR"), "{listed}");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_killed_between_calls_is_restarted_by_the_next_call() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), &[], vec![fixture("fx", &[])]).await;
    let pid = hub.call("fx__pid", Map::new()).await;
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    // Wait until the hub has noticed (the connection closes on EOF).
    while hub.is_running("fx") {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        hub.call("fx__echo", args(json!({"text": "again"}))).await,
        "again"
    );
    assert_ne!(hub.call("fx__pid", Map::new()).await, pid);
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_that_never_answers_initialize_is_skipped_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(
        dir.path(),
        &[Builtin::Files],
        vec![fixture("hang", &["--hang"]), fixture("fx", &[])],
    );
    config.servers[1].startup_timeout = Duration::from_secs(2);
    let hub = Hub::start(config).await.unwrap();
    assert_eq!(
        hub.warnings()[0],
        "server hang did not start within 2 s (raise mcp_servers.hang.startup_timeout_sec if it \
         needs longer, as a first `npx` run that downloads may)"
    );
    assert!(hub.tools().iter().all(|t| t.server != "hang"));
    assert!(!hub.is_running("hang"));
    assert!(
        hub.call("hang__echo", Map::new())
            .await
            .starts_with("ERROR: unknown tool hang__echo")
    );
    assert_eq!(
        hub.call("fx__echo", args(json!({"text": "ok"}))).await,
        "ok"
    );
    let listed = hub.call("list_dir", Map::new()).await;
    assert!(!listed.starts_with("ERROR"), "{listed}");
    hub.shutdown().await;
}

#[tokio::test]
async fn a_server_that_fails_to_start_is_a_warning_quoting_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let missing = stdio("missing", "/nonexistent/mcp-server", &[]);
    let hub = start(
        dir.path(),
        &[Builtin::Files],
        vec![fixture("broken", &["--fail-start"]), missing],
    )
    .await;
    let warnings = hub.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    // What failed first, then its stderr and command; the transport's
    // own words (rmcp's "Send message error Transport [...]") only after.
    let command = fixture_server().display().to_string();
    assert!(
        warnings[0].starts_with(&format!(
            "server broken failed to start: it exited with code 2; its stderr ended with: \
             fixture_server: refusing to start (--fail-start); check its command: \
             `{command} --fail-start` (details: "
        )),
        "{warnings:?}"
    );
    assert!(
        warnings[1]
            .starts_with("server missing failed to start: cannot run \"/nonexistent/mcp-server\""),
        "{warnings:?}"
    );
    assert!(hub.tool("read_file").is_some());
    hub.shutdown().await;
}

#[tokio::test]
async fn a_call_that_takes_too_long_times_out_and_the_server_keeps_working() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), &[], vec![fixture("fx", &[])])
        .await
        .with_call_timeout(Duration::from_millis(200));
    assert_eq!(
        hub.call("fx__slow", args(json!({"ms": 600_000}))).await,
        "ERROR: tool slow on server fx timed out after 0.2 s without progress; the call was \
         cancelled; raise mcp_servers.fx.tool_timeout_sec if it needs longer"
    );
    assert!(hub.is_running("fx"));
    assert_eq!(
        hub.call("fx__echo", args(json!({"text": "still here"})))
            .await,
        "still here"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn calls_to_one_server_run_concurrently() {
    let dir = tempfile::tempdir().unwrap();
    // The timeout only turns a deadlock into a failed assertion.
    let hub = start(dir.path(), &[], vec![fixture("fx", &[])])
        .await
        .with_call_timeout(Duration::from_secs(30));
    let marker = dir.path().join("marker").display().to_string();
    // `wait_for_file` is sent first and answers only once `touch` has run:
    // if calls to a server were serialised, this would deadlock.
    let (waited, touched) = tokio::join!(
        hub.call("fx__wait_for_file", args(json!({"path": marker}))),
        hub.call("fx__touch", args(json!({"path": marker}))),
    );
    assert_eq!((waited.as_str(), touched.as_str()), ("seen", "touched"));
    hub.shutdown().await;
}

#[tokio::test]
async fn calls_to_different_servers_run_concurrently() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), &[Builtin::Files], vec![fixture("fx", &[])])
        .await
        .with_call_timeout(Duration::from_secs(30));
    let marker = dir.path().join("marker.txt");
    // The external server waits for a file that only the built-in writes.
    let (waited, written) = tokio::join!(
        hub.call(
            "fx__wait_for_file",
            args(json!({"path": marker.display().to_string()}))
        ),
        hub.call(
            "write_file",
            args(json!({"path": "marker.txt", "content": "x"}))
        ),
    );
    assert_eq!(waited, "seen");
    assert!(!written.starts_with("ERROR"), "{written}");
    hub.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_every_child_process() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(
        dir.path(),
        &[Builtin::Files],
        vec![fixture("a", &[]), fixture("b", &[])],
    )
    .await;
    let pids = [
        hub.call("a__pid", Map::new()).await,
        hub.call("b__pid", Map::new()).await,
    ];
    assert!(pids.iter().all(|p| pid_is_alive(p)), "{pids:?}");
    hub.shutdown().await;
    for pid in &pids {
        assert!(!pid_is_alive(pid), "process {pid} outlived the hub");
    }
}

#[tokio::test]
async fn bad_server_names_are_configuration_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad = Hub::start(config(dir.path(), &[], vec![fixture("a__b", &[])])).await;
    assert!(bad.err().unwrap().to_string().contains("\"a__b\""));
    let duplicate = Hub::start(config(
        dir.path(),
        &[Builtin::Files],
        vec![fixture("files", &[])],
    ))
    .await;
    assert!(
        duplicate
            .err()
            .unwrap()
            .to_string()
            .contains("two MCP servers are named \"files\"")
    );
}

#[tokio::test]
async fn every_builtin_starts_in_process_with_distinct_tool_names() {
    let dir = tempfile::tempdir().unwrap();
    // Memory is left out: it opens a database under the user's home.
    let builtins: Vec<Builtin> = Builtin::ALL
        .iter()
        .copied()
        .filter(|b| *b != Builtin::Memory)
        .collect();
    let hub = start(dir.path(), &builtins, vec![]).await;
    assert_eq!(hub.warnings(), Vec::<String>::new());
    for builtin in &builtins {
        assert_eq!(Builtin::from_name(builtin.name()), Some(*builtin));
        assert!(hub.is_running(builtin.name()), "{}", builtin.name());
        assert!(
            hub.tools().iter().any(|t| t.server == builtin.name()),
            "{} lists tools",
            builtin.name()
        );
    }
    for tool in hub.tools() {
        assert_eq!(tool.name, tool.raw_name, "built-in names are plain");
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn an_external_server_leads_its_own_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), &[], vec![fixture("fx", &["--grandchild"])]).await;
    let pids = pid_list(&hub.call("fx__pids", Map::new()).await);
    let (server, grandchild) = (pids[0], pids[1]);
    // A terminal's Ctrl-C goes to the agent's group, not to this one.
    assert_eq!(pgid_of(server), server as i32, "the server leads its group");
    assert_ne!(pgid_of(server), nix::unistd::getpgrp().as_raw());
    assert_eq!(pgid_of(grandchild), server as i32);
    hub.shutdown().await;
}

#[tokio::test]
async fn an_external_server_gets_the_allow_list_and_its_configured_env_only() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), &[], vec![fixture("fx", &[])]).await;
    let env = async |name: &str| hub.call("fx__env", args(json!({"name": name}))).await;
    assert_eq!(env("FIXTURE_GREETING").await, "hello from env");
    assert_eq!(env("PATH").await, std::env::var("PATH").unwrap());
    // cargo runs tests with CARGO_* variables set; none is on the allow-list.
    let cargo = std::env::var("CARGO_MANIFEST_DIR");
    assert!(cargo.is_ok(), "cargo sets CARGO_MANIFEST_DIR for tests");
    assert_eq!(env("CARGO_MANIFEST_DIR").await, "(unset)");
    hub.shutdown().await;
}

#[tokio::test]
async fn shutdown_kills_the_whole_tree_of_an_external_server() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(
        dir.path(),
        &[],
        vec![fixture("fx", &["--grandchild", "--setsid-grandchild"])],
    )
    .await;
    let pids = pid_list(&hub.call("fx__pids", Map::new()).await);
    assert_eq!(pids.len(), 3, "{pids:?}");
    assert!(pids.iter().all(|p| is_running(*p)), "{pids:?}");
    assert_ne!(
        pgid_of(pids[2]),
        pids[0] as i32,
        "the setsid one left the group"
    );
    hub.shutdown().await;
    assert_all_end(&pids).await;
}

#[tokio::test]
async fn a_restart_kills_the_tree_of_the_dead_server() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(
        dir.path(),
        &[],
        vec![fixture("fx", &["--grandchild", "--setsid-grandchild"])],
    )
    .await;
    let old = pid_list(&hub.call("fx__pids", Map::new()).await);
    let crashed = hub.call("fx__crash", Map::new()).await;
    assert!(
        crashed.starts_with("ERROR: server fx is not running"),
        "{crashed}"
    );
    let new = pid_list(&hub.call("fx__pids", Map::new()).await);
    assert_ne!(new[0], old[0]);
    // The dead server's grandchildren go with the restart.
    assert_all_end(&old).await;
    assert!(new.iter().all(|p| is_running(*p)), "{new:?}");
    hub.shutdown().await;
    assert_all_end(&new).await;
}

#[tokio::test]
async fn dropping_the_hub_kills_the_tree_too() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(
        dir.path(),
        &[],
        vec![fixture("fx", &["--grandchild", "--setsid-grandchild"])],
    )
    .await;
    let pids = pid_list(&hub.call("fx__pids", Map::new()).await);
    drop(hub);
    assert_all_end(&pids).await;
}

#[tokio::test]
async fn annotations_of_a_trusted_projects_server_are_believed() {
    // Project files are read only for a trusted project, so a server from
    // its .mcp.json is vouched for like one from the user's own config.
    let dir = tempfile::tempdir().unwrap();
    let mut project = fixture("other", &[]);
    project.origin = Origin::McpJson(dir.path().join(".mcp.json"));
    let hub = start(dir.path(), &[Builtin::Files], vec![project]).await;
    let echo = hub.tool("other__echo").unwrap();
    assert!(echo.read_only, "{echo:?}");
    assert!(!hub.tool("other__touch").unwrap().read_only);
    assert!(hub.tool("read_file").unwrap().read_only);
    for origin in [
        Origin::Default,
        Origin::Flag,
        Origin::UserConfig("/u".into()),
        Origin::ProjectConfig("/p".into()),
        Origin::McpJson("/p/.mcp.json".into()),
    ] {
        assert!(nanohermes_hub::trusted_annotations(&origin), "{origin:?}");
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn a_read_only_hub_declares_only_read_only_tools() {
    use nanohermes_core::policy::Policy;
    let dir = tempfile::tempdir().unwrap();
    let hub = start(dir.path(), &[Builtin::Files], vec![fixture("fx", &[])])
        .await
        .offer_only(Policy::read_only());
    let declared: Vec<&str> = hub
        .declarations()
        .iter()
        .map(|d| d["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        declared.contains(&"read_file") && declared.contains(&"fx__echo"),
        "{declared:?}"
    );
    for withheld in ["write_file", "fx__touch", "fx__crash"] {
        assert!(
            !declared.contains(&withheld),
            "{withheld} offered: {declared:?}"
        );
        // Still known, so the policy's gate can say why it is refused.
        assert!(hub.tool(withheld).is_some(), "{withheld}");
    }
    let all = start(dir.path(), &[Builtin::Files], vec![]).await;
    assert_eq!(all.declarations().len(), all.tools().len());
    hub.shutdown().await;
    all.shutdown().await;
}

#[tokio::test]
async fn the_hub_timeout_sits_above_every_builtin_maximum() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(
        dir.path(),
        &[Builtin::Shell, Builtin::Git, Builtin::Files],
        vec![fixture("fx", &[])],
    )
    .await;
    // run_command allows up to 600 s: the hub must not cut it first.
    let shell = hub.call_timeout("shell").unwrap();
    assert!(
        shell > Duration::from_secs(nanohermes_shell::MAX_TIMEOUT_SECS),
        "{shell:?}"
    );
    assert!(hub.call_timeout("git").unwrap() > nanohermes_git::runner::COMMAND_TIMEOUT);
    assert_eq!(
        hub.call_timeout("fx"),
        Some(nanohermes_hub::DEFAULT_CALL_TIMEOUT)
    );
    hub.shutdown().await;
}

/// A loopback HTTP server that answers every request with `body`.
async fn loopback_page(body: &'static str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request).await;
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        }
    });
    url
}

#[tokio::test]
async fn allow_private_network_reaches_the_web_builtin() {
    let dir = tempfile::tempdir().unwrap();
    let url = loopback_page("intranet page").await;
    let fetch = |hub: Hub| {
        let url = url.clone();
        async move {
            let text = hub.call("web_fetch", args(json!({"url": url}))).await;
            hub.shutdown().await;
            text
        }
    };

    let refused = fetch(start(dir.path(), &[Builtin::Web], vec![]).await).await;
    assert!(refused.starts_with("ERROR"), "{refused}");
    assert!(!refused.contains("intranet page"), "{refused}");

    let mut allowed = config(dir.path(), &[Builtin::Web], vec![]);
    allowed.allow_private_network = true;
    let fetched = fetch(Hub::start(allowed).await.unwrap()).await;
    assert!(fetched.contains("intranet page"), "{fetched}");
}
