//! The history the loop keeps and resends: each message beside its JSON
//! encoding and a serial number.
//!
//! Why: every request carries the whole history and a session keeps it on
//! disk, so re-serialising every `Value` at every step makes a run
//! O(n²) in its length. A message is encoded once, when it is added or
//! changed; a request copies those bytes ([`nanohermes_llm::JsonList`]), and a
//! session file compares serial numbers to append only what is new
//! (a session's `Appender`). The only ways to change the history are
//! the methods here, so an encoding can never go stale.

use std::ops::{Deref, Range};

use serde_json::Value;
use serde_json::value::RawValue;

/// The conversation, system message first.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    messages: Vec<Value>,
    encoded: Vec<Box<RawValue>>,
    serials: Vec<u64>,
    next_serial: u64,
    /// The sum of the encodings' lengths.
    encoded_len: usize,
}

impl Transcript {
    /// A history of `messages` (usually just the system message).
    pub fn new(messages: impl IntoIterator<Item = Value>) -> Transcript {
        let mut transcript = Transcript::default();
        transcript.extend(messages);
        transcript
    }

    /// Appends `message`.
    pub fn push(&mut self, message: Value) {
        let serial = self.take_serial();
        let encoded = encode(&message);
        self.encoded_len += encoded.get().len();
        self.encoded.push(encoded);
        self.serials.push(serial);
        self.messages.push(message);
    }

    /// Appends every message of `messages`.
    pub fn extend(&mut self, messages: impl IntoIterator<Item = Value>) {
        for message in messages {
            self.push(message);
        }
    }

    /// Removes the messages from `start` on; returns how many went.
    pub fn truncate_from(&mut self, start: usize) -> usize {
        let gone = self.messages.len().saturating_sub(start);
        self.encoded_len -= lengths(self.encoded.get(start..).unwrap_or_default());
        self.messages.truncate(start);
        self.encoded.truncate(start);
        self.serials.truncate(start);
        gone
    }

    /// Replaces `range` with `replacement`; returns the messages removed.
    pub fn splice(&mut self, range: Range<usize>, replacement: Vec<Value>) -> Vec<Value> {
        let encoded: Vec<Box<RawValue>> = replacement.iter().map(encode).collect();
        let serials: Vec<u64> = replacement.iter().map(|_| self.take_serial()).collect();
        self.encoded_len += lengths(&encoded);
        self.encoded_len -= lengths(&self.encoded[range.clone()]);
        self.encoded.splice(range.clone(), encoded);
        self.serials.splice(range.clone(), serials);
        self.messages.splice(range, replacement).collect()
    }

    /// Changes message `index` in place (nothing when there is none): it
    /// is encoded again and gets a new serial number.
    pub fn edit(&mut self, index: usize, change: impl FnOnce(&mut Value)) {
        let serial = self.take_serial();
        if let Some(message) = self.messages.get_mut(index) {
            change(message);
            let encoded = encode(message);
            self.encoded_len =
                self.encoded_len - self.encoded[index].get().len() + encoded.get().len();
            self.encoded[index] = encoded;
            self.serials[index] = serial;
        }
    }

    /// Removes the last user turn and everything after it (`/undo`): the
    /// history is valid again, as it was before that turn. A compaction
    /// summary is not a turn and stays. Returns how many messages went, or
    /// `None` when there is no turn to remove (none yet, or compacted).
    pub fn undo_last_turn(&mut self) -> Option<usize> {
        let start = self
            .messages
            .iter()
            .enumerate()
            .skip(1)
            .rev()
            .find(|(_, m)| m["role"] == "user" && !crate::compaction::is_compaction_message(m))
            .map(|(index, _)| index)?;
        Some(self.truncate_from(start))
    }

    /// Each message's JSON, as a request sends it.
    pub fn encoded(&self) -> &[Box<RawValue>] {
        &self.encoded
    }

    /// The length of the history as JSON messages (the sum of each one's
    /// encoding): what compaction weighs, kept without serialising again.
    pub fn encoded_len(&self) -> usize {
        self.encoded_len
    }

    /// Each message's serial number: it differs between two messages of
    /// one transcript, and changes whenever the message at that place does
    /// (so equal serials mean an unchanged message).
    pub fn serials(&self) -> &[u64] {
        &self.serials
    }

    fn take_serial(&mut self) -> u64 {
        self.next_serial += 1;
        self.next_serial
    }
}

/// Read access is the slice of messages.
impl Deref for Transcript {
    type Target = [Value];

    fn deref(&self) -> &[Value] {
        &self.messages
    }
}

/// The summed lengths of `encoded`.
fn lengths(encoded: &[Box<RawValue>]) -> usize {
    encoded.iter().map(|raw| raw.get().len()).sum()
}

/// `message` as JSON, as a request sends it (also the hub's declarations,
/// `hub/declarations.rs`). Encoding a `Value` cannot fail (its keys are
/// strings).
pub fn encode(message: &Value) -> Box<RawValue> {
    serde_json::value::to_raw_value(message).unwrap_or_else(|_| RawValue::NULL.to_owned())
}

impl<'a> From<&'a Transcript> for nanohermes_llm::Conversation<'a> {
    fn from(transcript: &'a Transcript) -> Self {
        nanohermes_llm::Conversation {
            messages: &transcript.messages,
            encoded: Some(transcript.encoded()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What the encodings say, parsed back; and the length is theirs, the
    /// length compaction would compute.
    fn decoded(transcript: &Transcript) -> Vec<Value> {
        assert_eq!(
            transcript.encoded_len(),
            crate::compaction::history_chars(transcript)
        );
        transcript
            .encoded()
            .iter()
            .map(|raw| serde_json::from_str(raw.get()).unwrap())
            .collect()
    }

    #[test]
    fn every_change_keeps_the_encodings_equal_to_the_messages() {
        let mut t = Transcript::new([json!({"role": "system", "content": "s"})]);
        t.extend((0..5).map(|i| json!({"role": "user", "content": i})));
        assert_eq!(decoded(&t), t.to_vec());

        t.edit(0, |m| m["content"] = json!("s2"));
        assert_eq!(t[0]["content"], "s2");
        assert_eq!(decoded(&t), t.to_vec());

        let removed = t.splice(1..4, vec![json!({"role": "user", "content": "summary"})]);
        assert_eq!(removed.len(), 3);
        assert_eq!(t.len(), 4);
        assert_eq!(decoded(&t), t.to_vec());

        assert_eq!(t.truncate_from(2), 2);
        assert_eq!(t.truncate_from(5), 0);
        assert_eq!(decoded(&t), t.to_vec());
        assert_eq!((t.len(), t.encoded().len(), t.serials().len()), (2, 2, 2));
    }

    #[test]
    fn a_serial_changes_with_its_message_and_only_then() {
        let mut t = Transcript::new([json!({"role": "system"}), json!({"role": "user"})]);
        let before = t.serials().to_vec();
        t.push(json!({"role": "assistant"}));
        assert_eq!(&t.serials()[..2], &before[..]);

        t.edit(0, |m| m["content"] = json!("x"));
        assert_ne!(t.serials()[0], before[0]);
        assert_eq!(t.serials()[1], before[1]);

        // A replacement is a new message even where an old one stood.
        let at_one = t.serials()[1];
        t.splice(1..2, vec![json!({"role": "user"})]);
        assert_ne!(t.serials()[1], at_one);

        let mut all = t.serials().to_vec();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), t.len(), "serials are distinct");
    }
}
