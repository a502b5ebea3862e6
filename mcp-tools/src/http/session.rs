//! Ending a session with HTTP DELETE, answered the way the SDKs expect.
//!
//! rmcp answers a session DELETE with 202 Accepted, for a session it knows
//! and for one it does not. The official Python SDK treats anything but
//! 200 or 204 as a failure (`Session termination failed: 202` in every
//! host's log at disconnect), and the transport spec says a request naming
//! a session the server does not have gets 404. So, in front of rmcp:
//! - DELETE with an `Mcp-Session-Id` this server does not have: **404**;
//! - DELETE of a live session: rmcp closes it, and its 202 becomes **200**
//!   (what the Python SDK's own server answers);
//! - everything else (no session id: rmcp's 400; stateless mode: rmcp's
//!   405 with `Allow`) passes unchanged.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

/// The session header, as rmcp names it (header names ignore case).
const SESSION_ID: &str = "mcp-session-id";

/// `router` with session DELETEs answered as described above.
pub fn layer(router: axum::Router, sessions: Arc<LocalSessionManager>) -> axum::Router {
    router.layer(axum::middleware::from_fn_with_state(sessions, delete))
}

async fn delete(
    State(sessions): State<Arc<LocalSessionManager>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::DELETE {
        return next.run(request).await;
    }
    let Some(id) = request
        .headers()
        .get(SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(Arc::<str>::from)
    else {
        return next.run(request).await;
    };
    if !sessions.has_session(&id).await.unwrap_or(false) {
        return (
            StatusCode::NOT_FOUND,
            "no such session: it ended or never existed; initialize a new one\n",
        )
            .into_response();
    }
    let response = next.run(request).await;
    if response.status() == StatusCode::ACCEPTED {
        StatusCode::OK.into_response()
    } else {
        response
    }
}
