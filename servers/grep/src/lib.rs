//! The grep MCP server: search file contents and find files by glob inside
//! one workspace root, on ripgrep's own crates (`ignore`, `grep-regex`,
//! `grep-searcher`, `globset`).
//!
//! Tools:
//! - `grep {pattern, path?, glob?, case_insensitive?, fixed_strings?,
//!   context_lines?, max_results?}`: matching lines as `path:line:text`;
//! - `glob {pattern, path?}`: matching file paths.
//!
//! Invariants:
//! - both tools are read-only and never leave the root: the start path is
//!   confined by the kit's `Workspace` and the walk never follows symlinks;
//! - the walk honours `.gitignore`, `.ignore` and git's excludes even
//!   outside a git repository, and skips hidden files; grep skips binary
//!   files (a NUL byte);
//! - output is stable (sorted by path, then line) and bounded: at most
//!   `max_results` matching lines (default 200) or 500 files, then a line
//!   saying how many more were not shown; a long line is cut to a window
//!   around its first match; the result fits `--max-output`, cut at a whole
//!   line with the footer kept;
//! - an invalid regex or glob is a tool error that quotes the pattern.

pub mod find;
pub mod search;
pub mod walk;

use std::path::PathBuf;
use std::sync::Arc;

use mcp_tools::ToolContext;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::search::SearchRequest;
use crate::walk::PathFilter;

/// Matching lines shown when the call does not say.
pub const DEFAULT_MAX_RESULTS: usize = 200;
/// Largest `max_results` accepted.
pub const MAX_RESULTS_LIMIT: usize = 2_000;
/// Largest `context_lines` accepted.
pub const MAX_CONTEXT_LINES: usize = 10;
/// Most file paths the glob tool lists.
pub const GLOB_LIMIT: usize = 500;

/// Arguments of the `grep` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GrepArgs {
    /// Rust regex, per line.
    pub pattern: String,
    /// File or directory. Default: workspace root.
    #[serde(default)]
    pub path: Option<String>,
    /// Only files matching this glob (`!` excludes).
    #[serde(default)]
    pub glob: Option<String>,
    /// Ignore case.
    #[serde(default)]
    pub case_insensitive: Option<bool>,
    /// Literal, not a regex.
    #[serde(default)]
    pub fixed_strings: Option<bool>,
    /// Lines around each match (0-10).
    #[serde(default)]
    pub context_lines: Option<u32>,
    /// Lines shown (1-2000). Default 200.
    #[serde(default)]
    pub max_results: Option<u32>,
}

/// Arguments of the `glob` tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct GlobArgs {
    /// `*.rs` matches at any depth, `src/**/*.rs` from the root; `{a,b}` alternates.
    pub pattern: String,
    /// Default: workspace root.
    #[serde(default)]
    pub path: Option<String>,
}

/// The grep server: a `ServerHandler` confined to one workspace.
#[derive(Clone)]
pub struct GrepServer {
    ctx: Arc<ToolContext>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl GrepServer {
    /// A grep server acting inside `ctx`'s workspace.
    pub fn new(ctx: ToolContext) -> Self {
        Self {
            ctx: Arc::new(ctx),
            tool_router: Self::tool_router(),
        }
    }

    /// Regex search of files (ripgrep; skips gitignored, hidden, binary): `path:line:text` by path, then a count of matches not shown.
    #[tool(annotations(
        title = "Search file contents",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn grep(&self, Parameters(args): Parameters<GrepArgs>) -> Result<String, String> {
        let ctx = self.ctx.clone();
        mcp_tools::blocking(move || run_grep(&ctx, &args)).await
    }

    /// Find files by glob (skips gitignored and hidden): sorted paths, at most 500.
    #[tool(annotations(
        title = "Find files by glob",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn glob(&self, Parameters(args): Parameters<GlobArgs>) -> Result<String, String> {
        let ctx = self.ctx.clone();
        mcp_tools::blocking(move || run_glob(&ctx, &args)).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for GrepServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Search the workspace: `grep` finds lines matching a regex, `glob` finds files by name. \
                 Both respect .gitignore and skip hidden files; paths are relative to the workspace root.",
            )
    }
}

/// Resolves an optional model-given path to an existing path in the root.
fn start_path(ctx: &ToolContext, path: Option<&str>) -> Result<PathBuf, String> {
    let path = path.map(str::trim).filter(|p| !p.is_empty()).unwrap_or(".");
    let resolved = ctx.workspace.resolve(path).map_err(|e| e.to_string())?;
    if !resolved.exists() {
        return Err(format!(
            "no such file or directory: {path} (paths are relative to the workspace root)"
        ));
    }
    Ok(resolved)
}

/// The `grep` tool's work, synchronous: resolve, compile, search, render.
pub fn run_grep(ctx: &ToolContext, args: &GrepArgs) -> Result<String, String> {
    let start = start_path(ctx, args.path.as_deref())?;
    let matcher = search::build_matcher(
        &args.pattern,
        args.case_insensitive.unwrap_or(false),
        args.fixed_strings.unwrap_or(false),
    )?;
    let filter = args.glob.as_deref().map(PathFilter::new).transpose()?;
    let max_results = args
        .max_results
        .map_or(DEFAULT_MAX_RESULTS, |n| n as usize)
        .clamp(1, MAX_RESULTS_LIMIT);
    let context_lines = args
        .context_lines
        .map_or(0, |n| n as usize)
        .min(MAX_CONTEXT_LINES);
    let request = SearchRequest {
        root: ctx.workspace.root().to_path_buf(),
        start,
        filter,
        matcher,
        context_lines,
        max_results,
    };
    let outcome = search::search(&request);
    Ok(search::render(
        &outcome,
        &request,
        &args.pattern,
        ctx.max_output,
    ))
}

/// The `glob` tool's work, synchronous.
pub fn run_glob(ctx: &ToolContext, args: &GlobArgs) -> Result<String, String> {
    let start = start_path(ctx, args.path.as_deref())?;
    if !start.is_dir() {
        return Err(format!(
            "not a directory: {} (glob searches a directory; use grep to search one file)",
            ctx.workspace.display(&start)
        ));
    }
    let filter = PathFilter::new(&args.pattern)?;
    let found = find::find_files(ctx.workspace.root(), &start, &filter);
    let budget = ctx.max_output.saturating_sub(200);
    let mut out = String::new();
    let mut shown = 0;
    for file in found.files.iter().take(GLOB_LIMIT) {
        let file = file.to_string_lossy();
        if out.len() + file.len() + 1 > budget {
            break;
        }
        out.push_str(&file);
        out.push('\n');
        shown += 1;
    }
    if found.files.is_empty() {
        out.push_str(&format!("No files match `{}`.", args.pattern));
    } else if found.files.len() > shown {
        out.push_str(&format!(
            "[{} more files not shown ({} in all); narrow the pattern or path]",
            found.files.len() - shown,
            found.files.len()
        ));
    }
    if found.unreadable > 0 {
        out.push_str(&format!(
            "\n[{} files or directories could not be read]",
            found.unreadable
        ));
    }
    Ok(out)
}
