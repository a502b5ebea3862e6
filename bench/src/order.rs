//! `nanohermes-bench order FILE`: writes the agent's link-order file, the
//! functions a run of the agent executes, so that the linker lays them out
//! side by side (`agent/build.rs` passes the file to lld).
//!
//! Why: the agent's `.text` is about 22 MB, and a run executes about 2.5 MB
//! of it, spread over the whole section. The kernel maps file pages in
//! 64 KB windows around each fault, so a scattered 2.5 MB made most of the
//! section resident. Measured on the release build, the 4-step task: peak
//! RSS 20.4 → 13.7 MB with the file, and fewer page faults at start.
//!
//! How: each scripted task (a one-reply run, the 4-step task, a few trivial
//! tool calls; the 4-step task again with the built-ins as child processes,
//! which are this binary too) runs once under `valgrind --tool=callgrind`,
//! which records every function executed, with its mangled name. The file
//! lists them sorted, so that a regenerated file diffs by the functions
//! that changed. (Listing the in-process runs' functions first, then the
//! children's, measured no different: 9.6–9.7 MB either way.)

use std::collections::BTreeSet;
use std::path::Path;

use crate::agent_runs::{self, Placement, Setting};
use crate::bins::Bins;

/// The committed link-order file, where `scripts/symbol-order` writes it.
pub const ORDER_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../agent/link/hot-symbols.txt");

/// How many of [`ORDER_FILE`]'s names `agent` defines, and how many it
/// lists: a file gone stale (a new toolchain, another profile) shows here
/// before it shows as resident memory. `None` when `nm` cannot say (not
/// installed, or a stripped binary).
pub fn names_found(agent: &Path) -> anyhow::Result<Option<(usize, usize)>> {
    let listed = std::fs::read_to_string(ORDER_FILE)?;
    let listed: BTreeSet<&str> = listed.lines().filter(|l| !l.is_empty()).collect();
    let Ok(nm) = std::process::Command::new("nm")
        .arg("--defined-only")
        .arg(agent)
        .output()
    else {
        return Ok(None);
    };
    if !nm.status.success() {
        return Ok(None);
    }
    let defined = String::from_utf8_lossy(&nm.stdout);
    let found = defined
        .lines()
        .filter_map(|line| line.rsplit(' ').next())
        .filter(|name| listed.contains(name))
        .collect::<BTreeSet<_>>()
        .len();
    Ok(Some((found, listed.len())))
}

/// Runs the tasks under callgrind and writes the names to `out`.
pub async fn write_order_file(bins: &Bins, out: &Path) -> anyhow::Result<()> {
    let traces = tempfile::tempdir()?;
    let launcher = vec![
        "valgrind".to_owned(),
        "--tool=callgrind".to_owned(),
        "--demangle=no".to_owned(),
        "--dump-instr=no".to_owned(),
        format!(
            "--callgrind-out-file={}",
            traces.path().join("callgrind.%p").display()
        ),
    ];
    let in_process = Setting::new(bins, Placement::InProcess)?;
    // The 4-step task's servers as children (files, shell), and todo,
    // which only answers its handshake and listing.
    const CHILDREN: [&str; 3] = ["files", "shell", "todo"];
    let children = Setting::with_children(bins, &CHILDREN)?;
    // With the built-ins as child processes, the children (`nanohermes
    // builtin NAME`, this same binary) are traced too; the commands they
    // run are not.
    let mut tracing_children = launcher.clone();
    tracing_children.extend([
        "--trace-children=yes".to_owned(),
        "--trace-children-skip=/bin/*,/usr/*,*/sh,*/true,*/git".to_owned(),
    ]);
    let agent = bins.agent();
    let agent = agent.to_string_lossy();
    // Each run with the number of built-in children it must trace.
    let runs = [
        (&launcher, &in_process, agent_runs::trivial_steps(0), 0),
        (&launcher, &in_process, agent_runs::four_steps(), 0),
        (&launcher, &in_process, agent_runs::trivial_steps(3), 0),
        (
            &tracing_children,
            &children,
            agent_runs::four_steps(),
            CHILDREN.len(),
        ),
    ];
    let mut names = BTreeSet::new();
    for (launcher, setting, script, expected_children) in runs {
        agent_runs::run_under(launcher, bins, setting, script, false)
            .await
            .map_err(|e| {
                anyhow::anyhow!("a run under valgrind failed (is valgrind installed?): {e}")
            })?;
        let mut traced_children = 0;
        for entry in std::fs::read_dir(traces.path())? {
            let path = entry?.path();
            let text = std::fs::read_to_string(&path)?;
            traced_children += usize::from(is_builtin_child(&text));
            names.extend(functions_of(&text, &agent));
            std::fs::remove_file(path)?;
        }
        // A child killed at shutdown writes no trace: say so rather than
        // write a file without its code.
        anyhow::ensure!(
            traced_children == expected_children,
            "{traced_children} of the {expected_children} built-in children wrote a trace \
             (killed at the agent's shutdown before valgrind wrote it?); run again on an idle machine"
        );
    }
    anyhow::ensure!(
        !names.is_empty(),
        "callgrind recorded no function of {agent}"
    );
    let mut file = String::with_capacity(names.len() * 120);
    for name in &names {
        file.push_str(name);
        file.push('\n');
    }
    std::fs::write(out, file)?;
    eprintln!("{}: {} functions", out.display(), names.len());
    Ok(())
}

/// Whether a callgrind output file is a `nanohermes builtin NAME` child's.
fn is_builtin_child(text: &str) -> bool {
    text.lines()
        .find_map(|line| line.strip_prefix("cmd:"))
        .is_some_and(|cmd| cmd.split_whitespace().nth(1) == Some("builtin"))
}

/// The mangled names of the functions of `object` that a callgrind output
/// file records as executed.
///
/// The format compresses names: `fn=(7) name` defines id 7, and a later
/// `fn=(7)` refers to it; `ob=` says which object the following `fn=`
/// lines belong to, with ids of its own. `cfn=`/`cob=` name callees, which
/// have their own `fn=` block when they ran.
fn functions_of(text: &str, object: &str) -> BTreeSet<String> {
    let mut objects = std::collections::HashMap::new();
    let mut functions = std::collections::HashMap::new();
    let mut in_object = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let Some((key, rest)) = line.split_once('=') else {
            continue;
        };
        let (id, name) = match rest.strip_prefix('(').and_then(|r| r.split_once(')')) {
            Some((id, name)) => (id, name.trim()),
            None => continue,
        };
        match key {
            "ob" | "cob" => {
                if !name.is_empty() {
                    objects.insert(id.to_owned(), name.to_owned());
                }
                if key == "ob" {
                    in_object = objects.get(id).is_some_and(|o| o == object);
                }
            }
            "fn" | "cfn" => {
                if !name.is_empty() {
                    functions.insert(id.to_owned(), name.to_owned());
                }
                if key == "fn"
                    && in_object
                    && let Some(name) = functions.get(id).and_then(|n| symbol_name(n))
                {
                    out.insert(name.to_owned());
                }
            }
            _ => {}
        }
    }
    out
}

/// The symbol behind a callgrind function name: without the `'N` callgrind
/// adds for recursion depth; `None` for an address or `(below main)`.
fn symbol_name(name: &str) -> Option<&str> {
    let name = match name.rsplit_once('\'') {
        Some((symbol, depth)) if depth.bytes().all(|b| b.is_ascii_digit()) => symbol,
        _ => name,
    };
    let plain = |b: u8| b.is_ascii_alphanumeric() || b"_.$".contains(&b);
    let symbolic = !name.is_empty() && !name.starts_with("0x") && name.bytes().all(plain);
    symbolic.then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_builtin_childs_trace_is_told_by_its_command_line() {
        let child = "version: 1\ncmd:  /t/nanohermes builtin files --root /w\nfn=(1) x\n";
        let agent = "version: 1\ncmd:  /t/nanohermes run --workspace /w builtin\n";
        assert!(is_builtin_child(child));
        assert!(!is_builtin_child(agent));
        assert!(!is_builtin_child("fn=(1) x\n"));
    }

    #[test]
    fn names_are_read_through_the_compression_and_only_for_the_object() {
        let text = "\
ob=(1) /bin/agent
fn=(1) _ZN4main17h0123456789abcdefE
cob=(2) /lib/libc.so.6
cfn=(2) memcpy
calls=1 0
fn=(3) _RNvCs1_3foo3bar'2
ob=(2)
fn=(2)
ob=(1)
fn=(4) 0x0000000000401000
fn=(1)
fn=(5) (below main)
";
        let names: Vec<_> = functions_of(text, "/bin/agent").into_iter().collect();
        assert_eq!(
            names,
            ["_RNvCs1_3foo3bar", "_ZN4main17h0123456789abcdefE"],
            "libc's memcpy, an address and (below main) are not the agent's symbols"
        );
    }
}
