//! A small stdio MCP server for the hub's tests: a real external server with
//! tools that misbehave on purpose.
//!
//! `cargo test -p nanohermes` builds it (cargo builds examples for `cargo
//! test`) to `target/<profile>/examples/fixture_server`; tests find it next to
//! their own executable (`target/<profile>/deps/TEST-HASH` →
//! `../examples/fixture_server`). Run it by hand with
//! `cargo run -p nanohermes --example fixture_server`.
//!
//! Flags:
//! - `--hang`: never answer `initialize` (startup timeout tests);
//! - `--fail-start`: write a line to stderr and exit 2 before serving;
//! - `--page-size N`: list tools N at a time (pagination tests);
//! - `--grandchild`: start `sleep 1000` as a child, in this server's process
//!   group (like `npx` → `npm exec` → `node`);
//! - `--setsid-grandchild`: start `setsid sleep 1000`, which leaves the
//!   group and the session (a daemon);
//! - `--pid-file PATH`: once serving, write this server's pid and its
//!   grandchildren's, space-separated, to PATH (tests that run the agent
//!   find the processes there).
//!
//! Tools: `echo`, `slow`, `crash` (exits the process mid-call), `pid`,
//! `pids` (this server's and its grandchildren's),
//! `wait_for_file` and `touch` (concurrency without timing),
//! `env`, `cwd`, `image`, `structured`, `fail`, `odd_schema` (a hand-written
//! schema with `$ref`s and no root type), `dotted.name` and `dotted_name`
//! (which sanitise to the same name), and one name longer than 64 bytes.

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::Deserialize;

#[derive(Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct EchoArgs {
    /// Text to send back.
    text: String,
}

#[derive(Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct SlowArgs {
    /// How long to sleep, in milliseconds.
    ms: u64,
}

#[derive(Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct EnvArgs {
    /// Variable to read.
    name: String,
}

#[derive(Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct PathArgs {
    /// Absolute path of the marker file.
    path: String,
}

#[derive(Deserialize, rmcp::schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
struct WaitArgs {
    /// Absolute path of the marker file.
    path: String,
    /// Give up after this many milliseconds (default: never).
    #[serde(default)]
    timeout_ms: Option<u64>,
}

#[derive(Clone)]
struct Fixture {
    tool_router: ToolRouter<Self>,
    page_size: Option<usize>,
    /// This server's pid, then its grandchildren's.
    pids: Arc<Vec<u32>>,
}

fn odd_schema() -> Arc<JsonObject> {
    let schema = serde_json::json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {"item": {"$ref": "#/definitions/Item"}},
        "definitions": {"Item": {"type": "object", "properties": {
            "label": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/definitions/Item"}}
        }}}
    });
    match schema {
        serde_json::Value::Object(map) => Arc::new(map),
        _ => Arc::new(JsonObject::new()),
    }
}

#[tool_router]
impl Fixture {
    fn new(page_size: Option<usize>, pids: Vec<u32>) -> Self {
        Self {
            tool_router: Self::tool_router(),
            page_size,
            pids: Arc::new(pids),
        }
    }

    /// This server's pid, then its grandchildren's, space-separated.
    #[tool(annotations(read_only_hint = true))]
    async fn pids(&self) -> String {
        pid_list(&self.pids)
    }

    /// Echo the text back.
    #[tool(annotations(read_only_hint = true))]
    async fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> String {
        args.text
    }

    /// Sleep, then answer.
    #[tool]
    async fn slow(&self, Parameters(args): Parameters<SlowArgs>) -> String {
        tokio::time::sleep(Duration::from_millis(args.ms)).await;
        format!("slept {} ms", args.ms)
    }

    /// Exit the process in the middle of the call.
    #[tool]
    async fn crash(&self) -> String {
        eprintln!("fixture_server: crash requested, exiting with 3");
        std::process::exit(3);
    }

    /// Wait until the file at `path` exists (checked every 10 ms), then
    /// answer `seen`. Answers only if another call can run meanwhile. With
    /// `timeout_ms`, answers `gave up` after that long instead.
    #[tool]
    async fn wait_for_file(&self, Parameters(args): Parameters<WaitArgs>) -> String {
        let start = std::time::Instant::now();
        while !std::path::Path::new(&args.path).exists() {
            if args
                .timeout_ms
                .is_some_and(|ms| start.elapsed() >= Duration::from_millis(ms))
            {
                return "gave up".to_string();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        "seen".to_string()
    }

    /// Create an empty file at `path`.
    #[tool]
    async fn touch(&self, Parameters(args): Parameters<PathArgs>) -> Result<String, String> {
        std::fs::write(&args.path, b"")
            .map(|()| "touched".to_string())
            .map_err(|e| e.to_string())
    }

    /// The server's process id.
    #[tool]
    async fn pid(&self) -> String {
        std::process::id().to_string()
    }

    /// Read an environment variable.
    #[tool]
    async fn env(&self, Parameters(args): Parameters<EnvArgs>) -> String {
        std::env::var(&args.name).unwrap_or_else(|_| "(unset)".to_string())
    }

    /// The server's working directory.
    #[tool]
    async fn cwd(&self) -> String {
        std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default()
    }

    /// A 5-byte PNG (not a real image).
    #[tool]
    async fn image(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::image("aGVsbG8=", "image/png")])
    }

    /// Structured content and no text block.
    #[tool]
    async fn structured(&self) -> CallToolResult {
        let mut result = CallToolResult::success(vec![]);
        result.structured_content = Some(serde_json::json!({"answer": 42}));
        result
    }

    /// Always fails.
    #[tool]
    async fn fail(&self) -> Result<String, String> {
        Err("it failed on purpose; try echo".to_string())
    }

    /// A tool with a hand-written draft-07 schema.
    #[tool(input_schema = odd_schema())]
    async fn odd_schema(&self) -> String {
        "ok".to_string()
    }

    /// Shares a sanitised name with `dotted_name`.
    #[tool(name = "dotted.name")]
    async fn dotted_dot(&self) -> String {
        "dot".to_string()
    }

    /// Shares a sanitised name with `dotted.name`.
    #[tool(name = "dotted_name")]
    async fn dotted_underscore(&self) -> String {
        "underscore".to_string()
    }

    /// A tool whose name is longer than providers accept.
    #[tool(name = "a_tool_whose_name_is_much_longer_than_the_sixty_four_bytes_providers_accept")]
    async fn long_name(&self) -> String {
        "long".to_string()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("fixture_server", "0.0.0"))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.tool_router.list_all();
        let Some(size) = self.page_size else {
            return Ok(ListToolsResult::with_all_items(tools));
        };
        let start: usize = request
            .and_then(|r| r.cursor)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let end = (start + size).min(tools.len());
        let mut page = ListToolsResult::with_all_items(tools[start.min(end)..end].to_vec());
        page.next_cursor = (end < tools.len()).then(|| end.to_string());
        Ok(page)
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--fail-start") {
        eprintln!("fixture_server: refusing to start (--fail-start)");
        std::process::exit(2);
    }
    if args.iter().any(|a| a == "--hang") {
        // Keep stdin open and never answer.
        tokio::time::sleep(Duration::from_secs(3600)).await;
        return;
    }
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
    };
    let page_size = value("--page-size").and_then(|n| n.parse().ok());
    let mut pids = vec![std::process::id()];
    // Never waited for: they are meant to outlive this server unless its
    // owner kills its tree.
    let mut grandchildren = Vec::new();
    if args.iter().any(|a| a == "--grandchild") {
        grandchildren.push(start_grandchild("sleep", &["1000"]));
    }
    if args.iter().any(|a| a == "--setsid-grandchild") {
        grandchildren.push(start_grandchild("setsid", &["sleep", "1000"]));
    }
    pids.extend(grandchildren.iter().map(std::process::Child::id));
    if let Some(path) = value("--pid-file")
        && let Err(e) = std::fs::write(path, pid_list(&pids))
    {
        eprintln!("fixture_server: cannot write {path}: {e}");
        std::process::exit(1);
    }
    match Fixture::new(page_size, pids)
        .serve(rmcp::transport::stdio())
        .await
    {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(e) => {
            eprintln!("fixture_server: {e}");
            std::process::exit(1);
        }
    }
}

fn pid_list(pids: &[u32]) -> String {
    pids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Starts `program` with its output away from the MCP pipes.
fn start_grandchild(program: &str, args: &[&str]) -> std::process::Child {
    match std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(child) => child,
        Err(e) => {
            eprintln!("fixture_server: cannot start {program}: {e}");
            std::process::exit(1);
        }
    }
}
