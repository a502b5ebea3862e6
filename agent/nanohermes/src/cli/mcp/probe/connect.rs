//! The probe's one server, started by the hub itself: the same spec,
//! planning, transport and handshake code as any configured HTTP server
//! (OAuth included, for the suite's `auth/*` scenarios).

use std::sync::Arc;

use nanohermes_config::{HttpSpec, OAuthSpec, Origin, ServerSpec, Transport};
use nanohermes_hub::{Era, Hub, HubConfig};

use super::auth::ProbeCredentials;
use super::elicit::ScriptedElicitor;

/// The name the probe gives the server (its tools are `probe__TOOL` to the hub).
pub const SERVER: &str = "probe";

/// Starts a hub with only the server at `url`, speaking `era` when given
/// (else probing, as for a configured server), elicitations answered by
/// `elicitor`. Fails, with the hub's reason, when the server cannot be
/// reached or its tools cannot be listed.
pub async fn connect(
    url: &str,
    era: Option<Era>,
    elicitor: Arc<ScriptedElicitor>,
    oauth: Option<(OAuthSpec, &ProbeCredentials)>,
) -> anyhow::Result<Hub> {
    let spec = ServerSpec {
        name: SERVER.to_owned(),
        origin: Origin::Flag,
        builtin: None,
        transport: Transport::Http(HttpSpec {
            url: url.to_owned(),
            era,
            oauth: oauth
                .as_ref()
                .map(|(spec, _)| spec.clone())
                .unwrap_or_default(),
            ..HttpSpec::default()
        }),
        enabled: true,
        required: true,
        startup_timeout: nanohermes_config::servers::DEFAULT_STARTUP_TIMEOUT * 3,
        tool_timeout: nanohermes_config::servers::DEFAULT_TOOL_TIMEOUT,
        enabled_tools: None,
        disabled_tools: Vec::new(),
        description: None,
        // The probe drives this one server: none of its tools is held back.
        always_load: true,
    };
    let workspace = std::env::current_dir()?;
    let config = HubConfig {
        elicitor: Some(elicitor),
        // OAuth (auth.rs): the probe's own file, and it authorizes by itself.
        credentials: oauth.as_ref().map(|(_, file)| file.path()),
        oauth_browser: oauth
            .is_some()
            .then_some(nanohermes_hub::auth::Browser::Fetch),
        ..HubConfig::new(workspace, vec![spec])
    };
    Hub::start(config).await
}
