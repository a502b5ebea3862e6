//! Web fetching for NanoHermes as an MCP server.
//!
//! | tool | does | hints |
//! |---|---|---|
//! | `web_fetch {url, max_bytes?}` | GETs an http(s) URL and returns it as readable text | read-only, open-world |
//!
//! Invariants:
//! - only `http` and `https` URLs are fetched, and redirects may not leave
//!   those schemes; at most 5 redirects are followed;
//! - every fetch has a total timeout (30 s) and a connect timeout (10 s);
//! - the body is read chunk by chunk and never kept past `max_bytes`
//!   (default 2 MB, at most 10 MB); the text returned is clamped to the
//!   server's output limit with a note;
//! - HTML becomes plain text through `html2text`; `text/*`, JSON and XML are
//!   returned as text; any other content type is refused, named, before its
//!   body is downloaded;
//! - only public addresses are reached unless the user opts in
//!   (`allow_private_network`, or one host at a time with `allowed_hosts`):
//!   names are judged on the addresses they resolve to, inside reqwest's
//!   DNS resolver, and literal addresses before every hop
//!   ([`guard`], [`address`]); no proxy is used; a redirect from https to
//!   http is refused;
//! - an HTTP error status (404, 500, ...) is an `isError` result naming the
//!   status and quoting the start of the error page.

pub mod address;
pub mod fetch;
pub mod guard;
pub mod server;

pub use fetch::{FetchConfig, FetchError, Fetcher, Page};
pub use guard::{AllowedHost, NetworkGuard, Refusal};
pub use server::WebServer;
