//! Server-sent events, as OpenAI-compatible servers send them.
//!
//! [`SseDecoder`] takes the body in whatever pieces the network delivers and
//! yields [`Frame`]s. Bytes are buffered until a full line is there, so a
//! frame or a UTF-8 character split across reads is never corrupted. Each
//! frame kind is handled as the seed article's table says:
//!
//! | line | result |
//! |---|---|
//! | blank | skipped (event separator) |
//! | starts with `:` | skipped (comment, keep-alive ping) |
//! | `event:`, `id:`, `retry:` | skipped |
//! | `data: [DONE]` | [`Frame::Done`] |
//! | `data: {"error": …}` | [`Frame::Error`] |
//! | `data: {…}` (deltas, the usage frame) | [`Frame::Data`] |
//! | `data:` that does not parse | joined with the next `data:` line of the same event (SSE multi-line data); dropped at the blank line if it still does not parse |

use serde_json::Value;

/// One decoded event from the stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// A JSON chunk: deltas, finish reason, usage.
    Data(Value),
    /// `data: [DONE]`, the end of the stream.
    Done,
    /// A chunk whose `error` member is set: the server failed mid-stream.
    Error(Value),
}

/// Incremental SSE decoder over raw body bytes.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
    pending: Option<String>,
}

impl SseDecoder {
    /// Feeds the next piece of the body and returns the frames it completed.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Frame> {
        self.buffer.extend_from_slice(bytes);
        let mut frames = Vec::new();
        let mut start = 0;
        while let Some(offset) = self.buffer[start..].iter().position(|&b| b == b'\n') {
            let end = start + offset;
            let line = String::from_utf8_lossy(&self.buffer[start..end]).into_owned();
            self.line(&line, &mut frames);
            start = end + 1;
        }
        self.buffer.drain(..start);
        frames
    }

    /// Ends the stream: decodes a last line that had no newline.
    pub fn finish(&mut self) -> Vec<Frame> {
        let mut frames = Vec::new();
        if !self.buffer.is_empty() {
            let line = String::from_utf8_lossy(&self.buffer).into_owned();
            self.buffer.clear();
            self.line(&line, &mut frames);
        }
        self.pending = None;
        frames
    }

    fn line(&mut self, line: &str, frames: &mut Vec<Frame>) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim().is_empty() {
            // End of an event: a data line that never parsed is dropped.
            self.pending = None;
            return;
        }
        let Some(data) = line.strip_prefix("data:") else {
            // Comments (`:`), `event:`, `id:`, `retry:` and stray text.
            return;
        };
        let data = data.trim();
        if let Some(mut pending) = self.pending.take() {
            pending.push('\n');
            pending.push_str(data);
            if let Ok(value) = serde_json::from_str::<Value>(&pending) {
                frames.push(classify(value));
                return;
            }
            // The earlier line was garbage, not the start of this one.
            if pending.len() < MAX_PENDING && !parses_alone(data) {
                self.pending = Some(pending);
                return;
            }
        }
        if data == "[DONE]" {
            frames.push(Frame::Done);
            return;
        }
        match serde_json::from_str::<Value>(data) {
            Ok(value) => frames.push(classify(value)),
            Err(_) => self.pending = Some(data.to_owned()),
        }
    }
}

/// Unparsable data kept waiting for a continuation line is dropped past this size.
const MAX_PENDING: usize = 1 << 20;

fn parses_alone(data: &str) -> bool {
    data == "[DONE]" || serde_json::from_str::<serde::de::IgnoredAny>(data).is_ok()
}

fn classify(value: Value) -> Frame {
    match value.get("error") {
        Some(error) if !error.is_null() => Frame::Error(value),
        _ => Frame::Data(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn decode_in_pieces(body: &[u8], piece: usize) -> Vec<Frame> {
        let mut decoder = SseDecoder::default();
        let mut frames = Vec::new();
        for chunk in body.chunks(piece) {
            frames.extend(decoder.push(chunk));
        }
        frames.extend(decoder.finish());
        frames
    }

    #[test]
    fn every_frame_kind_of_the_table_is_handled() {
        let body = b"\n: ping - 2026-01-01\nevent: message\n\
            data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n\
            data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3}}\n\n\
            data: {not json\n\n\
            data: {\"error\":{\"code\":500,\"message\":\"boom\"}}\n\n\
            data: [DONE]\n\n";
        let frames = decode_in_pieces(body, body.len());
        assert_eq!(
            frames,
            vec![
                Frame::Data(json!({"choices":[{"delta":{"content":"hi"}}]})),
                Frame::Data(json!({"choices":[],"usage":{"prompt_tokens":3}})),
                Frame::Error(json!({"error":{"code":500,"message":"boom"}})),
                Frame::Done,
            ]
        );
    }

    #[test]
    fn frames_split_at_every_byte_decode_the_same() {
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"héllo → 世界\"}}]}\r\n\r\ndata: [DONE]\r\n\r\n";
        let whole = decode_in_pieces(body.as_bytes(), body.len());
        for piece in 1..8 {
            assert_eq!(
                decode_in_pieces(body.as_bytes(), piece),
                whole,
                "piece size {piece}"
            );
        }
        assert_eq!(
            whole[0],
            Frame::Data(json!({"choices":[{"delta":{"content":"héllo → 世界"}}]}))
        );
    }

    #[test]
    fn a_last_line_without_newline_is_decoded_at_the_end() {
        let frames = decode_in_pieces(b"data: {\"a\":1}", 4);
        assert_eq!(frames, vec![Frame::Data(json!({"a":1}))]);
    }

    #[test]
    fn json_spread_over_two_data_lines_of_one_event_is_joined() {
        let frames = decode_in_pieces(b"data: {\"a\":\ndata: 1}\n\n", 3);
        assert_eq!(frames, vec![Frame::Data(json!({"a":1}))]);
    }

    #[test]
    fn garbage_without_a_blank_line_does_not_swallow_the_next_frame() {
        let frames = decode_in_pieces(b"data: {garbage\ndata: {\"a\":1}\ndata: [DONE]\n", 5);
        assert_eq!(frames, vec![Frame::Data(json!({"a":1})), Frame::Done]);
    }

    #[test]
    fn null_error_member_is_not_an_error() {
        let frames = decode_in_pieces(b"data: {\"error\":null,\"x\":1}\n\n", 100);
        assert_eq!(frames, vec![Frame::Data(json!({"error":null,"x":1}))]);
    }
}
