//! `nanohermes-shell`: the shell MCP server over stdio or streamable HTTP.

use std::process::ExitCode;

use clap::Parser;

/// Run shell commands and background tasks inside a workspace root, over MCP.
#[derive(Parser)]
#[command(name = "nanohermes-shell", version)]
struct Cli {
    #[command(flatten)]
    serve: mcp_tools::ServeArgs,
    #[command(flatten)]
    sandbox: mcp_tools::spawn::SandboxArgs,
}

fn main() -> ExitCode {
    nanohermes_shell::signals::survive_interrupts_when_piped();
    let cli = Cli::parse();
    let ctx = match cli.serve.context() {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("nanohermes-shell: {e:#}");
            return ExitCode::from(2);
        }
    };
    let server = nanohermes_shell::ShellServer::with_sandbox(ctx, cli.sandbox.policy());
    if let Some(warning) = server.sandbox().startup_warning() {
        eprintln!("nanohermes-shell: {warning}");
    }
    let code = mcp_tools::serve::run("nanohermes-shell", &cli.serve, server);
    // Whatever is still running (a task whose driver never got to kill it)
    // dies with the server.
    mcp_tools::spawn::kill_all_spawned();
    code
}
