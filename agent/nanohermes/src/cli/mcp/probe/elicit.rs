//! The probe's answer to elicitations: set by the script's `elicit` steps,
//! accepting with the form's schema defaults unless told otherwise.

use std::sync::Mutex;

use futures::future::BoxFuture;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use serde_json::Value;

use super::script::ElicitAnswer;
use nanohermes_hub::input::{Elicitor, with_schema_defaults};

/// Answers every elicitation the way the last `elicit` step said, and
/// reports each one on stderr.
#[derive(Debug, Default)]
pub struct ScriptedElicitor {
    answer: Mutex<ElicitAnswer>,
}

impl ScriptedElicitor {
    /// Answers later elicitations with `answer`.
    pub fn set(&self, answer: ElicitAnswer) {
        *self.answer.lock().unwrap_or_else(|p| p.into_inner()) = answer;
    }
}

impl Elicitor for ScriptedElicitor {
    fn elicit(&self, server: &str, request: ElicitRequestParams) -> BoxFuture<'_, ElicitResult> {
        let answer = self
            .answer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let result = match answer {
            ElicitAnswer::Accept(given) => {
                let content = with_schema_defaults(&request, &given);
                ElicitResult::new(ElicitationAction::Accept).with_content(Value::Object(content))
            }
            ElicitAnswer::Decline => ElicitResult::new(ElicitationAction::Decline),
            ElicitAnswer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        };
        let message = match &request {
            ElicitRequestParams::FormElicitationParams { message, .. } => message.clone(),
            other => format!("{other:?}"),
        };
        eprintln!(
            "elicitation from {server}: {message:?} -> {}",
            serde_json::to_string(&result).unwrap_or_default()
        );
        Box::pin(std::future::ready(result))
    }
}
