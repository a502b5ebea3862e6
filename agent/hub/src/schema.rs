//! Input schemas made safe to send to any OpenAI-compatible provider.
//!
//! schemars emits draft 2020-12 with `$schema`, `$defs` and `$ref`; external
//! servers send whatever they like. Providers differ in what they accept, and
//! one schema a provider rejects fails every request that declares it, so each
//! tool's schema goes through [`sanitize`] on its own:
//!
//! - `$schema`, `$id`, `$comment`, `$defs` and `definitions` are dropped;
//! - every local `$ref` (`#/$defs/X`, `#/definitions/X`, any `#/...` pointer)
//!   is replaced by what it points at, with the keywords next to the `$ref`
//!   kept on top; a recursive reference, or one nested deeper than
//!   [`MAX_REF_DEPTH`], becomes a stub holding only the target's `type`;
//! - a reference that cannot be resolved becomes `{}` (any value) and is
//!   reported;
//! - the root gets `"type": "object"` when it has none, and every object
//!   schema gets a `properties` map when it has none;
//! - `allOf`/`anyOf`/`oneOf` at the root (which OpenAI refuses there) are
//!   merged into the root's `properties`: every variant's properties are
//!   offered, and a property is required when `allOf` requires it or every
//!   `anyOf`/`oneOf` variant does; `not` and `enum` at the root are dropped;
//! - a root that is not an object schema is replaced by an empty object
//!   schema and reported;
//! - a schema whose rewrite would exceed [`MAX_SCHEMA_NODES`] (a hostile
//!   server can make `$ref` expansion exponential: each definition
//!   referencing the next several times) is replaced, as a whole, by a
//!   permissive object schema whose `description` says so, and reported.
//!   The walk stops as soon as the budget is spent, so the cost is bounded
//!   whatever the input.
//!
//! Only schema positions are rewritten: `enum`, `const`, `default` and
//! `examples` values, and the keys of `properties`, are data and stay as they
//! are, even when they look like `$ref`.

use serde_json::{Map, Value, json};

/// How many `$ref`s may be expanded inside one another before the next one
/// becomes a stub. Bounds the output of recursive and deeply chained
/// definitions.
pub const MAX_REF_DEPTH: usize = 8;

/// How deep schemas may nest before the rest is replaced by `{}`; protects
/// the walk from a hostile schema.
const MAX_NESTING: usize = 64;

/// How many schema nodes (and data values inside them) one rewritten schema
/// may hold. A real tool's schema has tens to hundreds; past this the input
/// is treated as hostile or broken and replaced by [`too_large`].
pub const MAX_SCHEMA_NODES: usize = 10_000;

/// Keywords that never reach the provider.
const DROPPED: &[&str] = &["$schema", "$id", "$comment", "$defs", "definitions"];

/// The sanitised schema and the problems found on the way (an unresolvable
/// reference, a root that is not an object). Expected rewrites (inlining,
/// recursion stubs, a defaulted root type) are not problems.
#[derive(Debug, Clone, PartialEq)]
pub struct Sanitized {
    /// The schema to declare as the function's `parameters`.
    pub schema: Value,
    /// One line per problem, for the hub's warnings.
    pub problems: Vec<String>,
}

/// Sanitises one tool's input schema (see the module docs). Total: any JSON
/// object yields a usable object schema.
pub fn sanitize(input: &Map<String, Value>) -> Sanitized {
    let root = Value::Object(input.clone());
    let mut walker = Walker {
        root: &root,
        ref_stack: Vec::new(),
        problems: Vec::new(),
        nodes: 0,
    };
    let schema = walker.schema(&root, 0);
    if walker.over_budget() {
        return Sanitized {
            schema: too_large(),
            problems: vec![format!(
                "input schema expands to more than {MAX_SCHEMA_NODES} nodes (too many or too deeply nested $refs); declared as any object"
            )],
        };
    }
    let mut problems = walker.problems;
    let schema = fix_root(schema, &mut problems);
    Sanitized { schema, problems }
}

/// What a schema over the node budget is declared as: any object, with a
/// note for the model, since the server still checks the arguments.
fn too_large() -> Value {
    json!({
        "type": "object",
        "properties": {},
        "additionalProperties": true,
        "description": "This tool's input schema was too large to declare; pass the arguments its description names as one JSON object"
    })
}

fn fix_root(schema: Value, problems: &mut Vec<String>) -> Value {
    let Value::Object(mut map) = schema else {
        problems.push(format!(
            "input schema {schema} is not an object schema; declared as an empty object"
        ));
        return json!({"type": "object", "properties": {}});
    };
    let is_object = match map.get("type") {
        None => true,
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        Some(_) => false,
    };
    if !is_object {
        problems.push(format!(
            "input schema has type {}, not object; declared as an empty object",
            map["type"]
        ));
        return json!({"type": "object", "properties": {}});
    }
    map.insert("type".into(), json!("object"));
    map.entry("properties").or_insert_with(|| json!({}));
    for keyword in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(variants)) = map.remove(keyword) {
            merge_variants(&mut map, keyword == "allOf", &variants);
        }
    }
    map.remove("not");
    map.remove("enum");
    Value::Object(map)
}

/// Folds the object variants of a root combinator into the root's
/// `properties` and `required` (see the module docs). A property the root
/// already declares keeps its schema; one that variants declare differently
/// gets the `anyOf` of their schemas, or an `enum` when they are all
/// `const`s (the tag of a tagged enum).
fn merge_variants(root: &mut Map<String, Value>, all_of: bool, variants: &[Value]) {
    let names = |schema: &Value| -> Vec<String> {
        schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|n| n.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut required = root
        .get("required")
        .map(|r| names(&json!({ "required": r })))
        .unwrap_or_default();
    let mut common: Option<Vec<String>> = None;
    let mut collected: Vec<(String, Vec<Value>)> = Vec::new();
    for variant in variants {
        if let Some(Value::Object(properties)) = variant.get("properties") {
            for (name, schema) in properties {
                match collected.iter_mut().find(|(n, _)| n == name) {
                    Some((_, schemas)) if !schemas.contains(schema) => schemas.push(schema.clone()),
                    Some(_) => {}
                    None => collected.push((name.clone(), vec![schema.clone()])),
                }
            }
        }
        let variant_required = names(variant);
        if all_of {
            required.extend(variant_required);
        } else {
            common = Some(match common {
                None => variant_required,
                Some(so_far) => so_far
                    .into_iter()
                    .filter(|n| variant_required.contains(n))
                    .collect(),
            });
        }
    }
    if let Some(Value::Object(properties)) = root.get_mut("properties") {
        for (name, schemas) in collected {
            properties.entry(name).or_insert_with(|| combine(schemas));
        }
    }
    required.extend(common.unwrap_or_default());
    let mut seen = std::collections::HashSet::new();
    required.retain(|n| seen.insert(n.clone()));
    if required.is_empty() {
        root.remove("required");
    } else {
        root.insert("required".into(), json!(required));
    }
}

/// One schema accepting what any of `schemas` accepts.
fn combine(mut schemas: Vec<Value>) -> Value {
    if schemas.len() == 1 {
        return schemas.remove(0);
    }
    let consts: Option<Vec<Value>> = schemas.iter().map(|s| s.get("const").cloned()).collect();
    match consts {
        Some(values) => {
            let mut merged = json!({ "enum": values });
            if let Some(t) = schemas[0].get("type")
                && schemas.iter().all(|s| s.get("type") == Some(t))
            {
                merged["type"] = t.clone();
            }
            merged
        }
        None => json!({ "anyOf": schemas }),
    }
}

struct Walker<'a> {
    root: &'a Value,
    ref_stack: Vec<String>,
    problems: Vec<String>,
    /// Nodes written so far, against [`MAX_SCHEMA_NODES`].
    nodes: usize,
}

impl Walker<'_> {
    /// Counts `weight` more nodes of output; false once over the budget.
    fn spend(&mut self, weight: usize) -> bool {
        self.nodes = self.nodes.saturating_add(weight);
        !self.over_budget()
    }

    fn over_budget(&self) -> bool {
        self.nodes > MAX_SCHEMA_NODES
    }

    /// Rewrites one schema (an object or a boolean schema).
    fn schema(&mut self, schema: &Value, depth: usize) -> Value {
        // Once over budget the result is thrown away: stop working at once.
        if !self.spend(1) {
            return json!({});
        }
        if depth > MAX_NESTING {
            self.problems.push(format!(
                "schema nested deeper than {MAX_NESTING} levels; cut to {{}}"
            ));
            return json!({});
        }
        let Value::Object(map) = schema else {
            return schema.clone();
        };
        let mut out = match map.get("$ref") {
            Some(Value::String(reference)) => match self.expand(reference, depth) {
                Value::Object(expanded) => expanded,
                // A boolean schema behind a `$ref`: siblings cannot be merged
                // into it, and `true`/`false` already says everything.
                other => return other,
            },
            _ => Map::new(),
        };
        for (key, value) in map {
            if key == "$ref" || DROPPED.contains(&key.as_str()) {
                continue;
            }
            let value = self.keyword(key, value, depth);
            out.insert(key.clone(), value);
        }
        if out.get("type").is_some_and(|t| t == "object") && !out.contains_key("properties") {
            out.insert("properties".into(), json!({}));
        }
        Value::Object(out)
    }

    /// Rewrites the value of `key` when that keyword holds schemas; leaves
    /// data keywords alone.
    fn keyword(&mut self, key: &str, value: &Value, depth: usize) -> Value {
        match key {
            "properties" | "patternProperties" | "dependentSchemas" => match value {
                Value::Object(map) => Value::Object(
                    map.iter()
                        .map(|(name, schema)| (name.clone(), self.schema(schema, depth + 1)))
                        .collect(),
                ),
                other => other.clone(),
            },
            "anyOf" | "oneOf" | "allOf" | "prefixItems" | "items" | "additionalItems" => {
                match value {
                    Value::Array(schemas) => Value::Array(
                        schemas
                            .iter()
                            .map(|schema| self.schema(schema, depth + 1))
                            .collect(),
                    ),
                    schema => self.schema(schema, depth + 1),
                }
            }
            "additionalProperties"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames" => self.schema(value, depth + 1),
            // Data is copied as it is, but a copy per expansion of a `$ref`
            // counts too.
            _ if self.spend(weight(value)) => value.clone(),
            _ => Value::Null,
        }
    }

    /// What `reference` stands for, already rewritten.
    fn expand(&mut self, reference: &str, depth: usize) -> Value {
        let Some(pointer) = reference.strip_prefix('#') else {
            self.problems
                .push(format!("$ref {reference:?} is not local; replaced by {{}}"));
            return json!({});
        };
        let Some(target) = self.root.pointer(pointer) else {
            self.problems.push(format!(
                "$ref {reference:?} points nowhere; replaced by {{}}"
            ));
            return json!({});
        };
        if self.ref_stack.iter().any(|r| r == reference) || self.ref_stack.len() >= MAX_REF_DEPTH {
            return stub(target);
        }
        self.ref_stack.push(reference.to_string());
        let expanded = self.schema(target, depth + 1);
        self.ref_stack.pop();
        expanded
    }
}

/// How many JSON values `value` holds, itself included.
fn weight(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(weight).sum::<usize>(),
        Value::Object(map) => 1 + map.values().map(weight).sum::<usize>(),
        _ => 1,
    }
}

/// What a reference is cut to when it cannot be expanded further: the
/// target's `type` only, so the model still knows the shape's kind.
fn stub(target: &Value) -> Value {
    match target.get("type") {
        Some(Value::String(t)) if t == "object" => json!({"type": "object", "properties": {}}),
        Some(t) => json!({ "type": t }),
        None => json!({}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: Value, expected: Value) {
        let Value::Object(map) = input else {
            panic!("test input must be an object")
        };
        let out = sanitize(&map);
        assert_eq!(
            out.schema,
            expected,
            "\nactual:\n{}\n",
            serde_json::to_string_pretty(&out.schema).unwrap_or_default()
        );
        assert!(out.problems.is_empty(), "{:?}", out.problems);
    }

    fn problems(input: Value) -> Sanitized {
        let Value::Object(map) = input else {
            panic!("test input must be an object")
        };
        sanitize(&map)
    }

    #[test]
    fn schema_keyword_and_defs_are_dropped_and_refs_inlined() {
        // What schemars emits for a struct with an optional enum field.
        check(
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "$defs": {"Op": {"enum": ["add", "sub"], "type": "string"}},
                "type": "object",
                "properties": {
                    "a": {"type": "integer", "format": "int64", "description": "Left"},
                    "op": {"anyOf": [{"$ref": "#/$defs/Op"}, {"type": "null"}], "description": "Operation"}
                },
                "required": ["a"]
            }),
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": "integer", "format": "int64", "description": "Left"},
                    "op": {"anyOf": [{"enum": ["add", "sub"], "type": "string"}, {"type": "null"}], "description": "Operation"}
                },
                "required": ["a"]
            }),
        );
    }

    #[test]
    fn keywords_next_to_a_ref_win_over_the_target() {
        check(
            json!({
                "type": "object",
                "properties": {"mode": {"$ref": "#/definitions/Mode", "description": "How"}},
                "definitions": {"Mode": {"type": "string", "description": "Old"}}
            }),
            json!({
                "type": "object",
                "properties": {"mode": {"type": "string", "description": "How"}}
            }),
        );
    }

    #[test]
    fn refs_inside_refs_are_inlined_too() {
        check(
            json!({
                "type": "object",
                "properties": {"outer": {"$ref": "#/$defs/Outer"}},
                "$defs": {
                    "Outer": {"type": "object", "properties": {"inner": {"$ref": "#/$defs/Inner"}}},
                    "Inner": {"type": "array", "items": {"$ref": "#/$defs/Leaf"}},
                    "Leaf": {"type": "boolean"}
                }
            }),
            json!({
                "type": "object",
                "properties": {"outer": {"type": "object", "properties": {
                    "inner": {"type": "array", "items": {"type": "boolean"}}
                }}}
            }),
        );
    }

    #[test]
    fn a_recursive_ref_is_bounded_by_a_stub() {
        check(
            json!({
                "type": "object",
                "properties": {"tree": {"$ref": "#/$defs/Node"}},
                "$defs": {"Node": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
                    }
                }}
            }),
            json!({
                "type": "object",
                "properties": {"tree": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "children": {"type": "array", "items": {"type": "object", "properties": {}}}
                    }
                }}
            }),
        );
    }

    #[test]
    fn mutually_recursive_refs_terminate() {
        let out = problems(json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/A"}},
            "$defs": {
                "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}},
                "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}
            }
        }));
        assert_eq!(
            out.schema["properties"]["a"]["properties"]["b"]["properties"]["a"],
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn a_long_chain_of_refs_is_cut_at_the_depth_bound() {
        let mut defs = Map::new();
        for i in 0..20 {
            defs.insert(
                format!("D{i}"),
                json!({"type": "object", "properties": {"next": {"$ref": format!("#/$defs/D{}", i + 1)}}}),
            );
        }
        defs.insert("D20".into(), json!({"type": "string"}));
        let out = problems(json!({"$ref": "#/$defs/D0", "$defs": defs}));
        let mut node = &out.schema;
        let mut levels = 0;
        while let Some(next) = node.get("properties").and_then(|p| p.get("next")) {
            node = next;
            levels += 1;
        }
        assert_eq!(levels, MAX_REF_DEPTH);
        assert_eq!(node, &json!({"type": "object", "properties": {}}));
    }

    #[test]
    fn a_root_ref_is_inlined() {
        check(
            json!({"$ref": "#/$defs/Args", "$defs": {"Args": {"type": "object", "properties": {"x": {"type": "string"}}}}}),
            json!({"type": "object", "properties": {"x": {"type": "string"}}}),
        );
    }

    #[test]
    fn a_missing_root_type_defaults_to_object() {
        check(
            json!({"properties": {"path": {"type": "string"}}}),
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        );
    }

    #[test]
    fn an_empty_schema_becomes_an_empty_object_schema() {
        check(json!({}), json!({"type": "object", "properties": {}}));
    }

    #[test]
    fn object_schemas_without_properties_get_an_empty_map() {
        check(
            json!({"type": "object", "properties": {"env": {"type": "object", "additionalProperties": {"type": "string"}}}}),
            json!({"type": "object", "properties": {"env": {"type": "object", "additionalProperties": {"type": "string"}, "properties": {}}}}),
        );
    }

    #[test]
    fn a_nullable_object_root_is_declared_as_object() {
        check(
            json!({"type": ["object", "null"], "properties": {}}),
            json!({"type": "object", "properties": {}}),
        );
    }

    #[test]
    fn data_that_looks_like_a_ref_is_left_alone() {
        check(
            json!({"type": "object", "properties": {
                "$ref": {"type": "string", "enum": ["$ref"], "default": {"$ref": "#/nowhere"}}
            }}),
            json!({"type": "object", "properties": {
                "$ref": {"type": "string", "enum": ["$ref"], "default": {"$ref": "#/nowhere"}}
            }}),
        );
    }

    #[test]
    fn an_unresolvable_ref_becomes_any_and_is_reported() {
        let out = problems(json!({
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/Missing"}, "y": {"$ref": "https://example.com/s.json"}}
        }));
        assert_eq!(out.schema["properties"]["x"], json!({}));
        assert_eq!(out.schema["properties"]["y"], json!({}));
        assert_eq!(out.problems.len(), 2, "{:?}", out.problems);
        assert!(
            out.problems[0].contains("#/$defs/Missing"),
            "{:?}",
            out.problems
        );
    }

    #[test]
    fn a_non_object_root_is_replaced_and_reported() {
        let out = problems(json!({"type": "string"}));
        assert_eq!(out.schema, json!({"type": "object", "properties": {}}));
        assert_eq!(out.problems.len(), 1);
        assert!(out.problems[0].contains("not object"), "{:?}", out.problems);
    }

    #[test]
    fn root_one_of_is_merged_into_properties() {
        // What schemars emits for an internally tagged enum.
        check(
            json!({
                "oneOf": [
                    {"type": "object", "properties": {"action": {"const": "read"}, "path": {"type": "string"}}, "required": ["action", "path"]},
                    {"type": "object", "properties": {"action": {"const": "list"}, "depth": {"type": "integer"}}, "required": ["action"]}
                ]
            }),
            json!({
                "type": "object",
                "properties": {
                    "action": {"enum": ["read", "list"]},
                    "path": {"type": "string"},
                    "depth": {"type": "integer"}
                },
                "required": ["action"]
            }),
        );
    }

    #[test]
    fn root_any_of_offers_differing_property_schemas_as_any_of() {
        check(
            json!({
                "anyOf": [
                    {"properties": {"x": {"type": "string"}}, "required": ["x"]},
                    {"properties": {"x": {"type": "integer"}}, "required": ["x"]}
                ]
            }),
            json!({
                "type": "object",
                "properties": {"x": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
                "required": ["x"]
            }),
        );
    }

    #[test]
    fn root_all_of_requires_what_any_part_requires() {
        check(
            json!({
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "required": ["a"],
                "allOf": [{"$ref": "#/$defs/B"}],
                "$defs": {"B": {"type": "object", "properties": {"b": {"type": "integer"}}, "required": ["b"]}}
            }),
            json!({
                "type": "object",
                "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
                "required": ["a", "b"]
            }),
        );
    }

    /// Definition `D{i}` refers to `D{i+1}` `fan_out` times, `levels` deep.
    fn ref_bomb(levels: usize, fan_out: usize) -> Value {
        let mut defs = Map::new();
        for i in 0..levels {
            let properties: Map<String, Value> = (0..fan_out)
                .map(|k| {
                    (
                        format!("p{k}"),
                        json!({"$ref": format!("#/$defs/D{}", i + 1), "description": "x".repeat(20)}),
                    )
                })
                .collect();
            defs.insert(
                format!("D{i}"),
                json!({"type": "object", "properties": properties, "enum": [[1, 2, 3], [4, 5, 6]]}),
            );
        }
        defs.insert(format!("D{levels}"), json!({"type": "string"}));
        json!({"type": "object", "properties": {"root": {"$ref": "#/$defs/D0"}}, "$defs": defs})
    }

    fn nodes(value: &Value) -> usize {
        weight(value)
    }

    #[test]
    fn a_ref_bomb_is_cut_by_the_node_budget_and_declared_as_any_object() {
        // 30 levels, each definition referring to the next ten times: 10^30
        // nodes if expanded, far beyond the depth bound's help (10^8).
        let out = problems(ref_bomb(30, 10));
        assert_eq!(out.schema, too_large());
        assert_eq!(out.problems.len(), 1, "{:?}", out.problems);
        assert!(
            out.problems[0].contains("more than 10000 nodes"),
            "{:?}",
            out.problems
        );
    }

    #[test]
    fn a_doubling_ref_chain_stays_within_the_node_budget() {
        // Each definition refers to the next twice, 30 levels deep: the
        // output is bounded whichever way it is cut.
        let out = problems(ref_bomb(30, 2));
        assert!(
            nodes(&out.schema) <= MAX_SCHEMA_NODES,
            "{} nodes",
            nodes(&out.schema)
        );
        assert_eq!(out.schema["type"], "object");
    }

    #[test]
    fn a_large_but_honest_schema_is_kept() {
        let properties: Map<String, Value> = (0..500)
            .map(|k| {
                (
                    format!("p{k}"),
                    json!({"type": "string", "description": "a field"}),
                )
            })
            .collect();
        let out = problems(json!({"type": "object", "properties": properties}));
        assert_eq!(out.schema["properties"].as_object().unwrap().len(), 500);
        assert!(out.problems.is_empty(), "{:?}", out.problems);
    }

    #[test]
    fn a_ref_to_a_boolean_schema_becomes_that_boolean() {
        check(
            json!({"type": "object", "properties": {"any": {"$ref": "#/$defs/Any"}}, "$defs": {"Any": true}}),
            json!({"type": "object", "properties": {"any": true}}),
        );
    }
}
