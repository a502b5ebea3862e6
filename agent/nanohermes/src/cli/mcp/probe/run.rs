//! Runs a script's steps against the hub's one server and reports each:
//! `ok STEP` with what came back on stdout, `FAILED STEP: why` on stderr.

use std::io::Write as _;
use std::sync::Arc;

use rmcp::model::JsonObject;
use serde_json::{Value, json};

use super::elicit::ScriptedElicitor;
use super::script::Step;
use nanohermes_hub::{Hub, resources};

/// What a script run came to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Steps that worked.
    pub passed: usize,
    /// Steps that failed.
    pub failed: usize,
}

/// Runs every step (a failed step does not stop the rest: each scenario
/// check is independent) on server `server` of `hub`.
pub async fn run(
    hub: &Hub,
    server: &str,
    elicitor: &Arc<ScriptedElicitor>,
    steps: &[Step],
) -> Outcome {
    let mut outcome = Outcome::default();
    for step in steps {
        match one(hub, server, elicitor, step).await {
            Ok(text) => {
                outcome.passed += 1;
                report_ok(step, &text);
            }
            Err(why) => {
                outcome.failed += 1;
                eprintln!("FAILED {step}: {why}");
            }
        }
    }
    outcome
}

async fn one(
    hub: &Hub,
    server: &str,
    elicitor: &ScriptedElicitor,
    step: &Step,
) -> Result<String, String> {
    match step {
        Step::List => Ok(list(hub, server)),
        Step::Call(tool, arguments) => call(hub, server, tool, arguments.clone()).await,
        Step::Resources => meta(hub, resources::LIST_RESOURCES, json!({"server": server})).await,
        Step::Read(uri) => {
            meta(
                hub,
                resources::READ_RESOURCE,
                json!({"server": server, "uri": uri}),
            )
            .await
        }
        Step::Prompts => meta(hub, resources::LIST_PROMPTS, json!({"server": server})).await,
        Step::Prompt(name, arguments) => {
            meta(
                hub,
                resources::GET_PROMPT,
                json!({"server": server, "name": name, "arguments": arguments}),
            )
            .await
        }
        Step::Elicit(answer) => {
            elicitor.set(answer.clone());
            Ok(String::new())
        }
        Step::EchoSchema(tool, via) => {
            let schema = hub
                .tools()
                .iter()
                .find(|t| t.server == server && t.raw_name == *tool)
                .map(|t| Value::Object(t.input_schema.as_ref().clone()))
                .ok_or_else(|| format!("the server lists no usable tool {tool}"))?;
            let mut arguments = JsonObject::new();
            arguments.insert("schema".to_owned(), schema);
            call(hub, server, via, arguments).await
        }
    }
}

/// The server's tools as the hub keeps them, one line each (name, first
/// line of the description): the ones whose declaration it rejected (an
/// invalid `x-mcp-header`, say) are not among them.
fn list(hub: &Hub, server: &str) -> String {
    hub.tools()
        .iter()
        .filter(|t| t.server == server)
        .map(|t| {
            let first = t.description.lines().next().unwrap_or_default();
            format!("{}: {first}", t.raw_name)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Calls a tool the server listed; a tool it did not list (or the hub
/// dropped) is refused, as for the model: listing is advertising, the call
/// is the gate.
async fn call(
    hub: &Hub,
    server: &str,
    tool: &str,
    arguments: JsonObject,
) -> Result<String, String> {
    let listed: Vec<&str> = hub
        .tools()
        .iter()
        .filter(|t| t.server == server)
        .map(|t| t.raw_name.as_str())
        .collect();
    if !listed.contains(&tool) {
        return Err(format!(
            "the server lists no usable tool {tool}; usable: {}",
            if listed.is_empty() {
                "(none)".to_owned()
            } else {
                listed.join(", ")
            }
        ));
    }
    let result = hub
        .call_raw(server, tool, arguments)
        .await
        .map_err(|e| format!("{e:#}"))?;
    let text = nanohermes_hub::result::render(&result, usize::MAX);
    if result.is_error == Some(true) {
        return Err(format!(
            "the tool reported an error: {}",
            text.strip_prefix("ERROR: ").unwrap_or(&text)
        ));
    }
    Ok(text)
}

/// Runs one of the hub's resource and prompt meta-tools.
async fn meta(hub: &Hub, tool: &str, arguments: Value) -> Result<String, String> {
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    let text = hub.call(tool, arguments).await;
    match text.strip_prefix("ERROR: ") {
        Some(error) => Err(error.to_owned()),
        None if text.contains("\nERROR: ") => Err(text),
        None => Ok(text),
    }
}

fn report_ok(step: &Step, text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "ok {step}");
    for line in text.lines() {
        let _ = writeln!(out, "  {line}");
    }
    let _ = out.flush();
}
