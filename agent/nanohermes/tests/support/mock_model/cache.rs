//! Prompt-cache accounting like each provider's, from what the mock saw.
//!
//! A request is rendered in its provider's canonical order — the tools,
//! then the instructions or system prompt, then the history — as the
//! serialised JSON of each part, one block per tool, message, input item
//! or content block ([`render`]). Then ([`account`]):
//!
//! - OpenAI (chat and responses): the cache serves the longest common
//!   prefix with any earlier request carrying the same `prompt_cache_key`
//!   (without one: the same model), counted as bytes / 4 tokens, rounded
//!   down to 128-token blocks, and only once it reaches 1024 tokens;
//! - Anthropic (messages): an earlier request wrote the prefix up to each
//!   of its `cache_control` breakpoints; this one reads the longest such
//!   prefix ending at a block boundary at most 20 blocks before one of its
//!   own breakpoints (Anthropic's look-back), writes from there to its
//!   last breakpoint, and the rest is plain input.
//!
//! A `cache_control` marker is left out of the render: moving a breakpoint
//! does not change the content a cache entry is made of.

use std::collections::HashSet;

use serde_json::Value;

use super::WireApi;

/// OpenAI caches nothing shorter than this many tokens.
pub const OPENAI_MINIMUM_TOKENS: usize = 1024;
/// OpenAI's cache hits grow in blocks of this many tokens.
pub const OPENAI_BLOCK_TOKENS: usize = 128;
/// How many blocks before a breakpoint Anthropic looks for a hit.
pub const ANTHROPIC_LOOKBACK: usize = 20;

/// A request in its provider's canonical render order.
#[derive(Debug, Clone)]
pub struct Rendered {
    wire: WireApi,
    /// Whose cache it may share: the `prompt_cache_key`, else the model.
    key: String,
    /// The render's length in bytes.
    len: usize,
    /// The render itself (the OpenAI prefix comparison needs it).
    text: Vec<u8>,
    /// The end offset of each block.
    boundaries: Vec<usize>,
    /// The hash of the render up to each block's end.
    prefix_hashes: Vec<u64>,
    /// The blocks that carry `cache_control`.
    breakpoints: Vec<usize>,
}

/// One request's cache figures, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Accounted {
    /// The whole prompt.
    pub prompt_bytes: usize,
    /// Served from the cache.
    pub cached_bytes: usize,
    /// Written to the cache (Anthropic).
    pub write_bytes: usize,
}

/// Builds a render block by block, hashing as it goes.
struct Builder {
    rendered: Rendered,
    hash: u64,
}

impl Builder {
    fn new(wire: WireApi, key: String) -> Builder {
        Builder {
            rendered: Rendered {
                wire,
                key,
                len: 0,
                text: Vec::new(),
                boundaries: Vec::new(),
                prefix_hashes: Vec::new(),
                breakpoints: Vec::new(),
            },
            hash: 0xcbf2_9ce4_8422_2325,
        }
    }

    /// Appends `bytes` to the current block (not a boundary yet).
    fn push(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.hash ^= u64::from(*byte);
            self.hash = self.hash.wrapping_mul(0x0100_0000_01b3);
        }
        self.rendered.text.extend_from_slice(bytes);
        self.rendered.len += bytes.len();
    }

    /// Appends one block, without its `cache_control`, and ends it; a
    /// breakpoint when it carried one.
    fn block(&mut self, value: &Value) {
        let marked = value.get("cache_control").is_some_and(|c| !c.is_null());
        let text = match value {
            Value::Object(object) if object.contains_key("cache_control") => {
                let mut plain = object.clone();
                plain.remove("cache_control");
                Value::Object(plain).to_string()
            }
            other => other.to_string(),
        };
        self.push(text.as_bytes());
        if marked {
            self.rendered
                .breakpoints
                .push(self.rendered.boundaries.len());
        }
        self.rendered.boundaries.push(self.rendered.len);
        self.rendered.prefix_hashes.push(self.hash);
    }

    fn each(&mut self, list: &Value) {
        for value in list.as_array().into_iter().flatten() {
            self.block(value);
        }
    }
}

/// `body` (sent on `wire`) in its provider's canonical render order.
pub fn render(wire: WireApi, body: &Value) -> Rendered {
    let model = format!("model:{}", body["model"].as_str().unwrap_or_default());
    match wire {
        WireApi::Chat | WireApi::Responses => {
            let key = body["prompt_cache_key"]
                .as_str()
                .map_or(model, |key| format!("key:{key}"));
            let mut builder = Builder::new(wire, key);
            builder.each(&body["tools"]);
            if wire == WireApi::Chat {
                builder.each(&body["messages"]);
            } else {
                if let Some(instructions) = body.get("instructions").filter(|i| !i.is_null()) {
                    builder.block(instructions);
                }
                match &body["input"] {
                    Value::Array(_) => builder.each(&body["input"]),
                    other => builder.block(other),
                }
            }
            builder.rendered
        }
        WireApi::Messages => {
            let mut builder = Builder::new(wire, model);
            builder.each(&body["tools"]);
            match &body["system"] {
                Value::String(text) => {
                    builder.block(&serde_json::json!({"type":"text","text":text}))
                }
                Value::Array(_) => builder.each(&body["system"]),
                _ => {}
            }
            for message in body["messages"].as_array().into_iter().flatten() {
                let role = message["role"].as_str().unwrap_or_default();
                builder.push(format!("role:{role}").as_bytes());
                match &message["content"] {
                    Value::String(text) => {
                        builder.block(&serde_json::json!({"type":"text","text":text}))
                    }
                    Value::Array(_) => builder.each(&message["content"]),
                    other => builder.block(other),
                }
            }
            builder.rendered
        }
    }
}

/// `this` request's figures against the requests `seen` before it.
pub fn account(seen: &[Rendered], this: &Rendered) -> Accounted {
    let peers = seen
        .iter()
        .filter(|r| r.wire == this.wire && r.key == this.key);
    match this.wire {
        WireApi::Chat | WireApi::Responses => {
            let common = peers
                .map(|r| common_prefix(&r.text, &this.text))
                .max()
                .unwrap_or(0);
            let tokens = common / 4;
            let cached = if tokens >= OPENAI_MINIMUM_TOKENS {
                tokens / OPENAI_BLOCK_TOKENS * OPENAI_BLOCK_TOKENS
            } else {
                0
            };
            Accounted {
                prompt_bytes: this.len,
                cached_bytes: cached * 4,
                write_bytes: 0,
            }
        }
        WireApi::Messages => {
            let written: HashSet<(usize, u64)> = peers
                .flat_map(|r| {
                    r.breakpoints
                        .iter()
                        .map(|&b| (r.boundaries[b], r.prefix_hashes[b]))
                })
                .collect();
            let mut read = 0;
            for &breakpoint in &this.breakpoints {
                for block in breakpoint.saturating_sub(ANTHROPIC_LOOKBACK)..=breakpoint {
                    let prefix = (this.boundaries[block], this.prefix_hashes[block]);
                    if written.contains(&prefix) {
                        read = read.max(prefix.0);
                    }
                }
            }
            let last = this.breakpoints.last().map_or(0, |&b| this.boundaries[b]);
            Accounted {
                prompt_bytes: this.len,
                cached_bytes: read,
                write_bytes: last.saturating_sub(read),
            }
        }
    }
}

/// The length of the longest common prefix of `a` and `b`.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
