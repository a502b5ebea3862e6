//! Bounded capture of a command's output: the first and the last bytes are
//! kept, the middle is counted and dropped, so a command that prints
//! gigabytes costs a fixed amount of memory.

/// Output captured from one stream (or, for a task, both streams
/// interleaved), keeping a head and a tail of at most `limit / 2` bytes
/// each.
#[derive(Debug, Clone)]
pub struct Captured {
    limit: usize,
    head: Vec<u8>,
    tail: Vec<u8>,
    total: u64,
}

impl Captured {
    /// An empty capture keeping about `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            limit: limit.max(2),
            head: Vec::new(),
            tail: Vec::new(),
            total: 0,
        }
    }

    /// Appends `bytes`.
    pub fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let half = self.limit / 2;
        let room = half.saturating_sub(self.head.len());
        let into_head = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..into_head]);
        bytes = &bytes[into_head..];
        self.tail.extend_from_slice(bytes);
        // Trim the tail once it holds twice what it keeps: amortised O(1).
        if self.tail.len() > 2 * half {
            let excess = self.tail.len() - half;
            self.tail.drain(..excess);
        }
    }

    /// Bytes pushed so far, kept or not.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Whether nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Empties the capture and returns what it held (a task's "new output
    /// since the last read").
    pub fn take(&mut self) -> Captured {
        std::mem::replace(self, Captured::new(self.limit))
    }

    /// The output as text of at most about `budget` bytes: whole when it
    /// fits, else its head and tail with a line saying how many bytes were
    /// left out between them. Invalid UTF-8 is replaced.
    pub fn render(&self, budget: usize) -> String {
        let dropped = self.total - (self.head.len() + self.tail.len()) as u64;
        if dropped == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(&self.tail);
            if all.len() <= budget {
                return String::from_utf8_lossy(&all).into_owned();
            }
            return head_and_tail(&all, &all, self.total, budget);
        }
        head_and_tail(&self.head, &self.tail, self.total, budget)
    }
}

/// The first `budget / 2` bytes of `first` and the last bytes of `last`,
/// both cut on UTF-8 boundaries, around a note of what is left out.
fn head_and_tail(first: &[u8], last: &[u8], total: u64, budget: usize) -> String {
    let head = utf8_prefix(&first[..first.len().min(budget / 2)]);
    let keep_tail = last.len().min(budget - budget / 2);
    let tail = utf8_suffix(&last[last.len() - keep_tail..]);
    let omitted = total - (head.len() + tail.len()) as u64;
    format!(
        "{}\n[... {omitted} bytes omitted ...]\n{}",
        String::from_utf8_lossy(head),
        String::from_utf8_lossy(tail)
    )
}

/// `bytes` without a UTF-8 sequence cut short at its end.
fn utf8_prefix(bytes: &[u8]) -> &[u8] {
    match std::str::from_utf8(bytes) {
        Err(e) if e.error_len().is_none() => &bytes[..e.valid_up_to()],
        _ => bytes,
    }
}

/// `bytes` without the continuation bytes of a sequence cut at its start.
fn utf8_suffix(bytes: &[u8]) -> &[u8] {
    let skip = bytes
        .iter()
        .take(3)
        .take_while(|b| **b & 0b1100_0000 == 0b1000_0000)
        .count();
    &bytes[skip..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let mut c = Captured::new(100);
        c.push(b"hello ");
        c.push(b"world");
        assert_eq!(c.render(100), "hello world");
        assert_eq!(c.total(), 11);
    }

    #[test]
    fn huge_output_keeps_head_and_tail_in_bounded_memory() {
        let mut c = Captured::new(1000);
        c.push(b"START");
        for _ in 0..100_000 {
            c.push(b"0123456789");
        }
        c.push(b"END");
        assert!(c.head.len() + c.tail.len() <= 1500);
        let text = c.render(100);
        assert!(text.starts_with("START"), "{text}");
        assert!(text.ends_with("END"), "{text}");
        assert!(text.contains("[... 999908 bytes omitted ...]"), "{text}");
    }

    #[test]
    fn output_over_the_budget_but_within_the_limit_is_clamped() {
        let mut c = Captured::new(1000);
        c.push(format!("AB{}YZ", "x".repeat(200)).as_bytes());
        let text = c.render(10);
        assert_eq!(text, "ABxxx\n[... 194 bytes omitted ...]\nxxxYZ");
    }

    #[test]
    fn cuts_do_not_split_characters() {
        let mut c = Captured::new(50);
        for _ in 0..100 {
            c.push("日本語".as_bytes());
        }
        let text = c.render(20);
        assert!(!text.contains('\u{FFFD}'), "{text}");
    }

    #[test]
    fn take_empties_the_capture() {
        let mut c = Captured::new(100);
        c.push(b"one");
        assert_eq!(c.take().render(100), "one");
        assert!(c.is_empty());
        c.push(b"two");
        assert_eq!(c.render(100), "two");
    }
}
