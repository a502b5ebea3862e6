//! The committed `schemas/NAME.json` documents: what a server's `tools/list`
//! answers (name, description, inputSchema, outputSchema, annotations).
//!
//! Each server has a test that calls [`check_schema_file`]; it fails when the
//! committed file differs from what the code generates, and rewrites the file
//! instead when `NANOHERMES_UPDATE_SCHEMAS=1` is set. So one command
//! regenerates every schema: `NANOHERMES_UPDATE_SCHEMAS=1 cargo test schema`.
//! The check also refuses a document with a `format` JSON Schema does not
//! define ([`unknown_formats`]).
//!
//! **Standard schemas.** schemars derives `format` values from Rust types
//! (`uint64`, `int32`, `double`, ...) that no JSON Schema draft defines:
//! strict clients warn on each (the MCP Inspector prints one warning per
//! field per call) and some refuse them. [`Standard`] wraps a handler so
//! its `tools/list` answer carries only standard keywords
//! ([`standardize`]): an unsigned integer is `type: integer, minimum: 0`
//! (its `maximum` kept), and every other non-standard format is dropped.
//! Every way a server is served goes through it: stdio and HTTP
//! ([`crate::serve`]), in-process ([`crate::in_process`]), and
//! [`tools_document`], so the committed documents are what clients get.

use std::path::Path;

use rmcp::ServerHandler;
use rmcp::model::Tool;
use rmcp::service::{RoleServer, Service};
use serde_json::{Map, Value, json};

mod standard;

pub use standard::Standard;

/// The `format` values JSON Schema 2020-12 defines (§7.3 of the
/// validation vocabulary); any other is a vendor extension.
pub const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// The unsigned integer formats schemars emits: they become `minimum: 0`.
const UNSIGNED_FORMATS: &[&str] = &["uint8", "uint16", "uint32", "uint64", "uint128", "uint"];

/// Keywords whose value is data, not a schema: a `format` inside them is
/// not a schema's format.
const DATA_KEYWORDS: &[&str] = &["default", "examples", "const", "enum"];

/// Rewrites `schema` and every schema inside it to standard JSON Schema:
/// an unsigned Rust format becomes `minimum: 0` (a larger `minimum` and
/// any `maximum` are kept), and every `format` JSON Schema does not define
/// ([`STANDARD_FORMATS`]) is removed. What the schema accepts only widens
/// where a format no validator knows was ignored anyway.
pub fn standardize(schema: &mut Map<String, Value>) {
    if let Some(Value::String(format)) = schema.get("format")
        && !STANDARD_FORMATS.contains(&format.as_str())
    {
        let unsigned = UNSIGNED_FORMATS.contains(&format.as_str());
        schema.remove("format");
        let below_zero = schema
            .get("minimum")
            .and_then(Value::as_f64)
            .is_none_or(|minimum| minimum < 0.0);
        if unsigned && below_zero {
            schema.insert("minimum".into(), json!(0));
        }
    }
    for (key, value) in schema.iter_mut() {
        if !DATA_KEYWORDS.contains(&key.as_str()) {
            standardize_within(value);
        }
    }
}

/// [`standardize`] on a whole document (a schema, or a JSON value holding
/// schemas such as `schemas/config.json`); anything but an object is left
/// as it is.
pub fn standardize_value(document: &mut Value) {
    if let Value::Object(map) = document {
        standardize(map);
    }
}

/// Standardizes every schema object inside `value` (a keyword's value: a
/// schema, a map of schemas, or a list of them).
fn standardize_within(value: &mut Value) {
    match value {
        Value::Object(map) => {
            // A map of property names to schemas, or a schema: either way
            // every object inside is standardized, and a property named
            // `format` is an object, never the string a format is.
            standardize(map);
        }
        Value::Array(items) => items.iter_mut().for_each(standardize_within),
        _ => {}
    }
}

/// [`standardize`] on a tool's input and output schemas.
pub fn standardize_tool(tool: &mut Tool) {
    standardize(std::sync::Arc::make_mut(&mut tool.input_schema));
    if let Some(output) = &mut tool.output_schema {
        standardize(std::sync::Arc::make_mut(output));
    }
}

/// Every non-standard `format` in `document` (a schema, or a document
/// holding schemas), as `PATH: FORMAT` with a JSON pointer, in document
/// order. Data keywords (`default`, `enum`, ...) are not looked into.
pub fn unknown_formats(document: &Value) -> Vec<String> {
    let mut found = Vec::new();
    collect_formats(document, &mut String::new(), &mut found);
    found
}

fn collect_formats(value: &Value, path: &mut String, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                let len = path.len();
                path.push('/');
                path.push_str(&key.replace('~', "~0").replace('/', "~1"));
                match inner {
                    Value::String(format)
                        if key == "format" && !STANDARD_FORMATS.contains(&format.as_str()) =>
                    {
                        found.push(format!("{path}: {format}"));
                    }
                    _ if DATA_KEYWORDS.contains(&key.as_str()) => {}
                    _ => collect_formats(inner, path, found),
                }
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                collect_formats(inner, path, found);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// Environment variable that turns schema checks into schema rewrites.
pub const UPDATE_ENV: &str = "NANOHERMES_UPDATE_SCHEMAS";

/// Builds the schema document of `server` by asking it over MCP, exactly as
/// any client would see it.
pub async fn tools_document<S>(name: &str, server: S) -> anyhow::Result<Value>
where
    S: ServerHandler + Service<RoleServer>,
{
    // `connect` serves it through `Standard`, as every transport does.
    let client = crate::in_process::connect(server).await?;
    let tools = client.list_all_tools().await?;
    let _ = client.cancel().await;
    Ok(json!({ "server": name, "tools": tools }))
}

/// Renders a document the way it is committed: pretty JSON and a final newline.
pub fn render(document: &Value) -> String {
    let mut text = serde_json::to_string_pretty(document).unwrap_or_default();
    text.push('\n');
    text
}

/// Compares `document` with the committed file at `path`, or rewrites the
/// file when [`UPDATE_ENV`] is set. The error says which command regenerates.
pub fn check_schema_file(path: &Path, document: &Value) -> Result<(), String> {
    let unknown = unknown_formats(document);
    if !unknown.is_empty() {
        return Err(format!(
            "{} would carry formats JSON Schema does not define, which strict MCP clients warn \
             about or refuse: {}; generate it through mcp_tools::schema::standardize",
            path.display(),
            unknown.join(", ")
        ));
    }
    let expected = render(document);
    if std::env::var_os(UPDATE_ENV).is_some_and(|v| v == "1") {
        std::fs::write(path, &expected).map_err(|e| format!("{}: {e}", path.display()))?;
        return Ok(());
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    if committed == expected {
        Ok(())
    } else {
        Err(format!(
            "{} is out of date with the code; regenerate with `{UPDATE_ENV}=1 cargo test schema` and commit it",
            path.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn standard(mut schema: Value) -> Value {
        if let Value::Object(map) = &mut schema {
            standardize(map);
        }
        schema
    }

    #[test]
    fn rust_formats_become_standard_bounds_and_standard_formats_stay() {
        let schema = json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "format": "uint64", "minimum": 0},
                "port": {"type": ["integer", "null"], "format": "uint16", "minimum": 0, "maximum": 65535},
                "lines": {"type": "integer", "format": "uint32"},
                "at_least": {"type": "integer", "format": "uint", "minimum": 1},
                "id": {"type": "integer", "format": "int64"},
                "ratio": {"type": "number", "format": "double"},
                "when": {"type": "string", "format": "date-time"},
                "format": {"type": "string", "format": "uri"},
                "list": {"type": "array", "items": {"type": "integer", "format": "uint8", "maximum": 255}},
                "either": {"anyOf": [{"type": "integer", "format": "int32"}, {"type": "null"}]},
                "example": {"type": "object", "default": {"format": "uint64"}}
            },
            "$defs": {"n": {"type": "integer", "format": "uint64"}}
        });
        assert!(!unknown_formats(&schema).is_empty());
        let out = standard(schema);
        let props = &out["properties"];
        assert_eq!(props["count"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(
            props["port"],
            json!({"type": ["integer", "null"], "minimum": 0, "maximum": 65535})
        );
        assert_eq!(props["lines"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(
            props["at_least"],
            json!({"type": "integer", "minimum": 1}),
            "a larger minimum stays"
        );
        assert_eq!(props["id"], json!({"type": "integer"}));
        assert_eq!(props["ratio"], json!({"type": "number"}));
        assert_eq!(props["when"]["format"], "date-time");
        assert_eq!(props["format"], json!({"type": "string", "format": "uri"}));
        assert_eq!(
            props["list"]["items"],
            json!({"type": "integer", "maximum": 255, "minimum": 0})
        );
        assert_eq!(props["either"]["anyOf"][0], json!({"type": "integer"}));
        assert_eq!(
            props["example"]["default"],
            json!({"format": "uint64"}),
            "data is not a schema"
        );
        assert_eq!(out["$defs"]["n"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(unknown_formats(&out), Vec::<String>::new());
    }

    #[test]
    fn the_check_names_each_unknown_format_by_its_place() {
        let document =
            json!({"tools": [{"inputSchema": {"properties": {"n": {"format": "uint64"}}}}]});
        assert_eq!(
            unknown_formats(&document),
            vec!["/tools/0/inputSchema/properties/n/format: uint64".to_owned()]
        );
        let error = check_schema_file(Path::new("/nonexistent/x.json"), &document).unwrap_err();
        assert!(
            error.contains("/tools/0/inputSchema/properties/n/format: uint64"),
            "{error}"
        );
    }
}
