//! Which IP addresses `web_fetch` may connect to: the kit's one table of
//! non-public ranges ([`mcp_tools::net::address`]), which the sandbox's
//! network proxy uses too.

pub use mcp_tools::net::address::{NotPublic, not_public};
