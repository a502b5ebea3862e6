//! A hostile model server against the real binary: a gigabyte body, half a
//! gigabyte of tool arguments, a stream trickled a byte at a time. The
//! agent (a long-lived `nanohermes serve`, spoken to over stdio in raw
//! JSON-RPC) must end each with a clear error while its peak memory
//! (`VmHWM` in /proc/PID/status, read while it is still running) stays
//! small. Also the errors of a misconfigured endpoint: a base URL without
//! `/v1`, a proxy's HTML page.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::support::binary::{nanohermes, on_mock, workspace_arg};
use crate::support::history::assert_requests_valid_on;
use crate::support::mock_model::{Hostile, MockModel, Reply, Step, WireApi, text};
use crate::support::on_every_wire;

/// The peak the agent may reach while refusing a hostile answer. A plain
/// task peaks near 20 MiB (measured: see `a_plain_task_peaks_low`); the
/// caps let at most 16 MiB of body (plus its parse) in.
const PEAK_LIMIT_KIB: u64 = 120 * 1024;

/// A `nanohermes serve` over stdio, with its own home and config.
struct Served {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    _home: tempfile::TempDir,
    workspace: tempfile::TempDir,
}

impl Served {
    /// Starts the server on `mock` with `config` as the user's config.toml.
    async fn start(mock: &MockModel, config: &str) -> Served {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("config.toml"), config).unwrap();
        let workspace = tempfile::tempdir().unwrap();
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"))
            .arg("serve")
            .arg("--root")
            .arg(workspace.path())
            .env("NANOHERMES_HOME", home.path())
            .env("OPENAI_BASE_URL", mock.base_url())
            .env("NANOHERMES_MODEL", "hostile-model")
            .env("NANOHERMES_MODE", "goal")
            .env(KEY_VAR, "test-key")
            .env_remove("OPENAI_API_KEY")
            .env_remove("NANOHERMES_AGENT_DEPTH")
            .env_remove("NANOHERMES_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut served = Served {
            child,
            stdin,
            lines,
            _home: home,
            workspace,
        };
        served
            .request(
                1,
                "initialize",
                json!({"protocolVersion":"2025-06-18","capabilities":{},
                       "clientInfo":{"name":"raw-host","version":"1"}}),
            )
            .await;
        served
            .send(json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await;
        served
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
    }

    /// Sends a request and waits (at most a minute) for its response.
    async fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
        let wait = async {
            loop {
                let line = self.lines.next_line().await.unwrap().expect("a response");
                let message: Value = serde_json::from_str(&line).unwrap();
                if message["id"] == id {
                    return message;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(60), wait)
            .await
            .expect("the server answered within a minute")
    }

    /// Runs one task; returns its final text.
    async fn run_task(&mut self, id: u64, task: &str) -> String {
        let response = self
            .request(
                id,
                "tools/call",
                json!({"name":"run_task","arguments":{"task":task}}),
            )
            .await;
        response["result"]["structuredContent"]["final_text"]
            .as_str()
            .unwrap_or_else(|| panic!("no final_text in {response}"))
            .to_owned()
    }

    /// The server's peak resident memory so far, in KiB.
    fn peak_kib(&self) -> u64 {
        let pid = self.child.id().expect("the server still runs");
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc/PID/status")
    }

    fn workspace(&self) -> &Path {
        self.workspace.path()
    }
}

/// The variable holding the key of the provider [`on_wire`] writes.
const KEY_VAR: &str = "HOSTILE_MODEL_KEY";

/// `config` (top-level keys) putting the agent on `wire`: chat as the
/// environment says (`OPENAI_BASE_URL`); the other wires through a
/// provider of the user's config at the mock.
fn on_wire(mock: &MockModel, wire: WireApi, config: &str) -> String {
    if wire == WireApi::Chat {
        return config.to_owned();
    }
    format!(
        "{config}model_provider = \"mock\"\n\n[model_providers.mock]\nbase_url = {:?}\nwire_api = \"{}\"\nenv_key = \"{KEY_VAR}\"\n",
        mock.base_url(),
        wire.as_str()
    )
}

async fn hostile(steps: Vec<Step>, config: &str) -> (MockModel, Served) {
    hostile_on(WireApi::Chat, steps, config).await
}

/// The mock serving `steps`, and the agent on it on `wire`.
async fn hostile_on(wire: WireApi, steps: Vec<Step>, config: &str) -> (MockModel, Served) {
    let mock = MockModel::start(steps).await;
    let served = Served::start(&mock, &on_wire(&mock, wire, config)).await;
    (mock, served)
}

async fn a_plain_task_peaks_low(wire: WireApi) {
    let (mock, mut served) = hostile_on(wire, vec![text(&["fine"]).into()], "").await;
    assert_eq!(served.run_task(2, "say fine").await, "fine");
    let peak = served.peak_kib();
    eprintln!("plain task on {}: VmHWM {peak} KiB", wire.as_str());
    assert!(peak < PEAK_LIMIT_KIB, "{peak} KiB");
    assert_requests_valid_on(&mock.requests(), wire);
}
on_every_wire!(a_plain_task_peaks_low);

// Chat only: the hostile body is a chat completion, and the 16 MiB cap
// is the client's, before any wire reads it.
#[tokio::test]
async fn a_gigabyte_body_is_refused_at_16_mib_with_bounded_memory() {
    let (mock, mut served) = hostile(
        vec![Reply::Hostile(Hostile::HugeJson { bytes: 1 << 30 }).into()],
        "stream = false\n",
    )
    .await;
    let started = Instant::now();
    let text = served.run_task(2, "answer").await;
    let peak = served.peak_kib();
    eprintln!(
        "1 GiB body: VmHWM {peak} KiB, {} ms",
        started.elapsed().as_millis()
    );
    assert!(
        text.contains("the model server's response passed 16 MiB"),
        "{text}"
    );
    assert!(peak < PEAK_LIMIT_KIB, "{peak} KiB");
    // Not retried: a server that sent this once sends it again.
    assert_eq!(mock.requests().len(), 1);
}

// Chat only: the dense body is a chat completion; the value cap is the
// client's, before any wire reads it.
#[tokio::test]
async fn a_body_just_under_the_cap_but_dense_with_json_values_is_refused_with_bounded_memory() {
    // 16 MiB of `,0`: eight million values, each a tree node of 32 bytes
    // or more once parsed.
    let (mock, mut served) = hostile(
        vec![
            Reply::Hostile(Hostile::DenseJson {
                bytes: (16 << 20) - 1024,
            })
            .into(),
        ],
        "stream = false\n",
    )
    .await;
    let started = Instant::now();
    let text = served.run_task(2, "answer").await;
    let peak = served.peak_kib();
    eprintln!(
        "16 MiB of dense JSON: VmHWM {peak} KiB, {} ms",
        started.elapsed().as_millis()
    );
    assert!(text.contains("JSON values"), "{text}");
    assert!(peak < PEAK_LIMIT_KIB, "{peak} KiB");
    assert_eq!(mock.requests().len(), 1);
}

async fn half_a_gigabyte_of_arguments_is_refused_without_running_the_call(wire: WireApi) {
    let (mock, mut served) = hostile_on(
        wire,
        vec![
            Reply::Hostile(Hostile::HugeArguments { bytes: 512 << 20 }).into(),
            text(&["done"]).into(),
        ],
        "",
    )
    .await;
    let started = Instant::now();
    let text = served.run_task(2, "write it").await;
    let peak = served.peak_kib();
    eprintln!(
        "512 MiB of arguments on {}: VmHWM {peak} KiB, {} ms",
        wire.as_str(),
        started.elapsed().as_millis()
    );
    assert_eq!(text, "done");
    assert!(peak < PEAK_LIMIT_KIB, "{peak} KiB");
    assert!(!served.workspace().join("hostile.txt").exists());
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_requests_valid_on(&requests, wire);
    let messages = requests[1].history();
    let call = &messages[messages.len() - 2];
    assert_eq!(call["tool_calls"][0]["function"]["arguments"], "{}");
    let result = messages.last().unwrap()["content"].as_str().unwrap();
    assert!(
        result.starts_with("ERROR: invalid JSON arguments for `write_file`: the arguments are longer than 1048576 bytes (1 MiB)"),
        "{}",
        &result[..result.len().min(300)]
    );
    assert!(result.len() < 20_000, "the result quotes a clamped prefix");
}
on_every_wire!(half_a_gigabyte_of_arguments_is_refused_without_running_the_call);

// Chat only: the trickled frame is a chat chunk; the idle timeout is the
// client's, whatever the wire.
#[tokio::test]
async fn a_stream_trickled_a_byte_at_a_time_times_out_and_is_retried() {
    let trickle = || {
        Reply::Hostile(Hostile::Trickle {
            every: Duration::from_millis(700),
        })
    };
    let (mock, mut served) = hostile(
        vec![trickle().into(), trickle().into()],
        "stream_idle_timeout_ms = 1500\nmax_retries = 1\nretry_base_ms = 10\n",
    )
    .await;
    let started = Instant::now();
    let text = served.run_task(2, "answer").await;
    let elapsed = started.elapsed();
    // A byte every 0.7 s is never 1.5 s of silence: only events count.
    assert!(
        text.contains("the model server sent nothing for 1500 ms (stream_idle_timeout_ms)"),
        "{text}"
    );
    assert_eq!(mock.requests().len(), 2, "retried once, as configured");
    assert!(elapsed < Duration::from_secs(15), "{elapsed:?}");
    assert!(served.peak_kib() < PEAK_LIMIT_KIB);
}

// Chat only: the hint names OPENAI_BASE_URL, the chat default's variable
// (a provider's base_url is written in its config).
#[tokio::test]
async fn a_base_url_without_v1_is_reported_as_a_404_of_the_endpoint_not_a_missing_model() {
    let mock = MockModel::start(vec![
        Reply::Page {
            code: 404,
            content_type: "text/plain; charset=utf-8".into(),
            body: "404 page not found".into(),
        }
        .into(),
    ])
    .await;
    let workspace = tempfile::tempdir().unwrap();
    // The mock answers any path; the URL is what a user typed without /v1.
    let url = mock.base_url().trim_end_matches("/v1").to_owned();
    let mut env = on_mock(&mock, &url);
    env.push(("NANOHERMES_MODEL", "mock-model"));
    let dir = workspace_arg(workspace.path());
    let run = nanohermes(&["run", "--workspace", &dir, "hi"], &env).await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains(&format!(
            "the model server answered HTTP 404 (not found) for {url}/chat/completions: 404 page not found (check OPENAI_BASE_URL: most servers need it to end in /v1"
        )),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("does not exist"), "{}", run.stderr);
}

// Chat only: `nanohermes run` on the environment's chat endpoint; the
// page is read before any wire is (model_client.rs covers statuses on
// every wire).
#[tokio::test]
async fn an_html_error_page_shows_its_text_not_its_doctype() {
    let page = "<!DOCTYPE HTML PUBLIC \"-//IETF//DTD HTML 2.0//EN\">\n<html><head>\n<title>503 Service Unavailable</title>\n</head><body>\n<h1>Service Unavailable</h1>\n<p>The server is temporarily unable to service your request due to maintenance downtime.</p>\n</body></html>\n";
    let step = || -> Step {
        Reply::Page {
            code: 503,
            content_type: "text/html; charset=iso-8859-1".into(),
            body: page.into(),
        }
        .into()
    };
    let mock = MockModel::start(vec![step(), step(), step()]).await;
    let workspace = tempfile::tempdir().unwrap();
    let url = mock.base_url();
    let env = on_mock(&mock, &url);
    let dir = workspace_arg(workspace.path());
    let run = nanohermes(
        &["run", "--workspace", &dir, "--retry-base-ms", "1", "hi"],
        &env,
    )
    .await;
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("answered HTTP 503: 503 Service Unavailable: Service Unavailable The server is temporarily unable to service your request due to maintenance downtime."),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("DOCTYPE"), "{}", run.stderr);
}
