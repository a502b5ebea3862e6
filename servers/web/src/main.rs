//! `nanohermes-web`: the web MCP server over stdio or streamable HTTP.

fn main() -> std::process::ExitCode {
    mcp_tools::serve::main(
        "web",
        "MCP server: fetch http(s) URLs as readable text",
        |ctx| Ok(nanohermes_web::WebServer::new(ctx)?),
    )
}
