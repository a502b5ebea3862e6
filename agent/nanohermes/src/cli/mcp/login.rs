//! `nanohermes mcp login NAME` and `logout NAME`: OAuth for one configured
//! HTTP server. Login asks the server for its challenge, runs one
//! authorization with the URL printed for the user to open and a loopback
//! listener for the redirect, and stores the tokens in
//! `$NANOHERMES_HOME/credentials.json`; logout forgets them.

use std::process::ExitCode;

use anyhow::bail;

use super::inspect::find;
use crate::app::Setup;
use nanohermes_config::{ServerSpec, Transport};
use nanohermes_hub::auth::{Authorizer, Browser, CredentialsFile, login};

fn http_of(spec: &ServerSpec) -> anyhow::Result<&nanohermes_config::HttpSpec> {
    match &spec.transport {
        Transport::Http(http) => {
            if let Some(var) = &http.bearer_token_env_var {
                bail!(
                    "server {} takes a static token from {var} (bearer_token_env_var); remove that key to use OAuth instead",
                    spec.name
                );
            }
            Ok(http)
        }
        _ => bail!(
            "server {} is not an HTTP server; only servers with a url log in",
            spec.name
        ),
    }
}

fn credentials(setup: &Setup) -> anyhow::Result<CredentialsFile> {
    match &setup.config.hub.credentials {
        Some(path) => Ok(CredentialsFile::new(path)),
        None => bail!(
            "neither NANOHERMES_HOME nor HOME is set, so there is nowhere to keep the tokens; set NANOHERMES_HOME=DIR"
        ),
    }
}

/// `mcp login NAME [--scope S]…`.
pub async fn login(setup: Setup, name: &str, scopes: Vec<String>) -> anyhow::Result<ExitCode> {
    let spec = find(&setup, name)?;
    let http = http_of(spec)?;
    let store = credentials(&setup)?;
    let mut settings = nanohermes_hub::oauth_settings(name, http)?;
    settings.scopes.extend(scopes);
    let authorizer = Authorizer {
        name: name.to_owned(),
        url: http.url.clone(),
        settings,
        store: store.clone(),
        browser: setup.config.hub.oauth_browser.unwrap_or(Browser::Print),
    };
    let challenge = login::challenge_of(&http.url).await?;
    let manager = authorizer.authorize(challenge.as_deref(), &[]).await?;
    let scopes = manager.get_current_scopes().await;
    let granted = if scopes.is_empty() {
        String::new()
    } else {
        format!(" (scopes: {})", scopes.join(" "))
    };
    super::say(&format!(
        "logged in to {name}{granted}; the tokens are in {}",
        store.path().display()
    ))
}

/// `mcp logout NAME`.
pub async fn logout(setup: Setup, name: &str) -> anyhow::Result<ExitCode> {
    let spec = find(&setup, name)?;
    let url = match &spec.transport {
        Transport::Http(http) => http.url.clone(),
        _ => bail!("server {name} is not an HTTP server; it has no login"),
    };
    let store = credentials(&setup)?;
    if store.remove(&url).await? {
        super::say(&format!("logged out of {name}"))
    } else {
        super::say(&format!("{name} had no stored login"))
    }
}
