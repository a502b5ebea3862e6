//! Integration tests of the web server, against local HTTP servers on
//! 127.0.0.1 only: `local` serves the pages, `fetch` drives `web_fetch`
//! through an in-process MCP client, `process` spawns the real binary.

mod fetch;
mod local;
mod process;
