//! One set of server flags and one serve entry, so every server binary's
//! `main` is a few lines.
//!
//! Stdout belongs to the protocol on stdio: logs go to stderr only, through
//! `tracing`, filtered by `NANOHERMES_LOG` (default `warn`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, FromArgMatches, Parser};
use rmcp::ServerHandler;
use rmcp::service::{RoleServer, Service, ServiceExt};

use crate::clamp::DEFAULT_MAX_OUTPUT;
use crate::workspace::Workspace;

/// The flags every tool server takes. Flatten it into a server's own
/// `clap::Parser` when the server has flags of its own.
#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Workspace root the server is confined to.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
    /// Where and how to serve streamable HTTP instead of stdio.
    #[command(flatten)]
    pub http: HttpArgs,
    /// Largest tool result, in bytes; longer output is clamped with a note.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_OUTPUT)]
    pub max_output: usize,
    /// Print the server's tools/list as JSON and exit.
    #[arg(long)]
    pub print_schema: bool,
}

/// The streamable HTTP flags, shared by every server that can serve HTTP
/// (the tool servers and `nanohermes serve`), so the rule for what an
/// address may be and what a request must carry is typed once.
#[derive(Args, Debug, Clone, Default)]
pub struct HttpArgs {
    /// Serve MCP over streamable HTTP at http://ADDR/mcp instead of stdio.
    /// ADDR must be loopback (127.0.0.1:PORT, [::1]:PORT) unless
    /// --allow-remote is given.
    #[arg(long = "http", value_name = "ADDR")]
    pub addr: Option<SocketAddr>,
    /// Let --http bind a non-loopback address (0.0.0.0, a LAN IP). Requires
    /// --auth-token-env.
    #[arg(long, requires = "addr")]
    pub allow_remote: bool,
    /// Require `Authorization: Bearer TOKEN` on every HTTP request, the token
    /// read from the environment variable VAR (never from the command line).
    #[arg(long, value_name = "VAR", requires = "addr")]
    pub auth_token_env: Option<String>,
    /// Also accept HTTP requests whose Host is HOST (name or IP, optional
    /// :PORT). Repeatable.
    #[arg(long, value_name = "HOST", requires = "addr")]
    pub allow_host: Vec<String>,
    /// Also accept HTTP requests whose Origin is ORIGIN
    /// (scheme://host[:port], or null). Repeatable.
    #[arg(long, value_name = "ORIGIN", requires = "addr")]
    pub allow_origin: Vec<String>,
}

impl HttpArgs {
    /// The checked request policy for `--http ADDR`, or `None` for stdio.
    /// An error is one line for the user (a remote bind without a token,
    /// a bad Host or Origin).
    pub fn policy(&self) -> Result<Option<(SocketAddr, crate::http::Policy)>, String> {
        let Some(addr) = self.addr else {
            return Ok(None);
        };
        let flags = crate::http::Flags {
            addr,
            allow_remote: self.allow_remote,
            auth_token_env: self.auth_token_env.as_deref(),
            allow_host: &self.allow_host,
            allow_origin: &self.allow_origin,
        };
        crate::http::Policy::from_args(flags, |var| std::env::var_os(var))
            .map(|policy| Some((addr, policy)))
    }
}

/// What a tool server needs from its flags: where it may act and how much
/// it may say.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The root every path is confined to.
    pub workspace: Workspace,
    /// Cap on a tool result, in bytes.
    pub max_output: usize,
}

impl ToolContext {
    /// A context rooted at `root` with the default output cap.
    pub fn new(root: impl AsRef<std::path::Path>) -> std::io::Result<Self> {
        Ok(Self {
            workspace: Workspace::new(root)?,
            max_output: DEFAULT_MAX_OUTPUT,
        })
    }
}

impl ServeArgs {
    /// Opens the workspace the flags name.
    pub fn context(&self) -> anyhow::Result<ToolContext> {
        let workspace = Workspace::new(&self.root).map_err(|e| {
            anyhow::anyhow!("cannot open workspace root {}: {e}", self.root.display())
        })?;
        Ok(ToolContext {
            workspace,
            max_output: self.max_output,
        })
    }
}

#[derive(Parser)]
struct PlainCli {
    #[command(flatten)]
    serve: ServeArgs,
}

/// The whole `main` of a server with no flags beyond [`ServeArgs`]: parses
/// the command line, builds the handler and serves it.
pub fn main<S>(
    name: &'static str,
    about: &'static str,
    make: impl FnOnce(ToolContext) -> anyhow::Result<S>,
) -> ExitCode
where
    S: ServerHandler + Service<RoleServer> + Clone + Send + Sync + 'static,
{
    let command = PlainCli::command()
        .name(name)
        .about(about)
        .version(env!("CARGO_PKG_VERSION"));
    let cli = match PlainCli::from_arg_matches(&command.get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let handler = match cli.serve.context().and_then(make) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("{name}: {e:#}");
            return ExitCode::from(2);
        }
    };
    run(name, &cli.serve, handler)
}

/// Serves `handler` as the flags say: prints the schema, or serves stdio
/// (default) or streamable HTTP. Returns the process exit code: 2 for a
/// startup error (bad HTTP flags, a port that cannot be bound), 1 when
/// serving fails later.
pub fn run<S>(name: &'static str, args: &ServeArgs, handler: S) -> ExitCode
where
    S: ServerHandler + Service<RoleServer> + Clone + Send + Sync + 'static,
{
    init_logging();
    let http = match args.http.policy() {
        Ok(http) if !args.print_schema => http,
        Ok(_) => None,
        Err(e) => {
            eprintln!("{name}: {e}");
            return ExitCode::from(2);
        }
    };
    // One thread is enough for a tool server and keeps calls cheap
    // (notes/rmcp-3.11.md §4: current-thread halves the per-call latency);
    // blocking work goes to tokio's blocking pool.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("{name}: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        if args.print_schema {
            print_schema(name, handler).await.map_err(Failure::Serving)
        } else if let Some((addr, policy)) = http {
            let listener = bind(addr).await.map_err(Failure::Startup)?;
            serve_http(name, listener, policy, handler)
                .await
                .map_err(Failure::Serving)
        } else {
            serve_stdio(handler).await.map_err(Failure::Serving)
        }
    });
    // Blocking tasks (a stuck read, say) must not hold the exit back.
    runtime.shutdown_background();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Startup(e)) => {
            eprintln!("{name}: {e}");
            ExitCode::from(2)
        }
        Err(Failure::Serving(e)) => {
            eprintln!("{name}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

enum Failure {
    /// Before serving: the flags or the port; exit code 2.
    Startup(String),
    /// While serving; exit code 1.
    Serving(anyhow::Error),
}

/// Binds `addr` for [`serve_http`]; the error says what to do.
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, String> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}; pick another port (or port 0 for any)"))
}

async fn print_schema<S>(name: &str, handler: S) -> anyhow::Result<()>
where
    S: ServerHandler + Service<RoleServer>,
{
    use std::io::Write;
    // Same document as the committed schemas/NAME.json, which is keyed by
    // the short name.
    let short = name.strip_prefix("nanohermes-").unwrap_or(name);
    let document = crate::schema::tools_document(short, handler).await?;
    std::io::stdout().write_all(crate::schema::render(&document).as_bytes())?;
    Ok(())
}

/// Serves `handler` on this process's stdin and stdout until the client
/// closes them.
pub async fn serve_stdio<S>(handler: S) -> anyhow::Result<()>
where
    S: ServerHandler + Service<RoleServer>,
{
    // Standard schemas on every transport (crate::schema).
    let running = crate::schema::Standard(handler)
        .serve(rmcp::transport::stdio_pipes())
        .await?;
    running.waiting().await?;
    Ok(())
}

/// Serves `handler` at `http://ADDR/mcp` on `listener` until Ctrl-C,
/// every request passing `policy` first (Host, Origin, bearer token). The
/// first stderr line names the address, for scripts and tests. Works on
/// any tokio runtime.
pub async fn serve_http<S>(
    name: &str,
    listener: tokio::net::TcpListener,
    policy: crate::http::Policy,
    handler: S,
) -> anyhow::Result<()>
where
    S: ServerHandler + Service<RoleServer> + Clone + Send + Sync + 'static,
{
    use std::io::Write;

    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    let ct = tokio_util::sync::CancellationToken::new();
    // Host and Origin are checked by `policy` in front of the service, the
    // one place that rule lives (crate::http); rmcp's own loopback-only
    // Host list would otherwise refuse the hosts --allow-host admits.
    // rmcp's Origin check is off by default and stays off.
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_cancellation_token(ct.child_token());
    let sessions = std::sync::Arc::new(LocalSessionManager::default());
    let service = StreamableHttpService::new(
        // Standard schemas on every transport (crate::schema).
        move || Ok(crate::schema::Standard(handler.clone())),
        sessions.clone(),
        config,
    );
    let needs_token = policy.requires_token();
    let router = policy.layer(crate::http::session::layer(
        axum::Router::new().nest_service("/mcp", service),
        sessions,
    ));
    let addr = listener.local_addr()?;
    tracing::info!(needs_token, "{name} serving MCP at http://{addr}/mcp");
    // The first stderr line; tests and scripts read the port from it. Not
    // eprintln!, which panics if the host has closed stderr.
    let _ = writeln!(
        std::io::stderr(),
        "{name}: serving MCP at http://{addr}/mcp"
    );
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            ct.cancel();
        })
        .await?;
    Ok(())
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter =
        EnvFilter::try_from_env("NANOHERMES_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // When the host has closed our stderr, tracing would report the
        // failed write with eprintln!, which panics and drops the request
        // being served; a log line is not worth that.
        .log_internal_errors(false)
        .try_init();
}
