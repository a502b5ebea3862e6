//! The probe's script: one step a line.
//!
//! ```text
//! # a comment; blank lines are skipped
//! list                   the tools the server listed when the hub connected
//! call NAME [JSON]       tools/call (arguments: one JSON object, default {})
//! resources              resources/list
//! read URI               resources/read
//! prompts                prompts/list
//! prompt NAME [JSON]     prompts/get (arguments: one JSON object of strings)
//! elicit accept [JSON]   answer later elicitations: accept, with the form's
//!                        schema defaults overlaid with JSON (the default)
//! elicit decline         answer later elicitations: decline
//! elicit cancel          answer later elicitations: cancel
//! echo-schema TOOL VIA   call VIA with {"schema": TOOL's input schema as
//!                        the hub keeps it} (schema preservation checks)
//! ```

use anyhow::{Context as _, bail};
use rmcp::model::JsonObject;
use serde_json::Value;

/// How the probe answers an elicitation.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitAnswer {
    /// Accept: the schema's defaults, overlaid with these values.
    Accept(JsonObject),
    /// Decline.
    Decline,
    /// Cancel.
    Cancel,
}

impl Default for ElicitAnswer {
    fn default() -> ElicitAnswer {
        ElicitAnswer::Accept(JsonObject::new())
    }
}

/// One step of a script.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Print the tools listed at connect.
    List,
    /// Call a tool.
    Call(String, JsonObject),
    /// List resources.
    Resources,
    /// Read a resource.
    Read(String),
    /// List prompts.
    Prompts,
    /// Get a prompt.
    Prompt(String, JsonObject),
    /// Set how later elicitations are answered.
    Elicit(ElicitAnswer),
    /// Call the second tool with the first one's input schema as `schema`.
    EchoSchema(String, String),
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::List => f.write_str("list"),
            Step::Call(name, _) => write!(f, "call {name}"),
            Step::Resources => f.write_str("resources"),
            Step::Read(uri) => write!(f, "read {uri}"),
            Step::Prompts => f.write_str("prompts"),
            Step::Prompt(name, _) => write!(f, "prompt {name}"),
            Step::Elicit(ElicitAnswer::Accept(_)) => f.write_str("elicit accept"),
            Step::Elicit(ElicitAnswer::Decline) => f.write_str("elicit decline"),
            Step::Elicit(ElicitAnswer::Cancel) => f.write_str("elicit cancel"),
            Step::EchoSchema(tool, via) => write!(f, "echo-schema {tool} {via}"),
        }
    }
}

/// Parses a whole script; an error names the line.
pub fn parse(text: &str) -> anyhow::Result<Vec<Step>> {
    let mut steps = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        steps.push(parse_line(line).with_context(|| format!("script line {}: {line}", i + 1))?);
    }
    Ok(steps)
}

fn parse_line(line: &str) -> anyhow::Result<Step> {
    let (word, rest) = split_word(line);
    Ok(match word {
        "list" => no_more(rest, Step::List)?,
        "resources" => no_more(rest, Step::Resources)?,
        "prompts" => no_more(rest, Step::Prompts)?,
        "call" | "prompt" => {
            let (name, json) = split_word(rest);
            if name.is_empty() {
                bail!("`{word}` needs a name: `{word} NAME {{\"key\": \"value\"}}`");
            }
            let arguments = object(json)?;
            if word == "call" {
                Step::Call(name.to_owned(), arguments)
            } else {
                Step::Prompt(name.to_owned(), arguments)
            }
        }
        "echo-schema" => match rest.split_whitespace().collect::<Vec<_>>()[..] {
            [tool, via] => Step::EchoSchema(tool.to_owned(), via.to_owned()),
            _ => bail!("`echo-schema` needs two tool names: `echo-schema TOOL VIA`"),
        },
        "read" if !rest.is_empty() => Step::Read(rest.to_owned()),
        "read" => bail!("`read` needs a URI: `read test://static-text`"),
        "elicit" => {
            let (how, json) = split_word(rest);
            Step::Elicit(match how {
                "accept" => ElicitAnswer::Accept(object(json)?),
                "decline" => no_more(json, ElicitAnswer::Decline)?,
                "cancel" => no_more(json, ElicitAnswer::Cancel)?,
                _ => bail!("`elicit` takes accept [JSON], decline or cancel"),
            })
        }
        _ => bail!(
            "unknown step {word:?}; steps: list, call NAME [JSON], resources, read URI, prompts, \
             prompt NAME [JSON], elicit accept [JSON] | decline | cancel, echo-schema TOOL VIA"
        ),
    })
}

fn split_word(text: &str) -> (&str, &str) {
    match text.split_once(char::is_whitespace) {
        Some((word, rest)) => (word, rest.trim()),
        None => (text, ""),
    }
}

fn no_more<T>(rest: &str, value: T) -> anyhow::Result<T> {
    if rest.is_empty() {
        Ok(value)
    } else {
        bail!("unexpected {rest:?} at the end of the line")
    }
}

/// One JSON object, or `{}` for nothing.
fn object(json: &str) -> anyhow::Result<JsonObject> {
    if json.is_empty() {
        return Ok(JsonObject::new());
    }
    match serde_json::from_str::<Value>(json) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => bail!("the arguments must be one JSON object such as {{\"a\": 1}}"),
        Err(e) => bail!("the arguments are not valid JSON ({e})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_step_parses_and_errors_name_the_line() {
        let steps = parse(
            "# probe\n\nlist\ncall add {\"a\": 1}\ncall bare\nread file:///a%20b.txt\n\
             prompt p {\"x\": \"y\"}\nelicit accept {\"ok\": true}\nelicit decline\nresources\nprompts\necho-schema a b\n",
        )
        .unwrap();
        let object = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(
            steps,
            vec![
                Step::List,
                Step::Call("add".into(), object(json!({"a": 1}))),
                Step::Call("bare".into(), JsonObject::new()),
                Step::Read("file:///a%20b.txt".into()),
                Step::Prompt("p".into(), object(json!({"x": "y"}))),
                Step::Elicit(ElicitAnswer::Accept(object(json!({"ok": true})))),
                Step::Elicit(ElicitAnswer::Decline),
                Step::Resources,
                Step::Prompts,
                Step::EchoSchema("a".into(), "b".into()),
            ]
        );
        let error = format!("{:#}", parse("list\ncall x [1]\n").unwrap_err());
        assert!(error.starts_with("script line 2: call x [1]: "), "{error}");
        assert!(parse("lst").is_err());
        assert!(parse("list extra").is_err());
    }
}
