//! The kit every NanoHermes tool server shares.
//!
//! A tool server is an rmcp `ServerHandler` confined to one workspace root.
//! This crate gives each server the same four things, so that a server crate
//! holds only its tools:
//!
//! - [`workspace`]: resolve a path from the model to a canonical path inside
//!   the root, or refuse it with a message the model can act on;
//! - [`atomic`]: replace a file atomically (temp, fsync, rename, fsync dir);
//! - [`beneath`]: open a checked path again beneath the root's descriptor,
//!   following no symlink, so a concurrent swap cannot redirect a write;
//! - [`blocking`]: run file, search or database work off the async thread;
//! - [`clamp`]: cap tool output on a char boundary and say how much was cut;
//! - [`serve`]: the shared flags (`--root`, `--http`, `--max-output`,
//!   `--print-schema`) and the serve entry for stdio or streamable HTTP;
//! - [`http`]: what the HTTP transport lets in (loopback bind, Host and
//!   Origin guard, bearer token);
//! - [`in_process`] and [`schema`]: connect an MCP client to a handler inside
//!   the same process (the agent's built-in servers, every unit test) and
//!   generate or check the committed `schemas/NAME.json`;
//! - [`testing`]: `call_text`, the one way tests call a tool and read its text;
//! - [`grants`]: what the agent grants one call beyond a server's flags
//!   (a read-only sandbox, an approved protected write), in its `_meta`;
//! - [`regular`]: open a file that must be a regular file, never waiting
//!   on a FIFO or device a repository planted;
//! - [`net`]: the non-public address table, the domain allowlist and
//!   the sandbox's network proxy, shared by commands and `web_fetch`;
//! - [`spawn`]: the one way to start a child process (own group, scrubbed
//!   environment, the whole tree killed with its owner).
//!
//! Tool failures are results with `isError: true` and a message for the
//! model; JSON-RPC errors are left to rmcp for what the MCP spec makes
//! protocol errors (unknown tool, invalid params).

pub mod atomic;
pub mod beneath;
pub mod blocking;
pub mod clamp;
pub mod grants;
pub mod http;
pub mod in_process;
pub mod net;
pub mod regular;
pub mod schema;
pub mod serve;
pub mod spawn;
pub mod testing;
pub mod workspace;

pub use atomic::{
    DEFAULT_FILE_MODE, Durability, Syncing, start_writeback, sync_in_background, write_atomic,
    write_atomic_in, write_atomic_with,
};
pub use blocking::blocking;
pub use clamp::{DEFAULT_MAX_OUTPUT, clamp, clamp_head_tail};
pub use grants::CallGrants;
pub use serve::{ServeArgs, ToolContext};
pub use workspace::{PathError, Workspace};
