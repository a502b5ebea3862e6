//! grep tool vs `rg` on the same large tree: medians and their ratio.
//!
//! Run: `cargo bench -p nanohermes-grep --bench grep_vs_rg [-- TREE]`.
//! TREE defaults to the cargo registry sources (`~/.cargo/registry/src`).
//! The grep tool is called over MCP (in-process client, as the agent runs
//! it); `rg` runs as a process whose output is read through a pipe. `rg` is
//! given `--no-require-git` so both honour the same ignore files. Runs per
//! case: `BENCH_RUNS` (default 7), after one warm-up run of each, the
//! two sides interleaved so a change in machine load hits both alike.
//! Goal: the grep tool within 1.2× of rg.

#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mcp_tools::ToolContext;
use nanohermes_grep::GrepServer;
use rmcp::model::CallToolRequestParams;
use serde_json::json;

struct Case {
    name: &'static str,
    pattern: &'static str,
    case_insensitive: bool,
    fixed_strings: bool,
}

const CASES: &[Case] = &[
    Case {
        name: "literal, many hits",
        pattern: "unsafe",
        case_insensitive: false,
        fixed_strings: true,
    },
    Case {
        name: "literal, no hit",
        pattern: "ZqXwVyNothingMatchesThis",
        case_insensitive: false,
        fixed_strings: true,
    },
    Case {
        name: "regex",
        pattern: r"fn \w+_mut\(",
        case_insensitive: false,
        fixed_strings: false,
    },
    Case {
        name: "case-insensitive",
        pattern: "deprecated",
        case_insensitive: true,
        fixed_strings: false,
    },
];

fn main() {
    let tree = std::env::args()
        .skip(1)
        .find(|a| !a.starts_with("--"))
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cargo/registry/src")
        });
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(7);
    if !tree.is_dir() {
        eprintln!(
            "tree not found: {} (pass a directory: cargo bench -p nanohermes-grep --bench grep_vs_rg -- DIR)",
            tree.display()
        );
        std::process::exit(2);
    }
    let rg = Command::new("rg")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .next()
                .unwrap_or("")
                .to_string()
        });
    let files = count_files(&tree);
    println!("tree: {} ({files} files)", tree.display());
    match &rg {
        Some(version) => println!("rg: {version}"),
        None => println!(
            "rg: not found on PATH; install it to compare: `apt-get install ripgrep` or `cargo install ripgrep --locked`"
        ),
    }
    println!("runs per case: {runs} (after one warm-up), times are medians\n");
    println!(
        "| case | grep tool | rg | ratio | tool matches | rg lines |\n|---|---|---|---|---|---|"
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = runtime
        .block_on(mcp_tools::in_process::connect(GrepServer::new(
            ToolContext::new(&tree).unwrap(),
        )))
        .unwrap();
    let mut ratios = Vec::new();
    for case in CASES {
        let call = || {
            let args = json!({
                "pattern": case.pattern,
                "case_insensitive": case.case_insensitive,
                "fixed_strings": case.fixed_strings,
            });
            runtime.block_on(async {
                let result = client
                    .call_tool(
                        CallToolRequestParams::new("grep")
                            .with_arguments(args.as_object().unwrap().clone()),
                    )
                    .await
                    .unwrap();
                result.content[0].as_text().unwrap().text.clone()
            })
        };
        let text = call();
        let tool_matches = total_matches(&text);
        let rg_lines = rg.as_ref().map(|_| run_rg(&tree, case));
        // Interleaved runs: a change in machine load hits both sides alike.
        let mut tool_times = Vec::new();
        let mut rg_times = Vec::new();
        for _ in 0..runs.max(1) {
            tool_times.push(timed(|| {
                call();
            }));
            if rg.is_some() {
                rg_times.push(timed(|| {
                    run_rg(&tree, case);
                }));
            }
        }
        let tool_time = median(tool_times);
        let rg_time = (!rg_times.is_empty()).then(|| median(rg_times));
        let ratio = rg_time.map(|rg| tool_time.as_secs_f64() / rg.as_secs_f64());
        if let Some(r) = ratio {
            ratios.push(r);
        }
        println!(
            "| {} `{}` | {} | {} | {} | {tool_matches} | {} |",
            case.name,
            case.pattern,
            ms(tool_time),
            rg_time.map_or("-".to_string(), ms),
            ratio.map_or("-".to_string(), |r| format!("{r:.2}×")),
            rg_lines.map_or("-".to_string(), |l| l.to_string()),
        );
    }
    if !ratios.is_empty() {
        let worst = ratios.iter().cloned().fold(0.0, f64::max);
        let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
        println!(
            "\nratio grep tool / rg: geometric mean {geo:.2}×, worst {worst:.2}× (goal: within 1.20×)"
        );
    }
    runtime.block_on(async {
        let _ = client.cancel().await;
    });
}

/// Runs rg over `tree` as the tool searches it and returns how many lines it
/// printed (one per matching line).
fn run_rg(tree: &Path, case: &Case) -> usize {
    let mut command = Command::new("rg");
    command
        .args(["-n", "--no-heading", "--color", "never", "--no-require-git"])
        .current_dir(tree)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if case.case_insensitive {
        command.arg("-i");
    }
    if case.fixed_strings {
        command.arg("-F");
    }
    command.arg("-e").arg(case.pattern).arg(".");
    let output = command.output().expect("rg runs");
    output.stdout.iter().filter(|b| **b == b'\n').count()
}

/// The total the tool reports: from its footer, or the lines it printed.
fn total_matches(text: &str) -> u64 {
    if let Some(rest) = text.split("more matches not shown (").nth(1) {
        return rest
            .split(' ')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
    }
    if text.starts_with("No matches") {
        return 0;
    }
    text.lines().count() as u64
}

fn timed(run: impl FnOnce()) -> Duration {
    let start = Instant::now();
    run();
    start.elapsed()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(duration: Duration) -> String {
    format!("{:.1} ms", duration.as_secs_f64() * 1000.0)
}

fn count_files(tree: &Path) -> usize {
    ignore::WalkBuilder::new(tree)
        .require_git(false)
        .build()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_type().is_some_and(|t| t.is_file()))
        })
        .count()
}
