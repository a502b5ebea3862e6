//! `nanohermes-bench`: the performance harness. Runs the release binaries
//! built beside it against the scripted model of the test suite and prints
//! one Markdown table of medians (and p99 or best runs) with the goal each
//! figure is held to. Nothing is asserted: figures live here, never in tests.
//!
//! ```text
//! scripts/bench                 # builds the release profile, runs every section
//! scripts/bench --runs 5 start  # fewer runs, one section
//! ```
//!
//! Sections: `start` (cold start to the first model request, per placement
//! of the built-ins; exit latency; first-request bytes), `loop` (a 50-step
//! task of trivial tools), `calls` (one call's round trip per transport),
//! `rss` (peak memory of the agent and of its process tree), `serve`
//! (`nanohermes serve` start to the first `run_task` progress), `tools`
//! (grep against rg, memory search at 100 000 memories), `sizes`, `ready`
//! (each tool server's spawn → handshake answer → `tools/list` answer over
//! stdio, both protocol eras, and its exit once stdin closes).
//!
//! `nanohermes-bench order FILE` writes the agent's link-order file instead
//! (see [`order`]; `scripts/symbol-order` runs it).

// A benchmark prints its table.
#![allow(clippy::print_stdout)]

mod agent_runs;
mod bins;
mod calls;
#[path = "../../agent/nanohermes/tests/support/mock_model.rs"]
#[allow(dead_code, missing_docs, unreachable_pub)]
mod mock_model;
mod order;
mod ready;
mod serve_start;
mod stats;
mod tools;
mod tree;

use std::time::Duration;

use agent_runs::{Placement, Run, Setting};
use bins::Bins;
use stats::{Table, bytes, median, quantile, show};

/// Every section, in the order they run.
const SECTIONS: [&str; 8] = [
    "start", "loop", "calls", "rss", "serve", "tools", "sizes", "ready",
];

/// The command line: `[--runs N] [SECTION...]`.
struct Args {
    runs: usize,
    sections: Vec<String>,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args {
        runs: 15,
        sections: Vec::new(),
    };
    let mut argv = std::env::args().skip(1);
    while let Some(arg) = argv.next() {
        match arg.as_str() {
            "--runs" => {
                args.runs = argv
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or_else(|| anyhow::anyhow!("--runs takes a positive number"))?;
            }
            "-h" | "--help" => {
                println!(
                    "usage: nanohermes-bench [--runs N] [{}]\n       nanohermes-bench order FILE",
                    SECTIONS.join("|")
                );
                std::process::exit(0);
            }
            name if SECTIONS.contains(&name) => args.sections.push(name.to_owned()),
            other => anyhow::bail!(
                "unknown argument {other:?}; sections are {}",
                SECTIONS.join(", ")
            ),
        }
    }
    if args.sections.is_empty() {
        args.sections = SECTIONS.iter().map(|s| s.to_string()).collect();
    }
    Ok(args)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let mut argv = std::env::args().skip(1);
    if argv.next().as_deref() == Some("order") {
        let out = argv
            .next()
            .ok_or_else(|| anyhow::anyhow!("usage: nanohermes-bench order FILE"))?;
        return order::write_order_file(&Bins::beside_me()?, out.as_ref()).await;
    }
    let args = parse_args()?;
    let bins = Bins::beside_me()?;
    let mut table = Table::default();
    for section in &args.sections {
        eprintln!("== {section}");
        match section.as_str() {
            "start" => start(&bins, args.runs, &mut table).await?,
            "loop" => loop_overhead(&bins, args.runs, &mut table).await?,
            "calls" => calls(&bins, &mut table).await?,
            "rss" => rss(&bins, args.runs, &mut table).await?,
            "serve" => serve(&bins, args.runs, &mut table).await?,
            "tools" => tool_figures(&bins, &mut table).await?,
            "sizes" => sizes(&bins, &mut table)?,
            "ready" => ready_figures(&bins, args.runs, &mut table).await?,
            _ => unreachable!("checked by parse_args"),
        }
    }
    println!(
        "nanohermes-bench: profile {}, {} runs per figure, {} cores\n",
        bins.profile(),
        args.runs,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    print!("{}", table.render());
    Ok(())
}

/// `runs` runs of `script` (after one warm-up run) in a fresh setting.
async fn runs_of(
    bins: &Bins,
    placement: Placement,
    runs: usize,
    script: fn() -> Vec<mock_model::Step>,
    watch: bool,
) -> anyhow::Result<Vec<Run>> {
    let setting = Setting::new(bins, placement)?;
    agent_runs::run(bins, &setting, script(), false).await?; // warm the page cache
    let mut out = Vec::with_capacity(runs);
    for _ in 0..runs {
        out.push(agent_runs::run(bins, &setting, script(), watch).await?);
    }
    Ok(out)
}

fn best(samples: impl Iterator<Item = Duration>) -> String {
    format!("best {}", show(samples.min().unwrap_or_default()))
}

async fn start(bins: &Bins, runs: usize, table: &mut Table) -> anyhow::Result<()> {
    for (placement, goal) in [
        (Placement::InProcess, "≤ 5 ms"),
        (Placement::Process, "≤ 50 ms"),
        (Placement::Http, ""),
    ] {
        let samples = runs_of(bins, placement, runs, agent_runs::four_steps, false).await?;
        let first: Vec<Duration> = samples.iter().map(|r| r.first_request).collect();
        table.row(
            &format!(
                "exec → first model request, built-ins {}",
                placement.label()
            ),
            show(median(first.clone())),
            best(first.into_iter()),
            goal,
        );
        let total: Vec<Duration> = samples.iter().map(|r| r.total).collect();
        table.row(
            &format!(
                "4-step task (list, read, shell, write), exec → exit, {}",
                placement.label()
            ),
            show(median(total.clone())),
            best(total.into_iter()),
            "",
        );
        if placement == Placement::InProcess {
            let exit: Vec<Duration> = samples.iter().map(|r| r.exit_after_last).collect();
            table.row(
                "last model reply → exit",
                show(median(exit.clone())),
                best(exit.into_iter()),
                "≤ 2 ms",
            );
            let bodies = &samples[0].bodies;
            table.row(
                "first request body (every built-in declared)",
                bytes(bodies[0] as u64),
                String::new(),
                "≤ 10 KB",
            );
            let growth: Vec<String> = bodies
                .windows(2)
                .map(|w| format!("+{}", w[1] - w[0]))
                .collect();
            table.row(
                "request body growth per step (bytes)",
                growth.join(" "),
                String::new(),
                "",
            );
        }
    }
    Ok(())
}

async fn loop_overhead(bins: &Bins, runs: usize, table: &mut Table) -> anyhow::Result<()> {
    const STEPS: usize = 50;
    let samples = runs_of(
        bins,
        Placement::InProcess,
        runs,
        || agent_runs::trivial_steps(STEPS),
        false,
    )
    .await?;
    // One step = the reply arrives, the loop parses it, calls todo_read
    // in-process, appends, and sends the next request. The first gap is
    // left out (first-call warm-up).
    let mut gaps: Vec<Duration> = samples
        .iter()
        .flat_map(|r| r.gaps.iter().skip(1).copied())
        .collect();
    let p50 = quantile(&mut gaps, 0.5);
    let p99 = quantile(&mut gaps, 0.99);
    table.row(
        &format!("one step of a {STEPS}-step task (reply → next request, in-process tool)"),
        show(p50),
        format!("p99 {}", show(p99)),
        "≤ 0.3 ms",
    );
    let last = samples
        .iter()
        .map(|r| *r.bodies.last().unwrap_or(&0) as u64)
        .max()
        .unwrap_or(0);
    table.row(
        &format!("request body at step {STEPS}"),
        bytes(last),
        String::new(),
        "",
    );
    Ok(())
}

async fn calls(bins: &Bins, table: &mut Table) -> anyhow::Result<()> {
    for (tool, placement, goal) in [
        (calls::Probe::TodoRead, Placement::InProcess, "≤ 20 µs"),
        (calls::Probe::ReadFile, Placement::InProcess, ""),
        (calls::Probe::TodoRead, Placement::Process, "≤ 150 µs"),
        (calls::Probe::ReadFile, Placement::Process, ""),
        (calls::Probe::ReadFile, Placement::Http, ""),
    ] {
        // On a runtime like the agent's own (one thread, cli::main), not
        // on this harness's worker pool.
        let agent = bins.agent();
        let mut samples = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?
                .block_on(calls::round_trips(agent, tool, placement))
        })
        .join()
        .map_err(|_| anyhow::anyhow!("the round-trip thread panicked"))??;
        table.row(
            &format!(
                "{} round trip through the hub, {}",
                tool.name(),
                placement.label()
            ),
            show(quantile(&mut samples, 0.5)),
            format!("p99 {}", show(quantile(&mut samples, 0.99))),
            goal,
        );
    }
    Ok(())
}

async fn rss(bins: &Bins, runs: usize, table: &mut Table) -> anyhow::Result<()> {
    for (placement, goal) in [(Placement::InProcess, "≤ 15 MB"), (Placement::Process, "")] {
        let samples = runs_of(bins, placement, runs.min(5), agent_runs::four_steps, true).await?;
        let peaks: Vec<_> = samples.iter().filter_map(|r| r.peaks).collect();
        let leader = peaks.iter().map(|p| p.leader_kib).max().unwrap_or(0) * 1024;
        let tree = peaks.iter().map(|p| p.tree_kib).max().unwrap_or(0) * 1024;
        table.row(
            &format!("peak RSS, agent process, built-ins {}", placement.label()),
            bytes(leader),
            String::new(),
            goal,
        );
        table.row(
            &format!(
                "peak RSS, whole process tree, built-ins {}",
                placement.label()
            ),
            bytes(tree),
            "sampled every 2 ms".into(),
            "",
        );
    }
    Ok(())
}

async fn serve(bins: &Bins, runs: usize, table: &mut Table) -> anyhow::Result<()> {
    serve_start::serve_to_first_progress(bins).await?; // warm-up
    let mut first = Vec::new();
    let mut done = Vec::new();
    for _ in 0..runs {
        let (f, d) = serve_start::serve_to_first_progress(bins).await?;
        first.push(f);
        done.push(d);
    }
    table.row(
        "`nanohermes serve` exec → first run_task progress",
        show(median(first.clone())),
        best(first.into_iter()),
        "",
    );
    table.row(
        "`nanohermes serve` exec → 4-step run_task result",
        show(median(done.clone())),
        best(done.into_iter()),
        "",
    );
    Ok(())
}

async fn tool_figures(bins: &Bins, table: &mut Table) -> anyhow::Result<()> {
    match tools::grep_corpus() {
        Some(corpus) => match tools::grep_against_rg(&corpus).await? {
            Some((ours, rg)) => table.row(
                &format!("grep tool vs rg over {}", corpus.display()),
                format!("{} vs {}", show(ours), show(rg)),
                format!("{:.2}× rg", ours.as_secs_f64() / rg.as_secs_f64()),
                "≈ 1× rg",
            ),
            None => table.row(
                "grep tool vs rg",
                "rg not on PATH".into(),
                String::new(),
                "",
            ),
        },
        None => table.row(
            "grep tool vs rg",
            "no cargo registry sources to search".into(),
            String::new(),
            "",
        ),
    }
    let mut samples = tools::memory_search(bins).await?;
    table.row(
        &format!("memory_search over stdio at {} memories", tools::MEMORIES),
        show(quantile(&mut samples, 0.5)),
        format!("p99 {}", show(quantile(&mut samples, 0.99))),
        "",
    );
    Ok(())
}

fn sizes(bins: &Bins, table: &mut Table) -> anyhow::Result<()> {
    // As built (the release profile keeps line tables) and stripped.
    let size = |path: std::path::PathBuf| {
        let built = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        match stripped_size(&path) {
            Some(stripped) => format!("{} ({} stripped)", bytes(built), bytes(stripped)),
            None => bytes(built),
        }
    };
    table.row(
        "binary size: nanohermes (agent + every built-in)",
        size(bins.agent()),
        String::new(),
        "",
    );
    let servers: Vec<String> = bins::SERVERS
        .iter()
        .map(|name| {
            format!(
                "{} {}",
                name.trim_start_matches("nanohermes-"),
                size(bins.named(name))
            )
        })
        .collect();
    table.row(
        "binary sizes: the seven servers",
        servers.join(", "),
        String::new(),
        "",
    );
    let found = match order::names_found(&bins.agent())? {
        Some((found, listed)) => format!("{found} of {listed}"),
        None => "unknown (no nm, or a stripped binary)".to_owned(),
    };
    table.row(
        "link-order names the agent defines (agent/link/hot-symbols.txt)",
        found,
        String::new(),
        "all: else run scripts/symbol-order",
    );
    Ok(())
}

/// The size `binary` would have stripped (`strip -o` to a temp file);
/// `None` without `strip`.
fn stripped_size(binary: &std::path::Path) -> Option<u64> {
    let dir = tempfile::tempdir().ok()?;
    let out = dir.path().join("stripped");
    let status = std::process::Command::new("strip")
        .arg("-o")
        .arg(&out)
        .arg(binary)
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    status
        .success()
        .then(|| std::fs::metadata(&out).ok().map(|m| m.len()))
        .flatten()
}

/// The goal of a server's spawn → `tools/list` answer.
fn ready_goal(name: &str) -> &'static str {
    if name == "memory" {
        "≤ 5 ms (tools/list)"
    } else {
        ""
    }
}

fn ready_row(table: &mut Table, figure: &str, samples: &[ready::Ready], goal: &str) {
    let mut first: Vec<Duration> = samples.iter().map(|r| r.handshake).collect();
    let mut tools: Vec<Duration> = samples.iter().map(|r| r.tools).collect();
    table.row(
        figure,
        format!(
            "{} / {}",
            show(quantile(&mut first, 0.5)),
            show(quantile(&mut tools, 0.5))
        ),
        format!(
            "p99 {} / {}",
            show(quantile(&mut first, 0.99)),
            show(quantile(&mut tools, 0.99))
        ),
        goal,
    );
}

async fn ready_figures(bins: &Bins, runs: usize, table: &mut Table) -> anyhow::Result<()> {
    let scratch = ready::Scratch::new()?;
    // The floor under every figure below: starting and reaping a process
    // that does nothing, on this machine at this moment.
    let mut floor = tokio::task::block_in_place(|| ready::spawn_true(runs))?;
    table.row(
        "floor: spawn → exit of `true`",
        show(quantile(&mut floor, 0.5)),
        format!("p99 {}", show(quantile(&mut floor, 0.99))),
        "",
    );
    let workspace = scratch.workspace().display().to_string();
    let db = scratch.path("memory.db").display().to_string();
    let mut exits = Vec::new();
    for binary in bins::SERVERS {
        let name = binary.trim_start_matches("nanohermes-");
        let mut args = vec!["--root".to_owned(), workspace.clone()];
        if name == "memory" {
            args.extend(["--db".to_owned(), db.clone()]);
        }
        let own = ready::Launch {
            label: binary.to_owned(),
            program: bins.named(binary),
            args: args.clone(),
        };
        let builtin = ready::Launch {
            label: format!("nanohermes builtin {name}"),
            program: bins.agent(),
            args: ["builtin".to_owned(), name.to_owned()]
                .into_iter()
                .chain(args)
                .collect(),
        };
        let mut legs = vec![
            (&own, ready::Era::Legacy),
            (&own, ready::Era::Modern),
            (&builtin, ready::Era::Modern),
        ];
        if name == "memory" {
            legs.push((&builtin, ready::Era::Legacy));
        }
        for (launch, era) in legs {
            let samples = blocking_runs(launch, &scratch, era, runs, None).await?;
            ready_row(
                table,
                &format!(
                    "`{}` spawn → {} / → tools/list",
                    launch.label,
                    era.handshake()
                ),
                &samples,
                ready_goal(name),
            );
            if launch.program != bins.agent() && era == ready::Era::Legacy {
                exits.push((name, median(samples.iter().map(|r| r.exit).collect())));
            }
        }
        if name == "memory" {
            let dir = scratch.path("fresh");
            std::fs::create_dir_all(&dir)?;
            let fresh: &dyn Fn(usize) -> Vec<String> = &move |i: usize| {
                let path = dir.join(format!("memory-{i}.db"));
                vec!["--db".to_owned(), path.display().to_string()]
            };
            let mut launch = own.clone();
            launch.args.truncate(2); // --root only; --db comes per run
            let samples =
                blocking_runs(&launch, &scratch, ready::Era::Legacy, runs, Some(fresh)).await?;
            ready_row(
                table,
                "`nanohermes-memory` spawn → initialize / → tools/list, no database file yet",
                &samples,
                "",
            );
        }
    }
    let exits: Vec<String> = exits
        .iter()
        .map(|(name, exit)| format!("{name} {}", show(*exit)))
        .collect();
    table.row(
        "server exit after stdin closes (medians)",
        exits.join(", "),
        String::new(),
        "",
    );
    Ok(())
}

/// [`ready::runs`] on a blocking thread (the exchange is plain pipe I/O).
async fn blocking_runs(
    launch: &ready::Launch,
    scratch: &ready::Scratch,
    era: ready::Era,
    runs: usize,
    fresh: Option<&dyn Fn(usize) -> Vec<String>>,
) -> anyhow::Result<Vec<ready::Ready>> {
    tokio::task::block_in_place(|| ready::runs(launch, scratch, era, runs, fresh))
}
