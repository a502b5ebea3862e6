//! OAuth 2.1 for remote (Streamable HTTP) MCP servers, on rmcp's `auth`
//! feature, which does the protocol: protected-resource metadata (RFC 9728)
//! and authorization-server metadata discovery, Client ID Metadata
//! Documents with dynamic client registration as the fallback (or a
//! pre-registered client from the config), authorization code + PKCE,
//! `iss` validation (RFC 9207), refresh. This module adds what a terminal
//! agent needs around it:
//!
//! - `legacy`: the 2025-03-26 discovery rmcp refuses (no resource
//!   metadata, the authorization server's metadata at the server's root
//!   with an issuer that has a path);
//! - [`store`]: the one 0600 file the tokens live in, keyed by server URL;
//! - [`redirect`]: the loopback listener the browser comes back to;
//! - [`login`]: one authorization, from a server's `WWW-Authenticate`
//!   challenge to stored tokens, with a [`Browser`] that either prints the
//!   URL for the user or (for `nanohermes mcp probe`) fetches it;
//! - [`transport`]: the HTTP client the hub's connection uses: the stored
//!   token on every request, a refresh when it expires or is rejected, and
//!   on a 401 or a 403 `insufficient_scope` either a new authorization (when
//!   the connection may run one) or an error that says to run
//!   `nanohermes mcp login NAME`.

mod legacy;
pub mod login;
pub mod redirect;
pub mod store;
pub mod transport;

pub use login::{Authorizer, Browser, OAuthSettings};
pub use store::CredentialsFile;
