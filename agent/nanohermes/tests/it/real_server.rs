//! A real third-party model server under the real binary: llama.cpp's
//! `llama-server` with SmolLM2-135M, both built and fetched by
//! `scripts/llama-server` (which `scripts/test` runs before these tests).
//! One short text task per model wire, configured the way a Codex user
//! writes a local provider into `config.toml`; the server's own log says
//! which endpoint answered, so a wire that quietly spoke chat completions
//! fails.
//!
//! Ignored by default: they need the binary and the model, named by
//! `NANOHERMES_LLAMA_SERVER` and `NANOHERMES_LLAMA_MODEL`
//! (`eval "$(scripts/llama-server --print-env)"`). Run on purpose without
//! them, they fail: an ignored test run by hand must never pass vacuously.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::binary::{Run, nanohermes, workspace_arg};

/// What llama-server logs (at debug verbosity) when `/v1/responses` takes a
/// request: it converts every Responses body to chat completions first.
const RESPONSES_MARK: &str = "Request converted: OpenAI Responses -> OpenAI Chat Completions";
/// The same for `/v1/messages`.
const MESSAGES_MARK: &str = "Request converted: Anthropic -> OpenAI Chat Completions";

/// The task: one short answer, no tool needed.
const TASK: &str = "Say hello in one word.";

/// One llama-server at a time: two cores, and each run's timing (the
/// binary's 60 s timeout) must not depend on another test's prompt.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The path in `name`, which must be set and exist.
fn required(name: &str) -> PathBuf {
    let value = std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            panic!(
                "{name} is not set: these tests need llama.cpp's llama-server and a GGUF model; \
             run `eval \"$(scripts/llama-server --print-env)\"` first (scripts/test does)"
            )
        });
    let path = PathBuf::from(value);
    assert!(
        path.is_file(),
        "{name}={} is not a file; rerun scripts/llama-server",
        path.display()
    );
    path
}

/// A running `llama-server` on a loopback port, killed on drop.
struct LlamaServer {
    child: std::process::Child,
    port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl LlamaServer {
    /// Starts llama-server on a free port and waits until `/health` says the
    /// model is loaded.
    async fn start() -> LlamaServer {
        let binary = required("NANOHERMES_LLAMA_SERVER");
        let model = required("NANOHERMES_LLAMA_MODEL");
        // The port is free when probed; another process may take it before
        // the server binds, so a server that exits early is tried again.
        for _ in 0..3 {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("llama-server.log");
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let child = std::process::Command::new(&binary)
                .args(["--host", "127.0.0.1", "--port", &port.to_string(), "-m"])
                .arg(&model)
                // 4096: the prompt and the answer fit (SmolLM2's template
                // renders no tool declarations: the first prompt is 226
                // tokens). --jinja: the model's own chat template, as the
                // tool-calling endpoints need it. --verbose: the debug
                // lines that name the converting endpoint. One slot: one
                // request at a time is all a run sends. One thread: OpenMP's
                // spinning workers on a busy 2-core machine (cargo, the
                // agent) fell to 2 tokens a second, one thread keeps 35.
                .args(["-c", "4096", "--jinja", "--verbose", "--parallel", "1"])
                .args(["--threads", "1", "--no-webui"])
                .stdin(Stdio::null())
                .stdout(std::fs::File::create(dir.path().join("stdout.log")).unwrap())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .unwrap_or_else(|e| panic!("{} did not start: {e}", binary.display()));
            let mut server = LlamaServer {
                child,
                port,
                log,
                _dir: dir,
            };
            if server.wait_healthy().await {
                return server;
            }
        }
        panic!("llama-server exited three times before serving; see the logs above");
    }

    /// Polls `/health` for up to a minute; false when the server exited (its
    /// log is printed), a panic when it never became healthy.
    async fn wait_healthy(&mut self) -> bool {
        let client = reqwest::Client::new();
        let url = format!("http://127.0.0.1:{}/health", self.port);
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                eprintln!("llama-server exited with {status}:\n{}", self.log_text());
                return false;
            }
            if let Ok(response) = client.get(&url).send().await
                && response.status().is_success()
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!(
            "llama-server was not healthy within 60 s:\n{}",
            self.log_text()
        );
    }

    /// The API root a provider's `base_url` names.
    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Everything the server has logged so far.
    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The answer's cap, the one key besides the provider's: at temperature 0
/// SmolLM2-135M rambles on for thousands of tokens (measured: 1,600 tokens
/// and two minutes on a busy 2-core machine), and a cut answer is still an
/// answer (`status: done`).
const MAX_TOKENS: &str = "max_tokens = 32\n";

/// A Codex-style config: a local provider named `llama` on `wire_api`.
fn provider_config(base_url: &str, wire_api: &str) -> String {
    format!(
        "model = \"smollm2\"\n\
         model_provider = \"llama\"\n\
         {MAX_TOKENS}\
         \n\
         [model_providers.llama]\n\
         name = \"llama.cpp\"\n\
         base_url = \"{base_url}\"\n\
         wire_api = \"{wire_api}\"\n"
    )
}

/// `nanohermes run --output-format json TASK` in a fresh home holding
/// `config` and a fresh workspace, plus `env`.
async fn run_task(config: &str, env: &[(&str, &str)]) -> Run {
    let home = tempfile::tempdir().unwrap();
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), config).unwrap();
    let home_path = home.path().to_str().unwrap().to_owned();
    let mut all = vec![("NANOHERMES_HOME", home_path.as_str())];
    all.extend_from_slice(env);
    let workspace = workspace_arg(workspace.path());
    nanohermes(
        &[
            "run",
            "--output-format",
            "json",
            "--workspace",
            &workspace,
            TASK,
        ],
        &all,
    )
    .await
}

/// The run finished with a non-empty answer and token counts the server
/// reported over the wire.
fn assert_answered(run: &Run, server: &LlamaServer) -> Value {
    let context = || {
        format!(
            "{run:#?}\nllama-server log tail:\n{}",
            tail(&server.log_text())
        )
    };
    assert_eq!(run.code, Some(0), "{}", context());
    let result: Value = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {}", context()));
    assert_eq!(result["status"], "done", "{}", context());
    assert_eq!(result["is_error"], false, "{}", context());
    let answer = result["result"].as_str().unwrap_or_default();
    assert!(!answer.trim().is_empty(), "empty answer: {}", context());
    assert!(
        result["usage"]["input_tokens"].as_u64().unwrap_or(0) > 0
            && result["usage"]["output_tokens"].as_u64().unwrap_or(0) > 0,
        "the server's usage did not arrive: {}",
        context()
    );
    result
}

/// The last lines of a long log, for a failure message.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

/// How many requests the server's log says went through the endpoint whose
/// conversion line is `mark`.
fn converted(server: &LlamaServer, mark: &str) -> usize {
    server.log_text().matches(mark).count()
}

/// Chat completions took every request: neither converting endpoint was hit,
/// and the server did answer (the run's usage came from it).
fn assert_chat_only(server: &LlamaServer) {
    assert_eq!(
        converted(server, RESPONSES_MARK),
        0,
        "/v1/responses was used"
    );
    assert_eq!(converted(server, MESSAGES_MARK), 0, "/v1/messages was used");
}

/// The chat wire through the environment (`OPENAI_BASE_URL`, no key: the
/// server is local), the way the agent is pointed at a server today.
#[tokio::test]
#[ignore = "needs llama-server: scripts/llama-server"]
async fn chat_completions_through_the_environment_answer() {
    let _serial = SERIAL.lock().await;
    let server = LlamaServer::start().await;
    let url = server.base_url();
    let run = run_task(
        MAX_TOKENS,
        &[("OPENAI_BASE_URL", &url), ("NANOHERMES_MODEL", "smollm2")],
    )
    .await;
    assert_answered(&run, &server);
    assert_chat_only(&server);
}

/// `wire_api = "chat"` from a Codex-style provider table.
#[tokio::test]
#[ignore = "needs llama-server: scripts/llama-server"]
async fn chat_wire_from_a_codex_provider_config_answers() {
    let _serial = SERIAL.lock().await;
    let server = LlamaServer::start().await;
    let run = run_task(&provider_config(&server.base_url(), "chat"), &[]).await;
    assert_answered(&run, &server);
    assert_chat_only(&server);
}

/// `wire_api = "responses"`: every model request went to `/v1/responses`.
#[tokio::test]
#[ignore = "needs llama-server: scripts/llama-server"]
async fn responses_wire_from_a_codex_provider_config_answers() {
    let _serial = SERIAL.lock().await;
    let server = LlamaServer::start().await;
    let run = run_task(&provider_config(&server.base_url(), "responses"), &[]).await;
    assert_answered(&run, &server);
    assert!(
        converted(&server, RESPONSES_MARK) >= 1,
        "no request reached /v1/responses:\n{}",
        tail(&server.log_text())
    );
    assert_eq!(
        converted(&server, MESSAGES_MARK),
        0,
        "/v1/messages was used"
    );
}

/// `wire_api = "messages"`: every model request went to `/v1/messages`.
#[tokio::test]
#[ignore = "needs llama-server: scripts/llama-server"]
async fn messages_wire_from_a_codex_provider_config_answers() {
    let _serial = SERIAL.lock().await;
    let server = LlamaServer::start().await;
    let run = run_task(&provider_config(&server.base_url(), "messages"), &[]).await;
    assert_answered(&run, &server);
    assert!(
        converted(&server, MESSAGES_MARK) >= 1,
        "no request reached /v1/messages:\n{}",
        tail(&server.log_text())
    );
    assert_eq!(
        converted(&server, RESPONSES_MARK),
        0,
        "/v1/responses was used"
    );
}

/// The marks these tests rely on are what this llama-server logs: each
/// endpoint, hit directly, logs its own line and not the other's. Without
/// this a renamed log line would make the chat tests pass for any wire.
#[tokio::test]
#[ignore = "needs llama-server: scripts/llama-server"]
async fn the_server_log_names_the_endpoint_it_converted_from() {
    let _serial = SERIAL.lock().await;
    let server = LlamaServer::start().await;
    let client = reqwest::Client::new();
    let post = |path: &str, body: Value| {
        let request = client
            .post(format!("{}{path}", server.base_url()))
            .json(&body)
            .send();
        async move {
            let response = request.await.unwrap();
            let status = response.status();
            let text = response.text().await.unwrap();
            assert!(status.is_success(), "{status}: {text}");
        }
    };
    post(
        "/chat/completions",
        serde_json::json!({"messages": [{"role": "user", "content": TASK}], "max_tokens": 4}),
    )
    .await;
    assert_chat_only(&server);
    post(
        "/responses",
        serde_json::json!({"input": TASK, "max_output_tokens": 4}),
    )
    .await;
    assert_eq!(
        converted(&server, RESPONSES_MARK),
        1,
        "{}",
        tail(&server.log_text())
    );
    assert_eq!(converted(&server, MESSAGES_MARK), 0);
    post(
        "/messages",
        serde_json::json!({"messages": [{"role": "user", "content": TASK}], "max_tokens": 4}),
    )
    .await;
    assert_eq!(
        converted(&server, MESSAGES_MARK),
        1,
        "{}",
        tail(&server.log_text())
    );
    assert_eq!(converted(&server, RESPONSES_MARK), 1);
}
