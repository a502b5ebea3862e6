//! Integration tests of the files server, all through a real MCP client.
//!
//! - `tools`: every tool and its error paths, over the in-process transport;
//! - `escapes`: the path-escape suite; nothing outside the root may change;
//! - `stdio`: the real `nanohermes-files` binary over stdio, both protocol eras;
//! - `schema`: the committed `schemas/files.json` matches the code.

mod escapes;
mod schema;
mod stdio;
mod support;
mod tools;
