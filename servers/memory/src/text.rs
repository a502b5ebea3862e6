//! Text handling shared by saving and searching: the normal form that makes
//! two memories duplicates, and the split of a user query into terms that can
//! never be read as FTS5 syntax.
//!
//! Two FTS5 indexes cover the text and tags of every memory:
//! - a **word** index (`unicode61` tokenizer) for scripts that separate
//!   words with spaces: a term there is a word or a word prefix, and a hit
//!   is one doclist lookup, fast at any size;
//! - a **trigram** index for Chinese, Japanese and Korean, which have no
//!   spaces between words: it matches any substring of three characters or
//!   more. Shorter CJK terms (`中文`) are below the trigram size and are
//!   matched by substring over the normalised text instead.

/// Trims `text`, collapses every run of whitespace to one space and folds
/// case: two texts with the same normal form are the same memory.
pub fn normalise(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    collapsed.to_lowercase()
}

/// Fewest characters the trigram index can match.
pub const TRIGRAM: usize = 3;

/// A user query split on whitespace into case-folded terms, deduplicated,
/// in query order, each assigned to the index that can find it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terms {
    /// Terms without CJK characters: searched in the word index (a prefix
    /// match from three characters on, a whole word below).
    pub words: Vec<String>,
    /// Terms with CJK characters, at least [`TRIGRAM`] long: searched in the
    /// trigram index.
    pub grams: Vec<String>,
    /// Shorter CJK terms, and terms with no letter or digit: searched by
    /// substring over the normalised text and tags.
    pub short: Vec<String>,
}

impl Terms {
    /// Splits `query` into terms. Any character may appear in a term:
    /// quotes, `*`, `-`, parentheses and words such as `OR` are plain text.
    pub fn parse(query: &str) -> Self {
        let mut terms = Self {
            words: Vec::new(),
            grams: Vec::new(),
            short: Vec::new(),
        };
        for term in normalise(query).split(' ').filter(|t| !t.is_empty()) {
            let list = if !term.chars().any(char::is_alphanumeric) {
                &mut terms.short
            } else if !term.chars().any(is_cjk) {
                &mut terms.words
            } else if term.chars().count() >= TRIGRAM {
                &mut terms.grams
            } else {
                &mut terms.short
            };
            if !list.iter().any(|t| t == term) {
                list.push(term.to_string());
            }
        }
        terms
    }

    /// True when the query held no term at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many distinct terms the query holds.
    pub fn len(&self) -> usize {
        self.words.len() + self.grams.len() + self.short.len()
    }

    /// Every term.
    pub fn all(&self) -> impl Iterator<Item = &str> {
        self.words
            .iter()
            .chain(&self.grams)
            .chain(&self.short)
            .map(String::as_str)
    }

    /// MATCH expression for the word index: `all` joins with `AND`, else `OR`.
    /// A term of three characters or more matches as a word prefix
    /// (`commit` finds `committing`). `None` without word terms.
    pub fn words_expression(&self, all: bool) -> Option<String> {
        let quoted = self.words.iter().map(|t| {
            if t.chars().count() >= TRIGRAM {
                format!("{}*", quote(t))
            } else {
                quote(t)
            }
        });
        join(quoted.collect(), all)
    }

    /// MATCH expression for the trigram index, joined like
    /// [`Terms::words_expression`]. `None` without CJK terms.
    pub fn grams_expression(&self, all: bool) -> Option<String> {
        join(self.grams.iter().map(|t| quote(t)).collect(), all)
    }
}

/// A term as an FTS5 string: inside double quotes, with inner quotes
/// doubled, nothing is syntax.
fn quote(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

fn join(parts: Vec<String>, all: bool) -> Option<String> {
    if parts.is_empty() {
        None
    } else {
        Some(parts.join(if all { " AND " } else { " OR " }))
    }
}

/// Chinese, Japanese and Korean characters: scripts written without spaces
/// between words (and Hangul, whose words the trigram index also handles).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x2FDF      // CJK radicals
        | 0x3000..=0x303F    // CJK symbols and punctuation
        | 0x3040..=0x30FF    // Hiragana, Katakana
        | 0x3100..=0x312F    // Bopomofo
        | 0x3130..=0x318F    // Hangul compatibility jamo
        | 0x31F0..=0x31FF    // Katakana extensions
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK compatibility ideographs
        | 0xFF00..=0xFFEF    // half- and full-width forms
        | 0x20000..=0x3FFFF  // CJK extensions B and later
    )
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
    fn terms_go_to_the_index_that_can_find_them() {
        let terms = Terms::parse("中文 中文回答 UI rust rust 한국어 -- 답변");
        assert_eq!(terms.words, vec!["ui", "rust"]);
        assert_eq!(terms.grams, vec!["中文回答", "한국어"]);
        assert_eq!(terms.short, vec!["中文", "--", "답변"]);
    }

    #[test]
    fn fts_syntax_in_a_query_is_quoted_as_text() {
        let terms = Terms::parse(r#"say "hi" NOT (a* OR -b)"#);
        assert_eq!(
            terms.words_expression(false).as_deref(),
            Some(r#""say"* OR """hi"""* OR "not"* OR "(a*"* OR "or" OR "-b)"*"#)
        );
        assert_eq!(
            Terms::parse("用户喜欢 中文回答")
                .grams_expression(true)
                .as_deref(),
            Some(r#""用户喜欢" AND "中文回答""#)
        );
    }
}
