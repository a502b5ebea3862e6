//! Text handling shared by saving and searching: the normal form that makes
//! two memories duplicates, and the split of a user query into terms that can
//! never be read as FTS5 syntax.
//!
//! The FTS5 `trigram` tokenizer indexes every run of three characters, so it
//! finds substrings in any script (Chinese, Japanese and Korean included,
//! which have no spaces between words) but cannot match a term shorter than
//! three characters. Such terms (`中文`, `ui`) are searched by substring
//! instead; see [`Terms`].

/// Trims `text`, collapses every run of whitespace to one space and folds
/// case: two texts with the same normal form are the same memory.
pub fn normalise(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    collapsed.to_lowercase()
}

/// Fewest characters the trigram index can match.
pub const TRIGRAM: usize = 3;

/// A user query split on whitespace into case-folded terms, deduplicated,
/// in query order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terms {
    /// Terms of at least [`TRIGRAM`] characters: searched through the index.
    pub long: Vec<String>,
    /// Shorter terms: searched by substring over the normalised text.
    pub short: Vec<String>,
}

impl Terms {
    /// Splits `query` into terms. Any character may appear in a term:
    /// quotes, `*`, `-`, parentheses and words such as `OR` are plain text.
    pub fn parse(query: &str) -> Self {
        let mut long = Vec::new();
        let mut short = Vec::new();
        for term in normalise(query).split(' ').filter(|t| !t.is_empty()) {
            let list = if term.chars().count() >= TRIGRAM {
                &mut long
            } else {
                &mut short
            };
            if !list.iter().any(|t| t == term) {
                list.push(term.to_string());
            }
        }
        Self { long, short }
    }

    /// True when the query held no term at all.
    pub fn is_empty(&self) -> bool {
        self.long.is_empty() && self.short.is_empty()
    }

    /// Every term, long ones first.
    pub fn all(&self) -> impl Iterator<Item = &str> {
        self.long.iter().chain(&self.short).map(String::as_str)
    }

    /// How many distinct terms the query holds.
    pub fn len(&self) -> usize {
        self.long.len() + self.short.len()
    }

    /// The FTS5 MATCH expression requiring every long term. Each term is a
    /// quoted string (inner `"` doubled), so nothing inside is syntax.
    /// `None` without long terms.
    pub fn fts_all(&self) -> Option<String> {
        self.fts_joined(" AND ")
    }

    /// The FTS5 MATCH expression accepting any long term, quoted the same way.
    pub fn fts_any(&self) -> Option<String> {
        self.fts_joined(" OR ")
    }

    fn fts_joined(&self, operator: &str) -> Option<String> {
        if self.long.is_empty() {
            return None;
        }
        let quoted: Vec<String> = self
            .long
            .iter()
            .map(|t| format!("\"{}\"", t.replace('"', "\"\"")))
            .collect();
        Some(quoted.join(operator))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_form_ignores_case_and_spacing() {
        assert_eq!(
            normalise("  The User\tPrefers\n\nTabs "),
            "the user prefers tabs"
        );
        assert_eq!(normalise("用户 喜欢"), "用户 喜欢");
    }

    #[test]
    fn terms_split_by_length_into_index_and_substring_searches() {
        let terms = Terms::parse("中文 中文回答 UI rust rust");
        assert_eq!(terms.long, vec!["中文回答", "rust"]);
        assert_eq!(terms.short, vec!["中文", "ui"]);
    }

    #[test]
    fn fts_syntax_in_a_query_is_quoted_as_text() {
        let terms = Terms::parse(r#"say "hi" NOT (a* OR -b)"#);
        assert_eq!(
            terms.fts_any().as_deref(),
            Some(r#""say" OR """hi""" OR "not" OR "(a*" OR "-b)""#)
        );
        assert_eq!(terms.short, vec!["or"]);
    }
}
