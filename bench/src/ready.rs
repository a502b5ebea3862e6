//! Spawn → ready of every tool server, as an outside client sees it: the
//! process is started over stdio, sent one handshake and `tools/list`, and
//! timed from just before `spawn` to each answer's line. Both protocol
//! eras: 2025-11-25 (`initialize`, `notifications/initialized`,
//! `tools/list`) and 2026-07-28 (`server/discover`, then `tools/list` with
//! `_meta`, what the agent sends its built-in children). Then stdin is
//! closed and the exit is timed.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Which handshake a run sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25: `initialize` + `notifications/initialized`.
    Legacy,
    /// 2026-07-28: `server/discover`, `_meta` on every request.
    Modern,
}

impl Era {
    /// The first request's method, for the table.
    pub fn handshake(self) -> &'static str {
        match self {
            Era::Legacy => "initialize",
            Era::Modern => "server/discover",
        }
    }
}

/// One run's times, all from just before `spawn`, except `exit` (from
/// closing stdin).
#[derive(Debug, Clone, Copy)]
pub struct Ready {
    /// The handshake's answer (`initialize` or `server/discover`).
    pub handshake: Duration,
    /// The `tools/list` answer.
    pub tools: Duration,
    /// Stdin closed → the process reaped.
    pub exit: Duration,
}

/// How to start one server: program and arguments.
#[derive(Debug, Clone)]
pub struct Launch {
    /// What the table calls it.
    pub label: String,
    /// The program.
    pub program: PathBuf,
    /// Its arguments (`--root`, `--db`, ...).
    pub args: Vec<String>,
}

/// The temp home every server runs under (so no run touches the user's
/// `~/.nanohermes`), with a workspace inside.
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    /// A fresh home with an empty workspace.
    pub fn new() -> anyhow::Result<Scratch> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir_all(dir.path().join("ws"))?;
        Ok(Scratch { dir })
    }

    /// The workspace root the servers are given.
    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// A path under the home.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn home(&self) -> &Path {
        self.dir.path()
    }
}

/// One spawn → handshake → `tools/list` → exit of `launch`.
pub fn once(launch: &Launch, scratch: &Scratch, era: Era) -> anyhow::Result<Ready> {
    let started = Instant::now();
    let mut child = Command::new(&launch.program)
        .args(&launch.args)
        .current_dir(scratch.workspace())
        .env("HOME", scratch.home())
        .env("NANOHERMES_HOME", scratch.path(".nanohermes"))
        .env_remove("NANOHERMES_MEMORY_DB")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let outcome = exchange(&mut child, era, started);
    if outcome.is_err() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let (handshake, tools) = outcome.map_err(|e| anyhow::anyhow!("{}: {e:#}", launch.label))?;
    drop(child.stdin.take());
    let closed = Instant::now();
    let status = child.wait()?;
    let exit = closed.elapsed();
    anyhow::ensure!(status.success(), "{} exited with {status}", launch.label);
    Ok(Ready {
        handshake,
        tools,
        exit,
    })
}

fn exchange(child: &mut Child, era: Era, started: Instant) -> anyhow::Result<(Duration, Duration)> {
    let mut stdin = child.stdin.take().expect("piped stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "nanohermes-bench", "version": "0"},
    });
    let handshake = match era {
        Era::Legacy => json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "nanohermes-bench", "version": "0"},
        }}),
        Era::Modern => {
            json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}})
        }
    };
    send(&mut stdin, &handshake)?;
    answer(&mut stdout, 1)?;
    let first = started.elapsed();
    let list = match era {
        Era::Legacy => {
            send(
                &mut stdin,
                &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )?;
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        }
        Era::Modern => {
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}})
        }
    };
    send(&mut stdin, &list)?;
    let tools = answer(&mut stdout, 2)?;
    let second = started.elapsed();
    anyhow::ensure!(
        tools["tools"].as_array().is_some_and(|t| !t.is_empty()),
        "tools/list listed no tools: {tools}"
    );
    child.stdin = Some(stdin);
    child.stdout = Some(stdout.into_inner());
    Ok((first, second))
}

fn send(stdin: &mut ChildStdin, message: &Value) -> anyhow::Result<()> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    stdin.write_all(&line)?;
    stdin.flush()?;
    Ok(())
}

/// The `result` of the response to request `id`, skipping notifications.
fn answer(stdout: &mut BufReader<ChildStdout>, id: u64) -> anyhow::Result<Value> {
    let mut line = String::new();
    loop {
        line.clear();
        anyhow::ensure!(
            stdout.read_line(&mut line)? > 0,
            "closed stdout before answering request {id}"
        );
        let message: Value = serde_json::from_str(&line)?;
        if message["id"] != json!(id) {
            continue;
        }
        return match message.get("result") {
            Some(result) => Ok(result.clone()),
            None => anyhow::bail!("request {id} failed: {message}"),
        };
    }
}

/// `runs` runs of `launch` after one warm-up run; `fresh` gives each run's
/// extra arguments (a new database path, say) when set.
pub fn runs(
    launch: &Launch,
    scratch: &Scratch,
    era: Era,
    runs: usize,
    fresh: Option<&dyn Fn(usize) -> Vec<String>>,
) -> anyhow::Result<Vec<Ready>> {
    let with = |i: usize| {
        let mut launch = launch.clone();
        if let Some(fresh) = fresh {
            launch.args.extend(fresh(i));
        }
        launch
    };
    once(&with(0), scratch, era)?; // warm the page cache
    (1..=runs).map(|i| once(&with(i), scratch, era)).collect()
}

/// `runs` spawn → exit times of `true` (after one warm-up).
pub fn spawn_true(runs: usize) -> anyhow::Result<Vec<Duration>> {
    let once = || -> anyhow::Result<Duration> {
        let started = Instant::now();
        let status = Command::new("true")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        anyhow::ensure!(status.success(), "true exited with {status}");
        Ok(started.elapsed())
    };
    once()?;
    (0..runs).map(|_| once()).collect()
}
