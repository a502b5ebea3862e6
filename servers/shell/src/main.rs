//! `nanohermes-shell`: the shell MCP server over stdio or streamable HTTP.

use std::process::ExitCode;

fn main() -> ExitCode {
    nanohermes_shell::signals::survive_interrupts_when_piped();
    let code = mcp_tools::serve::main(
        "nanohermes-shell",
        "MCP server: run shell commands and background tasks inside a workspace root",
        |ctx| Ok(nanohermes_shell::ShellServer::new(ctx)),
    );
    // Whatever is still running (a task whose driver never got to kill it)
    // dies with the server.
    mcp_tools::spawn::kill_all_spawned();
    code
}
