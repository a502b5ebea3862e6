//! Integration tests of the files server, all through a real MCP client.
//!
//! - `tools`: every tool and its error paths, over the in-process transport;
//! - `escapes`: the path-escape suite; nothing outside the root may change;
//! - `stdio`: the real `nanohermes-files` binary over stdio, both protocol eras;
//! - `http`: the binary over streamable HTTP, both eras, and what it refuses
//!   (bind rule, forged Host and Origin, missing or wrong bearer token);
//! - `special`: FIFOs, sockets, huge files, symlinks deleted or renamed;
//! - `schema`: the committed `schemas/files.json` matches the code.

mod escapes;
mod http;
mod schema;
mod special;
mod stdio;
mod support;
mod tools;
