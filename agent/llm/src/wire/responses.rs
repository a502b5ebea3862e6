//! Placeholder: the responses wire is being written (issue 27); until then
//! [`crate::Client::new`] refuses it.

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::{RequestParts, StreamReader, Wire};
use crate::ModelSettings;
use crate::turn::{AssistantTurn, TurnBuilder};

/// The responses wire.
#[derive(Debug)]
pub struct Responses;

impl Wire for Responses {
    fn body(&self, _parts: &RequestParts<'_>) -> Vec<u8> {
        Vec::new()
    }

    fn auth_headers(&self, _api_key: Option<&str>, _headers: &mut HeaderMap) {}

    fn stream_reader(&self, settings: &ModelSettings) -> Box<dyn StreamReader> {
        Box::new(TurnBuilder::at(&settings.base_url))
    }

    fn whole(
        &self,
        _settings: &ModelSettings,
        _response: &Value,
        _model: &str,
    ) -> Result<AssistantTurn, String> {
        Err("not built yet".into())
    }
}
