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
//!   find the processes there);
//! - `--resources`: also offer resources (`fixture://readme`, a text;
//!   `fixture://logo.png`, a blob) and a prompt (`greet`, arguments `who`
//!   required and `style`);
//! - `--agent`: also offer `run_task` (an MCP agent, like `nanohermes
//!   serve`), answering with the task and its `NANOHERMES_AGENT_DEPTH`;
//! - `--instructions TEXT`: advertise TEXT as the server's instructions;
//! - `--many N`: also offer N generated tools with realistic names,
//!   descriptions and schemas (`jira_create_issue`, ...; `many.rs`);
//! - `--wait-for-file PATH`: wait until PATH exists before serving (a
//!   server still connecting when the first request goes out).
//! - `--ask`: also offer `ask`, which elicits in either era (ask.rs);
//! - `--http ADDR`: serve Streamable HTTP at `http://ADDR/mcp` through the
//!   kit's own serve path (loopback, Host/Origin checks) instead of stdio;
//!   the first stderr line names the address.
//!
//! `toggle_tool` adds or removes the tool `extra` and sends
//! `notifications/tools/list_changed` (the capability is always advertised);
//! `break_listing` makes every later `tools/list` fail, and sends it too.
//!
//! Tools: `echo`, `slow`, `progress` (sleeps, reporting progress or not),
//! `crash` (exits the process mid-call), `pid`,
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
    CallToolResult, ContentBlock, GetPromptRequestParams, GetPromptResponse, GetPromptResult,
    Implementation, JsonObject, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, Prompt, PromptArgument, PromptMessage,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, Role, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::Deserialize;

#[path = "fixture_server/agent.rs"]
mod agent;
#[path = "fixture_server/ask.rs"]
mod ask;
#[path = "fixture_server/many.rs"]
mod many;

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
struct ProgressArgs {
    /// How long to work, in milliseconds.
    total_ms: u64,
    /// Report progress this often, in milliseconds.
    every_ms: u64,
    /// Whether to send progress notifications at all.
    report: bool,
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
    /// Whether `extra` is listed (flipped by `toggle_tool`).
    extra_on: Arc<std::sync::atomic::AtomicBool>,
    /// Set by `break_listing`: `tools/list` fails from then on.
    listing_broken: Arc<std::sync::atomic::AtomicBool>,
    /// `--resources`: resources and prompts are offered.
    resources: bool,
    /// `--instructions`: what `get_info` advertises.
    instructions: Option<String>,
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
            tool_router: Self::tool_router() + Self::toggle_router(),
            page_size,
            pids: Arc::new(pids),
            extra_on: Arc::default(),
            listing_broken: Arc::default(),
            resources: false,
            instructions: None,
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

    /// Work for `total_ms`, sending a progress notification every
    /// `every_ms` when `report` is set.
    #[tool]
    async fn progress(
        &self,
        Parameters(args): Parameters<ProgressArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> String {
        let token = ctx.meta.get_progress_token();
        let steps = (args.total_ms / args.every_ms.max(1)).max(1);
        for step in 1..=steps {
            tokio::time::sleep(Duration::from_millis(args.every_ms)).await;
            if args.report
                && let Some(token) = &token
            {
                let _ = ctx
                    .peer
                    .notify_progress(
                        ProgressNotificationParam::new(token.clone(), step as f64)
                            .with_total(steps as f64),
                    )
                    .await;
            }
        }
        format!("worked {} ms", args.total_ms)
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
        let config = ServerConfig::new(self.capabilities())
            .with_server_info(Implementation::new("fixture_server", "0.0.0"));
        match &self.instructions {
            Some(text) => config.with_instructions(text.clone()),
            None => config,
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.visible_tools()?;
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

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(fixture_resources()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        read_fixture_resource(&request.uri).map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(fixture_prompts()))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        get_fixture_prompt(&request).map(Into::into)
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
    if let Some(path) = value("--wait-for-file") {
        while !std::path::Path::new(path).exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
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
    let era = value("--era").cloned().unwrap_or_default();
    let probe_log = value("--probe-log").cloned();
    let mut fixture =
        Fixture::new(page_size, pids).with_resources(args.iter().any(|a| a == "--resources"));
    if args.iter().any(|a| a == "--agent") {
        fixture.tool_router = fixture.tool_router.clone() + Fixture::agent_router();
    }
    if args.iter().any(|a| a == "--ask") {
        fixture.tool_router = fixture.tool_router.clone() + Fixture::ask_router();
    }
    fixture.instructions = value("--instructions").cloned();
    if let Some(n) = value("--many").and_then(|n| n.parse().ok()) {
        fixture.tool_router = fixture.tool_router.clone() + many::many_router(n);
    }
    if let Some(addr) = value("--http") {
        serve_http(addr, fixture).await;
        return;
    }
    let served = if era.is_empty() && probe_log.is_none() {
        fixture.serve(rmcp::transport::stdio()).await
    } else {
        fixture.serve(era_filter(era, probe_log)).await
    };
    match served {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        Err(e) => {
            eprintln!("fixture_server: {e}");
            std::process::exit(1);
        }
    }
}

/// `--http ADDR`: the kit's HTTP serving, loopback only.
async fn serve_http(addr: &str, fixture: Fixture) {
    let fail = |e: String| -> ! {
        eprintln!("fixture_server: {e}");
        std::process::exit(2)
    };
    let addr: std::net::SocketAddr = addr
        .parse()
        .unwrap_or_else(|e| fail(format!("--http {addr}: {e}")));
    let flags = mcp_tools::http::Flags {
        addr,
        allow_remote: false,
        auth_token_env: None,
        allow_host: &[],
        allow_origin: &[],
    };
    let policy = mcp_tools::http::Policy::from_args(flags, |_| None).unwrap_or_else(|e| fail(e));
    let listener = mcp_tools::serve::bind(addr)
        .await
        .unwrap_or_else(|e| fail(e));
    if let Err(e) = mcp_tools::serve::serve_http("fixture_server", listener, policy, fixture).await
    {
        fail(format!("{e:#}"));
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

// `toggle_tool`, `extra`, resources and prompts (tests/hub_refresh.rs).

#[tool_router(router = toggle_router)]
impl Fixture {
    /// Add the tool `extra` if it is not listed, remove it if it is, and
    /// send `notifications/tools/list_changed`.
    #[tool]
    async fn toggle_tool(&self, context: RequestContext<RoleServer>) -> String {
        let on = !self
            .extra_on
            .fetch_xor(true, std::sync::atomic::Ordering::SeqCst);
        if let Err(e) = context.peer.notify_tool_list_changed().await {
            return format!("toggled, but the notification failed: {e}");
        }
        if on { "extra added" } else { "extra removed" }.to_string()
    }

    /// Make every later `tools/list` fail, and send
    /// `notifications/tools/list_changed`.
    #[tool]
    async fn break_listing(&self, context: RequestContext<RoleServer>) -> String {
        self.listing_broken
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = context.peer.notify_tool_list_changed().await;
        "listing broken".to_string()
    }

    /// Listed only after `toggle_tool`.
    #[tool]
    async fn extra(&self) -> Result<String, String> {
        if self.extra_on.load(std::sync::atomic::Ordering::SeqCst) {
            Ok("extra ran".to_string())
        } else {
            Err("extra is not offered now".to_string())
        }
    }
}

impl Fixture {
    fn with_resources(mut self, on: bool) -> Self {
        self.resources = on;
        self
    }

    /// Tools, list_changed, and with `--resources` resources and prompts.
    fn capabilities(&self) -> ServerCapabilities {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        if self.resources {
            capabilities.resources = Some(Default::default());
            capabilities.prompts = Some(Default::default());
        }
        capabilities
    }

    /// Every tool, without `extra` unless it is toggled on; an error
    /// after `break_listing`.
    fn visible_tools(&self) -> Result<Vec<rmcp::model::Tool>, ErrorData> {
        if self
            .listing_broken
            .load(std::sync::atomic::Ordering::SeqCst)
        {
            return Err(ErrorData::internal_error(
                "listing is broken on purpose",
                None,
            ));
        }
        let extra_on = self.extra_on.load(std::sync::atomic::Ordering::SeqCst);
        Ok(self
            .tool_router
            .list_all()
            .into_iter()
            .filter(|tool| extra_on || tool.name != "extra")
            .collect())
    }
}

fn fixture_resources() -> Vec<Resource> {
    let mut readme = Resource::new("fixture://readme", "readme");
    readme.mime_type = Some("text/markdown".into());
    readme.description = Some("What the fixture is".into());
    let mut logo = Resource::new("fixture://logo.png", "logo");
    logo.mime_type = Some("image/png".into());
    vec![readme, logo]
}

fn read_fixture_resource(uri: &str) -> Result<ReadResourceResult, ErrorData> {
    match uri {
        "fixture://readme" => Ok(ReadResourceResult::new(vec![ResourceContents::text(
            "# Fixture\nA test server for the hub.",
            uri,
        )])),
        "fixture://logo.png" => Ok(ReadResourceResult::new(vec![
            ResourceContents::BlobResourceContents {
                uri: uri.to_string(),
                mime_type: Some("image/png".into()),
                blob: "aGVsbG8h".into(),
                meta: None,
            },
        ])),
        _ => Err(ErrorData::resource_not_found(
            format!("no resource {uri}"),
            None,
        )),
    }
}

fn fixture_prompts() -> Vec<Prompt> {
    let mut who = PromptArgument::new("who");
    who.description = Some("Whom to greet".into());
    who.required = Some(true);
    vec![Prompt::new(
        "greet",
        Some("Greets someone"),
        Some(vec![who, PromptArgument::new("style")]),
    )]
}

fn get_fixture_prompt(request: &GetPromptRequestParams) -> Result<GetPromptResult, ErrorData> {
    if request.name != "greet" {
        return Err(ErrorData::invalid_params(
            format!("no prompt {}", request.name),
            None,
        ));
    }
    let argument = |key: &str| {
        request
            .arguments
            .as_ref()
            .and_then(|a| a.get(key))
            .and_then(serde_json::Value::as_str)
            .map(str::to_string)
    };
    let Some(who) = argument("who") else {
        return Err(ErrorData::invalid_params("greet needs `who`", None));
    };
    let style = argument("style").unwrap_or_else(|| "plain".to_string());
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(
        Role::User,
        format!("Greet {who} in a {style} way"),
    )]))
}

/// Stdio with a filter in front of rmcp: every `initialize` is logged to
/// `probe_log` with the version it asks for; every `server/discover` is
/// logged to `probe_log`, then dropped (`legacy-silent`), answered with "method
/// not found" (`legacy-error`) or passed on (anything else).
fn era_filter(
    era: String,
    probe_log: Option<String>,
) -> (tokio::io::DuplexStream, tokio::io::DuplexStream) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let (rmcp_in, mut feed) = tokio::io::duplex(1 << 16);
    let (rmcp_out, from_rmcp) = tokio::io::duplex(1 << 16);
    let (lines, mut out) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = out.recv().await {
            if stdout.write_all(line.as_bytes()).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
    let forward = lines.clone();
    tokio::spawn(async move {
        let mut reader = tokio::io::BufReader::new(from_rmcp).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            if forward.send(format!("{line}\n")).is_err() {
                break;
            }
        }
    });
    tokio::spawn(async move {
        let mut reader = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = reader.next_line().await {
            let message: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
            if message["method"] == "initialize"
                && let Some(path) = &probe_log
            {
                use std::io::Write as _;
                if let Ok(mut file) = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                {
                    let version = message["params"]["protocolVersion"].as_str().unwrap_or("");
                    let _ = writeln!(file, "initialize {version}");
                }
            }
            if message["method"] == "server/discover" {
                if let Some(path) = &probe_log {
                    use std::io::Write as _;
                    if let Ok(mut file) = std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(path)
                    {
                        let _ = writeln!(file, "probe");
                    }
                }
                match era.as_str() {
                    "legacy-silent" => continue,
                    "legacy-error" => {
                        let answer = serde_json::json!({
                            "jsonrpc": "2.0",
                            "id": message["id"],
                            "error": {"code": -32601, "message": "Method not found: server/discover"}
                        });
                        let _ = lines.send(format!("{answer}\n"));
                        continue;
                    }
                    _ => {}
                }
            }
            if feed
                .write_all(format!("{line}\n").as_bytes())
                .await
                .is_err()
            {
                break;
            }
        }
        // EOF on stdin: rmcp sees EOF too and the server ends.
        let _ = feed.shutdown().await;
    });
    (rmcp_in, rmcp_out)
}
