//! When to try a model request again, and how long to wait first.
//!
//! Only transient failures are retried: HTTP 429, 500, 502, 503, 504 and
//! Anthropic's 529 (overloaded),
//! connection failures, a stream that broke or ended before the turn was
//! complete, and a mid-stream error frame whose text means a transient
//! failure (its `code` may be a string, a number or null, so the words
//! count, not the field). The wait is `base * 2^(attempt-1)` capped at
//! [`MAX_DELAY`], unless the server named its own wait in `Retry-After`.

use std::time::{Duration, SystemTime};

/// The longest wait between two attempts, whatever the policy or the server says.
pub const MAX_DELAY: Duration = Duration::from_secs(30);

/// How many times a failed request is retried, and the first wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 means a single attempt).
    pub max_retries: u32,
    /// The wait before the first retry; each later retry doubles it.
    pub base_delay: Duration,
}

impl Default for RetryPolicy {
    /// Two retries, 500 ms then 1 s: short enough for an interactive CLI.
    fn default() -> Self {
        RetryPolicy {
            max_retries: 2,
            base_delay: Duration::from_millis(500),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based): `base * 2^(attempt-1)`,
    /// capped at [`MAX_DELAY`].
    pub fn backoff(&self, attempt: u32) -> Duration {
        let factor = 2u32.saturating_pow(attempt.saturating_sub(1));
        self.base_delay.saturating_mul(factor).min(MAX_DELAY)
    }

    /// The wait before retry `attempt`: the server's `Retry-After` when it gave
    /// one, otherwise the backoff; never more than [`MAX_DELAY`].
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        retry_after
            .unwrap_or_else(|| self.backoff(attempt))
            .min(MAX_DELAY)
    }
}

/// Whether an HTTP status is worth retrying: rate limits and transient server errors.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 429 | 500 | 502 | 503 | 504 | 529)
}

/// Words of a mid-stream error that mean retrying cannot help. They win
/// over [`TRANSIENT`]: a quota error arrives with code 429.
const REFUSED: &[&str] = &[
    "invalid_request",
    "invalid request",
    "context length",
    "context_length",
    "context window",
    "context size",
    "exceed_context",
    "maximum context",
    "prompt is too long",
    "too many tokens",
    "insufficient_quota",
    "quota",
    "billing",
    "invalid_api_key",
    "authentication",
    "unauthorized",
    "permission",
    "not_found",
    "not found",
    "content_filter",
    "content filter",
];

/// Words of a mid-stream error that mean the failure is transient.
const TRANSIENT: &[&str] = &[
    "rate limit",
    "rate_limit",
    "ratelimit",
    "too many requests",
    "overloaded",
    "server_error",
    "server error",
    "internal error",
    "internal_error",
    "unavailable",
    "timeout",
    "timed out",
    "try again",
    "temporarily",
    "capacity",
    "busy",
    "bad gateway",
];

/// Whether a mid-stream error frame is worth retrying, judged by what it
/// says: its code, type and message are searched for words of [`REFUSED`]
/// (no) then [`TRANSIENT`] (yes); failing both, a numeric code counts like
/// an HTTP status; anything else is not retried.
pub fn stream_error_is_retryable(code: Option<&str>, kind: Option<&str>, message: &str) -> bool {
    let text = format!(
        "{} {} {}",
        code.unwrap_or_default(),
        kind.unwrap_or_default(),
        message
    )
    .to_lowercase();
    if REFUSED.iter().any(|word| text.contains(word)) {
        return false;
    }
    if TRANSIENT.iter().any(|word| text.contains(word)) {
        return true;
    }
    code.and_then(|c| c.trim().parse::<u16>().ok())
        .is_some_and(is_retryable_status)
}

/// Parses a `Retry-After` header value: delay seconds (`"2"`, `"1.5"`) or an
/// HTTP date. A date in the past means no wait; garbage means no hint.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0)
            .then(|| Duration::from_secs_f64(seconds.min(3600.0)));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_the_base_and_is_capped() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.backoff(1), Duration::from_millis(500));
        assert_eq!(policy.backoff(2), Duration::from_millis(1000));
        assert_eq!(policy.backoff(3), Duration::from_millis(2000));
        assert_eq!(policy.backoff(40), MAX_DELAY);
    }

    #[test]
    fn retry_after_wins_over_backoff_but_not_over_the_cap() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(3))),
            Duration::from_secs(3)
        );
        assert_eq!(policy.delay(1, Some(Duration::from_secs(600))), MAX_DELAY);
        assert_eq!(policy.delay(2, None), Duration::from_secs(1));
    }

    #[test]
    fn only_rate_limits_and_transient_server_errors_are_retryable() {
        for status in [429, 500, 502, 503, 504] {
            assert!(is_retryable_status(status), "{status}");
        }
        for status in [400, 401, 403, 404, 422, 501] {
            assert!(!is_retryable_status(status), "{status}");
        }
    }

    #[test]
    fn retry_after_accepts_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        assert_eq!(
            parse_retry_after(" 0.5 ", now),
            Some(Duration::from_millis(500))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(7));
        assert_eq!(parse_retry_after(&later, now), Some(Duration::from_secs(7)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(7));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }
}
