//! One authorization: discover, register (or use a pre-registered client or
//! a Client ID Metadata Document), send the user (or the probe's fetch) to
//! the authorization URL, take the code at the loopback listener, check
//! `state` and `iss`, exchange the code with the PKCE verifier, store the
//! tokens. rmcp's `AuthorizationSession` does each protocol step; this file
//! chooses the inputs and moves the browser.

use std::time::Duration;

use anyhow::{Context as _, bail};
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
};

use super::redirect::Listener;
use super::store::CredentialsFile;

/// The client name sent in dynamic registration.
pub const CLIENT_NAME: &str = "NanoHermes";

/// How a server's client is registered and which scopes are asked for,
/// from its `mcp_servers` entry.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OAuthSettings {
    /// A client registered with the authorization server beforehand
    /// (`oauth_client_id`); skips CIMD and dynamic registration.
    pub client_id: Option<String>,
    /// Its secret, read from `oauth_client_secret_env_var`.
    pub client_secret: Option<String>,
    /// The HTTPS URL of this client's metadata document
    /// (`oauth_client_metadata_url`), used as the client id when the
    /// authorization server supports CIMD.
    pub client_metadata_url: Option<String>,
    /// Scopes to ask for (`oauth_scopes`); empty: what the server's
    /// challenge or metadata names.
    pub scopes: Vec<String>,
    /// The loopback port of the redirect (`oauth_callback_port`); 0 picks one.
    pub callback_port: u16,
}

impl std::fmt::Debug for OAuthSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthSettings")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "[REDACTED]"),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("callback_port", &self.callback_port)
            .finish()
    }
}

/// Who opens the authorization URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Browser {
    /// Print it on stderr for the user to open (`nanohermes mcp login`).
    Print,
    /// GET it and follow the redirects to the loopback listener: an
    /// authorization server that approves at once (the conformance suite's)
    /// completes the login with no one there (`nanohermes mcp probe`).
    Fetch,
}

/// Everything needed to authorize against one server.
#[derive(Debug, Clone)]
pub struct Authorizer {
    /// The server's name in the config, for messages.
    pub name: String,
    /// The MCP endpoint (the protected resource).
    pub url: String,
    /// Registration and scopes.
    pub settings: OAuthSettings,
    /// Where the tokens go.
    pub store: CredentialsFile,
    /// Who opens the authorization URL.
    pub browser: Browser,
}

/// The error text for a server that needs a login the caller cannot run.
pub fn login_hint(name: &str) -> String {
    format!("server {name} needs authorization; run `nanohermes mcp login {name}`")
}

impl Authorizer {
    /// A manager for this server with its entry of the credentials file.
    pub async fn manager(&self) -> anyhow::Result<AuthorizationManager> {
        let mut manager = AuthorizationManager::new(self.url.as_str())
            .await
            .with_context(|| format!("{} is not a usable server URL", self.url))?;
        manager.set_credential_store(self.store.for_server(&self.url));
        Ok(manager)
    }

    /// Runs one authorization from the server's `WWW-Authenticate`
    /// `challenge` (None: discovery from the well-known paths alone) and
    /// stores the tokens. `more_scopes` are added to what is asked for (a
    /// step-up after a 403 `insufficient_scope`: the scopes held so far plus
    /// the challenged ones).
    pub async fn authorize(
        &self,
        challenge: Option<&str>,
        more_scopes: &[String],
    ) -> anyhow::Result<AuthorizationManager> {
        let mut manager = self.manager().await?;
        let metadata = match manager.resolve_metadata_from_challenge(challenge).await {
            Ok(resolution) => resolution.metadata,
            // A 2025-03-26 server: no resource metadata, and its root
            // document names an issuer with a path (legacy.rs).
            Err(error @ AuthError::AuthorizationServerMismatch { .. })
                if !challenge.is_some_and(|c| c.contains("resource_metadata")) =>
            {
                match super::legacy::root_metadata(&self.url).await {
                    Ok(Some(metadata)) => metadata,
                    _ => {
                        return Err(error).with_context(|| {
                            format!("cannot find the authorization server of {}", self.name)
                        });
                    }
                }
            }
            Err(error) => {
                return Err(error).with_context(|| {
                    format!("cannot find the authorization server of {}", self.name)
                });
            }
        };
        manager.set_metadata(metadata);

        let listener = Listener::bind(self.settings.callback_port).await?;
        let mut request =
            AuthorizationRequest::new(listener.redirect_uri()).with_client_name(CLIENT_NAME);
        if let Some(challenge) = challenge {
            request = request.with_challenge(challenge);
        }
        if let Some(id) = &self.settings.client_id {
            request = request.with_preregistered_client(id);
            if let Some(secret) = &self.settings.client_secret {
                request = request.with_client_secret(secret);
            }
        }
        if let Some(url) = &self.settings.client_metadata_url {
            request = request.with_client_metadata_url(url);
        }
        let mut scopes: Vec<String> = self.settings.scopes.clone();
        for scope in more_scopes {
            if !scopes.contains(scope) {
                scopes.push(scope.clone());
            }
        }
        if !scopes.is_empty() {
            request = request.with_scopes(scopes);
        }
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, e)| e)
            .with_context(|| format!("cannot start authorizing with {}", self.name))?;

        let callback = self.open(session.get_authorization_url(), listener).await?;
        session
            .handle_callback_url(&callback)
            .await
            .with_context(|| format!("the authorization of {} failed", self.name))?;
        Ok(session.auth_manager)
    }

    /// Sends the browser to `url` and waits for it at the listener.
    async fn open(&self, url: &str, listener: Listener) -> anyhow::Result<String> {
        match self.browser {
            Browser::Print => {
                eprintln!(
                    "To authorize {}, open this URL in a browser:\n\n  {url}\n\nWaiting for the redirect to {} ...",
                    self.name,
                    listener.redirect_uri()
                );
                listener.callback().await
            }
            Browser::Fetch => {
                let callback = tokio::spawn(listener.callback());
                let fetched = fetch(url).await;
                // The fetch ends after the listener answered the redirect,
                // so the callback is there unless the server never sent us.
                match tokio::time::timeout(Duration::from_secs(5), callback).await {
                    Ok(Ok(result)) => result,
                    Ok(Err(e)) => Err(e.into()),
                    Err(_) => match fetched {
                        Err(e) => Err(e),
                        Ok(status) => bail!(
                            "the authorization URL answered {status} without redirecting back; log in with `nanohermes mcp login {}`",
                            self.name
                        ),
                    },
                }
            }
        }
    }
}

/// The probe's browser: GET, following redirects.
async fn fetch(url: &str) -> anyhow::Result<reqwest::StatusCode> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::limited(10))
        .build()?;
    let response = client
        .get(url)
        .send()
        .await
        .context("cannot fetch the authorization URL")?;
    Ok(response.status())
}

/// The `WWW-Authenticate` challenge a server answers an unauthenticated
/// request with (None when it does not refuse, or gives none), for
/// `nanohermes mcp login`.
pub async fn challenge_of(url: &str) -> anyhow::Result<Option<String>> {
    let body = serde_json::json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "nanohermes", "version": env!("CARGO_PKG_VERSION")}
        }
    });
    let response = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .with_context(|| format!("cannot reach {url}"))?;
    let refused = matches!(response.status().as_u16(), 401 | 403);
    Ok(response
        .headers()
        .get(reqwest::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .filter(|_| refused)
        .map(str::to_owned))
}
