//! The usage record a session file keeps: the totals of the agent's
//! [`UsageLedger`] over every task of the session, in a shape of its own
//! so that no wire type (`run_task`'s output) becomes a disk format.
//! Requests whose server reported no usage stay counted as such: unknown
//! usage is unknown on disk too, never zero tokens.

use nanohermes_core::usage::UsageLedger;
use serde::{Deserialize, Serialize};

/// Model usage over every task of a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionUsage {
    /// Model requests made.
    pub requests: u64,
    /// Of those, requests whose server reported no usage (absent in files
    /// written before it was recorded).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub requests_without_usage: u64,
    /// Input tokens over the requests that reported usage.
    pub prompt_tokens: u64,
    /// Output tokens over the requests that reported usage.
    pub completion_tokens: u64,
    /// Of the input, tokens read from the provider's cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
    /// Of the input, tokens written to the provider's cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// Of the output, tokens spent reasoning.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl From<UsageLedger> for SessionUsage {
    fn from(ledger: UsageLedger) -> Self {
        SessionUsage {
            requests: ledger.requests,
            requests_without_usage: ledger.requests_without_usage,
            prompt_tokens: ledger.prompt_tokens,
            completion_tokens: ledger.completion_tokens,
            cached_tokens: ledger.cached_tokens,
            cache_write_tokens: ledger.cache_write_tokens,
            reasoning_tokens: ledger.reasoning_tokens,
        }
    }
}

impl From<SessionUsage> for UsageLedger {
    fn from(usage: SessionUsage) -> Self {
        UsageLedger {
            requests: usage.requests,
            requests_without_usage: usage.requests_without_usage,
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
            cached_tokens: usage.cached_tokens,
            cache_write_tokens: usage.cache_write_tokens,
            reasoning_tokens: usage.reasoning_tokens,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_usage_survives_the_round_trip_through_the_file() {
        let mut ledger = UsageLedger::default();
        ledger.record(Some(nanohermes_llm::Usage {
            prompt_tokens: 10,
            completion_tokens: 2,
            cached_tokens: 8,
            ..Default::default()
        }));
        ledger.record(None);
        let line = serde_json::to_string(&SessionUsage::from(ledger)).unwrap();
        assert!(line.contains("\"requests_without_usage\":1"), "{line}");
        let back: SessionUsage = serde_json::from_str(&line).unwrap();
        assert_eq!(UsageLedger::from(back), ledger);
        // A file written before the field existed reads as all known.
        let old: SessionUsage =
            serde_json::from_str(r#"{"requests":3,"prompt_tokens":1,"completion_tokens":1}"#)
                .unwrap();
        assert_eq!(old.requests_without_usage, 0);
    }
}
