//! Tool-server figures outside the loop: `grep` against ripgrep on a large
//! tree, and `memory_search` over 100 000 memories, both through the hub.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use nanohermes_config::{BuiltinName, ServerSpec, StdioSpec, Transport};
use nanohermes_hub::{Hub, HubConfig};
use nanohermes_memory::{Kind, MemoryStore};
use serde_json::{Map, Value, json};

use crate::bins::Bins;

/// Runs of each side of the grep comparison.
const GREP_RUNS: usize = 7;
/// Memories in the searched database.
pub const MEMORIES: usize = 100_000;
/// Searches timed.
const SEARCHES: usize = 500;

/// The tree grep searches: the cargo registry's sources (hundreds of MB on
/// any machine that built this workspace).
pub fn grep_corpus() -> Option<PathBuf> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let src = home.join("registry/src");
    let first = std::fs::read_dir(&src).ok()?.flatten().next()?;
    Some(first.path())
}

/// (our `grep` tool through the hub, `rg` as a process) medians, searching
/// `corpus` for a pattern that matches a handful of lines.
pub async fn grep_against_rg(corpus: &Path) -> anyhow::Result<Option<(Duration, Duration)>> {
    const PATTERN: &str = "fn poll_shutdown_zz|SAFETY: the caller";
    let hub = Hub::start(HubConfig::new(
        corpus.to_path_buf(),
        vec![ServerSpec::default_builtin(BuiltinName::Grep)],
    ))
    .await?;
    let Value::Object(arguments) = json!({"pattern": PATTERN, "max_results": 50}) else {
        unreachable!()
    };
    let mut ours = Vec::new();
    for _ in 0..GREP_RUNS {
        let started = Instant::now();
        let answer = hub.call("grep", arguments.clone()).await;
        ours.push(started.elapsed());
        anyhow::ensure!(!answer.starts_with("ERROR"), "grep failed: {answer}");
    }
    hub.shutdown().await;
    let mut theirs = Vec::new();
    for _ in 0..GREP_RUNS {
        let started = Instant::now();
        let Ok(status) = std::process::Command::new("rg")
            .args(["-n", "-m", "50", PATTERN])
            .arg(corpus)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
        else {
            return Ok(None); // rg is not installed
        };
        theirs.push(started.elapsed());
        anyhow::ensure!(status.code().is_some_and(|c| c <= 1), "rg failed: {status}");
    }
    Ok(Some((
        crate::stats::median(ours),
        crate::stats::median(theirs),
    )))
}

/// `memory_search` round trips over stdio against a database of [`MEMORIES`].
pub async fn memory_search(bins: &Bins) -> anyhow::Result<Vec<Duration>> {
    let dir = tempfile::tempdir()?;
    let db = dir.path().join("memory.db");
    seed(&db)?;
    let spec = ServerSpec {
        transport: Transport::Stdio(StdioSpec {
            command: bins.agent().display().to_string(),
            args: vec![
                "builtin".into(),
                "memory".into(),
                "--db".into(),
                db.display().to_string(),
            ],
            ..StdioSpec::default()
        }),
        builtin: None,
        ..ServerSpec::default_builtin(BuiltinName::Memory)
    };
    let hub = Hub::start(HubConfig::new(dir.path().to_path_buf(), vec![spec])).await?;
    let queries = [
        "cargo clippy warnings",
        "database migration timeout",
        "用户 偏好",
        "retry proxy network",
    ];
    let mut samples = Vec::with_capacity(SEARCHES);
    for i in 0..SEARCHES {
        let mut arguments = Map::new();
        arguments.insert("query".into(), json!(queries[i % queries.len()]));
        arguments.insert("limit".into(), json!(10));
        let started = Instant::now();
        let answer = hub.call("memory__memory_search", arguments).await;
        samples.push(started.elapsed());
        anyhow::ensure!(
            !answer.starts_with("ERROR"),
            "memory_search failed: {answer}"
        );
    }
    hub.shutdown().await;
    Ok(samples)
}

/// Fills `db` with generated memories (English words, some Chinese).
fn seed(db: &Path) -> anyhow::Result<()> {
    const WORDS: &[&str] = &[
        "always",
        "run",
        "tests",
        "before",
        "commit",
        "user",
        "prefers",
        "tabs",
        "rust",
        "cargo",
        "clippy",
        "warnings",
        "build",
        "release",
        "server",
        "client",
        "database",
        "migration",
        "schema",
        "index",
        "query",
        "latency",
        "timeout",
        "retry",
        "network",
        "proxy",
        "config",
        "workspace",
        "branch",
        "review",
        "deploy",
        "用户",
        "偏好",
        "测试",
        "提交",
        "数据库",
    ];
    let store = MemoryStore::open(db)?;
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let texts: Vec<String> = (0..MEMORIES)
        .map(|i| {
            let words: Vec<&str> = (0..8)
                .map(|_| WORDS[(next() % WORDS.len() as u64) as usize])
                .collect();
            format!("{} #{i}", words.join(" "))
        })
        .collect();
    store.save_batch(texts.iter().map(|t| (t.as_str(), Kind::Fact)))?;
    Ok(())
}
