//! `nanohermes serve --http` over the PostgreSQL store: the MCP endpoint
//! as every HTTP server of the kit serves it, plus what an orchestrator
//! needs of a replica:
//! - `GET /health`: 200 while the process serves;
//! - `GET /ready`: 200 only while the store answers (else 503), so a load
//!   balancer sends no task to a replica that cannot keep it;
//! - SIGTERM (or Ctrl-C): no more takeovers, each running task stops at
//!   its next step boundary and gives its lease back within the drain
//!   time, so another replica continues it; then the server stops.
//!
//! The probes sit outside the Host/Origin/token checks: a load balancer
//! probes without a token, and they reveal nothing but liveness.

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use axum::routing::get;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::Replicas;
use crate::serve::AgentServer;

/// Serves `server` on `listener` until SIGTERM or Ctrl-C, then drains.
pub async fn serve(
    name: &str,
    listener: tokio::net::TcpListener,
    policy: mcp_tools::http::Policy,
    server: AgentServer,
    replicas: &Arc<Replicas>,
    drain: Duration,
) -> anyhow::Result<()> {
    use std::io::Write as _;
    let ct = tokio_util::sync::CancellationToken::new();
    // As mcp_tools::serve::serve_http: the policy checks Host and Origin.
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .with_cancellation_token(ct.child_token());
    let sessions = Arc::new(LocalSessionManager::default());
    let service = StreamableHttpService::new(
        move || Ok(mcp_tools::schema::Standard(server.clone())),
        sessions.clone(),
        config,
    );
    let mcp = policy.layer(mcp_tools::http::session::layer(
        axum::Router::new().nest_service("/mcp", service),
        sessions,
    ));
    let pg = replicas.pg().clone();
    let probes = axum::Router::new()
        .route("/health", get(|| async { "ok\n" }))
        .route(
            "/ready",
            get(move || {
                let pg = pg.clone();
                async move {
                    match tokio::time::timeout(Duration::from_secs(2), pg.ping()).await {
                        Ok(Ok(())) => (StatusCode::OK, "ready\n".to_owned()),
                        Ok(Err(e)) => (StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n")),
                        Err(_) => (
                            StatusCode::SERVICE_UNAVAILABLE,
                            "the store did not answer within 2 s\n".to_owned(),
                        ),
                    }
                }
            }),
        );
    let router = probes.merge(mcp);
    let addr = listener.local_addr()?;
    let _ = writeln!(
        std::io::stderr(),
        "{name}: serving MCP at http://{addr}/mcp"
    );
    let replicas = replicas.clone();
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            let terminated = async {
                match &mut term {
                    Some(term) => {
                        term.recv().await;
                    }
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                () = terminated => {}
            }
            replicas.stop(drain).await;
            // Open response streams would hold a graceful shutdown
            // forever; the leases are given back, so a few seconds is
            // all they get.
            std::thread::spawn(|| {
                std::thread::sleep(Duration::from_secs(5));
                mcp_tools::spawn::kill_all_spawned();
                std::process::exit(0);
            });
            ct.cancel();
        })
        .await?;
    Ok(())
}
