//! `nanohermes-files`: the files MCP server over stdio (default) or HTTP.

use std::process::ExitCode;

fn main() -> ExitCode {
    mcp_tools::serve::main(
        "nanohermes-files",
        "MCP server: read, write, edit, patch and list files inside one workspace root",
        |ctx| Ok(nanohermes_files::FilesServer::new(ctx)),
    )
}
