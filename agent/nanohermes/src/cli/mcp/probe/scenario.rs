//! The steps each client scenario of the MCP conformance suite needs. The
//! suite names the scenario in `MCP_CONFORMANCE_SCENARIO` and passes its
//! data in `MCP_CONFORMANCE_CONTEXT` (JSON).

use rmcp::model::JsonObject;
use serde_json::{Value, json};

use super::script::{ElicitAnswer, Step};

/// The steps for `scenario`, or `None` for a scenario the probe does not
/// know (it then lists, which is what most scenarios observe).
pub fn steps(scenario: &str, context: &JsonObject) -> Option<Vec<Step>> {
    let call = |name: &str, arguments: Value| {
        Step::Call(
            name.to_owned(),
            arguments.as_object().cloned().unwrap_or_default(),
        )
    };
    Some(match scenario {
        "initialize" | "request-metadata" | "json-schema-ref-no-deref" => vec![Step::List],
        "json-schema-2020-12-preservation" => vec![Step::EchoSchema(
            "json_schema_2020_12_tool".to_owned(),
            "json_schema_echo".to_owned(),
        )],
        "tools_call" => vec![call("add_numbers", json!({"a": 2, "b": 3}))],
        "sse-retry" => vec![call("test_reconnection", json!({}))],
        "elicitation-sep1034-client-defaults" => vec![
            Step::Elicit(ElicitAnswer::Accept(JsonObject::new())),
            call("test_client_elicitation_defaults", json!({})),
        ],
        "sep-2322-client-request-state" => vec![
            Step::Elicit(ElicitAnswer::Accept(
                json!({"confirmed": true})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            )),
            call("test_mrtr_echo_state", json!({})),
            call("test_mrtr_no_state", json!({})),
            call("test_mrtr_unrelated", json!({})),
            call("test_mrtr_no_result_type", json!({})),
        ],
        "http-standard-headers" => vec![
            Step::List,
            call("test_headers", json!({})),
            Step::Prompts,
            Step::Prompt("test_prompt".to_owned(), JsonObject::new()),
            Step::Resources,
            Step::Read("file:///path/to/file%20name.txt".to_owned()),
        ],
        // The calls, arguments included, come with the scenario.
        "http-custom-headers" => context
            .get("toolCalls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| {
                let name = c.get("name")?.as_str()?;
                Some(call(name, c.get("arguments").cloned().unwrap_or(json!({}))))
            })
            .collect(),
        "http-invalid-tool-headers" => vec![call("valid_tool", json!({"region": "us-west1"}))],
        s if super::auth::is_auth(s) => super::auth::steps(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_header_calls_come_from_the_context() {
        let context = json!({"toolCalls": [
            {"name": "a", "arguments": {"region": "x"}},
            {"name": "b"},
        ]});
        let calls = steps("http-custom-headers", context.as_object().unwrap()).unwrap();
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].to_string(), "call a");
        assert!(steps("no-such-scenario", &JsonObject::new()).is_none());
    }
}
