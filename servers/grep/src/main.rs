//! `nanohermes-grep`: the grep MCP server over stdio or streamable HTTP.

use std::process::ExitCode;

fn main() -> ExitCode {
    mcp_tools::serve::main(
        "nanohermes-grep",
        "MCP server: search file contents (grep) and find files by glob inside a workspace root",
        |ctx| Ok(nanohermes_grep::GrepServer::new(ctx)),
    )
}
