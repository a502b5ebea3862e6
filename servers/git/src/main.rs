//! `nanohermes-git`: the git MCP server over stdio (or `--http`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Git status, diff, log and commit for one repository, over MCP.
#[derive(Parser)]
#[command(name = "nanohermes-git", version)]
struct Cli {
    #[command(flatten)]
    serve: mcp_tools::ServeArgs,
    /// The git executable to run (a name looked up on PATH, or a path).
    #[arg(long, value_name = "PATH", default_value = "git")]
    git: PathBuf,
    #[command(flatten)]
    sandbox: mcp_tools::spawn::SandboxArgs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let ctx = match cli.serve.context() {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("nanohermes-git: {e:#}");
            return ExitCode::from(2);
        }
    };
    let server = nanohermes_git::GitServer::with_options(ctx, cli.git, cli.sandbox.policy());
    mcp_tools::serve::run("nanohermes-git", &cli.serve, server)
}
