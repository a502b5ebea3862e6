//! `nanohermes`: the agent binary. All logic lives in the library (`nanohermes::cli`).

fn main() -> std::process::ExitCode {
    // First: this process may be the sandbox's namespace probe.
    mcp_tools::spawn::sandbox::answer_probe();
    nanohermes::cli::main()
}
