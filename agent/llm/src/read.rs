//! Reading a response within bounds, so that a broken or hostile model
//! server can make the agent neither hold unbounded memory nor wait forever.
//!
//! - A whole (non-streamed) body is read piece by piece and refused past
//!   [`MAX_BODY`]: nothing is allocated for what a `Content-Length` or a
//!   chunked body claims, only for what arrived, and never past the cap.
//! - An error body is read up to [`MAX_ERROR_BODY`] and the rest ignored:
//!   only its first line or its page title is shown.
//! - Every read waits at most the idle timeout (`stream_idle_timeout_ms`).
//!   For a stream, the timer restarts only when an event arrives (see
//!   [`super::Client`]), so a server trickling a byte at a time cannot hold
//!   the turn open.
//!
//! - JSON is counted before it is parsed into a tree ([`within_values`]): a
//!   parsed value costs 32 bytes or more, so 16 MiB of `0,0,0,…` would
//!   become hundreds of megabytes. A body (or a long stream line) with more
//!   than [`MAX_VALUES`] values is refused unparsed.
//!
//! One tool call's arguments are capped where they accumulate
//! ([`super::turn::MAX_ARGUMENTS`]).

use std::cell::Cell;
use std::fmt;
use std::time::Duration;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use tokio::time::Instant;

use super::LlmError;

/// The largest whole response body read, in bytes. An answer is bounded by
/// `max_tokens`: 4096 tokens by default are about 16 KB, and even a model
/// that writes 128k tokens in one answer sends about 1 MB of JSON. 16 MiB
/// is sixteen times that, and small enough that the parsed body (a few
/// times its size in memory) stays in the tens of megabytes.
pub const MAX_BODY: usize = 16 << 20;

/// How much of an error body is read: only its first line is shown.
pub const MAX_ERROR_BODY: usize = 64 << 10;

/// The default `stream_idle_timeout_ms`: 300 s, as Codex has it. A model
/// that thinks before it writes sends nothing for a while; five minutes
/// without an event is a stuck server.
pub const DEFAULT_STREAM_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// A body read up to a cap.
pub(crate) struct Capped {
    /// The bytes read, at most the cap.
    pub bytes: Vec<u8>,
    /// Whether the server sent more than the cap.
    pub over: bool,
}

/// Reads `response`'s body, at most `cap` bytes, each read within `idle`.
/// Past the cap it stops reading (the connection is dropped with the
/// response) and says so in [`Capped::over`].
pub(crate) async fn body(
    response: &mut reqwest::Response,
    cap: usize,
    idle: Duration,
) -> Result<Capped, LlmError> {
    let mut bytes = Vec::new();
    loop {
        let deadline = Instant::now() + idle;
        let Some(piece) = chunk(response, deadline, idle).await? else {
            return Ok(Capped { bytes, over: false });
        };
        if bytes.len() + piece.len() > cap {
            let room = cap - bytes.len();
            bytes.extend_from_slice(&piece[..room]);
            return Ok(Capped { bytes, over: true });
        }
        bytes.extend_from_slice(&piece);
    }
}

/// The next piece of `response`'s body, or [`LlmError::IdleTimeout`] when
/// none arrived by `deadline` (`idle` is only named in the error).
pub(crate) async fn chunk(
    response: &mut reqwest::Response,
    deadline: Instant,
    idle: Duration,
) -> Result<Option<impl std::ops::Deref<Target = [u8]>>, LlmError> {
    match tokio::time::timeout_at(deadline, response.chunk()).await {
        Ok(Ok(piece)) => Ok(piece),
        Ok(Err(e)) => Err(LlmError::Read(super::innermost(&e))),
        Err(_) => Err(LlmError::IdleTimeout { idle }),
    }
}

/// The most JSON values (strings, numbers, arrays, objects, …) one whole
/// response or one stream line may hold. An answer holds a few dozen; a
/// tool call's arguments sent as an object, a few thousand at most.
pub const MAX_VALUES: usize = 1 << 18;

/// Whether `text` is JSON of at most [`MAX_VALUES`] values, counted
/// without building anything (keys and strings are not copied). Invalid
/// JSON passes: the real parse reports it.
pub fn within_values(text: &[u8]) -> bool {
    let left = Cell::new(MAX_VALUES);
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    match Count(&left).deserialize(&mut deserializer) {
        Ok(()) => true,
        Err(e) => !e.to_string().starts_with(OVER),
    }
}

const OVER: &str = "more JSON values than";

/// Counts one value and everything inside it against the budget.
#[derive(Clone, Copy)]
struct Count<'a>(&'a Cell<usize>);

impl Count<'_> {
    fn spend<E: de::Error>(self) -> Result<(), E> {
        match self.0.get().checked_sub(1) {
            Some(left) => {
                self.0.set(left);
                Ok(())
            }
            None => Err(E::custom(format!("{OVER} {MAX_VALUES}"))),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Count<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Count<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.spend()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.spend()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.spend()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.spend()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.spend()
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.spend()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.spend()?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.spend()?;
        while map.next_key::<IgnoredAny>()?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_with_more_values_than_the_budget_is_refused_unparsed() {
        assert!(within_values(
            br#"{"choices":[{"message":{"content":"hi","tool_calls":[]}}]}"#
        ));
        let dense = format!("[{}0]", "0,".repeat(MAX_VALUES));
        assert!(!within_values(dense.as_bytes()));
        let exactly = format!("[{}0]", "0,".repeat(MAX_VALUES - 2));
        assert!(within_values(exactly.as_bytes()));
        let nested = format!("{{\"a\":[{}{{}}]}}", "{\"k\":1},".repeat(MAX_VALUES / 2));
        assert!(!within_values(nested.as_bytes()));
        // Not JSON: left to the real parse, which says what is wrong.
        assert!(within_values(b"{not json"));
    }
}
