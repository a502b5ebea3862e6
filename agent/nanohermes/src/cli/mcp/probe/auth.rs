//! The probe's OAuth path, for the suite's `auth/*` scenarios: the server
//! is reached with OAuth like any configured HTTP server, but the probe
//! authorizes by itself (the "browser" GETs the authorization URL and
//! follows the redirect to the loopback listener; the suite's mock
//! authorization server approves at once), with the tokens in a private
//! file of its own that is removed afterwards, never the user's.

use std::path::PathBuf;

use rmcp::model::JsonObject;
use serde_json::Value;

use super::script::Step;
use nanohermes_config::OAuthSpec;

/// The client metadata URL the suite's CIMD scenarios expect as client id
/// (`CIMD_CLIENT_METADATA_URL` in the suite; it serves the document itself).
pub const CONFORMANCE_CLIENT_METADATA_URL: &str =
    "https://conformance-test.local/client-metadata.json";

/// Whether `scenario` is one of the suite's authorization scenarios.
pub fn is_auth(scenario: &str) -> bool {
    scenario.starts_with("auth/")
}

/// An auth scenario's steps: list (the connection authorizes), then call
/// the mock's tool (where step-up scenarios answer 403 `insufficient_scope`).
pub fn steps() -> Vec<Step> {
    vec![
        Step::List,
        Step::Call("test-tool".to_owned(), JsonObject::new()),
    ]
}

/// The OAuth settings the scenario's context gives: a pre-registered
/// client (`client_id`, `client_secret`) when it names one; the suite's
/// client metadata URL for CIMD.
pub fn spec(context: &JsonObject) -> OAuthSpec {
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    OAuthSpec {
        client_id: text("client_id"),
        client_secret: text("client_secret"),
        client_metadata_url: Some(CONFORMANCE_CLIENT_METADATA_URL.to_owned()),
        ..OAuthSpec::default()
    }
}

/// A private credentials file for one probe run, removed on drop.
pub struct ProbeCredentials {
    dir: PathBuf,
}

impl ProbeCredentials {
    /// A fresh directory under the system's temp directory (created 0700
    /// with the file, by the credentials writer).
    pub fn new() -> ProbeCredentials {
        let dir = std::env::temp_dir().join(format!(
            "nanohermes-probe-{}-{}",
            std::process::id(),
            nanohermes_session::new_id()
        ));
        ProbeCredentials { dir }
    }

    /// The credentials file.
    pub fn path(&self) -> PathBuf {
        nanohermes_config::Paths::new(Some(self.dir.clone()))
            .credentials()
            .unwrap_or_default()
    }
}

impl Default for ProbeCredentials {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for ProbeCredentials {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn preregistered_credentials_come_from_the_context() {
        let context = json!({"client_id": "c", "client_secret": "s"});
        let spec = spec(context.as_object().unwrap());
        assert_eq!(spec.client_id.as_deref(), Some("c"));
        assert_eq!(spec.client_secret.as_deref(), Some("s"));
        assert!(is_auth("auth/basic-cimd") && !is_auth("tools_call"));
    }
}
