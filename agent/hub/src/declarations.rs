//! The hub's OpenAI `tools` array, with its JSON kept for the requests that
//! resend it: about 10 KB that would otherwise be serialised again at every
//! step. Any mutable access drops the kept JSON, so it cannot go stale
//! however the hub rebuilds the array.

use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

use serde_json::Value;
use serde_json::value::RawValue;

/// The declarations and, once a request asked, their encodings.
#[derive(Debug, Default)]
pub(crate) struct Declarations {
    values: Vec<Value>,
    encoded: OnceLock<Vec<Box<RawValue>>>,
}

impl Declarations {
    /// Each declaration as JSON, encoded on the first call after a change.
    pub(crate) fn encoded(&self) -> &[Box<RawValue>] {
        self.encoded.get_or_init(|| {
            self.values
                .iter()
                .map(nanohermes_core::transcript::encode)
                .collect()
        })
    }
}

impl Deref for Declarations {
    type Target = Vec<Value>;

    fn deref(&self) -> &Vec<Value> {
        &self.values
    }
}

impl DerefMut for Declarations {
    fn deref_mut(&mut self) -> &mut Vec<Value> {
        self.encoded.take();
        &mut self.values
    }
}

/// `function.name` of an OpenAI tool declaration.
pub(crate) fn name(declaration: &Value) -> &str {
    declaration
        .get("function")
        .and_then(|f| f.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_change_through_any_mutable_access_is_encoded_again() {
        let mut declarations = Declarations::default();
        declarations.push(json!({"name": "a"}));
        assert_eq!(declarations.encoded()[0].get(), r#"{"name":"a"}"#);
        declarations[0]["name"] = json!("b");
        declarations.push(json!({"name": "c"}));
        let encoded: Vec<&str> = declarations.encoded().iter().map(|r| r.get()).collect();
        assert_eq!(encoded, [r#"{"name":"b"}"#, r#"{"name":"c"}"#]);
        declarations.retain(|d| d["name"] == "c");
        assert_eq!(declarations.encoded().len(), 1);
    }
}
