//! `memory_search` latency at 10 000 and 100 000 memories (not a test).
//!
//! Fills a temp database with generated memories (about half English, a
//! third Chinese, the rest mixed), then times searches of seven query classes
//! twice: calling `MemoryStore::search` directly, and calling the
//! `memory_search` tool through an in-process MCP client. Prints p50 and p99
//! per class. Run with `cargo bench -p nanohermes-memory`.

// A benchmark prints its table to stdout.
#![allow(clippy::print_stdout)]

use std::time::{Duration, Instant};

use mcp_tools::ToolContext;
use nanohermes_memory::{Kind, MemoryServer, MemoryStore};
use rmcp::model::CallToolRequestParams;

const SIZES: [usize; 2] = [10_000, 100_000];
const QUERIES_PER_CLASS: usize = 300;
const LIMIT: usize = 10;

const ENGLISH: &[&str] = &[
    "always",
    "run",
    "tests",
    "before",
    "commit",
    "user",
    "prefers",
    "tabs",
    "spaces",
    "rust",
    "cargo",
    "clippy",
    "warnings",
    "build",
    "release",
    "debug",
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
    "file",
    "path",
    "workspace",
    "branch",
    "merge",
    "rebase",
    "review",
    "deploy",
    "docker",
    "kubernetes",
    "python",
    "typescript",
    "format",
    "lint",
    "error",
    "panic",
    "unwrap",
    "result",
    "option",
    "async",
    "tokio",
    "thread",
    "mutex",
    "channel",
    "stream",
    "buffer",
    "memory",
    "cache",
    "disk",
    "sqlite",
    "postgres",
    "json",
    "yaml",
    "toml",
    "markdown",
    "editor",
    "terminal",
    "shell",
    "script",
    "logging",
    "tracing",
    "metrics",
    "benchmark",
    "profile",
    "allocation",
    "vector",
    "string",
    "unicode",
    "encoding",
    "locale",
    "chinese",
    "english",
    "answer",
    "question",
    "short",
    "concise",
    "verbose",
    "explain",
    "example",
    "library",
    "crate",
    "version",
    "dependency",
    "feature",
    "flag",
    "option",
    "default",
    "linux",
    "macos",
    "windows",
    "ci",
    "pipeline",
    "cron",
    "backup",
    "restore",
];

const CHINESE: &[&str] = &[
    "用户",
    "喜欢",
    "使用",
    "中文",
    "回答",
    "问题",
    "代码",
    "测试",
    "提交",
    "分支",
    "合并",
    "数据库",
    "索引",
    "查询",
    "延迟",
    "超时",
    "重试",
    "网络",
    "配置",
    "文件",
    "路径",
    "工作区",
    "部署",
    "格式",
    "错误",
    "结果",
    "异步",
    "线程",
    "内存",
    "缓存",
    "磁盘",
    "日志",
    "性能",
    "基准",
    "版本",
    "依赖",
    "功能",
    "默认",
    "简洁",
    "详细",
    "解释",
    "例子",
    "编辑器",
    "终端",
    "脚本",
    "服务器",
    "客户端",
    "迁移",
    "模式",
    "编码",
    "字符串",
    "向量",
    "发布",
    "调试",
    "项目",
    "文档",
    "注释",
    "命名",
    "风格",
    "规范",
    "安全",
    "权限",
    "密钥",
    "备份",
    "恢复",
];

/// A small deterministic generator (xorshift64*), so runs are comparable.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, words: &[&'a str]) -> &'a str {
        words[self.below(words.len())]
    }
}

fn memory_text(rng: &mut Rng, n: usize) -> String {
    let words = 6 + rng.below(9);
    match rng.below(6) {
        0..=2 => {
            let body: Vec<&str> = (0..words).map(|_| rng.pick(ENGLISH)).collect();
            format!("{} (note {n})", body.join(" "))
        }
        3 | 4 => {
            let body: String = (0..words).map(|_| rng.pick(CHINESE)).collect();
            format!("{body}，编号{n}")
        }
        _ => {
            let body: Vec<&str> = (0..words)
                .map(|i| {
                    if i % 2 == 0 {
                        rng.pick(ENGLISH)
                    } else {
                        rng.pick(CHINESE)
                    }
                })
                .collect();
            format!("{} #{n}", body.join(" "))
        }
    }
}

fn query(rng: &mut Rng, class: usize) -> String {
    match class {
        // Two English words: index path.
        0 => format!("{} {}", rng.pick(ENGLISH), rng.pick(ENGLISH)),
        // One English word, in about 5% of all memories: many rows to rank.
        4 => rng.pick(ENGLISH).to_string(),
        // Two Chinese words joined, at least three characters: index path.
        1 => format!("{}{}", rng.pick(CHINESE), rng.pick(CHINESE)),
        // One two-character Chinese word: substring path.
        2 => loop {
            let word = rng.pick(CHINESE);
            if word.chars().count() == 2 {
                break word.to_string();
            }
        },
        // A mixed query: English word, Chinese word.
        3 => format!("{} {}", rng.pick(ENGLISH), rng.pick(CHINESE)),
        // Two words that rarely meet, so the any-term tier runs too.
        5 => format!("{} {}", rng.pick(ENGLISH), rng.pick(RARE)),
        // A Chinese question around two stored words, no spaces: its
        // bigrams include pieces no memory holds, so the any-term tier runs.
        _ => format!("{}之前要{}什么", rng.pick(CHINESE), rng.pick(CHINESE)),
    }
}

const CLASSES: [&str; 7] = [
    "english 2 words",
    "chinese >=3 chars",
    "chinese 2 chars",
    "mixed en + zh",
    "english 1 word",
    "common + absent",
    "chinese question",
];

/// Words no generated memory contains.
const RARE: &[&str] = &["zeppelin", "quokka", "marzipan", "fjord", "xylophone"];

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

fn main() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    println!(
        "{:>8}  {:<18} {:>10} {:>10} {:>10} {:>10} {:>6}",
        "memories", "query class", "direct p50", "direct p99", "mcp p50", "mcp p99", "hits"
    );
    for size in SIZES {
        let dir = tempfile::tempdir()?;
        // In the project the server below serves (its root), as the agent's are.
        let store = MemoryStore::open(&dir.path().join("memory.db"))?
            .in_project(&dir.path().canonicalize()?);
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let started = Instant::now();
        let texts: Vec<String> = (0..size).map(|n| memory_text(&mut rng, n)).collect();
        let kinds = [Kind::Lesson, Kind::Preference, Kind::Correction, Kind::Fact];
        store.save_batch(
            texts
                .iter()
                .enumerate()
                .map(|(i, t)| (t.as_str(), kinds[i % 4])),
        )?;
        eprintln!(
            "filled {} memories in {:.1} s",
            store.count()?,
            started.elapsed().as_secs_f64()
        );
        let server = MemoryServer::new(ToolContext::new(dir.path())?, store);
        let store = server.store().clone();
        let client = runtime.block_on(mcp_tools::in_process::connect(server.clone()))?;
        for (class, name) in CLASSES.iter().enumerate() {
            let queries: Vec<String> = (0..QUERIES_PER_CLASS)
                .map(|_| query(&mut rng, class))
                .collect();
            let mut hits = 0;
            let mut direct = Vec::with_capacity(queries.len());
            for q in &queries {
                let t = Instant::now();
                hits += store.search(q, LIMIT)?.len();
                direct.push(t.elapsed());
            }
            let mut mcp = Vec::with_capacity(queries.len());
            for q in &queries {
                let params = CallToolRequestParams::new("memory_search")
                    .with_arguments(rmcp::object!({"query": q.as_str(), "limit": LIMIT}));
                let t = Instant::now();
                let result = runtime.block_on(client.call_tool(params))?;
                mcp.push(t.elapsed());
                anyhow::ensure!(result.is_error != Some(true), "search {q:?} failed");
            }
            direct.sort();
            mcp.sort();
            println!(
                "{:>8}  {:<18} {:>10} {:>10} {:>10} {:>10} {:>6.1}",
                size,
                name,
                ms(percentile(&direct, 0.5)),
                ms(percentile(&direct, 0.99)),
                ms(percentile(&mcp, 0.5)),
                ms(percentile(&mcp, 0.99)),
                hits as f64 / queries.len() as f64
            );
        }
        runtime.block_on(client.cancel())?;
    }
    println!("(latencies in ms; {QUERIES_PER_CLASS} queries per class, limit {LIMIT})");
    Ok(())
}
