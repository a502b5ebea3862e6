//! Output clamping: no tool result may grow without bound (invariant 7).
//!
//! Cuts happen on a UTF-8 char boundary and always say how much was left
//! out, so the model knows the text is partial and can ask for the rest.

/// Default cap on a tool's text output, in bytes.
pub const DEFAULT_MAX_OUTPUT: usize = 20_000;

/// Keeps at most `max_bytes` of `text` from its start; when it cuts, it
/// appends a line saying how many bytes were omitted.
pub fn clamp(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let head = floor_char_boundary(text, max_bytes);
    let omitted = text.len() - head;
    format!("{}\n[... {omitted} more bytes omitted]", &text[..head])
}

/// Keeps the first and last parts of `text` (about half of `max_bytes`
/// each) and says how much was cut between them. Command output is clamped
/// this way: the start says what ran, the end says how it finished.
pub fn clamp_head_tail(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let head = floor_char_boundary(text, max_bytes / 2);
    let tail = ceil_char_boundary(text, text.len() - (max_bytes - max_bytes / 2));
    let omitted = tail - head;
    format!(
        "{}\n[... {omitted} bytes omitted ...]\n{}",
        &text[..head],
        &text[tail..]
    )
}

/// The largest char boundary at or below `index`.
pub fn floor_char_boundary(text: &str, index: usize) -> usize {
    if index >= text.len() {
        return text.len();
    }
    let mut i = index;
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char_boundary(text: &str, index: usize) -> usize {
    let mut i = index.min(text.len());
    while !text.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_returned_unchanged() {
        assert_eq!(clamp("hello", 5), "hello");
        assert_eq!(clamp_head_tail("hello", 5), "hello");
    }

    #[test]
    fn long_text_is_cut_and_says_how_much_was_omitted() {
        assert_eq!(clamp("hello world", 5), "hello\n[... 6 more bytes omitted]");
    }

    #[test]
    fn cuts_never_split_a_multibyte_char() {
        // "é" is two bytes: a cut at byte 1 must fall back to byte 0.
        assert_eq!(clamp("é", 1), "\n[... 2 more bytes omitted]");
        let text = "日本語のテキスト".repeat(100);
        for max in 0..60 {
            let out = clamp(&text, max);
            assert!(out.len() <= max + 40);
            let out = clamp_head_tail(&text, max);
            assert!(out.contains("bytes omitted"));
        }
    }

    #[test]
    fn head_tail_keeps_both_ends() {
        let text = format!("START{}END", "x".repeat(1000));
        let out = clamp_head_tail(&text, 20);
        assert!(out.starts_with("START"));
        assert!(out.ends_with("END"));
        assert!(out.contains("[... 988 bytes omitted ...]"), "{out}");
    }
}
