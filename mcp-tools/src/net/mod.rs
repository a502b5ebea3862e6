//! The network policy every way out shares: which addresses are public
//! ([`address`]), which names a domain allowlist lets through
//! ([`domains`]), and the local proxy through which sandboxed commands
//! reach the listed domains and nothing else ([`proxy`]).

pub mod address;
pub mod domains;
pub mod proxy;

pub use domains::DomainList;
pub use proxy::{Allowlist, Proxy, Resolve, SystemResolver};
