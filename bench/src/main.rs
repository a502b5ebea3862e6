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
//! task of trivial tools: wall time and CPU per step), `calls` (one call's
//! round trip per transport), `rss` (memory of the agent and of its process
//! tree: PSS and anonymous, what a user pays; peak RSS beside), `serve`
//! (`nanohermes serve` start to the first `run_task` progress), `tools`
//! (grep against rg, memory search at 100 000 memories), `sizes`, `ready`
//! (each tool server's spawn → handshake answer → `tools/list` answer over
//! stdio, both protocol eras, and its exit once stdin closes), `cache`,
//! `acp` (`nanohermes acp` exec → `initialize` answered; the model's first
//! token → the first `agent_message_chunk` on the agent's stdout), `proxy`
//! (a GET and a download on loopback, direct and through the sandbox's
//! network allowlist), `replicas` (`serve --store postgres://…`: tasks per
//! minute on 1, 2 and 3 replicas, takeover after a SIGKILL, cancel and
//! approval latency across replicas; needs `scripts/replicas-env`, else
//! reported skipped).
//!
//! `--baseline PATH` runs every section with the agent at PATH too (say,
//! a release build of an earlier commit), alternating with this build's
//! `--rounds N` times (default 3), and prints the two side by side: each
//! figure the median of its rounds, with this build's over the baseline's.

// A benchmark prints its table.
#![allow(clippy::print_stdout)]

mod acp_start;
mod agent_runs;
mod bins;
mod cache;
mod calls;
#[path = "../../agent/nanohermes/tests/support/mock_model/mod.rs"]
#[allow(dead_code, missing_docs, unreachable_pub)]
mod mock_model;
mod proxy;
mod ready;
mod replicas;
mod serve_start;
mod stats;
mod tools;
mod tree;

use std::time::Duration;

use agent_runs::{Placement, Run, Setting};
use bins::Bins;
use stats::{Number, Table, bytes, median, quantile, show};

/// Every section, in the order they run.
const SECTIONS: [&str; 12] = [
    "start", "loop", "calls", "rss", "serve", "tools", "sizes", "ready", "cache", "acp", "proxy",
    "replicas",
];

/// The command line: `[--runs N] [--baseline PATH [--rounds N]] [SECTION...]`.
struct Args {
    runs: usize,
    baseline: Option<std::path::PathBuf>,
    rounds: usize,
    sections: Vec<String>,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut args = Args {
        runs: 15,
        baseline: None,
        rounds: 3,
        sections: Vec::new(),
    };
    let mut argv = std::env::args().skip(1);
    let positive = |value: Option<String>, flag: &str| {
        value
            .and_then(|n| n.parse().ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| anyhow::anyhow!("{flag} takes a positive number"))
    };
    while let Some(arg) = argv.next() {
        match arg.as_str() {
            "--runs" => args.runs = positive(argv.next(), "--runs")?,
            "--rounds" => args.rounds = positive(argv.next(), "--rounds")?,
            "--baseline" => {
                args.baseline = Some(
                    argv.next()
                        .ok_or_else(|| anyhow::anyhow!("--baseline takes an agent binary"))?
                        .into(),
                );
            }
            "-h" | "--help" => {
                println!(
                    "usage: nanohermes-bench [--runs N] [--baseline AGENT [--rounds N]] [{}]",
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
    let args = parse_args()?;
    let bins = Bins::beside_me()?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let Some(baseline) = &args.baseline else {
        let mut table = Table::default();
        for section in &args.sections {
            eprintln!("== {section}");
            run_section(section, &bins, args.runs, &mut table).await?;
        }
        println!(
            "nanohermes-bench: profile {}, {} runs per figure, {cores} cores\n",
            bins.profile(),
            args.runs,
        );
        print!("{}", table.render());
        return Ok(());
    };
    // Alternating, section by section: a machine that gets busier or
    // quieter meanwhile weighs on both builds alike.
    let base = bins.with_agent(baseline.clone())?;
    let mut base_rounds: Vec<Table> = (0..args.rounds).map(|_| Table::default()).collect();
    let mut this_rounds: Vec<Table> = (0..args.rounds).map(|_| Table::default()).collect();
    for section in &args.sections {
        for round in 0..args.rounds {
            eprintln!("== {section}, round {}, baseline", round + 1);
            run_section(section, &base, args.runs, &mut base_rounds[round]).await?;
            eprintln!("== {section}, round {}, this build", round + 1);
            run_section(section, &bins, args.runs, &mut this_rounds[round]).await?;
        }
    }
    println!(
        "nanohermes-bench: profile {}, baseline {} against {}, {} runs per figure, \
         median of {} alternating rounds, {cores} cores\n",
        bins.profile(),
        baseline.display(),
        bins.agent().display(),
        args.runs,
        args.rounds,
    );
    print!("{}", Table::side_by_side(&base_rounds, &this_rounds));
    Ok(())
}

/// Runs one section against `bins`, adding its rows to `table`.
async fn run_section(
    section: &str,
    bins: &Bins,
    runs: usize,
    table: &mut Table,
) -> anyhow::Result<()> {
    match section {
        "start" => start(bins, runs, table).await,
        "loop" => loop_overhead(bins, runs, table).await,
        "calls" => calls(bins, table).await,
        "rss" => rss(bins, runs, table).await,
        "serve" => serve(bins, runs, table).await,
        "tools" => tool_figures(bins, table).await,
        "sizes" => sizes(bins, table),
        "ready" => ready_figures(bins, runs, table).await,
        "cache" => cache::figures(bins, table).await,
        "acp" => acp(bins, runs, table).await,
        "proxy" => proxy::figures(runs, table).await,
        "replicas" => replicas::figures(bins, table).await,
        _ => unreachable!("checked by parse_args"),
    }
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
        table.measure(
            &format!(
                "exec → first model request, built-ins {}",
                placement.label()
            ),
            Number::Time(median(first.clone())),
            best(first.into_iter()),
            goal,
        );
        let total: Vec<Duration> = samples.iter().map(|r| r.total).collect();
        table.measure(
            &format!(
                "4-step task (list, read, shell, write), exec → exit, {}",
                placement.label()
            ),
            Number::Time(median(total.clone())),
            best(total.into_iter()),
            "",
        );
        let cpu: Vec<Duration> = samples.iter().map(|r| r.cpu).collect();
        table.measure(
            &format!(
                "4-step task, CPU (user + system, commands included), {}",
                placement.label()
            ),
            Number::Time(median(cpu.clone())),
            best(cpu.into_iter()),
            "",
        );
        if placement == Placement::InProcess {
            let exit: Vec<Duration> = samples.iter().map(|r| r.exit_after_last).collect();
            table.measure(
                "last model reply → exit",
                Number::Time(median(exit.clone())),
                best(exit.into_iter()),
                "≤ 2 ms",
            );
            let bodies = &samples[0].bodies;
            table.measure(
                "first request body (every built-in declared)",
                Number::Bytes(bodies[0] as u64),
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
    table.measure(
        &format!("one step of a {STEPS}-step task (reply → next request, in-process tool)"),
        Number::Time(p50),
        format!("p99 {}", show(p99)),
        "≤ 0.3 ms",
    );
    // The agent's own CPU per step: a run of STEPS steps less a run of
    // none (the same start and exit), over STEPS.
    let none = runs_of(
        bins,
        Placement::InProcess,
        runs,
        || agent_runs::trivial_steps(0),
        false,
    )
    .await?;
    let cpu_none = median(none.iter().map(|r| r.cpu).collect());
    let cpu_steps = median(samples.iter().map(|r| r.cpu).collect());
    table.measure(
        "CPU of a one-reply run (user + system, exec → exit)",
        Number::Time(cpu_none),
        String::new(),
        "",
    );
    table.measure(
        &format!("agent CPU per loop step (({STEPS}-step run − one-reply run) / {STEPS}, medians)"),
        Number::Time(cpu_steps.saturating_sub(cpu_none) / STEPS as u32),
        String::new(),
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

/// Memory on the 4-step task: per figure the median over runs of each
/// run's peak (PSS and anonymous memory sampled every 2 ms; RSS is the
/// kernel's high-water mark, shared file-backed text included).
async fn rss(bins: &Bins, runs: usize, table: &mut Table) -> anyhow::Result<()> {
    for (placement, goal) in [(Placement::InProcess, "≤ 15 MB"), (Placement::Process, "")] {
        let samples = runs_of(bins, placement, runs.min(5), agent_runs::four_steps, true).await?;
        let peaks: Vec<_> = samples.iter().filter_map(|r| r.peaks).collect();
        let median_of = |kib: fn(&tree::Peaks) -> u64| {
            let mut values: Vec<u64> = peaks.iter().map(kib).collect();
            values.sort();
            Number::Bytes(
                values
                    .get(values.len().saturating_sub(1) / 2)
                    .copied()
                    .unwrap_or(0)
                    * 1024,
            )
        };
        let label = placement.label();
        table.measure(
            &format!("peak PSS, agent process, built-ins {label}"),
            median_of(|p| p.leader_pss_kib),
            "sampled every 2 ms".into(),
            goal,
        );
        table.measure(
            &format!("peak anonymous RSS, agent process, built-ins {label}"),
            median_of(|p| p.leader_anon_kib),
            "sampled every 2 ms".into(),
            "",
        );
        table.measure(
            &format!("peak PSS, whole process tree (summed), built-ins {label}"),
            median_of(|p| p.tree_pss_kib),
            "sampled every 2 ms".into(),
            "",
        );
        table.measure(
            &format!(
                "peak RSS (VmHWM, shared file-backed text included), agent, built-ins {label}"
            ),
            median_of(|p| p.leader_rss_kib),
            String::new(),
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

async fn acp(bins: &Bins, runs: usize, table: &mut Table) -> anyhow::Result<()> {
    acp_start::run(bins).await?; // warm-up
    let mut initialized = Vec::with_capacity(runs);
    let mut chunks = Vec::with_capacity(runs * acp_start::PROMPTS);
    for _ in 0..runs {
        let run = acp_start::run(bins).await?;
        initialized.push(run.initialized);
        chunks.extend(run.first_chunks);
    }
    let p99 = quantile(&mut initialized.clone(), 0.99);
    table.measure(
        "`nanohermes acp` exec → `initialize` answered",
        Number::Time(median(initialized)),
        format!("p99 {}", show(p99)),
        "",
    );
    let p99 = quantile(&mut chunks.clone(), 0.99);
    table.measure(
        &format!(
            "`nanohermes acp` model's first token → first agent_message_chunk read ({} prompts per process)",
            acp_start::PROMPTS
        ),
        Number::Time(median(chunks)),
        format!("p99 {}", show(p99)),
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
    let agent = bins.agent();
    table.measure(
        "binary size: nanohermes (agent + every built-in), stripped",
        Number::Bytes(stripped_size(&agent).unwrap_or(0)),
        format!(
            "{} as built",
            bytes(std::fs::metadata(&agent).map(|m| m.len()).unwrap_or(0))
        ),
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
