//! The configuration data layer: the layered files, `.mcp.json`, trust,
//! the environment and flags, merged into [`Settings`] and [`ServerSpec`]s.
//!
//! The CLI builds [`ConfigSources`] (or [`ConfigSources::from_process`]),
//! calls [`trust_check`] to ask on a terminal about an undecided project or
//! a trusted one whose files changed since ([`digests`]), then [`load`]; the hub starts [`Settings::servers`]. Every error is a
//! [`ConfigError`] that names the file, the line, the key and what is
//! allowed. `agent/CONFIG.md` documents every key.

pub mod diag;
pub mod digests;
pub mod edit;
pub mod era;
pub mod files;
pub mod hooks_json;
pub mod layered;
pub mod mcp_json;
pub mod paths;
pub mod providers;
pub mod raw;
pub mod servers;
pub mod trust;
pub mod trust_check;

pub use diag::ConfigError;
pub use edit::{NewServer, add_server, remove_server};
pub use era::Era;
pub use layered::{ConfigSources, Loaded, Overrides, Settings, TrustCheck, load, trust_check};
pub use paths::Paths;
pub use providers::{Provider, RawProvider, WireName};
pub use raw::{
    BuiltinName, HookEvent, HookGroup, Mode, NetworkWord, RawConfig, RawServe, RawServer, Run,
    SandboxNetwork, TrustLevel,
};
pub use servers::{HttpSpec, OAuthSpec, Origin, ServerSpec, StdioSpec, Transport, parse_mcp_flag};
pub use trust::TrustStatus;

/// The variable the model's API key is read from when `api_key_env` is not set.
pub const DEFAULT_API_KEY_ENV: &str = "OPENAI_API_KEY";

/// Whether `name` is a valid server name: it becomes the prefix of its
/// tools' names, so it must be non-empty, made of `[A-Za-z0-9_-]` and must
/// not contain `__` (the separator between server and tool).
pub fn is_valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod schema_tests {
    use std::path::Path;

    /// `schemas/config.json` is what the raw types generate.
    #[test]
    fn config_schema_file_is_up_to_date() {
        let schema = schemars::schema_for!(super::RawConfig);
        let mut document = serde_json::to_value(&schema).unwrap();
        // Standard JSON Schema only, as for every tool schema.
        mcp_tools::schema::standardize_value(&mut document);
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/config.json");
        mcp_tools::schema::check_schema_file(&path, &document).unwrap();
    }
}
