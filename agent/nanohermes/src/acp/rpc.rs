//! A thin JSON-RPC 2.0 layer over newline-delimited stdio, as ACP frames
//! it: one message per line, requests both ways (the agent asks the
//! editor for permission), notifications both ways, and every malformed
//! or unknown message answered with an error instead of ending the
//! connection.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// JSON-RPC: the line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: JSON, but not a request, notification or response.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: no such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: the parameters do not fit the method.
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC: the method failed.
pub const INTERNAL_ERROR: i64 = -32603;
/// ACP: the resource (a session) does not exist.
pub const RESOURCE_NOT_FOUND: i64 = -32002;

/// An error answer: a code and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpcError {
    /// One of the codes above.
    pub code: i64,
    /// What went wrong, for the editor's user.
    pub message: String,
}

impl RpcError {
    /// An error with `code` and `message`.
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
        }
    }

    /// [`INVALID_PARAMS`] with `message`.
    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_PARAMS, message)
    }

    /// [`INTERNAL_ERROR`] with `message`.
    pub fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(INTERNAL_ERROR, message)
    }

    fn to_value(&self) -> Value {
        json!({ "code": self.code, "message": self.message })
    }
}

/// One incoming line, classified.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    /// A call that wants an answer.
    Request {
        /// Its id, echoed in the answer.
        id: Value,
        /// The method.
        method: String,
        /// Its parameters (`null` when absent).
        params: Value,
    },
    /// A call that wants none.
    Notification {
        /// The method.
        method: String,
        /// Its parameters (`null` when absent).
        params: Value,
    },
    /// The answer to one of the agent's own requests.
    Response {
        /// The id the agent sent.
        id: Value,
        /// The result, or the error object.
        outcome: Result<Value, Value>,
    },
    /// Something to answer with an error: the id (`null` when unknown)
    /// and the error.
    Invalid(Value, RpcError),
}

/// Classifies one line.
pub fn classify(line: &str) -> Incoming {
    let value: Value = match serde_json::from_str(line) {
        Ok(value) => value,
        Err(e) => {
            return Incoming::Invalid(
                Value::Null,
                RpcError::new(PARSE_ERROR, format!("parse error: {e}")),
            );
        }
    };
    let Some(object) = value.as_object() else {
        return Incoming::Invalid(
            Value::Null,
            RpcError::new(INVALID_REQUEST, "a message is one JSON object"),
        );
    };
    let id = object.get("id").cloned();
    let valid_id = id
        .as_ref()
        .is_none_or(|id| id.is_string() || id.is_number() || id.is_null());
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") || !valid_id {
        return Incoming::Invalid(
            id.filter(|_| valid_id).unwrap_or_default(),
            RpcError::new(
                INVALID_REQUEST,
                "not a JSON-RPC 2.0 message (\"jsonrpc\": \"2.0\" and a string or number id)",
            ),
        );
    }
    let params = object.get("params").cloned().unwrap_or_default();
    match (object.get("method"), id) {
        (Some(Value::String(method)), Some(id)) => Incoming::Request {
            id,
            method: method.clone(),
            params,
        },
        (Some(Value::String(method)), None) => Incoming::Notification {
            method: method.clone(),
            params,
        },
        (Some(_), id) => Incoming::Invalid(
            id.unwrap_or_default(),
            RpcError::new(INVALID_REQUEST, "\"method\" must be a string"),
        ),
        (None, Some(id)) => match (object.get("result"), object.get("error")) {
            (Some(result), None) => Incoming::Response {
                id,
                outcome: Ok(result.clone()),
            },
            (None, Some(error)) => Incoming::Response {
                id,
                outcome: Err(error.clone()),
            },
            _ => Incoming::Invalid(
                id,
                RpcError::new(
                    INVALID_REQUEST,
                    "a response has exactly one of result and error",
                ),
            ),
        },
        (None, None) => Incoming::Invalid(
            Value::Null,
            RpcError::new(INVALID_REQUEST, "neither a request nor a response"),
        ),
    }
}

type Pending = Mutex<HashMap<u64, oneshot::Sender<Result<Value, Value>>>>;

/// The editor's end of the connection: what the agent sends it. Clones
/// share one connection.
#[derive(Clone)]
pub struct Peer {
    out: mpsc::UnboundedSender<String>,
    pending: Arc<Pending>,
    next_id: Arc<AtomicU64>,
}

impl Peer {
    /// A peer writing whole lines to `out` (one writer task drains it, so
    /// lines never interleave).
    pub fn new(out: mpsc::UnboundedSender<String>) -> Peer {
        Peer {
            out,
            pending: Arc::default(),
            next_id: Arc::new(AtomicU64::new(0)),
        }
    }

    fn send(&self, message: &Value) {
        // A closed writer means the editor is gone; there is nobody to tell.
        let _ = self.out.send(message.to_string());
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }

    /// Answers the request `id`.
    pub fn respond(&self, id: Value, result: Result<Value, RpcError>) {
        let message = match result {
            Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
            Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error.to_value() }),
        };
        self.send(&message);
    }

    /// Sends a request and waits for its answer: `Err` holds the error
    /// object, or `null` when the connection closed first.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        rx.await.unwrap_or(Err(Value::Null))
    }

    /// Hands a response to the request waiting for it; a response nobody
    /// asked for is dropped.
    pub fn settle(&self, id: &Value, outcome: Result<Value, Value>) {
        let Some(id) = id.as_u64() else { return };
        let waiting = self
            .pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        if let Some(tx) = waiting {
            let _ = tx.send(outcome);
        }
    }

    /// Fails every request still waiting (the editor closed the connection).
    pub fn close(&self) {
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_classified_and_bad_ones_get_the_right_error() {
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"a":1}}"#),
            Incoming::Request {
                id: json!(1),
                method: "initialize".into(),
                params: json!({"a": 1})
            }
        );
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","method":"session/cancel"}"#),
            Incoming::Notification {
                method: "session/cancel".into(),
                params: Value::Null
            }
        );
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","id":"x","result":{}}"#),
            Incoming::Response {
                id: json!("x"),
                outcome: Ok(json!({}))
            }
        );
        let code = |line: &str| match classify(line) {
            Incoming::Invalid(_, e) => e.code,
            other => panic!("{line} was taken as {other:?}"),
        };
        assert_eq!(code("{not json"), PARSE_ERROR);
        assert_eq!(code("[1,2]"), INVALID_REQUEST);
        assert_eq!(code(r#"{"id":1,"method":"x"}"#), INVALID_REQUEST);
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#),
            INVALID_REQUEST
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":7}"#),
            INVALID_REQUEST
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":1}"#), INVALID_REQUEST);
        // The id of an invalid request is echoed when it can be.
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","id":5,"method":7}"#),
            Incoming::Invalid(id, _) if id == json!(5)
        ));
    }

    #[tokio::test]
    async fn a_request_gets_the_response_with_its_id() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let peer = Peer::new(tx);
        let asking = tokio::spawn({
            let peer = peer.clone();
            async move { peer.request("session/request_permission", json!({})).await }
        });
        let sent: Value = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
        assert_eq!(sent["method"], "session/request_permission");
        peer.settle(&json!(99), Ok(json!("stray")));
        peer.settle(
            &sent["id"],
            Ok(json!({"outcome": {"outcome": "cancelled"}})),
        );
        assert_eq!(
            asking.await.unwrap(),
            Ok(json!({"outcome": {"outcome": "cancelled"}}))
        );
        peer.respond(json!(3), Err(RpcError::new(METHOD_NOT_FOUND, "no")));
        let answer: Value = serde_json::from_str(&rx.recv().await.unwrap()).unwrap();
        assert_eq!(
            answer,
            json!({"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}})
        );
    }
}
