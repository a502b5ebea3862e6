//! Long-term memory around a turn, through the built-in memory server.
//!
//! Before each user message the server is searched with the user's text and
//! the hits become one marked block ([`BLOCK_BEGIN`] … [`BLOCK_END`]) at
//! the start of that user message, absent when nothing matches. It is not
//! in the system message: rewriting the system message every turn would
//! change the start of every request, and a provider's prompt cache serves
//! only an unchanged prefix — the block of an earlier turn stays where it
//! was, in that turn's message. After a completed turn that used tools, one request
//! without tools distils at most [`MAX_MEMORIES`] memories from that turn
//! as JSON; each is searched for first and saved only when no stored memory
//! says the same. Neither step is part of the history, and a failure of
//! either is the caller's notice, never a failed run.
//!
//! The memory tools are found by their facts (the built-in server `memory`,
//! raw names `memory_search` / `memory_save`), so recall is off whenever the
//! memory server is disabled or its tools are not offered.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::compaction::transcript_line;
use crate::events::RunEvents;
use crate::history::user_message;
use crate::policy::{Policy, Verdict};
use crate::toolbox::ToolBox;
use crate::transcript::Transcript;
use crate::usage::UsageLedger;
use nanohermes_llm::{Client, JsonList, Usage};

/// The first line of the recalled-memories block in the system message.
pub const BLOCK_BEGIN: &str = "<recalled_memories>";
/// The last line of the recalled-memories block.
pub const BLOCK_END: &str = "</recalled_memories>";
/// Hits the block holds at most.
pub const SEARCH_LIMIT: usize = 5;
/// Memories one distillation may save.
pub const MAX_MEMORIES: usize = 3;
/// The user's text is cut to this many bytes before it is a query.
const QUERY_BYTES: usize = 1_000;
/// The block's hits are cut to this many bytes.
const BLOCK_BYTES: usize = 4_000;
/// The turn's transcript the distiller reads, start and end kept.
const TRANSCRIPT_BYTES: usize = 24_000;
/// A distilled memory longer than this is cut (memories are short notes).
const MEMORY_BYTES: usize = 500;

/// What the block says before its hits.
const BLOCK_INTRO: &str = "Memories from earlier sessions that may bear on this task (memory_forget removes one that is wrong):";

/// The distiller's instructions.
const DISTIL_PROMPT: &str = "You pick what a coding agent should remember from a finished task for later sessions. \
Reply with JSON only, no prose: {\"memories\": [{\"kind\": \"lesson\", \"text\": \"...\"}]}. \
At most 3 memories, each one short self-contained sentence. Kinds: lesson (what worked or failed, and why), \
preference (how the user likes things done), correction (a mistake the user corrected), \
fact (a lasting fact about the user, the project or the environment). \
Keep only what will still be useful in another task: nothing about this task's progress, no secrets, no file contents. \
Reply {\"memories\": []} when nothing is worth keeping.";

/// Recall's view of an agent, built by the loop at its two call points
/// (the seed: memory is a pre-hook of the loop, not part of it): before
/// the user message ([`Memory::before_turn`]) and after a completed turn
/// that used tools ([`Memory::after_turn`]).
pub struct Memory<'a, T> {
    /// Whether recall is on (`memory = true`); off, both steps do nothing.
    pub enabled: bool,
    /// Where the memory server's tools are found and called.
    pub tools: &'a T,
    /// Writes the distillation (one request without tools).
    pub client: &'a Client,
    /// Whether `memory_save` may run unasked.
    pub policy: &'a Policy,
    /// Counts the distillation request.
    pub usage: &'a mut UsageLedger,
    /// The history the distiller reads.
    pub history: &'a mut Transcript,
}

impl<T: ToolBox> Memory<'_, T> {
    /// The memory server's tools, when recall is on and they are offered.
    fn names(&self) -> Option<MemoryTools> {
        self.enabled.then(|| memory_tools(self.tools)).flatten()
    }

    /// The recalled-memories block for a user message about `query`:
    /// `None` when recall is off or nothing matches. A failed search is a
    /// notice (and no block).
    pub async fn before_turn(&mut self, query: &str, events: &mut dyn RunEvents) -> Option<String> {
        let names = self.names()?;
        match search(self.tools, &names, query, SEARCH_LIMIT).await {
            Ok(hits) => block(&hits),
            Err(error) => {
                events.notice(&format!("searching long-term memory failed: {error}"));
                None
            }
        }
    }

    /// Distils the last turn into at most three new memories, when the
    /// policy lets `memory_save` run unasked. A failure is a notice.
    pub async fn after_turn(&mut self, events: &mut dyn RunEvents) {
        let Some(names) = self.names() else {
            return;
        };
        let allowed = names.save.as_deref().is_some_and(|save| {
            self.tools
                .facts(save)
                .is_some_and(|facts| self.policy.check(save, &facts) == Verdict::Run)
        });
        if !allowed {
            return;
        }
        match distil(self.client, self.tools, &names, self.history).await {
            Ok(done) => {
                self.usage.record(done.usage);
                if done.saved + done.known > 0 {
                    events.notice(&format!(
                        "long-term memory: {} saved, {} already known",
                        done.saved, done.known
                    ));
                }
            }
            Err(error) => events.notice(&format!("distilling memories failed: {error}")),
        }
    }
}

/// The model names of the memory server's tools, when it is offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryTools {
    /// `memory_search` as the model sees it.
    pub search: String,
    /// `memory_save` as the model sees it, if offered.
    pub save: Option<String>,
}

/// Finds the built-in memory server's tools among `tools`' declarations.
pub fn memory_tools<T: ToolBox>(tools: &T) -> Option<MemoryTools> {
    let mut search = None;
    let mut save = None;
    for name in tools.names() {
        let Some(facts) = tools.facts(&name) else {
            continue;
        };
        if !facts.builtin || facts.server != "memory" {
            continue;
        }
        match facts.raw_name.as_str() {
            "memory_search" => search = Some(name),
            "memory_save" => save = Some(name),
            _ => {}
        }
    }
    Some(MemoryTools {
        search: search?,
        save,
    })
}

/// Searches with `query` and returns the hit lines (`[id] kind: text`),
/// empty when nothing matches. A failed call is an `Err` with its text.
pub async fn search<T: ToolBox>(
    tools: &T,
    names: &MemoryTools,
    query: &str,
    limit: usize,
) -> Result<Vec<String>, String> {
    let mut arguments = Map::new();
    arguments.insert("query".into(), json!(clamp(query, QUERY_BYTES)));
    arguments.insert("limit".into(), json!(limit));
    let result = tools.call(&names.search, arguments).await;
    hit_lines(&result)
}

/// The hit lines of a `memory_search` result.
pub fn hit_lines(result: &str) -> Result<Vec<String>, String> {
    if let Some(error) = result.strip_prefix("ERROR: ") {
        return Err(error.to_owned());
    }
    Ok(result
        .lines()
        .filter(|line| line.starts_with('[') && line.contains("] "))
        .map(str::to_owned)
        .collect())
}

/// The text of one hit line (`[id] kind: text (tags: …)`).
fn hit_text(line: &str) -> &str {
    let rest = line.split_once("] ").map_or(line, |(_, rest)| rest);
    let text = rest.split_once(": ").map_or(rest, |(_, text)| text);
    match text.rsplit_once(" (tags: ") {
        Some((text, tags)) if tags.ends_with(')') => text,
        _ => text,
    }
}

/// The block holding `hits`, or `None` when there are none.
pub fn block(hits: &[String]) -> Option<String> {
    if hits.is_empty() {
        return None;
    }
    let body = clamp(&hits.join("\n"), BLOCK_BYTES);
    Some(format!("{BLOCK_BEGIN}\n{BLOCK_INTRO}\n{body}\n{BLOCK_END}"))
}

/// The user message's text: the recalled block (if any), then the task.
pub fn with_recalled(block: Option<String>, task: &str) -> String {
    match block {
        Some(block) => format!("{block}\n\n{task}"),
        None => task.to_owned(),
    }
}

/// The messages of the last turn: from the last user message (or
/// compaction summary) to the end.
pub fn last_turn(messages: &[Value]) -> &[Value] {
    let start = messages
        .iter()
        .rposition(|m| m["role"] == "user")
        .unwrap_or(messages.len().min(1));
    &messages[start..]
}

/// The distillation request: the distiller's instructions and the turn.
pub fn distil_request(turn: &[Value]) -> Vec<Value> {
    let transcript: Vec<String> = turn.iter().map(transcript_line).collect();
    let transcript = mcp_tools::clamp::clamp_head_tail(&transcript.join("\n\n"), TRANSCRIPT_BYTES);
    vec![
        json!({ "role": "system", "content": DISTIL_PROMPT }),
        user_message(&format!(
            "The finished task:\n\n{transcript}\n\nReply with the JSON now."
        )),
    ]
}

/// What a memory is, as the memory server stores it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryKind {
    /// What worked or failed, and why.
    Lesson,
    /// How the user likes things done.
    Preference,
    /// A mistake the user corrected.
    Correction,
    /// A fact about the project or the user.
    Fact,
}

impl MemoryKind {
    /// The name the memory server takes.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Lesson => "lesson",
            MemoryKind::Preference => "preference",
            MemoryKind::Correction => "correction",
            MemoryKind::Fact => "fact",
        }
    }
}

/// One memory the distiller proposed.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Proposed {
    /// `lesson`, `preference`, `correction` or `fact`.
    pub kind: MemoryKind,
    /// The statement.
    pub text: String,
    /// Keywords, if the distiller gave any.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// The memories in the distiller's reply: a JSON object with `memories`
/// (or a bare array), fences and prose around it tolerated. Entries with
/// an unknown kind or an empty text are dropped; at most
/// [`MAX_MEMORIES`] are kept.
pub fn parse_memories(reply: &str) -> Result<Vec<Proposed>, String> {
    let start = reply
        .find(['{', '['])
        .ok_or_else(|| format!("the reply holds no JSON: {}", clamp(reply, 200)))?;
    let value = serde_json::Deserializer::from_str(&reply[start..])
        .into_iter::<Value>()
        .next()
        .ok_or("the reply holds no JSON")?
        .map_err(|e| format!("the reply is not valid JSON: {e}"))?;
    let entries = match value {
        Value::Array(entries) => entries,
        Value::Object(mut object) => match object.remove("memories") {
            Some(Value::Array(entries)) => entries,
            _ => return Err("the reply has no `memories` array".into()),
        },
        _ => return Err("the reply is not a JSON object".into()),
    };
    Ok(entries
        .into_iter()
        .filter_map(|entry| serde_json::from_value::<Proposed>(entry).ok())
        .filter_map(|mut memory| {
            memory.text = clamp(memory.text.trim(), MEMORY_BYTES);
            (!memory.text.is_empty()).then_some(memory)
        })
        .take(MAX_MEMORIES)
        .collect())
}

/// What one distillation did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Distilled {
    /// Memories saved.
    pub saved: usize,
    /// Memories skipped: already stored.
    pub known: usize,
    /// The distillation request's usage.
    pub usage: Option<Usage>,
}

/// Distils the last turn of `messages` (one request without tools) and
/// saves what is new. `Err` says what failed; memories saved before a
/// failure stay saved.
pub async fn distil<T: ToolBox>(
    client: &Client,
    tools: &T,
    names: &MemoryTools,
    messages: &[Value],
) -> Result<Distilled, String> {
    let Some(save) = &names.save else {
        return Ok(Distilled::default());
    };
    let request = distil_request(last_turn(messages));
    let turn = client
        .chat((&request).into(), JsonList::Values(&[]), &mut |_| {})
        .await
        .map_err(|e| format!("the distillation request failed: {e}"))?;
    let mut done = Distilled {
        usage: turn.usage,
        ..Distilled::default()
    };
    let proposed =
        parse_memories(&turn.content).map_err(|e| format!("the distillation reply: {e}"))?;
    for memory in proposed {
        let hits = search(tools, names, &memory.text, SEARCH_LIMIT).await?;
        let key = normalized(&memory.text);
        if hits.iter().any(|hit| normalized(hit_text(hit)) == key) {
            done.known += 1;
            continue;
        }
        let mut arguments = Map::new();
        arguments.insert("text".into(), json!(memory.text));
        arguments.insert("kind".into(), json!(memory.kind.as_str()));
        if !memory.tags.is_empty() {
            arguments.insert("tags".into(), json!(memory.tags));
        }
        let result = tools.call(save, arguments).await;
        if let Some(error) = result.strip_prefix("ERROR: ") {
            return Err(format!("saving a memory failed: {error}"));
        }
        if result.starts_with("already known") {
            done.known += 1;
        } else {
            done.saved += 1;
        }
    }
    Ok(done)
}

/// Lower case letters and digits, one space between words: two memories
/// that differ only in case, spacing or punctuation are the same.
fn normalized(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

fn clamp(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_owned();
    }
    let end = mcp_tools::clamp::floor_char_boundary(text, max_bytes);
    text[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(lines: &[&str]) -> Vec<String> {
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn the_block_leads_the_user_message_and_is_absent_without_hits() {
        assert_eq!(block(&[]), None);
        let one = block(&hits(&["[1] fact: tests use nextest"])).unwrap();
        assert!(
            one.starts_with(BLOCK_BEGIN) && one.ends_with(BLOCK_END),
            "{one}"
        );
        let text = with_recalled(Some(one.clone()), "run the tests");
        assert_eq!(text, format!("{one}\n\nrun the tests"));
        assert_eq!(with_recalled(None, "run the tests"), "run the tests");
    }

    #[test]
    fn hit_lines_and_texts_come_from_the_search_result() {
        let result = "2 memories matching \"q\":\n[3] fact: Tests run with nextest (tags: ci, test)\n[7] lesson: a: b\n";
        let lines = hit_lines(result).unwrap();
        assert_eq!(lines.len(), 2);
        assert_eq!(hit_text(&lines[0]), "Tests run with nextest");
        assert_eq!(hit_text(&lines[1]), "a: b");
        assert!(
            hit_lines("no memory matches \"q\"; try other or fewer words")
                .unwrap()
                .is_empty()
        );
        assert_eq!(hit_lines("ERROR: boom").unwrap_err(), "boom");
    }

    #[test]
    fn memories_parse_from_fenced_or_bare_json_and_at_most_three_are_kept() {
        let reply = "Here:\n```json\n{\"memories\": [\
            {\"kind\": \"lesson\", \"text\": \" one \"},\
            {\"kind\": \"opinion\", \"text\": \"bad kind\"},\
            {\"kind\": \"fact\", \"text\": \"\"},\
            {\"kind\": \"fact\", \"text\": \"two\", \"tags\": [\"t\"]},\
            {\"kind\": \"preference\", \"text\": \"three\"},\
            {\"kind\": \"correction\", \"text\": \"four\"}]}\n```";
        let memories = parse_memories(reply).unwrap();
        let texts: Vec<&str> = memories.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, ["one", "two", "three"]);
        assert_eq!(memories[1].tags, ["t"]);
        let bare = parse_memories("[{\"kind\":\"fact\",\"text\":\"x\"}]").unwrap();
        assert_eq!(bare.len(), 1);
        assert!(parse_memories("{\"memories\": []}").unwrap().is_empty());
        assert!(parse_memories("nothing to keep").is_err());
        assert!(parse_memories("{\"other\": 1}").is_err());
    }

    #[test]
    fn normalized_ignores_case_spacing_and_punctuation() {
        assert_eq!(
            normalized("Run `cargo fmt`  before committing."),
            normalized("run cargo fmt before committing")
        );
        assert_ne!(normalized("run cargo fmt"), normalized("run cargo clippy"));
    }

    #[test]
    fn the_last_turn_starts_at_the_last_user_message() {
        let messages = vec![
            json!({"role":"system","content":"s"}),
            user_message("first"),
            json!({"role":"assistant","content":"a"}),
            user_message("second"),
            json!({"role":"assistant","content":"b"}),
        ];
        assert_eq!(last_turn(&messages).len(), 2);
        assert_eq!(last_turn(&messages)[0]["content"], "second");
        let request = distil_request(last_turn(&messages));
        let text = request[1]["content"].as_str().unwrap();
        assert!(text.contains("second") && !text.contains("first"), "{text}");
    }
}
