//! `nanohermes-files`: an MCP server that reads, writes, edits, patches and
//! lists files inside one workspace root.
//!
//! Tools: `read_file`, `write_file`, `edit_file`, `apply_patch`, `list_dir`.
//!
//! Contract:
//! - every path goes through [`mcp_tools::Workspace::resolve`] first, so no
//!   tool reads or writes outside the root; then the checked path is opened
//!   again beneath the root's descriptor, following no symlink, and the
//!   write happens inside the opened directory, so a directory swapped for a
//!   symlink meanwhile cannot redirect it;
//! - a write to a path that decides what runs later (`.git`, `.nanohermes`,
//!   `.mcp.json`, `hooks.json`: [`protected`]) is refused unless the call's
//!   `_meta` carries the user's approval ([`mcp_tools::CallGrants`]);
//! - every write is atomic (temp file in the same directory, then rename): a
//!   crash leaves the old file or the new one, never a truncated one;
//! - `apply_patch` is all or nothing across every file it names;
//! - a failing tool answers with `isError: true` and a message saying what to
//!   do next; JSON-RPC errors are left for unknown tools and bad parameters.

mod apply;
mod edit;
mod entry;
mod list;
mod patch;
pub mod protected;
mod quote;
mod read;
mod server;

pub use server::FilesServer;

/// Every path an `apply_patch` patch names, old and new sides, as written
/// (after git's quoting is undone): what the agent checks against
/// [`protected::why_protected`] before it sends the call. An error is the
/// message `apply_patch` itself would answer.
pub fn patch_paths(patch: &str) -> Result<Vec<String>, String> {
    let files = patch::parse(patch)?;
    Ok(files
        .into_iter()
        .flat_map(|f| [f.old_path, f.new_path])
        .flatten()
        .collect())
}
