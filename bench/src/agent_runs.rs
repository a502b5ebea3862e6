//! Whole-agent runs: `nanohermes run` against the scripted model, with the
//! built-ins in-process, as child processes, or over HTTP (servers started
//! beforehand, as a remote placement implies).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::bins::Bins;
use crate::mock_model::{MockModel, Reply, Step, call, text, tool_calls};
use crate::tree::{Peaks, Watch};

/// The built-in names, as `[mcp_servers.NAME]` entries take them.
const BUILTINS: [&str; 7] = ["files", "grep", "shell", "git", "todo", "memory", "web"];

/// Where the built-in servers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Inside the agent (the default).
    InProcess,
    /// Each a child process over stdio (`run = "process"`).
    Process,
    /// Each its own `nanohermes builtin NAME --http` server, reached by `url`.
    Http,
}

impl Placement {
    /// The label used in the table.
    pub fn label(self) -> &'static str {
        match self {
            Placement::InProcess => "in-process",
            Placement::Process => "child processes",
            Placement::Http => "over HTTP",
        }
    }
}

/// A home, a workspace and, for HTTP, the running servers; one per placement.
pub struct Setting {
    home: tempfile::TempDir,
    workspace: tempfile::TempDir,
    servers: Vec<std::process::Child>,
}

impl Setting {
    /// Writes the config for `placement` (and starts the HTTP servers).
    pub fn new(bins: &Bins, placement: Placement) -> anyhow::Result<Setting> {
        let home = tempfile::tempdir()?;
        let workspace = tempfile::tempdir()?;
        std::fs::write(
            workspace.path().join("README.md"),
            "# bench\n\nA small project.\n",
        )?;
        // The 50-step task runs past the default iteration limit.
        let mut config = String::from("max_iterations = 100\n\n");
        let mut servers = Vec::new();
        for name in BUILTINS {
            match placement {
                Placement::InProcess => {}
                Placement::Process => {
                    config.push_str(&format!("[mcp_servers.{name}]\nrun = \"process\"\n\n"));
                }
                Placement::Http => {
                    let port = free_port()?;
                    let mut command = std::process::Command::new(bins.agent());
                    command
                        .args(["builtin", name, "--http", &format!("127.0.0.1:{port}")])
                        .arg("--root")
                        .arg(workspace.path())
                        .env("NANOHERMES_HOME", home.path())
                        .stdout(Stdio::null())
                        .stderr(Stdio::null());
                    servers.push(command.spawn()?);
                    wait_for_port(port)?;
                    config.push_str(&format!(
                        "[mcp_servers.{name}]\nurl = \"http://127.0.0.1:{port}/mcp\"\n\n"
                    ));
                }
            }
        }
        std::fs::write(home.path().join("config.toml"), config)?;
        Ok(Setting {
            home,
            workspace,
            servers,
        })
    }

    /// The workspace the agent works in.
    pub fn workspace(&self) -> &Path {
        self.workspace.path()
    }

    /// `NANOHERMES_HOME`.
    pub fn home(&self) -> PathBuf {
        self.home.path().to_path_buf()
    }
}

impl Drop for Setting {
    fn drop(&mut self) {
        for server in &mut self.servers {
            let _ = server.kill();
            let _ = server.wait();
        }
    }
}

/// What one run of the agent showed.
#[derive(Debug, Clone)]
pub struct Run {
    /// Process start → the model received the first request.
    pub first_request: Duration,
    /// Process start → exit.
    pub total: Duration,
    /// The last model request's arrival (its reply is instant) → exit.
    pub exit_after_last: Duration,
    /// The size of each request body.
    pub bodies: Vec<usize>,
    /// Between consecutive model requests (one step: reply, tool call, next request).
    pub gaps: Vec<Duration>,
    /// Peak memory, when the run was watched.
    pub peaks: Option<Peaks>,
    /// CPU time (user + system) of the agent and of every process it
    /// reaped (its commands; the old namespace probe's child).
    pub cpu: Duration,
}

/// Runs `nanohermes run` once with `script`; `watch` samples its memory.
/// Runs are never concurrent: the CPU figure is this process's reaped
/// children's, before and after.
pub async fn run(
    bins: &Bins,
    setting: &Setting,
    script: Vec<Step>,
    watch: bool,
) -> anyhow::Result<Run> {
    let expected = script.len();
    let mock = MockModel::start_keep_alive(script).await;
    let mut command = tokio::process::Command::new(bins.agent());
    command
        .args(["run", "--workspace"])
        .arg(setting.workspace())
        .arg("do the scripted task")
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "bench")
        .env("NANOHERMES_MODE", "goal")
        .env("NANOHERMES_HOME", setting.home())
        .env_remove("NANOHERMES_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let cpu_before = children_cpu();
    let start = Instant::now();
    let mut child = command.spawn()?;
    let watcher = watch.then(|| Watch::start(child.id().unwrap_or_default()));
    let status = child.wait().await?;
    let total = start.elapsed();
    let cpu = children_cpu().saturating_sub(cpu_before);
    let peaks = watcher.map(Watch::finish);
    anyhow::ensure!(status.success(), "nanohermes run failed: {status}");
    let requests = mock.requests();
    anyhow::ensure!(
        requests.len() == expected,
        "the agent made {} model requests, the script has {expected}",
        requests.len()
    );
    let last = requests.last().map(|r| r.at).unwrap_or(start);
    Ok(Run {
        first_request: requests[0].at.duration_since(start),
        total,
        exit_after_last: (start + total).saturating_duration_since(last),
        bodies: requests.iter().map(|r| r.body_len).collect(),
        gaps: requests
            .windows(2)
            .map(|w| w[1].at.duration_since(w[0].at))
            .collect(),
        peaks,
        cpu,
    })
}

/// User + system CPU of this process's reaped children (`RUSAGE_CHILDREN`).
#[allow(unsafe_code)]
fn children_cpu() -> Duration {
    // SAFETY: getrusage fills the struct it is given; zeroed is a valid one.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    let time = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// The 4-step task of the issue: list, read, shell, write, then the answer.
pub fn four_steps() -> Vec<Step> {
    whole(vec![
        tool_calls(&[call("c1", "list_dir", json!({}))]),
        tool_calls(&[call("c2", "read_file", json!({"path": "README.md"}))]),
        tool_calls(&[call("c3", "run_command", json!({"command": "true"}))]),
        tool_calls(&[call(
            "c4",
            "write_file",
            json!({"path": "notes.txt", "content": "bench\n"}),
        )]),
        text(&["Done."]),
    ])
}

/// `steps` trivial tool calls (`todo_read`), then the answer.
pub fn trivial_steps(steps: usize) -> Vec<Step> {
    let mut script: Vec<Reply> = (0..steps)
        .map(|i| tool_calls(&[call(&format!("c{i}"), "todo_read", json!({}))]))
        .collect();
    script.push(text(&["Done."]));
    whole(script)
}

/// Each reply written in one piece: the mock's pauses between pieces (which
/// make frames span reads in the tests) would be measured too.
fn whole(replies: Vec<Reply>) -> Vec<Step> {
    replies
        .into_iter()
        .map(|reply| reply.in_one_piece().into())
        .collect()
}

/// A loopback port nobody listens on now.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Waits (up to 10 s) until something accepts on `port`.
pub fn wait_for_port(port: u16) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        anyhow::ensure!(Instant::now() < deadline, "nothing listens on port {port}");
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}
