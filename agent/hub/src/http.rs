//! The Streamable HTTP leg of a connection: rmcp's client over our reqwest
//! (rustls, no redirects, so no other host gets the token), with the
//! configured headers on every request, and either a static bearer token
//! (`bearer_token_env_var`) or OAuth ([`crate::auth`]): the stored tokens,
//! refreshed as needed; with none, or refused, the connection fails with
//! "run `nanohermes mcp login NAME`" (the probe authorizes by itself).
//! Either client goes inside [`StreamFirst`]: a legacy session's standalone
//! GET stream is open before the requests after the handshake go out.

use std::collections::HashMap;

use anyhow::Context as _;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt as _};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClientTransport, StreamableHttpClientTransportConfig,
};

use super::connect::HttpTarget;
use super::connection::Client;
use super::handler::Notified;
use super::stream_first::StreamFirst;
use crate::auth::login::login_hint;
use crate::auth::transport::OAuthHttp;

/// Connects to `target` and completes the `mode` handshake.
pub(crate) async fn serve(
    target: &HttpTarget,
    handler: Notified,
    mode: ClientLifecycleMode,
) -> anyhow::Result<Client> {
    let (client, config) = parts(target)?;
    let connected = match &target.oauth {
        None => {
            let transport =
                StreamableHttpClientTransport::with_client(StreamFirst::new(client), config);
            handler.serve_with_lifecycle(transport, mode).await
        }
        Some(authorizer) => {
            let oauth = OAuthHttp::new(client, authorizer.clone(), target.may_authorize).await?;
            let transport =
                StreamableHttpClientTransport::with_client(StreamFirst::new(oauth), config);
            match handler.serve_with_lifecycle(transport, mode).await {
                // No token, or one the server refused and the refresh could
                // not replace: the user has to log in.
                Err(e) if e.auth_challenge().is_some() && !target.may_authorize => {
                    anyhow::bail!(login_hint(&authorizer.name))
                }
                other => other,
            }
        }
    };
    connected.with_context(|| format!("cannot connect to {}", target.url))
}

fn parts(
    target: &HttpTarget,
) -> anyhow::Result<(reqwest::Client, StreamableHttpClientTransportConfig)> {
    use reqwest::header::{HeaderName, HeaderValue};
    let mut headers = HashMap::new();
    for (name, value) in &target.headers {
        let header = HeaderName::from_bytes(name.as_bytes())
            .with_context(|| format!("{name:?} is not a valid HTTP header name"))?;
        let value = HeaderValue::from_str(value)
            .with_context(|| format!("the value of header {name} is not valid in HTTP"))?;
        headers.insert(header, value);
    }
    let client = reqwest::Client::builder()
        // No redirect to another host may carry the token away.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .context("cannot build the HTTP client")?;
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(target.url.clone()).custom_headers(headers);
    if let Some(token) = &target.bearer {
        config = config.auth_header(token.clone());
    }
    Ok((client, config))
}
