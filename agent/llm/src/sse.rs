//! Server-sent events, as OpenAI-compatible servers send them.
//!
//! [`SseDecoder`] takes the body in whatever pieces the network delivers and
//! yields [`Frame`]s. Bytes are buffered until a full line is there, so a
//! frame or a UTF-8 character split across reads is never corrupted. Lines
//! end with LF, CRLF or a lone CR, as the SSE specification allows, also
//! when the CR of a CRLF ends one read and the LF starts the next. A line
//! may not grow past [`MAX_LINE`] bytes: a server that sends megabytes
//! without a line break gets a [`LineTooLong`] error, not unbounded memory.
//! Each frame kind is handled as the seed article's table says:
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

use std::fmt;

use serde_json::Value;

/// The longest line the decoder keeps waiting for its end, in bytes. One
/// frame is one delta: even a server that puts a whole answer in a single
/// frame stays far below this.
pub const MAX_LINE: usize = 2 << 20;

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

/// A line grew past [`MAX_LINE`] without a line break.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineTooLong {
    /// The bytes buffered when the decoder gave up.
    pub buffered: usize,
}

impl fmt::Display for LineTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the stream sent {} bytes without a line break (the limit is {} bytes); the server is not sending server-sent events as expected",
            self.buffered, MAX_LINE
        )
    }
}

impl std::error::Error for LineTooLong {}

/// Incremental SSE decoder over raw body bytes.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
    pending: Option<String>,
    /// The last read ended with CR: an LF at the start of the next read
    /// belongs to that line end (CRLF split across reads).
    after_cr: bool,
}

impl SseDecoder {
    /// Feeds the next piece of the body and returns the frames it completed.
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<Frame>, LineTooLong> {
        let mut bytes = bytes;
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
        }
        self.buffer.extend_from_slice(bytes);
        let mut frames = Vec::new();
        let mut start = 0;
        while let Some(offset) = self.buffer[start..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
        {
            let end = start + offset;
            let line = String::from_utf8_lossy(&self.buffer[start..end]).into_owned();
            self.line(&line, &mut frames);
            start = end + 1;
            if self.buffer[end] == b'\r' {
                match self.buffer.get(start) {
                    Some(b'\n') => start += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        self.buffer.drain(..start);
        if self.buffer.len() > MAX_LINE {
            let buffered = self.buffer.len();
            self.buffer = Vec::new();
            return Err(LineTooLong { buffered });
        }
        Ok(frames)
    }

    /// Ends the stream: decodes a last line that had no line break.
    pub fn finish(&mut self) -> Vec<Frame> {
        let mut frames = Vec::new();
        if !self.buffer.is_empty() {
            let line = String::from_utf8_lossy(&self.buffer).into_owned();
            self.buffer.clear();
            self.line(&line, &mut frames);
        }
        self.pending = None;
        self.after_cr = false;
        frames
    }

    fn line(&mut self, line: &str, frames: &mut Vec<Frame>) {
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
            let countable =
                pending.len() <= COUNT_ABOVE || super::read::within_values(pending.as_bytes());
            let parsed = countable
                .then(|| serde_json::from_str::<Value>(&pending).ok())
                .flatten();
            if let Some(value) = parsed {
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
        // A long line is counted before it is parsed into a tree: a line
        // of `0,0,0,…` would cost far more memory than its bytes. One with
        // more values than any frame has is dropped like garbage.
        if data.len() > COUNT_ABOVE && !super::read::within_values(data.as_bytes()) {
            return;
        }
        match serde_json::from_str::<Value>(data) {
            Ok(value) => frames.push(classify(value)),
            Err(_) => self.pending = Some(data.to_owned()),
        }
    }
}

/// Lines longer than this are counted ([`super::read::within_values`])
/// before they are parsed; shorter ones cannot hold many values.
const COUNT_ABOVE: usize = 64 << 10;

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
            frames.extend(decoder.push(chunk).unwrap());
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
    #[test]
    fn cr_lf_and_crlf_line_ends_all_end_lines() {
        let a = "data: {\"a\":1}";
        let b = "data: {\"b\":2}";
        let expected = vec![
            Frame::Data(json!({"a":1})),
            Frame::Data(json!({"b":2})),
            Frame::Done,
        ];
        for end in ["\n", "\r\n", "\r"] {
            let body = format!("{a}{end}{end}{b}{end}{end}data: [DONE]{end}{end}");
            for piece in [1, 2, 3, 7, body.len()] {
                assert_eq!(
                    decode_in_pieces(body.as_bytes(), piece),
                    expected,
                    "line end {end:?}, piece size {piece}"
                );
            }
        }
        // All three in one stream.
        let body = format!("{a}\r\n\r{b}\n\r\ndata: [DONE]\r");
        assert_eq!(decode_in_pieces(body.as_bytes(), 1), expected);
    }

    #[test]
    fn a_cr_ending_one_read_and_an_lf_starting_the_next_are_one_line_end() {
        let mut decoder = SseDecoder::default();
        // Were the LF a line end of its own, it would end the event and the
        // two data lines would not be joined.
        assert_eq!(decoder.push(b"data: {\"a\":\r").unwrap(), vec![]);
        assert_eq!(
            decoder.push(b"\ndata: 1}\r").unwrap(),
            vec![Frame::Data(json!({"a":1}))]
        );
        assert_eq!(decoder.push(b"\n").unwrap(), vec![]);
        // A lone CR at the end of a read followed by other text is a line end.
        assert_eq!(decoder.push(b"\r").unwrap(), vec![]);
        assert_eq!(decoder.push(b"data: [DONE]\r").unwrap(), vec![Frame::Done]);
        assert_eq!(decoder.push(b"").unwrap(), vec![]);
        assert_eq!(decoder.push(b"\n").unwrap(), vec![]);
    }

    #[test]
    fn a_line_of_megabytes_without_a_line_break_is_an_error() {
        let mut decoder = SseDecoder::default();
        decoder.push(b"data: {\"a\":\"").unwrap();
        let piece = vec![b'x'; 64 * 1024];
        let mut error = None;
        for _ in 0..(5 << 20) / piece.len() {
            if let Err(e) = decoder.push(&piece) {
                error = Some(e);
                break;
            }
        }
        let error = error.expect("a 5 MB line is refused");
        assert!(error.buffered > MAX_LINE && error.buffered <= MAX_LINE + piece.len());
        assert!(
            error.to_string().contains("without a line break"),
            "{error}"
        );
        // A long line that does end is fine, in pieces or whole.
        let long = format!("data: {{\"a\":\"{}\"}}\n\n", "y".repeat(MAX_LINE - 100));
        assert_eq!(decode_in_pieces(long.as_bytes(), 4096).len(), 1);
    }
}
