//! Discovery for a server written to the 2025-03-26 authorization spec: no
//! protected-resource metadata (RFC 9728), and the authorization server's
//! metadata at the root of the MCP server's own origin
//! (`/.well-known/oauth-authorization-server`), whose `issuer` may carry a
//! path (`https://host/oauth`).
//!
//! rmcp finds that document, then refuses it: by RFC 8414 an issuer with a
//! path publishes its metadata under that path, so the root document's
//! issuer "mismatches". Under 2025-03-26 the MCP server's origin *is* the
//! authorization base URL, so the server vouches for that document; this
//! fallback accepts it, and only when (1) the server advertises no
//! protected-resource metadata anywhere (a server that does has named its
//! authorization server, and a mismatch there is the mix-up RFC 8414 §3.3
//! guards against), and (2) the issuer is on the server's own origin.

use anyhow::Context as _;
use rmcp::transport::auth::AuthorizationMetadata;

/// The metadata a 2025-03-26 server publishes at its origin's root, when
/// the two conditions in the module docs hold; `None` when they do not
/// (the caller keeps rmcp's error).
pub(crate) async fn root_metadata(
    server_url: &str,
) -> anyhow::Result<Option<AuthorizationMetadata>> {
    let url =
        reqwest::Url::parse(server_url).with_context(|| format!("{server_url} is not a URL"))?;
    let origin = url.origin().ascii_serialization();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let path = url.path().trim_end_matches('/');
    let resource_documents = [
        format!("{origin}/.well-known/oauth-protected-resource{path}"),
        format!("{origin}/.well-known/oauth-protected-resource"),
    ];
    for document in resource_documents {
        let found = client.get(&document).send().await;
        if found.is_ok_and(|response| response.status().is_success()) {
            return Ok(None);
        }
    }
    let response = client
        .get(format!("{origin}/.well-known/oauth-authorization-server"))
        .send()
        .await
        .with_context(|| format!("cannot reach {origin}"))?;
    if !response.status().is_success() {
        return Ok(None);
    }
    let Ok(metadata) = response.json::<AuthorizationMetadata>().await else {
        return Ok(None);
    };
    let same_origin = metadata
        .issuer
        .as_deref()
        .and_then(|issuer| reqwest::Url::parse(issuer).ok())
        .is_some_and(|issuer| issuer.origin().ascii_serialization() == origin);
    Ok(same_origin.then_some(metadata))
}
