//! `cargo run -p xtask -- tidy`: the repository checks (see the library).

use std::io::Write as _;
use std::process::ExitCode;

fn main() -> anyhow::Result<ExitCode> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().map(String::as_str).collect::<Vec<_>>() != ["tidy"] {
        anyhow::bail!("usage: cargo run -p xtask -- tidy");
    }
    let tidy = xtask::tidy(&std::env::current_dir()?)?;
    std::io::stdout()
        .lock()
        .write_all(tidy.render().as_bytes())?;
    Ok(if tidy.failed() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
