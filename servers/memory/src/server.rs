//! The MCP face of the store: four tools, their arguments, and the text the
//! model reads back. Every tool works in the server's project (its
//! workspace root) plus the memories the user marked global; no tool can
//! mark one global.

use std::sync::Arc;

use mcp_tools::{ToolContext, clamp};
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::store::{Kind, Memory, MemoryError, MemoryStore, Saved};

/// Hits `memory_search` returns when `limit` is not given.
pub const DEFAULT_SEARCH_LIMIT: usize = 10;
/// Memories `memory_list` returns when `limit` is not given.
pub const DEFAULT_LIST_LIMIT: usize = 20;
/// Largest `limit` either tool accepts.
pub const MAX_LIMIT: usize = 100;

/// Arguments of `memory_save`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SaveArgs {
    /// One short self-contained statement.
    pub text: String,
    /// lesson: what worked or failed; preference: the user's taste; correction: a mistake the user corrected; fact: about user, project or environment.
    pub kind: Kind,
    /// Search keywords.
    #[serde(default)]
    pub tags: Option<Vec<String>>,
}

/// Arguments of `memory_search`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SearchArgs {
    /// Words or a question; plain text, no query syntax.
    pub query: String,
    /// Default 10, max 100.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// Arguments of `memory_list`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ListArgs {
    /// Only this kind.
    #[serde(default)]
    pub kind: Option<Kind>,
    /// Default 20, max 100.
    #[serde(default)]
    pub limit: Option<usize>,
}

/// Arguments of `memory_forget`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ForgetArgs {
    /// From memory_search or memory_list.
    pub id: i64,
}

/// The memory MCP server: `memory_save`, `memory_search`, `memory_list`,
/// `memory_forget` over one [`MemoryStore`].
#[derive(Clone)]
pub struct MemoryServer {
    ctx: Arc<ToolContext>,
    store: Arc<MemoryStore>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl MemoryServer {
    /// A server over `store`; `ctx` gives the output cap and the project:
    /// its workspace root (canonical), so the model in one project never
    /// sees, saves into or forgets another project's memories.
    pub fn new(ctx: ToolContext, store: MemoryStore) -> Self {
        let store = store.in_project(ctx.workspace.root());
        Self {
            ctx: Arc::new(ctx),
            store: Arc::new(store),
            tool_router: Self::tool_router(),
        }
    }

    /// The store this server answers from.
    pub fn store(&self) -> &Arc<MemoryStore> {
        &self.store
    }

    /// Save one short long-term memory; saving the same text again only reports its id.
    #[tool(annotations(
        title = "Save a memory",
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn memory_save(&self, Parameters(args): Parameters<SaveArgs>) -> Result<String, String> {
        let tags = args.tags.unwrap_or_default();
        let saved = self
            .blocking(move |store| store.save(&args.text, args.kind, &tags))
            .await?;
        Ok(match saved {
            Saved::New(id) => format!("saved as memory {id}"),
            Saved::Known(id) => format!("already known (id {id})"),
        })
    }

    /// Search long-term memories by words in any language (CJK too); best first: id, kind, text.
    #[tool(annotations(
        title = "Search memories",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn memory_search(
        &self,
        Parameters(args): Parameters<SearchArgs>,
    ) -> Result<String, String> {
        let limit = clamp_limit(args.limit, DEFAULT_SEARCH_LIMIT)?;
        let query = args.query;
        let shown = query.clone();
        let hits = self
            .blocking(move |store| store.search(&query, limit))
            .await?;
        if hits.is_empty() {
            return Ok(format!(
                "no memory matches {shown:?}; try other or fewer words"
            ));
        }
        Ok(self.render(&format!("{} matching {shown:?}", count(hits.len())), &hits))
    }

    /// List long-term memories, newest first.
    #[tool(annotations(
        title = "List memories",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn memory_list(&self, Parameters(args): Parameters<ListArgs>) -> Result<String, String> {
        let limit = clamp_limit(args.limit, DEFAULT_LIST_LIMIT)?;
        let kind = args.kind;
        let memories = self.blocking(move |store| store.list(kind, limit)).await?;
        if memories.is_empty() {
            return Ok("no memories saved yet".to_string());
        }
        Ok(self.render(
            &format!("{}, newest first", count(memories.len())),
            &memories,
        ))
    }

    /// Delete a wrong or outdated long-term memory.
    #[tool(annotations(
        title = "Forget a memory",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn memory_forget(
        &self,
        Parameters(args): Parameters<ForgetArgs>,
    ) -> Result<String, String> {
        let memory = self.blocking(move |store| store.forget(args.id)).await?;
        Ok(format!("forgot {}", line(&memory)))
    }
}

impl MemoryServer {
    async fn blocking<T: Send + 'static>(
        &self,
        job: impl FnOnce(&MemoryStore) -> Result<T, MemoryError> + Send + 'static,
    ) -> Result<T, String> {
        let store = Arc::clone(&self.store);
        mcp_tools::blocking(move || job(&store)).await
    }

    fn render(&self, heading: &str, memories: &[Memory]) -> String {
        let mut out = format!("{heading}:\n");
        for memory in memories {
            out.push_str(&line(memory));
            out.push('\n');
        }
        clamp(&out, self.ctx.max_output)
    }
}

fn line(memory: &Memory) -> String {
    let mut line = format!("[{}] {}: {}", memory.id, memory.kind, memory.text);
    if !memory.tags.is_empty() {
        line.push_str(&format!(" (tags: {})", memory.tags.join(", ")));
    }
    line
}

fn count(n: usize) -> String {
    if n == 1 {
        "1 memory".to_string()
    } else {
        format!("{n} memories")
    }
}

fn clamp_limit(limit: Option<usize>, default: usize) -> Result<usize, String> {
    match limit {
        None => Ok(default),
        Some(0) => Err("limit must be at least 1".to_string()),
        Some(n) => Ok(n.min(MAX_LIMIT)),
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for MemoryServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Long-term memory that persists across sessions. Search it (memory_search) before \
                 asking the user something they may have told you already; save (memory_save) \
                 lessons, preferences, corrections and facts worth keeping; forget \
                 (memory_forget) memories that turned out wrong.",
            )
    }
}
