//! `nanohermes-files`: an MCP server that reads, writes, edits, patches and
//! lists files inside one workspace root.
//!
//! Tools: `read_file`, `write_file`, `edit_file`, `apply_patch`, `list_dir`.
//!
//! Contract:
//! - every path goes through [`mcp_tools::Workspace::resolve`] first, so no
//!   tool reads or writes outside the root;
//! - every write is atomic (temp file in the same directory, then rename): a
//!   crash leaves the old file or the new one, never a truncated one;
//! - `apply_patch` is all or nothing across every file it names;
//! - a failing tool answers with `isError: true` and a message saying what to
//!   do next; JSON-RPC errors are left for unknown tools and bad parameters.

mod apply;
mod edit;
mod list;
mod patch;
mod read;
mod server;

pub use server::FilesServer;
