//! Declarations trimmed to what the model needs: every request carries
//! every tool's schema, so bytes here are paid on every turn.
//!
//! [`trim`] runs after [`super::schema::sanitize`] and only removes what
//! carries no meaning for a model filling in arguments:
//!
//! - on a property that is not `required`, the `null` alternative
//!   (`"type": ["integer", "null"]` becomes `"integer"`, an
//!   `anyOf: [X, {"type": "null"}]` becomes `X`) and `"default": null`:
//!   leaving the property out already says "none"; a `null` in its `enum`
//!   goes with it;
//! - `format` values schemars derives from Rust integer and float types
//!   (`uint32`, `int64`, `double`, …), which are not JSON Schema formats and
//!   which some providers reject (our own servers no longer send them:
//!   `mcp_tools::schema::standardize` turns an unsigned one into
//!   `"minimum": 0`, but an external server may), and the `"minimum": 0` of
//!   an integer, standardized or next to an unsigned format: it only says
//!   "not negative" of a count or an id, which the description and the
//!   server's error already cover, at 12 bytes a field on every request.
//!
//! Descriptions, enums, every other bound and every other keyword stay.

use serde_json::{Map, Value};

/// Rust-type formats schemars emits; no provider gives them meaning.
const RUST_FORMATS: &[&str] = &[
    "int8", "int16", "int32", "int64", "int128", "int", "uint8", "uint16", "uint32", "uint64",
    "uint128", "uint", "float", "double",
];

/// Returns `schema` without the parts the model does not need (see the
/// module docs). The result accepts every value the input accepted, except
/// an explicit `null` for an optional property.
pub fn trim(schema: &Value) -> Value {
    let mut out = schema.clone();
    trim_in_place(&mut out);
    out
}

fn trim_in_place(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if let Some(Value::String(format)) = map.get("format")
        && RUST_FORMATS.contains(&format.as_str())
    {
        map.remove("format");
    }
    if is_integer(map) && map.get("minimum").and_then(Value::as_f64) == Some(0.0) {
        map.remove("minimum");
    }
    let required: Vec<String> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if !required.contains(name) {
                drop_null_alternative(prop);
            }
            trim_in_place(prop);
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(sub) = map.get_mut(key) {
            trim_in_place(sub);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(subs)) = map.get_mut(key) {
            subs.iter_mut().for_each(trim_in_place);
        }
    }
}

/// `T | null` → `T` for a property the model may simply leave out.
fn drop_null_alternative(prop: &mut Value) {
    let Value::Object(map) = prop else { return };
    if map.get("default") == Some(&Value::Null) {
        map.remove("default");
    }
    if let Some(Value::Array(types)) = map.get("type") {
        let rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        match rest.len() {
            0 => {}
            1 => {
                map.insert("type".into(), rest[0].clone());
            }
            _ => {
                map.insert("type".into(), Value::Array(rest));
            }
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && values.len() > 1
    {
        values.retain(|v| !v.is_null());
    }
    let single_variant = match map.get("anyOf") {
        Some(Value::Array(variants)) => {
            let rest: Vec<&Value> = variants.iter().filter(|v| !is_null_schema(v)).collect();
            (rest.len() == 1 && variants.len() == 2).then(|| rest[0].clone())
        }
        _ => None,
    };
    if let Some(Value::Object(variant)) = single_variant {
        map.remove("anyOf");
        // Keywords beside the anyOf (description) win over the variant's.
        let mut merged: Map<String, Value> = variant;
        for (k, v) in std::mem::take(map) {
            merged.insert(k, v);
        }
        *map = merged;
    }
}

/// Whether the schema's `type` is `integer`, alone or with `null`.
fn is_integer(map: &Map<String, Value>) -> bool {
    match map.get("type") {
        Some(Value::String(t)) => t == "integer",
        Some(Value::Array(types)) => {
            types.iter().any(|t| t == "integer")
                && types.iter().all(|t| t == "integer" || t == "null")
        }
        _ => false,
    }
}

fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").is_some_and(|t| t == "null")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn optional_properties_lose_their_null_alternative_and_null_default() {
        let input = json!({"type": "object", "properties": {
            "n": {"type": ["integer", "null"], "format": "uint32", "minimum": 0, "default": null, "description": "d"},
            "kind": {"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}], "description": "k"},
        }});
        let expected = json!({"type": "object", "properties": {
            "n": {"type": "integer", "description": "d"},
            "kind": {"type": "string", "enum": ["a", "b"], "description": "k"},
        }});
        assert_eq!(trim(&input), expected);
    }

    #[test]
    fn an_optional_enum_loses_its_null_value_with_its_null_type() {
        // What schemars emits for `Option<Kind>` with an undocumented enum.
        let input = json!({"type": "object", "properties": {
            "kind": {"type": ["string", "null"], "enum": ["a", "b", null]},
        }});
        let expected = json!({"type": "object", "properties": {
            "kind": {"type": "string", "enum": ["a", "b"]},
        }});
        assert_eq!(trim(&input), expected);
    }

    #[test]
    fn only_the_zero_minimum_of_an_integer_goes() {
        let input = json!({"type": "object", "required": ["a", "b", "c", "d", "e", "f"], "properties": {
            "a": {"type": "integer", "format": "uint32", "minimum": 0},
            "b": {"type": "integer", "format": "uint", "minimum": 1, "maximum": 10},
            "c": {"type": "integer", "format": "int64", "minimum": 0},
            "d": {"type": "integer", "minimum": 0},
            "e": {"type": "number", "minimum": 0},
            "f": {"type": ["integer", "null"], "minimum": 0, "maximum": 65535},
        }});
        let expected = json!({"type": "object", "required": ["a", "b", "c", "d", "e", "f"], "properties": {
            "a": {"type": "integer"},
            "b": {"type": "integer", "minimum": 1, "maximum": 10},
            "c": {"type": "integer"},
            "d": {"type": "integer"},
            "e": {"type": "number", "minimum": 0},
            "f": {"type": ["integer", "null"], "maximum": 65535},
        }});
        assert_eq!(trim(&input), expected);
    }

    #[test]
    fn required_properties_keep_null_when_they_allow_it() {
        let input = json!({"type": "object", "required": ["n"], "properties": {
            "n": {"type": ["integer", "null"], "default": null},
        }});
        assert_eq!(trim(&input), input);
    }

    #[test]
    fn nested_items_are_trimmed_and_real_formats_kept() {
        let input = json!({"type": "object", "properties": {
            "todos": {"type": "array", "items": {"type": "object", "properties": {
                "n": {"type": ["number", "null"], "format": "double"},
                "url": {"type": "string", "format": "uri"},
            }}},
        }});
        let expected = json!({"type": "object", "properties": {
            "todos": {"type": "array", "items": {"type": "object", "properties": {
                "n": {"type": "number"},
                "url": {"type": "string", "format": "uri"},
            }}},
        }});
        assert_eq!(trim(&input), expected);
    }
}
