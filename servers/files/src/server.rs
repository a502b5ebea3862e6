//! The rmcp handler: tool declarations, argument types, and the glue that
//! confines paths, runs the blocking file work off the async thread and
//! turns outcomes into tool results.

use std::path::PathBuf;
use std::sync::Arc;

use mcp_tools::{CallGrants, ToolContext, blocking};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, RequestMetaObject, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use rustix::fs::FileType;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::apply::check_protected;
use crate::entry::Entry;
use crate::read::{DEFAULT_LIMIT, ReadRequest, io_message, read_text};
use crate::{apply, edit, list, read};

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadFileArgs {
    /// File to read.
    pub path: String,
    /// First line, 1-based.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Most lines. Default 2000.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// Arguments of `write_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteFileArgs {
    /// File to write.
    pub path: String,
    /// Full new content.
    pub content: String,
}

/// Arguments of `edit_file`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EditFileArgs {
    /// File to edit.
    pub path: String,
    /// Exact text, whitespace included.
    pub old_string: String,
    /// Replacement text.
    pub new_string: String,
    /// Replace every occurrence.
    #[serde(default)]
    pub replace_all: Option<bool>,
}

/// Arguments of `apply_patch`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ApplyPatchArgs {
    /// Per file `--- a/PATH` `+++ b/PATH` (`/dev/null` to create/delete), then `@@` hunks.
    pub patch: String,
}

/// Arguments of `list_dir`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListDirArgs {
    /// Default: workspace root.
    #[serde(default)]
    pub path: Option<String>,
    /// Levels (1-10). Default 2.
    #[serde(default)]
    pub depth: Option<usize>,
    /// Also gitignored files.
    #[serde(default)]
    pub include_ignored: Option<bool>,
}

const DEFAULT_DEPTH: usize = 2;
const MAX_DEPTH: usize = 10;

/// The files MCP server. Cheap to clone: clones share one context.
#[derive(Clone)]
pub struct FilesServer {
    ctx: Arc<ToolContext>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl FilesServer {
    /// A server confined to `ctx.workspace`, with results capped at `ctx.max_output`.
    pub fn new(ctx: ToolContext) -> Self {
        Self {
            ctx: Arc::new(ctx),
            tool_router: Self::tool_router(),
        }
    }

    /// Read a text file as numbered lines (`N<TAB>text`); page with offset and limit.
    #[tool(annotations(
        title = "Read file",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn read_file(
        &self,
        Parameters(args): Parameters<ReadFileArgs>,
    ) -> Result<String, String> {
        let path = self.resolve(&args.path)?;
        if args.offset == Some(0) {
            return Err("offset is 1-based: the first line is offset=1".into());
        }
        if args.limit == Some(0) {
            return Err("limit must be at least 1".into());
        }
        let request = ReadRequest {
            offset: args.offset.unwrap_or(1),
            limit: args.limit.unwrap_or(DEFAULT_LIMIT),
            windowed: args.offset.is_some() || args.limit.is_some(),
            max_output: self.ctx.max_output,
        };
        let ws = self.ctx.workspace.clone();
        blocking(move || {
            read::read_window(read::open_for_read(&ws, &path), &path, &args.path, &request)
        })
        .await
    }

    /// Create or overwrite a file atomically, with parent directories.
    #[tool(annotations(
        title = "Write file",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn write_file(
        &self,
        Parameters(args): Parameters<WriteFileArgs>,
        meta: RequestMetaObject,
    ) -> Result<String, String> {
        let granted = CallGrants::from_meta(&meta.0.0).protected_write;
        let path = self.resolve(&args.path)?;
        let ws = self.ctx.workspace.clone();
        blocking(move || -> Result<String, String> {
            check_protected(&ws, &path, &args.path, granted)?;
            if path == ws.root() {
                return Err(format!("{} is a directory; give a file path", args.path));
            }
            let entry = Entry::open(&ws, &path, true).map_err(|e| io_message(&args.path, &e))?;
            let existed = match entry.kind() {
                Some(FileType::Directory) => {
                    return Err(format!("{} is a directory; give a file path", args.path));
                }
                kind => kind.is_some(),
            };
            entry
                .write(args.content.as_bytes())
                .map_err(|e| io_message(&args.path, &e))?;
            let verb = if existed { "overwrote" } else { "created" };
            Ok(format!(
                "{verb} {} ({} bytes)",
                args.path,
                args.content.len()
            ))
        })
        .await
    }

    /// Replace exact text in a file (read it first); old_string must occur once unless replace_all.
    #[tool(annotations(
        title = "Edit file",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn edit_file(
        &self,
        Parameters(args): Parameters<EditFileArgs>,
        meta: RequestMetaObject,
    ) -> Result<String, String> {
        let granted = CallGrants::from_meta(&meta.0.0).protected_write;
        let path = self.resolve(&args.path)?;
        let ws = self.ctx.workspace.clone();
        blocking(move || -> Result<String, String> {
            check_protected(&ws, &path, &args.path, granted)?;
            let entry = Entry::open(&ws, &path, false).map_err(|e| io_message(&args.path, &e))?;
            let text = read_text(entry.open_read(), &path, &args.path)?;
            let replace_all = args.replace_all.unwrap_or(false);
            let (new_text, count) = edit::replace_exact(
                &text,
                &args.old_string,
                &args.new_string,
                replace_all,
                &args.path,
            )?;
            entry
                .write(new_text.as_bytes())
                .map_err(|e| io_message(&args.path, &e))?;
            let (first, last) = edit::first_edit_lines(&text, &args.old_string, &args.new_string);
            let plural = if count == 1 { "" } else { "s" };
            Ok(format!(
                "edited {}: replaced {count} occurrence{plural} (first at lines {first}-{last})",
                args.path
            ))
        })
        .await
    }

    /// Apply a unified diff (create, modify, delete, rename files); all or nothing.
    #[tool(annotations(
        title = "Apply patch",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = false,
        open_world_hint = false
    ))]
    async fn apply_patch(
        &self,
        Parameters(args): Parameters<ApplyPatchArgs>,
        meta: RequestMetaObject,
    ) -> Result<String, String> {
        let granted = CallGrants::from_meta(&meta.0.0).protected_write;
        let ctx = Arc::clone(&self.ctx);
        blocking(move || apply::apply_patch(&ctx.workspace, &args.patch, granted)).await
    }

    /// List a directory, sorted: `/` marks directories, `@` symlinks; skips gitignored files.
    #[tool(annotations(
        title = "List directory",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn list_dir(&self, Parameters(args): Parameters<ListDirArgs>) -> Result<String, String> {
        let shown = args.path.unwrap_or_else(|| ".".to_string());
        let path = self.resolve(&shown)?;
        let depth = args.depth.unwrap_or(DEFAULT_DEPTH);
        if !(1..=MAX_DEPTH).contains(&depth) {
            return Err(format!(
                "depth must be between 1 and {MAX_DEPTH}, got {depth}"
            ));
        }
        let include_ignored = args.include_ignored.unwrap_or(false);
        let max_output = self.ctx.max_output;
        blocking(move || {
            list::list(&path, &shown, depth, include_ignored)
                .map(|s| mcp_tools::clamp(&s, max_output))
        })
        .await
    }
}

impl FilesServer {
    fn resolve(&self, path: &str) -> Result<PathBuf, String> {
        self.ctx.workspace.resolve(path).map_err(|e| e.to_string())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for FilesServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "File tools confined to one workspace root. Paths are relative to the root. \
                 Read a file before editing it; prefer edit_file for small changes and apply_patch for multi-file ones.",
            )
    }
}
