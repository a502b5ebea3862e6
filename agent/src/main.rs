//! `nanohermes`: the agent binary (placeholder until the agent-loop issue lands).

fn main() {
    eprintln!("nanohermes {}: the agent loop has not landed yet", env!("CARGO_PKG_VERSION"));
    std::process::exit(2);
}
