//! Model providers as Codex users write them: `model_provider = "NAME"`
//! and `[model_providers.NAME]` tables, plus four built-ins (`openai`,
//! `anthropic`, `ollama`, `lmstudio`). A user table of a built-in's name
//! replaces the built-in whole.
//!
//! Providers are read from the user's own config only ([`crate::raw`]
//! refuses both keys in a project's file): a provider says where the key
//! goes, so a repository naming one could send the key to its own server.
//! Every provider's key variable and header variables are the model
//! provider's secrets ([`key_vars`]): withheld from children and never
//! expanded into a project's `.mcp.json`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::diag::ConfigError;
use super::raw::RawConfig;

/// `[model_providers.NAME]`, with Codex's key names (so a table pastes
/// unchanged), plus `prompt_cache_key`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawProvider {
    /// The name shown to you [default: the table's name].
    pub name: Option<String>,
    /// The API root, e.g. "https://api.anthropic.com/v1" or "http://localhost:8080/v1".
    pub base_url: Option<String>,
    /// The environment variable holding the API key; absent sends no key.
    pub env_key: Option<String>,
    /// Shown when `env_key` is unset: how to get a key.
    pub env_key_instructions: Option<String>,
    /// The API the server speaks: "chat" (chat completions), "responses" (OpenAI Responses) or "messages" (Anthropic Messages) [default: "chat"].
    pub wire_api: Option<WireName>,
    /// Added to every request's URL query, e.g. { api-version = "2025-04-01-preview" }.
    pub query_params: Option<BTreeMap<String, String>>,
    /// HTTP headers with fixed values.
    pub http_headers: Option<BTreeMap<String, String>>,
    /// HTTP headers whose values come from environment variables (header = "VAR"); an unset variable omits its header.
    pub env_http_headers: Option<BTreeMap<String, String>>,
    /// Retries of a failed model request; the top-level `max_retries` and `--max-retries` win.
    pub request_max_retries: Option<u32>,
    /// Milliseconds without a stream event before a request fails; the top-level key wins.
    pub stream_idle_timeout_ms: Option<u64>,
    /// Send the session's `prompt_cache_key` [default: true]; false for servers that refuse unknown fields.
    pub prompt_cache_key: Option<bool>,
}

/// The wire a provider speaks, as written in `wire_api`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WireName {
    /// OpenAI chat completions, and every compatible server.
    #[default]
    Chat,
    /// The OpenAI Responses API.
    Responses,
    /// The Anthropic Messages API.
    Messages,
}

impl WireName {
    /// The name written in config files.
    pub fn name(self) -> &'static str {
        match self {
            WireName::Chat => "chat",
            WireName::Responses => "responses",
            WireName::Messages => "messages",
        }
    }
}

/// The built-in providers, in the order errors list them.
pub const BUILTIN: &[&str] = &["openai", "anthropic", "ollama", "lmstudio"];

/// The key variables of the built-in providers: always the model
/// provider's secrets, whichever provider runs.
pub const BUILTIN_KEY_VARS: &[&str] = &["OPENAI_API_KEY", "ANTHROPIC_API_KEY"];

/// A provider, resolved: what the model client needs, before the key is
/// read.
#[derive(Debug, Clone, PartialEq)]
pub struct Provider {
    /// The name `model_provider` and `--provider` use.
    pub id: String,
    /// The name shown (`name`, else `id`).
    pub display: String,
    /// The API root, without a trailing `/`.
    pub base_url: String,
    /// The variable this provider's `base_url` was read from (a
    /// built-in's `OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`): a subagent gets
    /// the resolved URL under it.
    pub base_url_env: Option<String>,
    /// The variable holding the key; `None` sends none.
    pub env_key: Option<String>,
    /// How to get a key, for the error when `env_key` is unset.
    pub env_key_instructions: Option<String>,
    /// The wire.
    pub wire: WireName,
    /// URL query pairs.
    pub query_params: Vec<(String, String)>,
    /// Fixed headers.
    pub http_headers: Vec<(String, String)>,
    /// Headers from variables: (header, variable).
    pub env_http_headers: Vec<(String, String)>,
    /// The provider's retry count, below the top-level key and the flag.
    pub request_max_retries: Option<u32>,
    /// The provider's idle timeout, below the top-level key.
    pub stream_idle_timeout_ms: Option<u64>,
    /// Whether the session's prompt cache key is sent.
    pub prompt_cache_key: bool,
}

/// A built-in provider, with `env` read for its base URL variable.
fn builtin(id: &str, env: &dyn Fn(&str) -> Option<String>) -> Option<Provider> {
    let from_env = |var: &str, default: &str| {
        env(var)
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| default.to_owned())
    };
    let (base_url, base_url_env, env_key, wire) = match id {
        "openai" => (
            from_env("OPENAI_BASE_URL", "https://api.openai.com/v1"),
            Some("OPENAI_BASE_URL"),
            Some("OPENAI_API_KEY"),
            WireName::Responses,
        ),
        "anthropic" => (
            from_env("ANTHROPIC_BASE_URL", "https://api.anthropic.com/v1"),
            Some("ANTHROPIC_BASE_URL"),
            Some("ANTHROPIC_API_KEY"),
            WireName::Messages,
        ),
        "ollama" => (
            "http://localhost:11434/v1".to_owned(),
            None,
            None,
            WireName::Chat,
        ),
        "lmstudio" => (
            "http://localhost:1234/v1".to_owned(),
            None,
            None,
            WireName::Chat,
        ),
        _ => return None,
    };
    Some(Provider {
        id: id.to_owned(),
        display: id.to_owned(),
        base_url: base_url.trim_end_matches('/').to_owned(),
        base_url_env: base_url_env.map(str::to_owned),
        env_key: env_key.map(str::to_owned),
        env_key_instructions: None,
        wire,
        query_params: Vec::new(),
        http_headers: Vec::new(),
        env_http_headers: Vec::new(),
        request_max_retries: None,
        stream_idle_timeout_ms: None,
        prompt_cache_key: true,
    })
}

/// A user's table, resolved (checked by [`check_raw`] when parsed).
fn from_table(id: &str, raw: &RawProvider) -> Provider {
    let pairs = |map: &Option<BTreeMap<String, String>>| {
        map.iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
    };
    Provider {
        id: id.to_owned(),
        display: raw.name.clone().unwrap_or_else(|| id.to_owned()),
        base_url: raw
            .base_url
            .clone()
            .unwrap_or_default()
            .trim_end_matches('/')
            .to_owned(),
        base_url_env: None,
        env_key: raw.env_key.clone(),
        env_key_instructions: raw.env_key_instructions.clone(),
        wire: raw.wire_api.unwrap_or_default(),
        query_params: pairs(&raw.query_params),
        http_headers: pairs(&raw.http_headers),
        env_http_headers: pairs(&raw.env_http_headers),
        request_max_retries: raw.request_max_retries,
        stream_idle_timeout_ms: raw.stream_idle_timeout_ms,
        prompt_cache_key: raw.prompt_cache_key.unwrap_or(true),
    }
}

/// The provider named `id`: the user's table of that name, else the
/// built-in; an unknown name is an error naming `source` (`--provider`,
/// `model_provider`, ...) and listing the known names.
pub fn lookup(
    id: &str,
    source: &str,
    tables: &BTreeMap<String, RawProvider>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Provider, ConfigError> {
    if let Some(raw) = tables.get(id) {
        return Ok(from_table(id, raw));
    }
    builtin(id, env).ok_or_else(|| {
        let mut known: Vec<&str> = BUILTIN.to_vec();
        known.extend(
            tables
                .keys()
                .map(String::as_str)
                .filter(|k| !BUILTIN.contains(k)),
        );
        ConfigError::at(
            source,
            None,
            format!(
                "there is no model provider {id:?}; use one of {} or add [model_providers.{id}] to your config",
                known.join(", ")
            ),
        )
    })
}

/// Checks one `[model_providers.NAME]` table: `Err((key, message))` names
/// the key whose line the error shows.
pub fn check_raw(name: &str, raw: &RawProvider) -> Result<(), (&'static str, String)> {
    if !crate::is_valid_server_name(name) {
        return Err((
            "",
            format!(
                "model_providers.{name:?} is not a valid provider name; use letters, digits, `_` and `-`"
            ),
        ));
    }
    match &raw.base_url {
        None => {
            return Err((
                "",
                format!(
                    "[model_providers.{name}] has no base_url; give the API root, such as http://localhost:8080/v1"
                ),
            ));
        }
        Some(url) if !super::raw::is_http_url(url) => {
            return Err((
                "base_url",
                format!(
                    "model_providers.{name}.base_url = {url:?} is not allowed; use an http:// or https:// URL such as http://localhost:8080/v1"
                ),
            ));
        }
        Some(_) => {}
    }
    if raw.env_key.as_deref().is_some_and(|v| !is_var_name(v)) {
        return Err((
            "env_key",
            format!(
                "model_providers.{name}.env_key = {:?} is not a variable name; name the variable that holds the key, such as \"MY_API_KEY\" (never the key itself)",
                raw.env_key.as_deref().unwrap_or_default()
            ),
        ));
    }
    for (key, map) in [
        ("http_headers", &raw.http_headers),
        ("env_http_headers", &raw.env_http_headers),
    ] {
        if let Some(bad) = map
            .iter()
            .flatten()
            .map(|(h, _)| h)
            .find(|h| !is_header_name(h))
        {
            return Err((
                key,
                format!("model_providers.{name}.{key} has {bad:?}, which is not a header name"),
            ));
        }
    }
    if let Some((header, var)) = raw
        .env_http_headers
        .iter()
        .flatten()
        .find(|(_, v)| !is_var_name(v))
    {
        return Err((
            "env_http_headers",
            format!(
                "model_providers.{name}.env_http_headers.{header} = {var:?} is not a variable name; name the variable that holds the value"
            ),
        ));
    }
    Ok(())
}

/// A plausible environment variable name (what `env_key` must be, so a
/// pasted key is refused instead of being looked up).
fn is_var_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An HTTP token (RFC 9110 `tchar`s).
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

/// The variables that hold the model provider's secrets: the built-ins'
/// keys, `api_key_env`, and every configured provider's `env_key` and
/// `env_http_headers` variables. No child receives them, and a project's
/// `.mcp.json` expands them to nothing.
pub fn key_vars(api_key_env: Option<&str>, tables: &BTreeMap<String, RawProvider>) -> Vec<String> {
    let mut vars: Vec<String> = BUILTIN_KEY_VARS.iter().map(|v| (*v).to_owned()).collect();
    vars.extend(api_key_env.map(str::to_owned));
    for raw in tables.values() {
        vars.extend(raw.env_key.clone());
        vars.extend(
            raw.env_http_headers
                .iter()
                .flatten()
                .map(|(_, v)| v.clone()),
        );
    }
    vars.sort();
    vars.dedup();
    vars
}

/// [`key_vars`] of one parsed file (the user's own config).
pub fn key_vars_of(raw: &RawConfig) -> Vec<String> {
    key_vars(raw.api_key_env.as_deref(), &raw.model_providers)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn builtins_read_their_base_url_variable_and_a_table_replaces_them() {
        let tables = BTreeMap::new();
        let openai = lookup("openai", "--provider", &tables, &no_env).unwrap();
        assert_eq!(
            (
                openai.base_url.as_str(),
                openai.env_key.as_deref(),
                openai.wire
            ),
            (
                "https://api.openai.com/v1",
                Some("OPENAI_API_KEY"),
                WireName::Responses
            )
        );
        let env =
            |v: &str| (v == "ANTHROPIC_BASE_URL").then(|| "http://127.0.0.1:9/v1/".to_owned());
        let anthropic = lookup("anthropic", "--provider", &tables, &env).unwrap();
        assert_eq!(
            (
                anthropic.base_url.as_str(),
                anthropic.env_key.as_deref(),
                anthropic.wire
            ),
            (
                "http://127.0.0.1:9/v1",
                Some("ANTHROPIC_API_KEY"),
                WireName::Messages
            )
        );
        let ollama = lookup("ollama", "--provider", &tables, &no_env).unwrap();
        assert_eq!(
            (ollama.base_url.as_str(), ollama.env_key, ollama.wire),
            ("http://localhost:11434/v1", None, WireName::Chat)
        );
        let lmstudio = lookup("lmstudio", "--provider", &tables, &no_env).unwrap();
        assert_eq!(lmstudio.base_url, "http://localhost:1234/v1");

        let mut tables = BTreeMap::new();
        tables.insert(
            "ollama".to_owned(),
            RawProvider {
                base_url: Some("http://gpu-box:11434/v1".into()),
                prompt_cache_key: Some(false),
                ..RawProvider::default()
            },
        );
        let mine = lookup("ollama", "model_provider", &tables, &no_env).unwrap();
        assert_eq!(mine.base_url, "http://gpu-box:11434/v1");
        assert!(!mine.prompt_cache_key);
    }

    #[test]
    fn an_unknown_provider_lists_the_known_ones() {
        let mut tables = BTreeMap::new();
        tables.insert("llama".to_owned(), RawProvider::default());
        let e = lookup("antropic", "--provider", &tables, &no_env).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--provider: there is no model provider \"antropic\"; use one of openai, anthropic, \
             ollama, lmstudio, llama or add [model_providers.antropic] to your config"
        );
    }

    #[test]
    fn key_vars_take_every_configured_key_and_header_variable() {
        let mut tables = BTreeMap::new();
        tables.insert(
            "corp".to_owned(),
            RawProvider {
                env_key: Some("CORP_LLM".into()),
                env_http_headers: Some([("X-Org".to_owned(), "CORP_ORG".to_owned())].into()),
                ..RawProvider::default()
            },
        );
        assert_eq!(
            key_vars(Some("MY_KEY"), &tables),
            [
                "ANTHROPIC_API_KEY",
                "CORP_LLM",
                "CORP_ORG",
                "MY_KEY",
                "OPENAI_API_KEY"
            ]
        );
    }

    #[test]
    fn a_table_needs_a_url_and_names_variables_not_keys() {
        let ok = RawProvider {
            base_url: Some("http://localhost:8080/v1".into()),
            ..RawProvider::default()
        };
        assert!(check_raw("llama", &ok).is_ok());
        assert!(check_raw("llama", &RawProvider::default()).is_err());
        let pasted_key = RawProvider {
            env_key: Some("sk-ant-123".into()),
            ..ok.clone()
        };
        assert_eq!(check_raw("x", &pasted_key).unwrap_err().0, "env_key");
        let bad_header = RawProvider {
            http_headers: Some([("X Org".to_owned(), "v".to_owned())].into()),
            ..ok
        };
        assert_eq!(check_raw("x", &bad_header).unwrap_err().0, "http_headers");
    }
}
