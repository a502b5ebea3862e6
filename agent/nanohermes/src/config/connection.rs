//! The model connection: the settings of the model client, the key's
//! variable, and the advice its errors give, from a provider or from the
//! top-level `base_url` and `api_key_env`; and what a NanoHermes subagent
//! inherits of it.

use anyhow::{Context as _, bail};

use nanohermes_llm::{Advice, DEFAULT_BASE_URL, DEFAULT_MODEL, KeySource, ModelSettings};

use super::{DEFAULT_API_KEY_ENV, Options, sources};
use sources::{ConfigError, Settings};

/// The connection without a provider, exactly as before providers existed:
/// chat wire, `base_url` (`OPENAI_BASE_URL`, `--base-url`), the key from
/// `api_key_env` (default `OPENAI_API_KEY`). Returns the settings and the
/// key's variable.
pub(super) fn default_connection(
    settings: &Settings,
    options: &Options,
    env: &dyn Fn(&str) -> Option<String>,
    needs_model: bool,
) -> anyhow::Result<(ModelSettings, String)> {
    let api_key_env = settings
        .api_key_env
        .clone()
        .unwrap_or_else(|| DEFAULT_API_KEY_ENV.to_owned());
    let api_key = env(&api_key_env).filter(|k| !k.trim().is_empty());
    let base_url = settings
        .base_url
        .clone()
        .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned())
        .trim_end_matches('/')
        .to_owned();
    let url = reqwest::Url::parse(&base_url).with_context(|| {
        format!("base_url {base_url:?} is not a URL (e.g. http://localhost:8080/v1)")
    })?;
    if needs_model && api_key.is_none() && url.host_str() == Some("api.openai.com") {
        bail!(
            "{api_key_env} is not set: {base_url} needs an API key \
             (set {api_key_env}, or point OPENAI_BASE_URL at a local server such as http://localhost:11434/v1)"
        );
    }
    let mut model = ModelSettings::new(
        base_url,
        settings.model.clone().unwrap_or(DEFAULT_MODEL.to_owned()),
    );
    model.advice = Advice {
        key: key_source(&api_key_env, api_key.is_some()),
        base_url: default_base_url_source(settings, options, env).to_owned(),
    };
    model.api_key = api_key;
    Ok((model, api_key_env))
}

/// The key's variable, and whether it held a key (a 401 then says it is
/// unset rather than wrong).
fn key_source(var: &str, set: bool) -> KeySource {
    if set {
        KeySource::Var(var.to_owned())
    } else {
        KeySource::Unset(var.to_owned())
    }
}

/// Where the connection without a provider got its base URL, in the
/// layers' order (the flag beats the variable beats the files): what an
/// error tells the user to check. Without any, the default URL is in use
/// and `OPENAI_BASE_URL` is how to change it.
fn default_base_url_source(
    settings: &Settings,
    options: &Options,
    env: &dyn Fn(&str) -> Option<String>,
) -> &'static str {
    let set = |value: Option<String>| value.is_some_and(|v| !v.trim().is_empty());
    if set(options.base_url.clone()) {
        "--base-url"
    } else if set(env("OPENAI_BASE_URL")) || settings.base_url.is_none() {
        "OPENAI_BASE_URL"
    } else {
        "base_url in your config"
    }
}

/// The connection a provider describes: its wire, base URL, key variable,
/// query and headers. The top-level `base_url` and `api_key_env` (and
/// `OPENAI_BASE_URL`, except for the built-in `openai`) describe the
/// connection without a provider and do not apply; `--base-url` with a
/// provider is refused rather than guessed at. A provider with an
/// `env_key` that is unset or empty stops a command that talks to the
/// model before any request.
pub(super) fn provider_connection(
    provider: &sources::Provider,
    settings: &Settings,
    options: &Options,
    env: &dyn Fn(&str) -> Option<String>,
    needs_model: bool,
) -> anyhow::Result<(ModelSettings, String)> {
    if options
        .base_url
        .as_deref()
        .is_some_and(|u| !u.trim().is_empty())
    {
        return Err(ConfigError::at(
            "--base-url",
            None,
            format!(
                "cannot be combined with the model provider {:?}, which has its own base_url; \
                 set base_url in [model_providers.{}] of your config, or drop the provider",
                provider.id, provider.id
            ),
        )
        .into());
    }
    let non_empty = |var: &str| env(var).filter(|v| !v.trim().is_empty());
    let api_key = provider.env_key.as_deref().and_then(non_empty);
    if let Some(var) = &provider.env_key
        && api_key.is_none()
        && needs_model
    {
        let how = provider
            .env_key_instructions
            .as_deref()
            .map(|i| format!(" ({i})"))
            .unwrap_or_default();
        return Err(ConfigError::at(
            "",
            None,
            format!(
                "provider {:?} needs {var}; set it{how}, or choose another provider with --provider",
                provider.id
            ),
        )
        .into());
    }
    reqwest::Url::parse(&provider.base_url).with_context(|| {
        format!(
            "provider {:?}: base_url {:?} is not a URL (e.g. http://localhost:8080/v1)",
            provider.id, provider.base_url
        )
    })?;
    let mut model = ModelSettings::new(
        provider.base_url.clone(),
        settings.model.clone().unwrap_or(DEFAULT_MODEL.to_owned()),
    );
    model.advice = provider_advice(provider, api_key.is_some());
    model.api_key = api_key;
    model.wire = wire_api(provider.wire);
    model.query_params = provider.query_params.clone();
    model.http_headers = provider.http_headers.clone();
    // An unset (or empty) variable omits its header, as in Codex.
    model.http_headers.extend(
        provider
            .env_http_headers
            .iter()
            .filter_map(|(header, var)| non_empty(var).map(|value| (header.clone(), value))),
    );
    let key_env = provider
        .env_key
        .clone()
        .unwrap_or_else(|| DEFAULT_API_KEY_ENV.to_owned());
    Ok((model, key_env))
}

/// What a failed request to `provider` tells the user to check: its
/// `env_key` (or that it sends no key), and its base URL variable for a
/// built-in that reads one, else its table's `base_url` (a table of a
/// built-in's name replaces the built-in, so that is where a fixed URL
/// such as ollama's is changed too).
fn provider_advice(provider: &sources::Provider, api_key_set: bool) -> Advice {
    Advice {
        key: match &provider.env_key {
            Some(var) => key_source(var, api_key_set),
            None => KeySource::None {
                provider: provider.id.clone(),
            },
        },
        base_url: provider
            .base_url_env
            .clone()
            .unwrap_or_else(|| format!("base_url in [model_providers.{}]", provider.id)),
    }
}

/// The client's wire for a config's `wire_api`.
fn wire_api(name: sources::WireName) -> nanohermes_llm::WireApi {
    match name {
        sources::WireName::Chat => nanohermes_llm::WireApi::Chat,
        sources::WireName::Responses => nanohermes_llm::WireApi::Responses,
        sources::WireName::Messages => nanohermes_llm::WireApi::Messages,
    }
}

/// What a NanoHermes subagent inherits: this agent's model and base URL,
/// its provider's name, and its key and header variables under their own
/// names, all in its environment, never in its argv.
pub(super) fn subagent_model(
    model: &ModelSettings,
    api_key_env: &str,
    provider: Option<&sources::Provider>,
    env: &dyn Fn(&str) -> Option<String>,
) -> nanohermes_hub::SubagentModel {
    let base_url_env = provider.map_or(Some("OPENAI_BASE_URL".to_owned()), |p| {
        p.base_url_env.clone()
    });
    let secrets = provider
        .iter()
        .flat_map(|p| &p.env_http_headers)
        .filter_map(|(_, var)| env(var).map(|value| (var.clone(), value)))
        .collect();
    nanohermes_hub::SubagentModel {
        base_url: model.base_url.clone(),
        model: model.model.clone(),
        key_env: api_key_env.to_owned(),
        key: model.api_key.clone(),
        provider: provider.map(|p| p.id.clone()),
        base_url_env,
        secrets,
        prompt_cache_key: None,
    }
}
