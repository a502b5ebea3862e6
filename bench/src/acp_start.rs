//! `nanohermes acp`: process start → the `initialize` answer read on its
//! stdout, and, within a `session/prompt`, the scripted model's first
//! token leaving the mock → the first `agent_message_chunk` read.
//!
//! The harness is the editor: it writes the JSON-RPC lines to the
//! agent's stdin itself and reads its stdout line by line, so the figures
//! include the agent's JSON-RPC framing and the pipe, and no editor's
//! work.
//!
//! Where the first token leaves the mock: each reply is scripted with
//! [`Reply::when_requested`](crate::mock_model::Reply::when_requested), whose hook the mock runs after reading the
//! request and just before it renders the reply and writes it in one
//! piece (keep-alive mode, one `write_all`). The hook's instant is
//! therefore at or before the first token's bytes leave; the interval
//! measured from it is an upper bound on the agent's share, over by the
//! mock's render of a one-line turn (microseconds).

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

use crate::bins::Bins;
use crate::mock_model::{MockModel, Step, text};

/// The prompts of one run (one process, one session).
pub const PROMPTS: usize = 4;

/// What one run of `nanohermes acp` showed.
pub struct AcpRun {
    /// Process start → the `initialize` answer read.
    pub initialized: Duration,
    /// Per prompt: the model's reply leaving the mock → the first
    /// `agent_message_chunk` read.
    pub first_chunks: Vec<Duration>,
}

/// The agent's stdout, a line at a time, as JSON.
struct Agent {
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Agent {
    async fn send(&mut self, message: Value) -> anyhow::Result<()> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await?;
        self.stdin.flush().await?;
        Ok(())
    }

    /// Reads until `wanted` matches a message; returns it and when it was read.
    async fn until(&mut self, wanted: impl Fn(&Value) -> bool) -> anyhow::Result<(Value, Instant)> {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(30), self.lines.next_line())
                .await
                .map_err(|_| anyhow::anyhow!("nanohermes acp said nothing for 30 s"))??
                .ok_or_else(|| anyhow::anyhow!("nanohermes acp closed its stdout"))?;
            let read = Instant::now();
            let message: Value = serde_json::from_str(&line)?;
            anyhow::ensure!(
                message.get("error").is_none(),
                "nanohermes acp answered an error: {message}"
            );
            if wanted(&message) {
                return Ok((message, read));
            }
        }
    }

    /// Reads until the answer to request `id`.
    async fn answer(&mut self, id: u64) -> anyhow::Result<(Value, Instant)> {
        self.until(|m| m["id"] == id && m.get("method").is_none())
            .await
    }
}

/// One process: `initialize`, `session/new`, then [`PROMPTS`] prompts,
/// each answered by the model in one text reply.
pub async fn run(bins: &Bins) -> anyhow::Result<AcpRun> {
    let workspace = tempfile::tempdir()?;
    let home = tempfile::tempdir()?;
    std::fs::write(workspace.path().join("README.md"), "# bench\n")?;
    let sent: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let script: Vec<Step> = (0..PROMPTS)
        .map(|_| {
            let sent = sent.clone();
            text(&["Hello", " from the model."])
                .in_one_piece()
                .when_requested(move || sent.lock().unwrap().push(Instant::now()))
        })
        .collect();
    let mock = MockModel::start_keep_alive(script).await;
    let mut command = tokio::process::Command::new(bins.agent());
    command
        .arg("acp")
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "bench")
        .env("NANOHERMES_MODEL", "bench-model")
        .env("NANOHERMES_MODE", "goal")
        .env("NANOHERMES_HOME", home.path())
        .env_remove("NANOHERMES_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let start = Instant::now();
    let mut child = command.spawn()?;
    let mut agent = Agent {
        stdin: child.stdin.take().expect("piped stdin"),
        lines: BufReader::new(child.stdout.take().expect("piped stdout")).lines(),
    };
    // Written at once: the pipe holds it until the agent reads.
    agent
        .send(json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                     "params": {"protocolVersion": 1, "clientCapabilities": {}}}))
        .await?;
    let (init, read) = agent.answer(0).await?;
    let initialized = read.duration_since(start);
    anyhow::ensure!(
        init["result"]["protocolVersion"] == 1,
        "initialize answered {init}"
    );

    let cwd = workspace.path().canonicalize()?;
    agent
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "session/new",
                     "params": {"cwd": cwd, "mcpServers": []}}))
        .await?;
    let (new, _) = agent.answer(1).await?;
    let session = new["result"]["sessionId"]
        .as_str()
        .ok_or_else(|| anyhow::anyhow!("session/new answered {new}"))?
        .to_owned();

    let mut first_chunks = Vec::with_capacity(PROMPTS);
    for prompt in 0..PROMPTS {
        let id = 2 + prompt as u64;
        agent
            .send(
                json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
                         "params": {"sessionId": session,
                                    "prompt": [{"type": "text", "text": "say hello"}]}}),
            )
            .await?;
        let (_, chunk) = agent
            .until(|m| {
                m["method"] == "session/update"
                    && m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
            })
            .await?;
        let left = sent
            .lock()
            .unwrap()
            .get(prompt)
            .copied()
            .ok_or_else(|| anyhow::anyhow!("a chunk came before the model was asked"))?;
        first_chunks.push(chunk.duration_since(left));
        let (answer, _) = agent.answer(id).await?;
        anyhow::ensure!(
            answer["result"]["stopReason"] == "end_turn",
            "the prompt answered {answer}"
        );
    }
    // The editor goes: stdin closes, the agent exits.
    drop(agent);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await??;
    anyhow::ensure!(status.success(), "nanohermes acp exited with {status}");
    Ok(AcpRun {
        initialized,
        first_chunks,
    })
}
