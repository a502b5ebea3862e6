//! The hub against real servers on every transport and in both protocol
//! eras: a built-in in-process, as a child process (`nanohermes builtin`)
//! and over Streamable HTTP (with a bearer token); the fixture as a
//! legacy-only and a modern server; per-server timeouts with progress;
//! failures, `required`, `enabled`, `enabled_tools`/`disabled_tools`.
//!
//! The fixture is an example of this package (`cargo test -p nanohermes`
//! builds it); run alone, build it first with
//! `cargo build -p nanohermes --example fixture_server`.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

#[path = "support/mod.rs"]
mod support;

use nanohermes_config::{BuiltinName, HttpSpec, Origin, ServerSpec, Transport};
use nanohermes_hub::{Era, Hub, HubConfig, ServerState};
use serde_json::{Map, Value, json};
use support::{fixture_server, stdio_spec};

/// Generous: a hang guard, not a speed claim.
const STARTUP: Duration = Duration::from_secs(30);

fn nanohermes() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_nanohermes"))
}

fn builtin(name: BuiltinName, transport: Transport) -> ServerSpec {
    ServerSpec {
        transport,
        startup_timeout: STARTUP,
        ..ServerSpec::default_builtin(name)
    }
}

fn fixture(name: &str, args: &[&str]) -> ServerSpec {
    ServerSpec {
        startup_timeout: STARTUP,
        ..stdio_spec(name, &fixture_server().display().to_string(), args)
    }
}

fn config(workspace: &Path, servers: Vec<ServerSpec>) -> HubConfig {
    HubConfig {
        builtin_exe: nanohermes(),
        ..HubConfig::new(workspace, servers)
    }
}

fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("arguments must be an object, got {other}"),
    }
}

/// The hub's warnings without the renaming the fixture causes on purpose
/// (`dotted.name` and `dotted_name`).
fn warnings(hub: &Hub) -> Vec<&String> {
    hub.warnings()
        .iter()
        .filter(|w| !w.contains("dotted_name"))
        .collect()
}

fn state(hub: &Hub, name: &str) -> ServerState {
    hub.status()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no status for {name}"))
        .state
}

/// `nanohermes builtin files --http 127.0.0.1:PORT` with its token in
/// `NH_SERVER_TOKEN`; killed on drop.
struct HttpBuiltin {
    child: Child,
    url: String,
}

impl Drop for HttpBuiltin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve_files_over_http(root: &Path, token: &str) -> HttpBuiltin {
    // Any free port: bind 0, read it, let go, hand it to the server.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(nanohermes())
        .args(["builtin", "files", "--root"])
        .arg(root)
        .args(["--http", &format!("127.0.0.1:{port}")])
        .args(["--auth-token-env", "NH_SERVER_TOKEN"])
        .env("NH_SERVER_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("start nanohermes builtin files --http");
    let deadline = std::time::Instant::now() + STARTUP;
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "the HTTP built-in never listened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    HttpBuiltin {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

/// A variable every test process has, used as a bearer token so the test
/// need not set one (setting variables in a threaded test is unsound).
const TOKEN_VAR: &str = "PATH";

#[tokio::test]
async fn a_builtin_moved_to_a_child_process_or_http_reads_what_in_process_reads() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("notes")).unwrap();
    std::fs::write(dir.path().join("notes/a.txt"), "alpha\nbeta\ngamma\n").unwrap();
    let token = std::env::var(TOKEN_VAR).unwrap();
    let http = serve_files_over_http(dir.path(), &token);
    let remote = Transport::Http(HttpSpec {
        url: http.url.clone(),
        bearer_token_env_var: Some(TOKEN_VAR.to_owned()),
        ..HttpSpec::default()
    });

    let mut answers = Vec::new();
    for (transport, where_prefix, era) in [
        (Transport::InProcess, "in-process", None),
        (Transport::BuiltinProcess, "process: ", Some(Era::Modern)),
        (remote, "http: http://127.0.0.1:", Some(Era::Modern)),
    ] {
        let spec = builtin(BuiltinName::Files, transport);
        let hub = Hub::start(config(dir.path(), vec![spec])).await.unwrap();
        assert!(warnings(&hub).is_empty(), "{:?}", hub.warnings());
        let status = hub.status().remove(0);
        assert!(status.where_.starts_with(where_prefix), "{status:?}");
        let ServerState::Running { tools, era: seen } = status.state else {
            panic!("{status:?}")
        };
        assert!(tools > 3, "{status:?}");
        if let Some(era) = era {
            assert_eq!(seen, era);
        }
        // Over every transport the listing is standard JSON Schema: no
        // Rust formats (`uint`, `uint64`) that strict clients warn about.
        for tool in hub.tools() {
            let schema = Value::Object((*tool.input_schema).clone());
            let unknown = mcp_tools::schema::unknown_formats(&schema);
            assert!(
                unknown.is_empty(),
                "{where_prefix} {}: {unknown:?}",
                tool.name
            );
        }
        // The same tool names as in-process: a moved built-in is not prefixed.
        let read = hub
            .call("read_file", args(json!({"path": "notes/a.txt"})))
            .await;
        let listed = hub.call("list_dir", args(json!({"path": "notes"}))).await;
        let outside = hub.call("read_file", args(json!({"path": "../x"}))).await;
        answers.push((read, listed, outside));
        hub.shutdown().await;
    }
    assert!(answers[0].0.contains("beta"), "{:?}", answers[0]);
    assert!(answers[0].2.starts_with("ERROR"), "{:?}", answers[0]);
    assert_eq!(answers[1], answers[0], "child process vs in-process");
    assert_eq!(answers[2], answers[0], "HTTP vs in-process");
}

#[tokio::test]
async fn an_http_server_refuses_a_wrong_bearer_token_and_start_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let http = serve_files_over_http(dir.path(), &std::env::var(TOKEN_VAR).unwrap());
    let wrong = ServerSpec {
        name: "remote".into(),
        builtin: None,
        origin: Origin::Flag,
        transport: Transport::Http(HttpSpec {
            url: http.url.clone(),
            // A variable with another value than the server's token.
            bearer_token_env_var: Some("HOME".into()),
            ..HttpSpec::default()
        }),
        ..builtin(BuiltinName::Files, Transport::InProcess)
    };
    let unset = ServerSpec {
        name: "unset".into(),
        transport: Transport::Http(HttpSpec {
            url: http.url.clone(),
            bearer_token_env_var: Some("NANOHERMES_TEST_NO_SUCH_VARIABLE".into()),
            ..HttpSpec::default()
        }),
        ..wrong.clone()
    };
    let hub = Hub::start(config(dir.path(), vec![wrong, unset]))
        .await
        .unwrap();
    let warnings = hub.warnings();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0]
            .starts_with("server remote failed to start: cannot connect to http://127.0.0.1:"),
        "{warnings:?}"
    );
    assert_eq!(
        warnings[1],
        "server unset cannot start: mcp_servers.unset.bearer_token_env_var names \
         NANOHERMES_TEST_NO_SUCH_VARIABLE, which is not set; export \
         NANOHERMES_TEST_NO_SUCH_VARIABLE or remove bearer_token_env_var"
    );
    assert!(hub.tools().is_empty());
    assert!(matches!(state(&hub, "remote"), ServerState::Failed { .. }));
}

fn probes(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .map(|text| text.lines().filter(|l| *l == "probe").count())
        .unwrap_or(0)
}

#[tokio::test]
async fn a_legacy_server_that_ignores_discover_is_probed_once_then_remembered() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("probes.log");
    let cache = dir.path().join("home").join("mcp-eras.json");
    let log_arg = log.display().to_string();
    let spec = fixture("old", &["--era", "legacy-silent", "--probe-log", &log_arg]);
    let start = || async {
        let config = HubConfig {
            era_cache: Some(cache.clone()),
            ..config(dir.path(), vec![spec.clone()])
        };
        Hub::start(config).await.unwrap()
    };

    let first = start().await;
    assert!(warnings(&first).is_empty(), "{:?}", first.warnings());
    assert!(
        matches!(
            state(&first, "old"),
            ServerState::Running {
                era: Era::Legacy,
                ..
            }
        ),
        "{:?}",
        first.status()
    );
    assert_eq!(
        first.call("old__echo", args(json!({"text": "hi"}))).await,
        "hi"
    );
    first.shutdown().await;
    assert_eq!(probes(&log), 1, "the first start probes once");
    let remembered = std::fs::read_to_string(&cache).unwrap();
    assert!(remembered.contains("\"2025-11-25\""), "{remembered}");

    let second = start().await;
    assert!(matches!(
        state(&second, "old"),
        ServerState::Running {
            era: Era::Legacy,
            ..
        }
    ));
    assert_eq!(
        second
            .call("old__echo", args(json!({"text": "again"})))
            .await,
        "again"
    );
    second.shutdown().await;
    assert_eq!(
        probes(&log),
        1,
        "the second start goes straight to initialize"
    );
    // Both handshakes (after the silent probe, and straight from the
    // remembered era) ask for 2025-11-25: 2026-07-28 has no `initialize`.
    let logged = std::fs::read_to_string(&log).unwrap();
    let asked: Vec<&str> = logged
        .lines()
        .filter_map(|l| l.strip_prefix("initialize "))
        .collect();
    assert_eq!(asked, ["2025-11-25", "2025-11-25"], "{logged}");
}

#[tokio::test]
async fn a_legacy_server_that_rejects_discover_and_a_modern_one_are_both_served() {
    let dir = tempfile::tempdir().unwrap();
    let old_log = dir.path().join("old.log");
    let new_log = dir.path().join("new.log");
    let (old_arg, new_arg) = (old_log.display().to_string(), new_log.display().to_string());
    let servers = vec![
        fixture("old", &["--era", "legacy-error", "--probe-log", &old_arg]),
        fixture("new", &["--probe-log", &new_arg]),
    ];
    let hub = Hub::start(config(dir.path(), servers)).await.unwrap();
    assert!(warnings(&hub).is_empty(), "{:?}", hub.warnings());
    assert!(matches!(
        state(&hub, "old"),
        ServerState::Running {
            era: Era::Legacy,
            ..
        }
    ));
    assert!(matches!(
        state(&hub, "new"),
        ServerState::Running {
            era: Era::Modern,
            ..
        }
    ));
    for server in ["old", "new"] {
        let echoed = hub
            .call(&format!("{server}__echo"), args(json!({"text": server})))
            .await;
        assert_eq!(echoed, server);
    }
    hub.shutdown().await;
    // One probe each: the legacy one answered it on the same connection.
    assert_eq!((probes(&old_log), probes(&new_log)), (1, 1));
    // The handshake asks for the version that has one: 2026-07-28 has no
    // `initialize`, so asking for it there is a protocol error.
    let old = std::fs::read_to_string(&old_log).unwrap();
    assert!(old.lines().any(|l| l == "initialize 2025-11-25"), "{old}");
    let new = std::fs::read_to_string(&new_log).unwrap();
    assert!(
        !new.contains("initialize"),
        "the modern server was not initialized: {new}"
    );
}

#[tokio::test]
async fn progress_resets_the_call_timer_and_silence_times_out_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let spec = ServerSpec {
        tool_timeout: Duration::from_secs(1),
        ..fixture("fx", &[])
    };
    let hub = Hub::start(config(dir.path(), vec![spec])).await.unwrap();
    assert_eq!(hub.call_timeout("fx"), Some(Duration::from_secs(1)));
    let reported = hub
        .call(
            "fx__progress",
            args(json!({"total_ms": 2000, "every_ms": 200, "report": true})),
        )
        .await;
    assert_eq!(reported, "worked 2000 ms");
    let silent = hub
        .call(
            "fx__progress",
            args(json!({"total_ms": 2000, "every_ms": 200, "report": false})),
        )
        .await;
    assert_eq!(
        silent,
        "ERROR: tool progress on server fx timed out after 1 s without progress; the call was \
         cancelled; raise mcp_servers.fx.tool_timeout_sec if it needs longer"
    );
    assert!(hub.is_running("fx"));
    hub.shutdown().await;
}

#[test]
fn the_progress_cap_is_ten_times_the_timeout_at_most_an_hour() {
    use nanohermes_hub::progress_cap;
    assert_eq!(
        progress_cap(Duration::from_secs(60)),
        Duration::from_secs(600)
    );
    assert_eq!(
        progress_cap(Duration::from_secs(600)),
        Duration::from_secs(3600)
    );
    assert_eq!(
        progress_cap(Duration::from_secs(7200)),
        Duration::from_secs(7200)
    );
}

#[tokio::test]
async fn a_failed_server_is_one_warning_with_its_stderr_and_the_rest_work() {
    let dir = tempfile::tempdir().unwrap();
    let disabled = ServerSpec {
        enabled: false,
        ..fixture("off", &[])
    };
    let servers = vec![
        builtin(BuiltinName::Files, Transport::InProcess),
        fixture("broken", &["--fail-start"]),
        fixture("fx", &[]),
        disabled,
    ];
    let hub = Hub::start(config(dir.path(), servers)).await.unwrap();
    assert_eq!(warnings(&hub).len(), 1, "{:?}", hub.warnings());
    let warning = warnings(&hub)[0];
    assert!(
        warning.starts_with("server broken failed to start: ")
            && warning.contains(
                "; its stderr ended with: fixture_server: refusing to start (--fail-start)"
            ),
        "{warning}"
    );
    assert_eq!(
        state(&hub, "broken"),
        ServerState::Failed {
            reason: warning.clone()
        }
    );
    assert_eq!(state(&hub, "off"), ServerState::Disabled);
    assert!(hub.tools().iter().all(|t| t.server != "off"));
    assert!(matches!(state(&hub, "files"), ServerState::Running { .. }));
    assert_eq!(
        hub.call("fx__echo", args(json!({"text": "ok"}))).await,
        "ok"
    );
    let names: Vec<String> = hub.status().into_iter().map(|s| s.name).collect();
    assert_eq!(
        names,
        ["files", "broken", "fx", "off"],
        "configuration order"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn a_required_server_that_cannot_start_fails_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let required = ServerSpec {
        required: true,
        ..fixture("broken", &["--fail-start"])
    };
    let error = Hub::start(config(dir.path(), vec![fixture("fx", &[]), required]))
        .await
        .err()
        .expect("a required server that fails stops the start")
        .to_string();
    assert!(
        error.starts_with("server broken failed to start: ")
            && error.contains(
                "; its stderr ended with: fixture_server: refusing to start (--fail-start)"
            )
            && error.ends_with("; it is required (mcp_servers.broken.required = true)"),
        "{error}"
    );
}

#[tokio::test]
async fn enabled_tools_then_disabled_tools_narrow_what_is_declared_and_callable() {
    let dir = tempfile::tempdir().unwrap();
    let spec = ServerSpec {
        enabled_tools: Some(vec!["echo".into(), "pid".into(), "touch".into()]),
        disabled_tools: vec!["touch".into()],
        ..fixture("fx", &[])
    };
    let hub = Hub::start(config(dir.path(), vec![spec])).await.unwrap();
    let names: Vec<&str> = hub.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["fx__echo", "fx__pid"]);
    assert_eq!(hub.declarations().len(), 2);
    assert!(matches!(
        state(&hub, "fx"),
        ServerState::Running { tools: 2, .. }
    ));
    let touched = dir.path().join("touched");
    let refused = hub
        .call(
            "fx__touch",
            args(json!({"path": touched.display().to_string()})),
        )
        .await;
    assert!(
        refused.starts_with("ERROR: unknown tool fx__touch"),
        "{refused}"
    );
    let raw = hub
        .call_raw(
            "fx",
            "touch",
            args(json!({"path": touched.display().to_string()})),
        )
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        raw,
        "tool touch of server fx is withheld by mcp_servers.fx.enabled_tools or disabled_tools"
    );
    assert!(!touched.exists(), "the withheld tool never ran");
    let echoed = hub
        .call_raw("fx", "echo", args(json!({"text": "raw"})))
        .await
        .unwrap();
    assert_eq!(echoed.is_error, Some(false));
    assert_eq!(
        serde_json::to_value(&echoed.content).unwrap()[0]["text"],
        "raw"
    );
    hub.shutdown().await;
}

/// A variable of this process that the allow-list does not pass and that
/// does not look secret (cargo sets several for a test).
fn plain_variable() -> (String, String) {
    std::env::vars()
        .find(|(name, value)| {
            !value.is_empty()
                && !mcp_tools::spawn::is_allowed_name(name)
                && !mcp_tools::spawn::is_secret_name(name)
                && name.starts_with("CARGO")
        })
        .expect("cargo sets CARGO_* variables for tests")
}

#[tokio::test]
async fn env_vars_pass_named_variables_and_withheld_env_lists_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let (name, value) = plain_variable();
    let plain = fixture("plain", &[]);
    let mut named = fixture("named", &[]);
    if let Transport::Stdio(stdio) = &mut named.transport {
        stdio.env_vars = vec![name.clone()];
        stdio.env = BTreeMap::from([("SET_HERE".to_owned(), "v".to_owned())]);
    }
    assert!(Hub::withheld_env(&plain).contains(&name));
    let withheld = Hub::withheld_env(&named);
    assert!(!withheld.contains(&name), "{withheld:?}");
    assert!(!withheld.iter().any(|n| n == "PATH" || n == "HOME"));
    assert!(Hub::withheld_env(&builtin(BuiltinName::Files, Transport::InProcess)).is_empty());

    let hub = Hub::start(config(dir.path(), vec![plain, named]))
        .await
        .unwrap();
    let read = |server: &'static str, var: String| {
        let hub = &hub;
        async move {
            hub.call(&format!("{server}__env"), args(json!({"name": var})))
                .await
        }
    };
    assert_eq!(read("plain", name.clone()).await, "(unset)");
    assert_eq!(read("named", name.clone()).await, value);
    assert_eq!(read("named", "SET_HERE".into()).await, "v");
    hub.shutdown().await;
}
