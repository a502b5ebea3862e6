//! Integration tests of the files server, all through a real MCP client.
//!
//! - `tools`: every tool and its error paths, over the in-process transport;
//! - `escapes`: the path-escape suite; nothing outside the root may change;
//! - `stdio`: the real `nanohermes-files` binary over stdio, both protocol eras;
//! - `http`: the binary over streamable HTTP, both eras, and what it refuses
//!   (bind rule, forged Host and Origin, missing or wrong bearer token);
//! - `special`: FIFOs, sockets, huge files, symlinks deleted or renamed;
//! - `race`: the real binary writing into a directory another thread keeps
//!   swapping for a symlink to outside; nothing lands outside;
//! - `protected`: the real binary refusing writes to `.git`, `.nanohermes`,
//!   `.mcp.json` and `hooks.json` without the protected-write grant;
//! - `schema`: the committed `schemas/files.json` matches the code.

mod escapes;
mod http;
mod protected;
mod race;
mod schema;
mod special;
mod stdio;
mod support;
mod tools;
