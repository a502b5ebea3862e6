//! Context compaction: when the history outgrows its budget, the oldest
//! messages are replaced by a model-written summary.
//!
//! The seed article's rule: past `threshold_chars` of serialised history
//! (characters, not tokens: no tokenizer) and with more than `keep + 1`
//! messages, the last `keep` messages stay verbatim and everything between
//! the system message and them is replaced by one summary message (at most
//! 300 words, written by one extra model request without tools), or by the
//! omission note when that request fails: the model must know that
//! something is missing. The loop calls a [`Compactor`] after the user
//! message and after each step's results ([`Compactor::compact_if_due`]);
//! [`Agent::compact`](crate::agent::Agent::compact) forces it (for
//! `/compact`); a context-length error from the server forces it too, and
//! the request is retried once compacted.
//!
//! The cut never lands on a `tool` message and never separates an assistant
//! `tool_calls` message from its results: it moves back to the assistant
//! message that made the calls (so the latest tool interaction stays whole),
//! or forward past the results when moving back would leave nothing to drop.
//!
//! The summary is a `user` message right after the system message, not a
//! second `system` message: several chat templates (llama.cpp's Gemma and
//! Mistral ones) refuse a system message anywhere but first, and the
//! history invariant wants a user message second.

use serde_json::{Value, json};

use crate::events::RunEvents;
use crate::history::user_message;
use crate::transcript::Transcript;
use crate::usage::UsageLedger;
use nanohermes_llm::{Client, JsonList};

/// The serialised history size, in characters, past which it is compacted.
pub const DEFAULT_THRESHOLD_CHARS: usize = 120_000;

/// The messages kept verbatim at the end of the history.
pub const DEFAULT_KEEP_MESSAGES: usize = 10;

/// The most words a summary keeps (the prompt asks for this, the code
/// enforces it).
pub const SUMMARY_WORDS: usize = 300;

/// The first line of a summary message.
pub const SUMMARY_HEADER: &str = "[Earlier conversation summary]";

/// What replaces the dropped messages when no summary could be written.
pub const OMISSION_NOTE: &str = "[Earlier conversation was omitted to keep the context small]";

/// The most characters of one dropped message the summariser reads.
const MESSAGE_CHARS: usize = 2_000;

/// The instructions of the summary request.
const SUMMARY_PROMPT: &str = "You summarise the earlier part of a coding agent's conversation so the agent can continue without it. \
Write at most 300 words of plain text: the user's goals and instructions, decisions made, files read or changed, \
commands run and what they showed, problems still open and the next steps. No preamble.";

/// When the history is compacted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactionConfig {
    /// The serialised history size (characters) past which it is compacted.
    pub threshold_chars: usize,
    /// The messages kept verbatim at the end.
    pub keep_messages: usize,
}

impl Default for CompactionConfig {
    /// 120 000 characters, the last 10 messages.
    fn default() -> Self {
        CompactionConfig {
            threshold_chars: DEFAULT_THRESHOLD_CHARS,
            keep_messages: DEFAULT_KEEP_MESSAGES,
        }
    }
}

impl CompactionConfig {
    /// Whether `messages` is past both limits: more characters than the
    /// threshold and more than `keep + 1` messages.
    pub fn is_due(&self, messages: &[Value]) -> bool {
        self.is_due_at(messages.len(), history_chars(messages))
    }

    /// [`is_due`](Self::is_due) for a history of `count` messages whose
    /// JSON is `chars` long, known without serialising it again
    /// ([`crate::transcript::Transcript::encoded_len`]).
    pub fn is_due_at(&self, count: usize, chars: usize) -> bool {
        count > self.keep_messages + 1 && chars > self.threshold_chars
    }
}

/// One compaction's view of an agent: the history it shortens, the client
/// that writes the summary and the ledger that request is booked to. The
/// loop builds one where it compacts ([`crate::agent::Agent`]).
pub struct Compactor<'a> {
    /// When to compact and how much to keep.
    pub config: CompactionConfig,
    /// Writes the summary (one request without tools).
    pub client: &'a Client,
    /// Counts the summary request.
    pub usage: &'a mut UsageLedger,
    /// The history, system message first.
    pub history: &'a mut Transcript,
}

impl Compactor<'_> {
    /// Compacts now, whatever the size (`/compact`): everything between
    /// the system message and the last `keep_messages` becomes one summary.
    /// Returns how many messages were replaced (0 when there was nothing
    /// to replace).
    pub async fn compact(&mut self) -> usize {
        let Some(cut) = cut_point(self.history, self.config.keep_messages) else {
            return 0;
        };
        let request = summary_request(&self.history[1..cut], self.config.threshold_chars);
        // One request without tools; its text is not shown and a failure
        // only costs the summary.
        let summary = match self
            .client
            .chat((&request).into(), JsonList::Values(&[]), &mut |_| {})
            .await
        {
            Ok(turn) => {
                self.usage.record(turn.usage);
                Some(turn.content)
            }
            Err(_) => None,
        };
        let replacement = summary_message(summary.as_deref());
        self.history.splice(1..cut, vec![replacement]).len()
    }

    /// Compacts when the history is past its limits, and says so.
    pub async fn compact_if_due(&mut self, events: &mut dyn RunEvents) {
        if self
            .config
            .is_due_at(self.history.len(), self.history.encoded_len())
        {
            self.compact_and_report(events).await;
        }
    }

    /// [`compact`](Self::compact), and a notice saying what replaced how
    /// many messages (none when nothing was replaced).
    pub async fn compact_and_report(&mut self, events: &mut dyn RunEvents) -> usize {
        let dropped = self.compact().await;
        if dropped > 0 {
            let how = if is_compaction_message(&self.history[1])
                && self.history[1]["content"] != OMISSION_NOTE
            {
                "a summary"
            } else {
                "an omission note (the summary request failed)"
            };
            events.notice(&format!(
                "compacted the history: {dropped} earlier messages replaced by {how}"
            ));
        }
        dropped
    }
}

/// The size of `messages` as sent: the sum of each one's JSON length.
pub fn history_chars(messages: &[Value]) -> usize {
    messages.iter().map(|m| m.to_string().len()).sum()
}

/// Where the kept tail of `messages` starts when `keep` messages are kept,
/// or `None` when nothing between the system message and the tail could
/// be dropped. The index never points at a `tool` message.
pub fn cut_point(messages: &[Value], keep: usize) -> Option<usize> {
    let len = messages.len();
    let is_tool = |i: usize| messages.get(i).is_some_and(|m| m["role"] == "tool");
    let first = len.saturating_sub(keep).max(1);
    // Back to the assistant message whose calls these results answer.
    let mut start = first;
    while start > 1 && is_tool(start) {
        start -= 1;
    }
    if start <= 1 {
        // Moving back left nothing to drop; drop the whole interaction.
        start = first;
        while start < len && is_tool(start) {
            start += 1;
        }
    }
    (start > 1).then_some(start)
}

/// The messages of the summary request for `dropped`: instructions, then
/// the dropped part as a transcript. Each message is clamped, and the whole
/// transcript to `max_chars` (its start and end kept), so the request fits
/// where the history that overflowed did not.
pub fn summary_request(dropped: &[Value], max_chars: usize) -> Vec<Value> {
    let transcript: Vec<String> = dropped.iter().map(transcript_line).collect();
    let transcript = mcp_tools::clamp::clamp_head_tail(&transcript.join("\n\n"), max_chars);
    vec![
        json!({ "role": "system", "content": SUMMARY_PROMPT }),
        user_message(&format!(
            "The conversation so far:\n\n{transcript}\n\nWrite the summary now."
        )),
    ]
}

/// The message that replaces the dropped part: the summary when the model
/// wrote one, the omission note otherwise.
pub fn summary_message(summary: Option<&str>) -> Value {
    match summary.map(str::trim).filter(|s| !s.is_empty()) {
        Some(text) => user_message(&format!("{SUMMARY_HEADER}\n{}", first_words(text))),
        None => user_message(OMISSION_NOTE),
    }
}

/// Whether `message` is one that compaction inserted (a summary or the
/// omission note), not something the user typed.
pub fn is_compaction_message(message: &Value) -> bool {
    message["role"] == "user"
        && message["content"]
            .as_str()
            .is_some_and(|c| c.starts_with(SUMMARY_HEADER) || c == OMISSION_NOTE)
}

/// `text` cut after its `SUMMARY_WORDS`th word (whitespace-separated),
/// line breaks kept.
fn first_words(text: &str) -> String {
    let mut words = 0;
    let mut in_word = false;
    for (at, c) in text.char_indices() {
        if c.is_whitespace() {
            if in_word {
                words += 1;
                if words == SUMMARY_WORDS {
                    return format!("{} …", &text[..at]);
                }
            }
            in_word = false;
        } else {
            in_word = true;
        }
    }
    text.to_owned()
}

/// One dropped message as the summariser reads it (and the memory
/// distiller, [`crate::recall`]).
pub(crate) fn transcript_line(message: &Value) -> String {
    let role = message["role"].as_str().unwrap_or("unknown");
    let content = match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let mut line = match role {
        "tool" => format!(
            "tool result ({}):\n{content}",
            message["tool_call_id"].as_str().unwrap_or_default()
        ),
        _ => format!("{role}:\n{content}"),
    };
    for call in message["tool_calls"].as_array().into_iter().flatten() {
        line.push_str(&format!(
            "\n[called {} ({}) with {}]",
            call["function"]["name"].as_str().unwrap_or_default(),
            call["id"].as_str().unwrap_or_default(),
            call["function"]["arguments"].as_str().unwrap_or("{}")
        ));
    }
    mcp_tools::clamp::clamp(&line, MESSAGE_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{system_message, tool_message};

    fn assistant(calls: &[&str]) -> Value {
        if calls.is_empty() {
            return json!({"role":"assistant","content":"text"});
        }
        let calls: Vec<Value> = calls
            .iter()
            .map(|id| json!({"id":id,"type":"function","function":{"name":"t","arguments":"{}"}}))
            .collect();
        json!({"role":"assistant","content":null,"tool_calls":calls})
    }

    #[test]
    fn the_cut_moves_back_to_the_call_that_the_kept_results_answer() {
        let messages = vec![
            system_message("s"),
            user_message("u"),
            assistant(&["a", "b", "c"]),
            tool_message("a", "1"),
            tool_message("b", "2"),
            tool_message("c", "3"),
        ];
        // The last 2 are results: keep their call with them.
        assert_eq!(cut_point(&messages, 2), Some(2));
        assert_eq!(cut_point(&messages, 4), Some(2));
        // Nothing before index 2 but the user message: at most it goes.
        assert_eq!(cut_point(&messages, 5), None);
    }

    #[test]
    fn the_cut_moves_forward_when_moving_back_leaves_nothing_to_drop() {
        let messages = vec![
            system_message("s"),
            assistant(&["a", "b"]),
            tool_message("a", "1"),
            tool_message("b", "2"),
            user_message("next"),
        ];
        assert_eq!(cut_point(&messages, 3), Some(4));
    }

    #[test]
    fn due_only_past_both_limits() {
        let config = CompactionConfig {
            threshold_chars: 300,
            keep_messages: 2,
        };
        let small = vec![system_message("s"), user_message(&"x".repeat(500))];
        assert!(history_chars(&small) > 500);
        assert!(!config.is_due(&small), "too few messages");
        let mut many = vec![system_message("s")];
        many.extend((0..5).map(|_| user_message("x")));
        assert!(!config.is_due(&many), "too small");
        assert!(history_chars(&many) < 300);
        many.push(user_message(&"x".repeat(300)));
        assert!(config.is_due(&many));
    }

    #[test]
    fn a_summary_keeps_at_most_300_words_and_its_line_breaks() {
        let long: String = (0..400).map(|i| format!("w{i}\n")).collect();
        let message = summary_message(Some(&long));
        let content = message["content"].as_str().unwrap();
        assert!(content.starts_with("[Earlier conversation summary]\nw0\nw1\n"));
        assert!(content.ends_with("w299 …"), "{content}");
        assert!(is_compaction_message(&message));
        assert_eq!(summary_message(Some("  ")), user_message(OMISSION_NOTE));
        assert!(is_compaction_message(&summary_message(None)));
        assert!(!is_compaction_message(&user_message("hi")));
    }

    #[test]
    fn the_summary_request_has_no_tools_and_clamps_each_message() {
        let dropped = vec![
            user_message(&"y".repeat(10_000)),
            assistant(&["a"]),
            tool_message("a", "result"),
        ];
        let request = summary_request(&dropped, 100_000);
        assert_eq!(request.len(), 2);
        let text = request[1]["content"].as_str().unwrap();
        assert!(text.len() < 4_000, "{}", text.len());
        assert!(text.contains("[called t (a) with {}]"), "{text}");
        assert!(text.contains("tool result (a):\nresult"), "{text}");
        // The whole transcript is capped too, its end kept.
        let many: Vec<Value> = (0..100)
            .map(|i| user_message(&format!("m{i} {}", "z".repeat(3000))))
            .collect();
        let text = summary_request(&many, 10_000)[1]["content"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(text.len() < 10_200, "{}", text.len());
        assert!(
            text.contains("m0 ") && text.contains("m99 "),
            "start and end kept"
        );
    }
}
