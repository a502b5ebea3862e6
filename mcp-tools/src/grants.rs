//! What the agent grants one tool call beyond what its server was started
//! with, carried in the call's `_meta` (never in its arguments, which the
//! model writes).
//!
//! Two grants exist, both decided by the agent's policy, never by the model:
//! - **read-only sandbox**: the call's commands run in the `read-only`
//!   sandbox whatever the server's own mode (Plan and Debug, a `run_task`
//!   narrower than its server, `/mode plan`). A grant can only narrow: a
//!   server never widens its sandbox for a call;
//! - **protected write**: the user approved this one call, which writes a
//!   path that decides what runs later (`.git`, `.mcp.json`, `.nanohermes`,
//!   `hooks.json`); the files server refuses such a write without it.
//!
//! Servers read the grants with [`CallGrants::from_meta`]; the agent sends
//! them only to its own built-in servers ([`CallGrants::to_meta`]).

use serde_json::{Map, Value};

/// `_meta` key: `"read-only"` narrows the call's sandbox.
pub const SANDBOX_KEY: &str = "dev.nanohermes/sandbox";

/// `_meta` key: `true` when the user approved a write to a protected path.
pub const PROTECTED_WRITE_KEY: &str = "dev.nanohermes/protected-write";

/// The grants of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallGrants {
    /// Run the call's commands in the `read-only` sandbox.
    pub read_only_sandbox: bool,
    /// The user approved writing a protected path in this call.
    pub protected_write: bool,
}

impl CallGrants {
    /// No grant: the server's own policy alone.
    pub fn none() -> CallGrants {
        CallGrants::default()
    }

    /// Whether the call carries no grant.
    pub fn is_empty(&self) -> bool {
        *self == CallGrants::default()
    }

    /// The grants a request's `_meta` carries; unknown keys and values
    /// that are not exactly the expected ones grant nothing.
    pub fn from_meta(meta: &Map<String, Value>) -> CallGrants {
        CallGrants {
            read_only_sandbox: meta.get(SANDBOX_KEY).and_then(Value::as_str) == Some("read-only"),
            protected_write: meta.get(PROTECTED_WRITE_KEY) == Some(&Value::Bool(true)),
        }
    }

    /// The `_meta` entries that carry these grants (empty for none).
    pub fn to_meta(&self) -> Map<String, Value> {
        let mut meta = Map::new();
        if self.read_only_sandbox {
            meta.insert(SANDBOX_KEY.to_owned(), Value::from("read-only"));
        }
        if self.protected_write {
            meta.insert(PROTECTED_WRITE_KEY.to_owned(), Value::Bool(true));
        }
        meta
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_round_trip_through_meta_and_odd_values_grant_nothing() {
        let all = CallGrants {
            read_only_sandbox: true,
            protected_write: true,
        };
        assert_eq!(CallGrants::from_meta(&all.to_meta()), all);
        assert!(CallGrants::none().to_meta().is_empty());
        let odd: Map<String, Value> = serde_json::from_value(serde_json::json!({
            SANDBOX_KEY: "danger-full-access",
            PROTECTED_WRITE_KEY: "true",
        }))
        .unwrap();
        assert!(CallGrants::from_meta(&odd).is_empty());
    }
}
