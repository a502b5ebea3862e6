//! The session file's bytes: version 2 records (JSON Lines) written and
//! read, and version 1 (one JSON object) read.
//!
//! A version 2 file is one JSON object per line, each with one key:
//!
//! ```text
//! {"session":{"version":2,"id":"…","workspace":"/path"}}   first line, once
//! {"message":{"role":"user","content":"…"}}                 the history, in order
//! {"usage":{"requests":3,"prompt_tokens":…,"completion_tokens":…}}
//! {"surfaced":["fx__jira_create_issue"]}
//! {"end":4}
//! ```
//!
//! `message` lines are the history without its system message. `usage`
//! holds running totals and `surfaced` the whole list (the last of each
//! wins; `surfaced` is written when it changed). Every write ends with
//! `end`, whose number is how many messages the history has there: a
//! reader keeps what comes before the last `end`, so a write cut short
//! (a killed process, a full disk) loses only the step it was writing and
//! never leaves tool calls without their results. Whatever follows the
//! last `end` is such a cut write and is ignored; a line that does not
//! parse before it, or an `end` whose number is wrong, is a damaged file.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::SessionFile;
use crate::SessionUsage;

/// The layout version written.
pub const VERSION: u32 = 2;

/// The first line: what the session is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// [`VERSION`].
    pub version: u32,
    /// The session's id.
    pub id: String,
    /// The workspace it works in.
    pub workspace: std::path::PathBuf,
}

/// One line, as read.
#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Record {
    Session(Header),
    Message(Value),
    Usage(SessionUsage),
    Surfaced(Vec<String>),
    End(usize),
}

/// One line, as written: a message is its cached encoding, copied.
#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
enum Line<'a> {
    Session(&'a Header),
    Message(&'a RawValue),
    Usage(&'a SessionUsage),
    Surfaced(&'a [String]),
    End(usize),
}

/// Why a file could not be read.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// It does not parse: what is wrong, where.
    Damaged(String),
    /// It is a session file of a version this build does not read.
    Version(u32),
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Damaged(why) => write!(f, "is damaged ({why})"),
            Problem::Version(v) => write!(f, "is version {v}, which this nanohermes does not read"),
        }
    }
}

/// Appends the header line to `out`.
pub fn header(out: &mut Vec<u8>, header: &Header) {
    line(out, &Line::Session(header));
}

/// Appends a message line holding `encoded` (the message's JSON) to `out`.
pub fn message(out: &mut Vec<u8>, encoded: &RawValue) {
    line(out, &Line::Message(encoded));
}

/// Appends a usage line to `out`.
pub fn usage(out: &mut Vec<u8>, usage: &SessionUsage) {
    line(out, &Line::Usage(usage));
}

/// Appends a surfaced line to `out`.
pub fn surfaced(out: &mut Vec<u8>, names: &[String]) {
    line(out, &Line::Surfaced(names));
}

/// Appends the end marker of a history of `messages` messages to `out`.
pub fn end(out: &mut Vec<u8>, messages: usize) {
    line(out, &Line::End(messages));
}

fn line(out: &mut Vec<u8>, line: &Line<'_>) {
    // Serialising strings, numbers and raw JSON into a Vec cannot fail;
    // compact JSON has no raw newline, so a record is one line.
    let _ = serde_json::to_writer(&mut *out, line);
    out.push(b'\n');
}

/// The whole of `file` in version 2.
pub fn encode(file: &SessionFile) -> Vec<u8> {
    let mut out = Vec::new();
    header(
        &mut out,
        &Header {
            version: VERSION,
            id: file.id.clone(),
            workspace: file.workspace.clone(),
        },
    );
    for m in &file.messages {
        if let Ok(raw) = serde_json::value::to_raw_value(m) {
            message(&mut out, &raw);
        }
    }
    usage(&mut out, &file.usage);
    if !file.surfaced.is_empty() {
        surfaced(&mut out, &file.surfaced);
    }
    end(&mut out, file.messages.len());
    out
}

/// Whether `bytes` claim to be a session file, whole or damaged: a
/// version 2 header on the first line, or a version 1 object (`version`,
/// `id` and `messages`; a cut one: an object naming `version` and `id`).
/// What does not (`notes.md`, a `package.json`) is someone else's file,
/// never set aside or written over.
pub fn looks_like_session(bytes: &[u8]) -> bool {
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    if matches!(
        serde_json::from_slice::<Record>(first),
        Ok(Record::Session(_))
    ) {
        return true;
    }
    if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
        return ["version", "id", "messages"]
            .iter()
            .all(|key| value.get(key).is_some());
    }
    let text = String::from_utf8_lossy(bytes);
    text.trim_start().starts_with('{') && text.contains("\"version\"") && text.contains("\"id\"")
}

/// Reads a session file of either version.
pub fn decode(bytes: &[u8]) -> Result<SessionFile, Problem> {
    let first = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    match serde_json::from_slice::<Record>(first) {
        Ok(Record::Session(_)) if bytes.contains(&b'\n') => decode_lines(bytes),
        _ => decode_v1(bytes),
    }
}

/// Version 1: one JSON object, the [`SessionFile`] itself.
fn decode_v1(bytes: &[u8]) -> Result<SessionFile, Problem> {
    let file: SessionFile =
        serde_json::from_slice(bytes).map_err(|e| Problem::Damaged(e.to_string()))?;
    if file.version != 1 {
        return Err(Problem::Version(file.version));
    }
    Ok(file)
}

/// Version 2: the records up to the last whole `end`.
fn decode_lines(bytes: &[u8]) -> Result<SessionFile, Problem> {
    // The piece after the last newline is a write cut short: never read.
    let complete = &bytes[..bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1)];
    let records: Vec<Result<Record, String>> = complete
        .split_inclusive(|&b| b == b'\n')
        .map(|line| serde_json::from_slice::<Record>(line).map_err(|e| e.to_string()))
        .collect();
    let last_end = records
        .iter()
        .rposition(|r| matches!(r, Ok(Record::End(_))))
        .unwrap_or(0);
    let mut records = records.into_iter().enumerate().take(last_end + 1);
    let header = match records.next() {
        Some((_, Ok(Record::Session(header)))) => header,
        _ => return Err(Problem::Damaged("line 1 is not a session header".into())),
    };
    if header.version != VERSION {
        return Err(Problem::Version(header.version));
    }
    let mut file = SessionFile {
        version: VERSION,
        id: header.id,
        workspace: header.workspace,
        messages: Vec::new(),
        usage: SessionUsage::default(),
        surfaced: Vec::new(),
    };
    // What the last `end` seen had; records after it are not yet whole.
    let mut kept = (0, SessionUsage::default(), Vec::new());
    for (index, record) in records {
        let at = index + 1;
        match record.map_err(|e| Problem::Damaged(format!("line {at}: {e}")))? {
            Record::Session(_) => {
                return Err(Problem::Damaged(format!("line {at}: a second header")));
            }
            Record::Message(m) => file.messages.push(m),
            Record::Usage(u) => file.usage = u,
            Record::Surfaced(s) => file.surfaced = s,
            Record::End(n) if n == file.messages.len() => {
                kept = (n, file.usage, file.surfaced.clone());
            }
            Record::End(n) => {
                return Err(Problem::Damaged(format!(
                    "line {at}: the end of a step of {n} messages after {}",
                    file.messages.len()
                )));
            }
        }
    }
    file.messages.truncate(kept.0);
    (file.usage, file.surfaced) = (kept.1, kept.2);
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_session_files_look_like_sessions() {
        let file = SessionFile::new("s-1", std::path::Path::new("/w"));
        assert!(looks_like_session(&encode(&file)));
        assert!(looks_like_session(
            br#"{"id":"a","messages":[],"usage":{},"version":1}"#
        ));
        assert!(looks_like_session(br#"{"version": 1, "id": "a", "mess"#));
        for other in [
            &b"# notes\n\nsome text\n"[..],
            br#"{"name":"pkg","version":"1.0.0"}"#,
            b"[1, 2]",
        ] {
            assert!(
                !looks_like_session(other),
                "{}",
                String::from_utf8_lossy(other)
            );
        }
    }
    use serde_json::json;

    fn sample() -> SessionFile {
        SessionFile {
            version: VERSION,
            id: "abc-1".into(),
            workspace: "/w".into(),
            messages: vec![
                json!({"role": "user", "content": "line one\nline two"}),
                json!({"role": "assistant", "content": "ok"}),
            ],
            usage: SessionUsage {
                requests: 1,
                requests_without_usage: 0,
                prompt_tokens: 10,
                completion_tokens: 2,
                ..SessionUsage::default()
            },
            surfaced: vec!["fx__echo".into()],
        }
    }

    #[test]
    fn every_record_is_one_line_and_a_file_reads_back_equal() {
        let bytes = encode(&sample());
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert_eq!(
            text,
            "{\"session\":{\"version\":2,\"id\":\"abc-1\",\"workspace\":\"/w\"}}\n\
             {\"message\":{\"content\":\"line one\\nline two\",\"role\":\"user\"}}\n\
             {\"message\":{\"content\":\"ok\",\"role\":\"assistant\"}}\n\
             {\"usage\":{\"requests\":1,\"prompt_tokens\":10,\"completion_tokens\":2}}\n\
             {\"surfaced\":[\"fx__echo\"]}\n\
             {\"end\":2}\n"
        );
        assert_eq!(decode(&bytes), Ok(sample()));
    }

    #[test]
    fn only_what_the_last_end_closes_is_kept_and_the_last_record_of_a_kind_wins() {
        let mut bytes = encode(&sample());
        message(
            &mut bytes,
            &RawValue::from_string("{\"role\":\"user\"}".into()).unwrap(),
        );
        let usage_2 = SessionUsage {
            requests: 2,
            ..SessionUsage::default()
        };
        usage(&mut bytes, &usage_2);
        surfaced(&mut bytes, &[]);
        let whole = bytes.len();
        end(&mut bytes, 3);
        let mut next = sample();
        next.messages.push(json!({"role": "user"}));
        (next.usage, next.surfaced) = (usage_2, Vec::new());
        assert_eq!(decode(&bytes), Ok(next));
        // The same without its end: the step is not whole, so not kept.
        assert_eq!(decode(&bytes[..whole]), Ok(sample()));
        // A cut inside any record after the first end reads as the first step.
        let first_end = encode(&sample()).len();
        for cut in first_end..bytes.len() {
            let read = decode(&bytes[..cut]).unwrap();
            assert!(read == sample(), "cut at {cut}: {read:?}");
        }
    }

    #[test]
    fn a_bad_line_before_the_last_end_or_a_wrong_end_is_damage() {
        let good = String::from_utf8(encode(&sample())).unwrap();
        let lines: Vec<&str> = good.lines().collect();
        let with = |i: usize, replacement: &str| {
            let mut l = lines.clone();
            l[i] = replacement;
            l.join("\n") + "\n"
        };
        for (bad, expected) in [
            (with(1, "{\"message\":"), "line 2:"),
            (with(2, "{\"mesage\":{}}"), "line 3:"),
            (
                with(5, "{\"end\":3}"),
                "line 6: the end of a step of 3 messages after 2",
            ),
            (with(3, lines[0]), "line 4: a second header"),
        ] {
            match decode(bad.as_bytes()) {
                Err(Problem::Damaged(why)) => assert!(why.starts_with(expected), "{why}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        // Garbage after the last end is a cut write, not damage.
        assert_eq!(
            decode((good.clone() + "\0\0\0\n{\"mess").as_bytes()),
            Ok(sample())
        );
        assert_eq!(
            decode(good.replace("\"version\":2", "\"version\":3").as_bytes()),
            Err(Problem::Version(3))
        );
    }

    #[test]
    fn a_version_1_file_reads_and_anything_else_is_damage() {
        let v1 = json!({
            "version": 1, "id": "abc-1", "workspace": "/w",
            "messages": sample().messages, "usage": sample().usage,
            "surfaced": ["fx__echo"],
        });
        let read = decode(&serde_json::to_vec(&v1).unwrap()).unwrap();
        assert_eq!(
            read,
            SessionFile {
                version: 1,
                ..sample()
            }
        );
        for bad in [&b"{\"version\": 1, \"id\":"[..], b"", b"\n", b"[1]\n"] {
            assert!(matches!(decode(bad), Err(Problem::Damaged(_))), "{bad:?}");
        }
        let v7 = json!({"version": 7, "id": "x", "workspace": "/", "messages": [], "usage": sample().usage});
        assert_eq!(
            decode(&serde_json::to_vec(&v7).unwrap()),
            Err(Problem::Version(7))
        );
    }
}
