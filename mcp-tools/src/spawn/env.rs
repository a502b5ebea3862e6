//! Which variables a child receives: everything minus secrets, or a short
//! allow-list plus what the user named.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::sync::{Mutex, PoisonError};

use tokio::process::Command;

use super::MARKER_VAR;

/// Which environment a child gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvPolicy {
    /// Everything this process has, minus secrets: every variable whose name
    /// contains KEY, TOKEN, SECRET, PASSWORD or CREDENTIAL (case-insensitive),
    /// plus every name registered with [`withhold`]. Shell commands and git
    /// use this.
    ScrubSecrets,
    /// Only HOME, PATH, USER, LOGNAME, SHELL, LANG, LC_*, TERM, TMPDIR, TZ
    /// from this process, plus the given (name, value) pairs, which are
    /// passed even when they look secret (the user named them). External MCP
    /// servers use this.
    AllowList(Vec<(String, String)>),
}

/// Name fragments that mark a variable as a secret (compared upper-cased).
const SECRET_PARTS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"];

/// Variables an allow-listed child still gets from this process.
const ALLOWED: &[&str] = &[
    "HOME", "PATH", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR", "TZ",
];

static WITHHELD: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Registers one more variable name that no child may receive: the model
/// provider's secrets, whatever they are called (`api_key_env`,
/// `ANTHROPIC_API_KEY`, every provider's `env_key` and `env_http_headers`
/// variables). Process-wide; idempotent.
pub fn withhold(name: &str) {
    WITHHELD
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(name.to_string());
}

/// True when `name` would be withheld by [`EnvPolicy::ScrubSecrets`].
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_PARTS.iter().any(|part| upper.contains(part))
        || WITHHELD
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(name)
}

/// True when an [`EnvPolicy::AllowList`] child gets `name` from this
/// process without being told (HOME, PATH, LANG, LC_*, ...).
pub fn is_allowed_name(name: &str) -> bool {
    ALLOWED.contains(&name) || name.starts_with("LC_")
}

/// Clears `command`'s environment and rebuilds it from `policy`; the
/// marker of this spawn is set last, so nothing can override it.
pub(super) fn apply(command: &mut Command, policy: &EnvPolicy, marker: &str) {
    command.env_clear();
    let keep: fn(&str) -> bool = match policy {
        EnvPolicy::ScrubSecrets => |name| !is_secret_name(name),
        EnvPolicy::AllowList(_) => is_allowed_name,
    };
    for (name, value) in std::env::vars_os() {
        let text = name.to_string_lossy();
        if text != MARKER_VAR && keep(&text) {
            command.env(&name, &value);
        }
    }
    if let EnvPolicy::AllowList(pairs) = policy {
        for (name, value) in pairs {
            if name != MARKER_VAR {
                command.env(name, value);
            }
        }
    }
    command.env(MARKER_VAR, OsString::from(marker));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names_are_recognised_in_any_case() {
        for name in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "my_password",
            "DB_CREDENTIALS",
            "apikey",
        ] {
            assert!(is_secret_name(name), "{name}");
        }
        for name in ["PATH", "HOME", "CARGO_HOME", "EDITOR"] {
            assert!(!is_secret_name(name), "{name}");
        }
    }

    #[test]
    fn withheld_names_are_secret() {
        assert!(!is_secret_name("NANOHERMES_TEST_MODEL_AUTH"));
        withhold("NANOHERMES_TEST_MODEL_AUTH");
        withhold("NANOHERMES_TEST_MODEL_AUTH");
        assert!(is_secret_name("NANOHERMES_TEST_MODEL_AUTH"));
    }

    #[test]
    fn the_allow_list_takes_locale_variables() {
        assert!(is_allowed_name("LC_ALL") && is_allowed_name("PATH"));
        assert!(!is_allowed_name("CARGO_HOME") && !is_allowed_name("OPENAI_API_KEY"));
    }
}
