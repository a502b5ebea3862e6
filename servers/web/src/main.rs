//! `nanohermes-web`: the web MCP server over stdio or streamable HTTP.

use std::process::ExitCode;

use clap::Parser;
use nanohermes_web::{AllowedHost, FetchConfig, WebServer};

/// MCP server: fetch http(s) URLs as readable text.
#[derive(Parser)]
#[command(name = "nanohermes-web", version)]
struct Cli {
    #[command(flatten)]
    serve: mcp_tools::ServeArgs,
    /// Let web_fetch reach loopback, private, link-local and other
    /// non-public addresses (an intranet, a local dev server).
    #[arg(long)]
    allow_private_network: bool,
    /// Let web_fetch reach this one non-public host, on PORT only if given
    /// (e.g. `localhost:8080`, `10.0.0.5`, `[fd00::1]:443`). Repeatable.
    /// (`--allow-host` is the HTTP transport's Host check, another thing.)
    #[arg(long, value_name = "HOST[:PORT]")]
    allow_fetch_host: Vec<AllowedHost>,
    /// Fetch only the domains of --allow-fetch-domain (none given: nothing).
    #[arg(long)]
    fetch_allowlist: bool,
    /// A domain web_fetch may reach with --fetch-allowlist (`docs.rs`, or
    /// `*.rust-lang.org` for the names below it). Repeatable.
    #[arg(long, value_name = "DOMAIN", requires = "fetch_allowlist")]
    allow_fetch_domain: Vec<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let allowed_domains = match cli
        .fetch_allowlist
        .then(|| mcp_tools::net::DomainList::parse(&cli.allow_fetch_domain))
        .transpose()
    {
        Ok(list) => list,
        Err(e) => {
            eprintln!("nanohermes-web: --allow-fetch-domain: {e}");
            return ExitCode::from(2);
        }
    };
    let config = FetchConfig {
        allow_private_network: cli.allow_private_network,
        allowed_hosts: cli.allow_fetch_host,
        allowed_domains,
        ..FetchConfig::default()
    };
    let server = cli
        .serve
        .context()
        .and_then(|ctx| Ok(WebServer::with_config(ctx, config)?));
    match server {
        Ok(server) => mcp_tools::serve::run("nanohermes-web", &cli.serve, server),
        Err(e) => {
            eprintln!("nanohermes-web: {e:#}");
            ExitCode::from(2)
        }
    }
}
