//! `nanohermes mcp probe` and the hub code it drives: elicitation in both
//! eras (legacy `elicitation/create`, 2026-07-28 MRTR with `requestState`
//! echoed verbatim), the era a probe is told to speak, and honest exit
//! codes. Real servers: the fixture over stdio and over Streamable HTTP
//! (the kit's serve path).

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use nanohermes_hub::input::{Elicitor, with_schema_defaults};
use nanohermes_hub::{Hub, HubConfig};
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction, JsonObject};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

use crate::support::sse_retry_server::{DONE, Delivered, RETRY, Seen, SseRetryServer};
use crate::support::{fixture_server, stdio_spec};

const HANG_GUARD: Duration = Duration::from_secs(60);

/// Accepts every form with its defaults and `{"ok": true}`.
#[derive(Debug)]
struct AcceptOk;

impl Elicitor for AcceptOk {
    fn elicit(&self, _server: &str, request: ElicitRequestParams) -> BoxFuture<'_, ElicitResult> {
        let given = json!({"ok": true}).as_object().cloned().unwrap_or_default();
        let content = with_schema_defaults(&request, &given);
        Box::pin(std::future::ready(
            ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content)),
        ))
    }
}

async fn ask_hub(args: &[&str], elicitor: bool) -> Hub {
    let dir = std::env::temp_dir();
    let mut all = vec!["--ask"];
    all.extend_from_slice(args);
    let spec = stdio_spec("fx", &fixture_server().display().to_string(), &all);
    let config = HubConfig {
        elicitor: elicitor.then(|| Arc::new(AcceptOk) as _),
        ..HubConfig::new(dir, vec![spec])
    };
    Hub::start(config).await.expect("hub starts")
}

#[tokio::test]
async fn a_legacy_elicitation_is_answered_by_the_elicitor_with_the_schema_defaults() {
    // `legacy-error` refuses server/discover: the hub falls back to initialize.
    let hub = ask_hub(&["--era", "legacy-error"], true).await;
    let answer = hub.call("fx__ask", JsonObject::new()).await;
    assert_eq!(answer, r#"elicited accept {"name":"Ada","ok":true}"#);
    hub.shutdown().await;

    // Without an elicitor the capability is not declared and the form is declined.
    let hub = ask_hub(&["--era", "legacy-error"], false).await;
    let answer = hub.call("fx__ask", JsonObject::new()).await;
    assert!(
        answer.starts_with("elicited decline") || answer.starts_with("ERROR: "),
        "{answer}"
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn an_mrtr_call_is_retried_with_the_answers_and_the_state_verbatim() {
    let hub = ask_hub(&[], true).await;
    // The fixture fails the retry unless its odd requestState comes back as sent.
    let answer = hub.call("fx__ask", JsonObject::new()).await;
    assert_eq!(answer, r#"state ok: accept {"name":"Ada","ok":true}"#);
    // A second call starts afresh: no state or answers carried over.
    let again = hub.call("fx__ask", JsonObject::new()).await;
    assert_eq!(again, answer);
    hub.shutdown().await;

    let hub = ask_hub(&[], false).await;
    let declined = hub.call("fx__ask", JsonObject::new()).await;
    assert_eq!(declined, "state ok: decline null");
    hub.shutdown().await;
}

#[tokio::test]
async fn the_hub_keeps_each_input_schema_as_the_server_listed_it() {
    let hub = ask_hub(&[], false).await;
    let odd = hub
        .tools()
        .iter()
        .find(|t| t.raw_name == "odd_schema")
        .expect("odd_schema is listed");
    let raw = Value::Object(odd.input_schema.as_ref().clone());
    // The model's copy is sanitised; the kept one still has its $refs.
    assert!(raw.to_string().contains("\"$ref\""), "{raw}");
    hub.shutdown().await;
}

/// The fixture over Streamable HTTP, killed on drop.
struct HttpFixture {
    _child: tokio::process::Child,
    url: String,
}

async fn http_fixture() -> HttpFixture {
    let mut child = tokio::process::Command::new(fixture_server())
        .args(["--http", "127.0.0.1:0", "--ask", "--resources"])
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the fixture over HTTP");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let line = tokio::time::timeout(HANG_GUARD, lines.next_line())
        .await
        .expect("the fixture names its address")
        .unwrap()
        .unwrap();
    let url = line
        .split("serving MCP at ")
        .nth(1)
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    HttpFixture { _child: child, url }
}

struct Probe {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

async fn probe(args: &[&str], script: &str) -> Probe {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"))
        .args(["mcp", "probe"])
        .args(args)
        .env_remove("MCP_CONFORMANCE_SCENARIO")
        .env_remove("MCP_CONFORMANCE_PROTOCOL_VERSION")
        .env_remove("MCP_CONFORMANCE_CONTEXT")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run nanohermes mcp probe");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(script.as_bytes()).await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(HANG_GUARD, child.wait_with_output())
        .await
        .expect("the probe ends")
        .unwrap();
    Probe {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

const EVERY_STEP: &str = "# each kind of step\nlist\nelicit accept {\"ok\": true}\ncall ask\n\
    resources\nread fixture://readme\nprompts\nprompt greet {\"who\": \"Bo\"}\n\
    call echo {\"text\": \"hi\"}\n";

#[tokio::test]
async fn the_probe_speaks_the_revision_it_is_told_and_runs_every_kind_of_step() {
    let fixture = http_fixture().await;
    for (protocol, asked) in [
        ("2025-11-25", r#"elicited accept {"name":"Ada","ok":true}"#),
        ("2026-07-28", r#"state ok: accept {"name":"Ada","ok":true}"#),
    ] {
        let run = probe(
            &["--protocol", protocol, "--script", "-", &fixture.url],
            EVERY_STEP,
        )
        .await;
        assert_eq!(
            run.code,
            Some(0),
            "{protocol}: {}\n{}",
            run.stdout,
            run.stderr
        );
        assert!(
            run.stdout.starts_with(&format!(
                "connected to {} (protocol {protocol}, ",
                fixture.url
            )),
            "{}",
            run.stdout
        );
        for expected in [
            "ok list\n",
            "\n  ask: ",
            &format!("ok call ask\n  {asked}\n"),
            "ok read fixture://readme\n  # Fixture\n",
            "ok prompt greet\n  [user]\n  Greet Bo",
            "ok call echo\n  hi\n",
        ] {
            assert!(
                run.stdout.contains(expected),
                "{protocol}: {expected:?} in\n{}",
                run.stdout
            );
        }
    }
}

#[tokio::test]
async fn the_probe_reports_each_failure_and_exits_non_zero() {
    let fixture = http_fixture().await;
    let run = probe(
        &["--script", "-", &fixture.url],
        "call nope\ncall fail\ncall echo {\"text\": \"still runs\"}\n",
    )
    .await;
    assert_eq!(run.code, Some(1), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("FAILED call nope: the server lists no usable tool nope; usable: "),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("FAILED call fail: the tool reported an error: it failed on purpose"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.contains("ok call echo\n  still runs\n"),
        "{}",
        run.stdout
    );
    assert!(run.stderr.contains("2 of 3 steps failed"), "{}", run.stderr);

    // A bad script is a usage error, before anything connects.
    let bad = probe(&["--script", "-", &fixture.url], "list\nfrobnicate\n").await;
    assert_eq!(bad.code, Some(2), "{}", bad.stderr);
    assert!(
        bad.stderr.contains("script line 2: frobnicate"),
        "{}",
        bad.stderr
    );

    // Nothing listening: the connection error, exit 1.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let down = probe(&["--protocol", "2026-07-28", &url], "").await;
    assert_eq!(down.code, Some(1), "{}", down.stderr);
    assert!(
        down.stderr.contains(&format!("cannot connect to {url}")),
        "{}",
        down.stderr
    );
}

/// SEP-1699 polling, as the suite's `sse-retry` scenario does it: the tool's
/// POST stream sends a priming event (an id, `retry: 500`) and closes before
/// the response, which goes to the next GET the server gets. The probe must
/// have its standalone GET stream open before it sends anything after the
/// handshake (the server answers that GET late, as a busy machine would), so
/// the response waits for the resumption: a GET with `Last-Event-ID` set to
/// the priming event's id, no sooner than `retry` after the close.
#[tokio::test]
async fn a_post_stream_closed_before_its_response_is_resumed_with_last_event_id_after_retry() {
    let server = SseRetryServer::start().await;
    let run = probe(
        &["--protocol", "2025-11-25", "--script", "-", &server.url],
        "call test_reconnection\n",
    )
    .await;
    let seen = server.seen();
    assert_eq!(
        run.code,
        Some(0),
        "{}\n{}\n{seen:#?}",
        run.stdout,
        run.stderr
    );
    assert!(
        run.stdout
            .contains(&format!("ok call test_reconnection\n  {DONE}\n")),
        "{}",
        run.stdout
    );
    let handshake = ["initialize", "notifications/initialized"];
    for request in &seen {
        if let Seen::Post {
            method,
            standalone_open: false,
        } = request
        {
            assert!(
                method.as_deref().is_some_and(|m| handshake.contains(&m)),
                "{method:?} was sent before the standalone stream was open: {seen:#?}"
            );
        }
    }
    let (priming, closed_at) = server.closed().expect("the tool was called");
    assert_eq!(
        server.delivered(),
        Some(Delivered::OnGet(Some(priming.clone()))),
        "the response went to the wrong GET: {seen:#?}"
    );
    let resumed_at = seen
        .iter()
        .find_map(|request| match request {
            Seen::Get {
                last_event_id: Some(id),
                at,
            } if *id == priming => Some(*at),
            _ => None,
        })
        .expect("a GET resumed the stream");
    // A lower bound (the client MUST wait `retry`), never a speed figure.
    assert!(
        resumed_at >= closed_at + RETRY,
        "resumed {:?} after the close, before the {RETRY:?} the server asked for",
        resumed_at - closed_at
    );
}
