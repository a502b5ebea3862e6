//! The HTTP client of an OAuth-protected connection: rmcp's [`AuthClient`]
//! (the stored token on every request; a refresh when it is about to
//! expire or the server rejects it) inside [`OAuthHttp`], which decides
//! what a 401 or a 403 `insufficient_scope` that survived the refresh
//! means: with an [`Authorizer`] it runs a new authorization (a step-up
//! asks for the scopes held plus the challenged ones) and sends the request
//! again; without one it fails with the text that says to run
//! `nanohermes mcp login NAME`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{AuthClient, AuthError, OAuthClientConfig};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse};
use tokio::sync::Mutex;

use super::login::{Authorizer, login_hint};

/// How many authorizations one connection runs before it gives up (a
/// server that keeps refusing every token it gets).
pub const MAX_AUTHORIZATIONS: u32 = 3;

type Error = StreamableHttpError<reqwest::Error>;

/// See the module documentation. Cheap to clone: clones share the token,
/// the lock and the count.
#[derive(Clone)]
pub struct OAuthHttp {
    inner: AuthClient<reqwest::Client>,
    authorizer: Arc<Authorizer>,
    /// Whether this connection may authorize by itself (the probe) or must
    /// send the user to `nanohermes mcp login`.
    may_authorize: bool,
    /// Held while an authorization runs; counts them.
    flow: Arc<Mutex<u32>>,
    generation: Arc<AtomicU32>,
}

impl OAuthHttp {
    /// The client for `authorizer`'s server, with the stored credentials
    /// when there are any (that looks up the authorization server, for
    /// refreshes). `may_authorize`: run a new authorization on a 401/403.
    pub async fn new(
        http: reqwest::Client,
        authorizer: Authorizer,
        may_authorize: bool,
    ) -> anyhow::Result<OAuthHttp> {
        let mut manager = authorizer.manager().await?;
        if authorizer.store.has_token(&authorizer.url).await {
            // A failure here (the authorization server is down) leaves the
            // token usable until it needs a refresh.
            match manager.initialize_from_store().await {
                Ok(true) => {
                    if let (Some(id), Some(secret)) = (
                        &authorizer.settings.client_id,
                        &authorizer.settings.client_secret,
                    ) {
                        manager.configure_client(
                            OAuthClientConfig::new(id.clone(), "http://127.0.0.1/callback")
                                .with_client_secret(secret.clone()),
                        )?;
                    }
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(server = %authorizer.name, "cannot prepare token refresh: {e}")
                }
            }
        }
        Ok(OAuthHttp {
            inner: AuthClient::new(http, manager),
            authorizer: Arc::new(authorizer),
            may_authorize,
            flow: Arc::new(Mutex::new(0)),
            generation: Arc::new(AtomicU32::new(0)),
        })
    }

    /// Runs `call`; on a refusal that the refresh did not cure, authorizes
    /// (once per refusal, at most [`MAX_AUTHORIZATIONS`] per connection)
    /// and runs it again.
    async fn with_authorization<T, F, Fut>(&self, call: F) -> Result<T, Error>
    where
        F: Fn(AuthClient<reqwest::Client>) -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        let seen = self.generation.load(Ordering::SeqCst);
        let (challenge, step_up) = match call(self.inner.clone()).await {
            Err(StreamableHttpError::AuthRequired(e)) => (e.www_authenticate_header, false),
            Err(StreamableHttpError::InsufficientScope(e)) => (e.www_authenticate_header, true),
            other => return other,
        };
        if !self.may_authorize {
            return Err(StreamableHttpError::Auth(AuthError::InternalError(
                login_hint(&self.authorizer.name),
            )));
        }
        let mut count = self.flow.lock().await;
        // Another request authorized while this one waited: just retry.
        if self.generation.load(Ordering::SeqCst) == seen {
            if *count >= MAX_AUTHORIZATIONS {
                return Err(StreamableHttpError::Auth(AuthError::InternalError(
                    format!(
                        "server {} still refuses after {MAX_AUTHORIZATIONS} authorizations; check the account's permissions",
                        self.authorizer.name
                    ),
                )));
            }
            *count += 1;
            let held = if step_up {
                self.inner
                    .auth_manager
                    .lock()
                    .await
                    .get_current_scopes()
                    .await
            } else {
                Vec::new()
            };
            let mut wanted = held;
            if step_up {
                let base = url::Url::parse(&self.authorizer.url).ok();
                if let Some(base) = base {
                    let params =
                        rmcp::transport::auth::WWWAuthenticateParams::parse(&challenge, &base);
                    if let Some(scope) = params.scope {
                        wanted.extend(scope.split_whitespace().map(str::to_owned));
                    }
                }
            }
            let manager = self
                .authorizer
                .authorize(Some(&challenge), &wanted)
                .await
                .map_err(|e| {
                    StreamableHttpError::Auth(AuthError::AuthorizationFailed(format!("{e:#}")))
                })?;
            *self.inner.auth_manager.lock().await = manager;
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
        drop(count);
        call(self.inner.clone()).await
    }
}

/// `self.with_authorization` around the inner client's `METHOD(ARGS)`, the
/// arguments cloned for each attempt (a refusal runs the call again).
macro_rules! authorized {
    ($self:ident.$method:ident($($arg:ident),* $(,)?)) => {
        $self
            .with_authorization(|c| {
                $(let $arg = $arg.clone();)*
                async move { c.$method($($arg),*).await }
            })
            .await
    };
}

impl StreamableHttpClient for OAuthHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        authorized!(self.post_message(uri, message, session_id, auth_token, custom_headers))
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        authorized!(self.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            max_sse_event_size,
        ))
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        authorized!(self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_token,
            custom_headers,
            limits,
        ))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        // Closing a session is not worth a new login.
        self.inner
            .delete_session(uri, session_id, auth_token, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        authorized!(self.get_stream(uri, session_id, last_event_id, auth_token, custom_headers))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_token: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        authorized!(self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_token,
            custom_headers,
            max_sse_event_size,
        ))
    }
}
