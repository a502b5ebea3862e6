//! A real OAuth 2.1 authorization server and a protected MCP server on one
//! loopback port, for the login tests: protected-resource metadata (RFC
//! 9728), authorization-server metadata (RFC 8414), dynamic registration,
//! an authorization endpoint that approves at once (the "user" says yes)
//! and redirects with `code`, `state` and `iss`, a token endpoint that
//! checks the code, the redirect URI, the client and the PKCE S256
//! verifier, and refresh tokens. `/mcp` is the todo server, reachable only
//! with a live access token that carries the required scope; every other
//! request gets 401 with a `WWW-Authenticate` challenge. Each refresh
//! revokes the access token it replaces.
//!
//! [`OAuthServer::start_2025_03_26`] serves the 2025-03-26 shape instead: no
//! protected-resource metadata (the challenge names none), and the
//! authorization server's metadata at the root with the issuer
//! `BASE/oauth`, its endpoints under `/oauth/`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::{Form, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use serde_json::{Value, json};
use sha2::Digest as _;

/// The scope `/mcp` requires.
pub const SCOPE: &str = "mcp:tools";

struct Grant {
    client_id: String,
    redirect_uri: String,
    challenge: String,
    scope: String,
}

#[derive(Default)]
struct Inner {
    /// client id → its registered redirect URIs.
    clients: HashMap<String, Vec<String>>,
    codes: HashMap<String, Grant>,
    /// access token → scope.
    access: HashMap<String, String>,
    /// refresh token → (client id, scope).
    refresh: HashMap<String, (String, String)>,
    next: u64,
    /// What was refused, and why; the tests assert on it.
    refusals: Vec<String>,
    refreshes: usize,
    authorized_requests: usize,
    /// Every token ever issued, revoked ones too.
    issued: Vec<String>,
}

/// The running server.
#[derive(Clone)]
pub struct OAuthServer {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The authorization server's issuer: `base`, or `base/oauth` in the
    /// 2025-03-26 shape.
    pub issuer: String,
    /// The 2025-03-26 shape: no protected-resource metadata.
    legacy: bool,
    inner: Arc<Mutex<Inner>>,
}

impl OAuthServer {
    /// Binds a free loopback port and serves until the test's runtime ends.
    pub async fn start() -> OAuthServer {
        OAuthServer::start_shaped(false).await
    }

    /// [`OAuthServer::start`] in the 2025-03-26 shape (module docs).
    pub async fn start_2025_03_26() -> OAuthServer {
        OAuthServer::start_shaped(true).await
    }

    async fn start_shaped(legacy: bool) -> OAuthServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let prefix = if legacy { "/oauth" } else { "" };
        let server = OAuthServer {
            issuer: format!("{base}{prefix}"),
            base,
            legacy,
            inner: Arc::new(Mutex::new(Inner::default())),
        };
        let mcp = rmcp::transport::streamable_http_server::StreamableHttpService::new(
            || {
                Ok(nanohermes_todo::TodoServer::new(
                    nanohermes_todo::Store::in_memory(),
                ))
            },
            rmcp::transport::streamable_http_server::session::local::LocalSessionManager::default()
                .into(),
            rmcp::transport::streamable_http_server::StreamableHttpServerConfig::default()
                .disable_allowed_hosts(),
        );
        let protected =
            Router::new()
                .nest_service("/mcp", mcp)
                .layer(middleware::from_fn_with_state(
                    server.clone(),
                    require_token,
                ));
        let mut app = Router::new()
            .route(
                "/.well-known/oauth-authorization-server",
                get(server_metadata),
            )
            .route(&format!("{prefix}/register"), post(register))
            .route(&format!("{prefix}/authorize"), get(authorize))
            .route(&format!("{prefix}/token"), post(token));
        if !legacy {
            app = app.route(
                "/.well-known/oauth-protected-resource/mcp",
                get(resource_metadata),
            );
        }
        let app = app.with_state(server.clone()).merge(protected);
        tokio::spawn(async move { axum::serve(listener, app).await });
        server
    }

    /// The MCP endpoint.
    pub fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    /// Every refusal so far, with its reason.
    pub fn refusals(&self) -> Vec<String> {
        self.inner.lock().unwrap().refusals.clone()
    }

    /// How many refresh grants were honoured.
    pub fn refreshes(&self) -> usize {
        self.inner.lock().unwrap().refreshes
    }

    /// How many `/mcp` requests carried a valid token.
    pub fn authorized_requests(&self) -> usize {
        self.inner.lock().unwrap().authorized_requests
    }

    /// Every access and refresh token ever issued (to look for them in files).
    pub fn issued_tokens(&self) -> Vec<String> {
        self.inner.lock().unwrap().issued.clone()
    }

    fn refuse(&self, why: String) -> Response {
        self.inner.lock().unwrap().refusals.push(why.clone());
        (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": "invalid_request", "error_description": why})),
        )
            .into_response()
    }
}

fn fresh(inner: &mut Inner, kind: &str) -> String {
    inner.next += 1;
    format!(
        "{kind}-{}-{:x}",
        inner.next,
        std::process::id() as u64 * 7919 + inner.next
    )
}

async fn require_token(State(s): State<OAuthServer>, request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let ok = {
        let mut inner = s.inner.lock().unwrap();
        let ok = token
            .as_ref()
            .and_then(|t| inner.access.get(t))
            .is_some_and(|scope| scope.split(' ').any(|x| x == SCOPE));
        if ok {
            inner.authorized_requests += 1;
        }
        ok
    };
    if ok {
        return next.run(request).await;
    }
    let challenge = if s.legacy {
        format!("Bearer scope=\"{SCOPE}\"")
    } else {
        format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", scope=\"{SCOPE}\"",
            s.base
        )
    };
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, challenge)],
    )
        .into_response()
}

async fn resource_metadata(State(s): State<OAuthServer>) -> axum::Json<Value> {
    axum::Json(json!({
        "resource": s.mcp_url(),
        "authorization_servers": [s.base],
        "scopes_supported": [SCOPE],
    }))
}

async fn server_metadata(State(s): State<OAuthServer>) -> axum::Json<Value> {
    axum::Json(json!({
        "issuer": s.issuer,
        "authorization_endpoint": format!("{}/authorize", s.issuer),
        "token_endpoint": format!("{}/token", s.issuer),
        "registration_endpoint": format!("{}/register", s.issuer),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
        "authorization_response_iss_parameter_supported": true,
        "scopes_supported": [SCOPE],
    }))
}

async fn register(State(s): State<OAuthServer>, axum::Json(body): axum::Json<Value>) -> Response {
    let uris: Vec<String> = body["redirect_uris"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|u| u.as_str().map(str::to_owned))
        .collect();
    if uris.is_empty() || !uris.iter().all(|u| u.starts_with("http://127.0.0.1:")) {
        return s.refuse(format!("register: redirect_uris {uris:?} are not loopback"));
    }
    let mut inner = s.inner.lock().unwrap();
    let id = fresh(&mut inner, "client");
    inner.clients.insert(id.clone(), uris.clone());
    (
        StatusCode::CREATED,
        axum::Json(
            json!({"client_id": id, "redirect_uris": uris, "token_endpoint_auth_method": "none"}),
        ),
    )
        .into_response()
}

async fn authorize(
    State(s): State<OAuthServer>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let get = |k: &str| q.get(k).cloned().unwrap_or_default();
    let (client_id, redirect_uri, state) = (get("client_id"), get("redirect_uri"), get("state"));
    let registered = s
        .inner
        .lock()
        .unwrap()
        .clients
        .get(&client_id)
        .is_some_and(|uris| uris.contains(&redirect_uri));
    if !registered {
        return s.refuse(format!(
            "authorize: {client_id} did not register {redirect_uri}"
        ));
    }
    if get("response_type") != "code"
        || get("code_challenge_method") != "S256"
        || get("code_challenge").is_empty()
    {
        return s.refuse("authorize: no PKCE S256 challenge".into());
    }
    if get("resource") != s.mcp_url() {
        return s.refuse(format!("authorize: resource {:?}", get("resource")));
    }
    if !get("scope").split(' ').any(|x| x == SCOPE) {
        return s.refuse(format!("authorize: scope {:?} lacks {SCOPE}", get("scope")));
    }
    let code = {
        let mut inner = s.inner.lock().unwrap();
        let code = fresh(&mut inner, "code");
        inner.codes.insert(
            code.clone(),
            Grant {
                client_id,
                redirect_uri: redirect_uri.clone(),
                challenge: get("code_challenge"),
                scope: get("scope"),
            },
        );
        code
    };
    let mut to = url::Url::parse(&redirect_uri).unwrap();
    to.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &state)
        .append_pair("iss", &s.issuer);
    Redirect::to(to.as_str()).into_response()
}

async fn token(
    State(s): State<OAuthServer>,
    _headers: HeaderMap,
    Form(f): Form<HashMap<String, String>>,
) -> Response {
    let get = |k: &str| f.get(k).cloned().unwrap_or_default();
    let mut inner = s.inner.lock().unwrap();
    let (client_id, scope) = match get("grant_type").as_str() {
        "authorization_code" => {
            let Some(grant) = inner.codes.remove(&get("code")) else {
                drop(inner);
                return s.refuse("token: unknown or reused code".into());
            };
            let digest = sha2::Sha256::digest(get("code_verifier").as_bytes());
            let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest);
            let why = if challenge != grant.challenge {
                Some("token: code_verifier does not match the challenge")
            } else if get("redirect_uri") != grant.redirect_uri {
                Some("token: redirect_uri differs from the authorization's")
            } else if get("client_id") != grant.client_id {
                Some("token: client_id differs from the authorization's")
            } else {
                None
            };
            if let Some(why) = why {
                drop(inner);
                return s.refuse(why.into());
            }
            (grant.client_id, grant.scope)
        }
        "refresh_token" => {
            let Some((client_id, scope)) = inner.refresh.remove(&get("refresh_token")) else {
                drop(inner);
                return s.refuse("token: unknown refresh token".into());
            };
            // The access tokens of this client die with the refresh.
            inner.access.retain(|_, _| false);
            inner.refreshes += 1;
            (client_id, scope)
        }
        other => {
            let other = other.to_owned();
            drop(inner);
            return s.refuse(format!("token: grant_type {other:?}"));
        }
    };
    let access = fresh(&mut inner, "at");
    let refresh = fresh(&mut inner, "rt");
    inner.issued.extend([access.clone(), refresh.clone()]);
    inner.access.insert(access.clone(), scope.clone());
    inner
        .refresh
        .insert(refresh.clone(), (client_id, scope.clone()));
    axum::Json(json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": 3600,
        "refresh_token": refresh,
        "scope": scope,
    }))
    .into_response()
}
