//! `nanohermes-shell`: the shell MCP server over stdio or streamable HTTP.

use std::process::ExitCode;

fn main() -> ExitCode {
    mcp_tools::serve::main(
        "nanohermes-shell",
        "MCP server: run shell commands and background tasks inside a workspace root",
        |ctx| Ok(nanohermes_shell::ShellServer::new(ctx)),
    )
}
