//! Benchmark of the real `nanohermes-files` binary over stdio (not a test):
//! spawn + handshake + tools/list, call round trip, peak RSS, and exit
//! after stdin closes. Run with `cargo bench -p nanohermes-files`; prints a
//! table of medians and the issue's goals.

// A bench binary reports on stdout.
#![allow(clippy::print_stdout)]

use std::path::Path;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::ServiceExt;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};

const BIN: &str = env!("CARGO_BIN_EXE_nanohermes-files");
const STARTS: usize = 30;
const CALLS: usize = 2000;

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn percentile(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p) as usize]
}

fn peak_rss_kb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn command(root: &Path) -> tokio::process::Command {
    tokio::process::Command::new(BIN).configure(|c| {
        c.arg("--root").arg(root);
    })
}

#[tokio::main]
async fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("a.txt"), "hello\nworld\n").expect("fixture");

    // Spawn + initialize + tools/list.
    let mut starts = Vec::new();
    for _ in 0..STARTS {
        let t = Instant::now();
        let client =
            ().serve(TokioChildProcess::new(command(dir.path())).expect("spawn"))
                .await
                .expect("init");
        let tools = client.list_all_tools().await.expect("list");
        starts.push(t.elapsed());
        assert_eq!(tools.len(), 5);
        client.cancel().await.ok();
    }

    // Call round trip, peak RSS.
    let client =
        ().serve(TokioChildProcess::new(command(dir.path())).expect("spawn"))
            .await
            .expect("init");
    let args = rmcp::object!({"path": "a.txt"});
    let mut calls = Vec::with_capacity(CALLS);
    for i in 0..CALLS + 100 {
        let t = Instant::now();
        let r = client
            .call_tool(CallToolRequestParams::new("read_file").with_arguments(args.clone()))
            .await
            .expect("call");
        if i >= 100 {
            calls.push(t.elapsed());
        }
        assert_ne!(r.is_error, Some(true));
    }
    client.cancel().await.ok();

    // Exit after stdin closes, and peak RSS, with a raw child we control.
    let mut exits = Vec::new();
    let mut rss = Vec::new();
    for _ in 0..10 {
        use std::io::{BufRead, BufReader, Write};
        let mut child = std::process::Command::new(BIN)
            .arg("--root")
            .arg(dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        let mut stdin = child.stdin.take().expect("stdin");
        let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        for (id, msg) in [
            (
                1,
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#,
            ),
            (
                0,
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            ),
            (
                2,
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_dir","arguments":{}}}"#,
            ),
        ] {
            writeln!(stdin, "{msg}").expect("write");
            if id > 0 {
                line.clear();
                stdout.read_line(&mut line).expect("read");
            }
        }
        rss.push(peak_rss_kb(child.id()).unwrap_or(0));
        let t = Instant::now();
        drop(stdin);
        child.wait().expect("wait");
        exits.push(t.elapsed());
    }
    rss.sort();

    let ms = |d: Duration| format!("{:.2} ms", d.as_secs_f64() * 1000.0);
    println!(
        "nanohermes-files over stdio (release, {} starts, {} calls)",
        STARTS, CALLS
    );
    println!("| metric | measured | goal |");
    println!("|---|---|---|");
    println!(
        "| spawn + initialize + tools/list, median | {} | <= 5 ms |",
        ms(median(&mut starts))
    );
    println!(
        "| tools/call read_file round trip, p50 | {} | <= 0.3 ms |",
        ms(median(&mut calls))
    );
    println!(
        "| tools/call read_file round trip, p99 | {} | |",
        ms(percentile(&mut calls, 0.99))
    );
    println!(
        "| peak RSS (VmHWM), median | {:.1} MB | <= 10 MB |",
        rss[rss.len() / 2] as f64 / 1024.0
    );
    println!(
        "| exit after stdin closes, median | {} | <= 50 ms |",
        ms(median(&mut exits))
    );
}
