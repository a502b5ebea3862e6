//! `nanohermes`: the agent binary. All logic lives in the library (`nanohermes::cli`).

fn main() -> std::process::ExitCode {
    nanohermes::cli::main()
}
