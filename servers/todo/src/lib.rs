//! The todo MCP server: the agent's plan for the current task, as a list it
//! replaces whole and reads back.
//!
//! | tool | does | annotations |
//! |---|---|---|
//! | `todo_write` | replaces the whole list with `todos: [{content, status}]`, returns it rendered | not read-only, destructive (replaces), idempotent |
//! | `todo_read` | returns the list rendered | read-only |
//!
//! Invariants:
//! - a list is validated whole before anything changes: at most one item
//!   `in_progress`, no empty content, bounded size; a refused list leaves the
//!   previous one in place;
//! - the state belongs to the server instance and is shared by every clone
//!   of its handler;
//! - with `--file PATH` the list is loaded at start (a corrupt file stops the
//!   server with a message) and every write goes to a temp file in the same
//!   directory, then is renamed over the old one.
//!
//! Example: `todo_write {"todos": [{"content": "Write tests", "status":
//! "in_progress"}]}` answers
//! `Todos: 0 completed, 1 in progress, 0 pending (1 total)\n[>] Write tests\n`
//! (pinned by the test `write_then_read_returns_the_rendered_list`).

#![deny(clippy::print_stdout, clippy::print_stderr)]

pub mod list;
pub mod store;

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

pub use list::{Status, Todo};
pub use store::{Store, StoreError};

/// Arguments of `todo_write`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteArgs {
    /// The new list, in order.
    pub todos: Vec<Todo>,
}

/// The todo MCP server. Clones share one list.
#[derive(Clone)]
pub struct TodoServer {
    store: Arc<Store>,
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl TodoServer {
    /// A server over `store` (see [`Store::in_memory`] and [`Store::open`]).
    pub fn new(store: Store) -> Self {
        Self {
            store: Arc::new(store),
            tool_router: Self::tool_router(),
        }
    }

    /// Replace the whole todo list (send every item each time) and return it.
    #[tool(annotations(
        title = "Write todo list",
        read_only_hint = false,
        destructive_hint = true,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn todo_write(&self, Parameters(args): Parameters<WriteArgs>) -> Result<String, String> {
        let todos = list::validate(args.todos)?;
        let rendered = list::render(&todos);
        let store = Arc::clone(&self.store);
        mcp_tools::blocking(move || store.replace(todos)).await?;
        Ok(rendered)
    }

    /// The current todo list and statuses.
    #[tool(annotations(
        title = "Read todo list",
        read_only_hint = true,
        destructive_hint = false,
        idempotent_hint = true,
        open_world_hint = false
    ))]
    async fn todo_read(&self) -> String {
        list::render(&self.store.read())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for TodoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                env!("CARGO_PKG_NAME"),
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "A todo list for planning multi-step work. todo_write replaces the whole list \
                 (one item in_progress at a time); todo_read shows it.",
            )
    }
}
