//! The token ledger: what the model requests of a run cost.
//!
//! Some servers never report usage in a stream even when asked. Such a
//! request is counted as a request with unknown usage, never as zero tokens,
//! so the totals say how much they cover.

use std::fmt;

use nanohermes_llm::Usage;

/// Running totals over the model requests of an agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageLedger {
    /// Model requests that returned a turn.
    pub requests: u64,
    /// Of those, requests whose server reported no usage.
    pub requests_without_usage: u64,
    /// Input tokens over the requests that reported usage.
    pub prompt_tokens: u64,
    /// Output tokens over the requests that reported usage.
    pub completion_tokens: u64,
    /// Of the input tokens, those the provider read from its prompt cache.
    pub cached_tokens: u64,
    /// Of the input tokens, those the provider wrote to its prompt cache
    /// (Anthropic bills them at 1.25×).
    pub cache_write_tokens: u64,
    /// Of the output tokens, those spent reasoning.
    pub reasoning_tokens: u64,
}

impl UsageLedger {
    /// Counts one request and its usage, if the server reported any.
    pub fn record(&mut self, usage: Option<Usage>) {
        self.requests += 1;
        match usage {
            Some(usage) => {
                self.prompt_tokens += usage.prompt_tokens;
                self.completion_tokens += usage.completion_tokens;
                self.cached_tokens += usage.cached_tokens;
                self.cache_write_tokens += usage.cache_write_tokens;
                self.reasoning_tokens += usage.reasoning_tokens;
            }
            None => self.requests_without_usage += 1,
        }
    }
}

impl UsageLedger {
    /// Adds `other`'s totals (an earlier task of the same session).
    pub fn absorb(&mut self, other: UsageLedger) {
        self.requests += other.requests;
        self.requests_without_usage += other.requests_without_usage;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_tokens += other.cached_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.reasoning_tokens += other.reasoning_tokens;
    }

    /// Input tokens the provider processed afresh: neither read from nor
    /// written to its cache (Claude Code's `input_tokens`).
    pub fn uncached_input_tokens(&self) -> u64 {
        self.prompt_tokens
            .saturating_sub(self.cached_tokens)
            .saturating_sub(self.cache_write_tokens)
    }
}

impl fmt::Display for UsageLedger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let plural = if self.requests == 1 { "" } else { "s" };
        write!(
            f,
            "{} request{plural}, {} prompt",
            self.requests, self.prompt_tokens
        )?;
        // The cache and reasoning parts only when a server reported them:
        // most local servers never do.
        match (self.cached_tokens, self.cache_write_tokens) {
            (0, 0) => {}
            (read, 0) => write!(f, " ({read} cached)")?,
            (read, written) => write!(f, " ({read} cached, {written} written to cache)")?,
        }
        write!(f, " + {} completion", self.completion_tokens)?;
        if self.reasoning_tokens > 0 {
            write!(f, " ({} reasoning)", self.reasoning_tokens)?;
        }
        f.write_str(" tokens")?;
        if self.requests_without_usage > 0 {
            write!(
                f,
                " (usage unknown for {} of them)",
                self.requests_without_usage
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreported_usage_is_counted_as_unknown_not_zero() {
        let mut ledger = UsageLedger::default();
        ledger.record(Some(Usage {
            prompt_tokens: 100,
            completion_tokens: 7,
            ..Usage::default()
        }));
        ledger.record(None);
        assert_eq!(
            ledger,
            UsageLedger {
                requests: 2,
                requests_without_usage: 1,
                prompt_tokens: 100,
                completion_tokens: 7,
                ..UsageLedger::default()
            }
        );
        assert_eq!(
            ledger.to_string(),
            "2 requests, 100 prompt + 7 completion tokens (usage unknown for 1 of them)"
        );
    }

    #[test]
    fn cache_and_reasoning_parts_are_counted_and_shown_when_reported() {
        let mut ledger = UsageLedger::default();
        ledger.record(Some(Usage {
            prompt_tokens: 1000,
            completion_tokens: 50,
            cached_tokens: 900,
            cache_write_tokens: 80,
            reasoning_tokens: 30,
        }));
        assert_eq!(ledger.uncached_input_tokens(), 20);
        assert_eq!(
            ledger.to_string(),
            "1 request, 1000 prompt (900 cached, 80 written to cache) + 50 completion (30 reasoning) tokens"
        );
    }
}
