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
//! One tool call's arguments are capped where they accumulate
//! ([`super::turn::MAX_ARGUMENTS`]).

use std::time::Duration;

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
