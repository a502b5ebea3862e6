//! `conformance-server`: the fixture server the official MCP conformance
//! suite (`@modelcontextprotocol/conformance`) tests servers against.
//!
//! The suite's server scenarios call fixture tools, resources and prompts by
//! name (`test_simple_text`, `test://static-text`, `test_simple_prompt` …),
//! which no real NanoHermes server has. This binary serves them through the
//! kit's own entry ([`mcp_tools::serve::main`]: the same flags, HTTP stack,
//! Host/Origin guard and bearer auth as the seven tool servers), so a suite
//! run against it tests the kit every server is built on.
//!
//! Dev/test only (`publish = false`); `scripts/conformance` runs it with
//! `--http 127.0.0.1:0` and reads the address from its first stderr line.

mod catalog;
mod fixture;
mod mrtr;
mod tools;

use std::process::ExitCode;

fn main() -> ExitCode {
    mcp_tools::serve::main(
        "conformance-server",
        "The MCP conformance suite's fixture server, on the NanoHermes kit",
        |_context| Ok(fixture::Fixture::new()),
    )
}
