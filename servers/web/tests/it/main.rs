//! Integration tests of the web server, against local HTTP servers on
//! 127.0.0.1 only: `local` serves the pages (`tls` an https one), `client`
//! drives `web_fetch` through an in-process MCP client, `fetch` tests the
//! fetching, `guard` the refusal of internal addresses, `process` spawns the
//! real binary.

mod client;
mod fetch;
mod guard;
mod local;
mod process;
mod tls;
