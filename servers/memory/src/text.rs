//! Text handling shared by saving and searching: the normal form that makes
//! two memories duplicates, the form a memory is indexed in, and the split
//! of a user query into terms that can never be read as FTS5 syntax.
//!
//! One FTS5 index (`unicode61` tokenizer) covers the text and tags of every
//! memory. Scripts that separate words with spaces are indexed as words.
//! Chinese, Japanese and Korean have no spaces between words, so every run
//! of their letters is indexed as **overlapping bigrams** (`提交前必须` →
//! `提交 交前 前必 必须`), and a query is cut the same way: a question
//! phrased differently from the stored text still shares its two-character
//! pieces (`提交前运行什么` shares `提交`, `交前`, `运行`). Bigrams need no
//! dictionary, treat kana, kanji and Hangul alike, and a word of any length
//! is found through them (see the crate README for the measurements against
//! a dictionary segmenter).

/// Trims `text`, collapses every run of whitespace to one space and folds
/// case: two texts with the same normal form are the same memory.
pub fn normalise(text: &str) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    collapsed.to_lowercase()
}

/// Fewest characters of a word term that match as a prefix (`commit` finds
/// `committing`); shorter ones match whole words only.
pub const PREFIX_MIN: usize = 3;

/// A user query split into case-folded terms, deduplicated, in query order,
/// each assigned to the way it is found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Terms {
    /// Terms without CJK letters: words in the index (a prefix match from
    /// [`PREFIX_MIN`] characters on, a whole word below).
    pub words: Vec<String>,
    /// Bigrams of the query's CJK runs: exact tokens in the index.
    pub grams: Vec<String>,
    /// Single CJK letters (below the bigram size; only when the query has
    /// no longer term), and whitespace-separated terms with no letter or
    /// digit: matched by substring over the normalised text and tags.
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
        for token in normalise(query).split(' ').filter(|t| !t.is_empty()) {
            if !token.chars().any(char::is_alphanumeric) {
                push(&mut terms.short, token);
                continue;
            }
            let pieces = pieces(token);
            let mixed = pieces.len() > 1;
            for piece in pieces {
                match piece {
                    // Punctuation between a word and a CJK run (`cargo，`)
                    // belongs to neither; alone, a word keeps it as text.
                    Piece::Other(text) if mixed => {
                        let word = text.trim_matches(|c: char| !c.is_alphanumeric());
                        if !word.is_empty() {
                            push(&mut terms.words, word);
                        }
                    }
                    Piece::Other(text) => push(&mut terms.words, text),
                    Piece::Cjk(run) if run.len() == 1 => {
                        push(&mut terms.short, &run[0].to_string())
                    }
                    Piece::Cjk(run) => {
                        for gram in bigrams(&run) {
                            push(&mut terms.grams, &gram);
                        }
                    }
                }
            }
        }
        // Beside longer terms, a lone CJK letter is mostly a particle (`吗`,
        // `的`, `用`): it would match nearly every memory, so it is dropped.
        if !terms.words.is_empty() || !terms.grams.is_empty() {
            terms.short.retain(|t| !t.chars().all(is_cjk_letter));
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

    /// Each indexed term (words, then bigrams) with its MATCH expression:
    /// quoted, and a word of [`PREFIX_MIN`] characters or more as a prefix.
    pub fn indexed(&self) -> impl Iterator<Item = (&str, String)> {
        let words = self.words.iter().map(|t| {
            let quoted = quote(t);
            if t.chars().count() >= PREFIX_MIN {
                (t.as_str(), format!("{quoted}*"))
            } else {
                (t.as_str(), quoted)
            }
        });
        words.chain(self.grams.iter().map(|t| (t.as_str(), quote(t))))
    }

    /// MATCH expression over every indexed term: `all` joins with `AND`,
    /// else `OR`. `None` when the query has only substring terms.
    pub fn expression(&self, all: bool) -> Option<String> {
        let parts: Vec<String> = self.indexed().map(|(_, e)| e).collect();
        if parts.is_empty() {
            None
        } else {
            Some(parts.join(if all { " AND " } else { " OR " }))
        }
    }
}

fn push(list: &mut Vec<String>, term: &str) {
    if !list.iter().any(|t| t == term) {
        list.push(term.to_string());
    }
}

/// A term as an FTS5 string: inside double quotes, with inner quotes
/// doubled, nothing is syntax.
fn quote(term: &str) -> String {
    format!("\"{}\"", term.replace('"', "\"\""))
}

/// The form of `text` the index stores: each run of CJK letters replaced by
/// its bigrams (one letter alone stays itself), set apart by spaces so the
/// `unicode61` tokenizer reads each as one token; everything else as is.
pub fn index_form(text: &str) -> String {
    let mut out = String::with_capacity(text.len() * 2);
    for piece in pieces(text) {
        match piece {
            Piece::Other(other) => out.push_str(other),
            Piece::Cjk(run) => {
                out.push(' ');
                out.push_str(&bigrams(&run).join(" "));
                out.push(' ');
            }
        }
    }
    out
}

enum Piece<'a> {
    /// A run of CJK letters.
    Cjk(Vec<char>),
    /// Anything between such runs.
    Other(&'a str),
}

/// `text` cut into alternating runs of CJK letters and other text.
fn pieces(text: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut run: Vec<char> = Vec::new();
    let mut other_start = None;
    for (i, c) in text.char_indices() {
        if is_cjk_letter(c) {
            if let Some(start) = other_start.take() {
                out.push(Piece::Other(&text[start..i]));
            }
            run.push(c);
        } else {
            if !run.is_empty() {
                out.push(Piece::Cjk(std::mem::take(&mut run)));
            }
            other_start.get_or_insert(i);
        }
    }
    if !run.is_empty() {
        out.push(Piece::Cjk(run));
    }
    if let Some(start) = other_start {
        out.push(Piece::Other(&text[start..]));
    }
    out
}

/// Overlapping pairs of `run`, or the one letter of a one-letter run.
fn bigrams(run: &[char]) -> Vec<String> {
    if run.len() == 1 {
        return vec![run[0].to_string()];
    }
    run.windows(2).map(|w| w.iter().collect()).collect()
}

/// A letter of a script written without spaces between words (Han, kana,
/// Bopomofo) or of Hangul, whose words carry particles (`답변을`): these
/// are cut into bigrams. CJK punctuation and full-width ASCII are not.
pub fn is_cjk_letter(c: char) -> bool {
    c.is_alphanumeric() && is_cjk(c) && !matches!(c as u32, 0xFF01..=0xFF5E)
}

/// Chinese, Japanese and Korean characters, letters and punctuation.
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
    fn cjk_runs_are_indexed_as_bigrams_and_the_rest_as_is() {
        assert_eq!(
            index_form("提交前必须运行 cargo fmt 和 cargo clippy。"),
            " 提交 交前 前必 必须 须运 运行  cargo fmt  和  cargo clippy。"
        );
        assert_eq!(index_form("用cargo跑"), " 用 cargo 跑 ");
        assert_eq!(index_form("コミット前に"), " コミ ミッ ット ト前 前に ");
        assert_eq!(index_form("답변을"), " 답변 변을 ");
        assert_eq!(index_form("plain text"), "plain text");
    }

    #[test]
    fn terms_go_to_the_index_that_can_find_them() {
        let terms = Terms::parse("中文 中文回答 UI rust rust 한국어 -- 답변 中");
        assert_eq!(terms.words, vec!["ui", "rust"]);
        assert_eq!(
            terms.grams,
            vec!["中文", "文回", "回答", "한국", "국어", "답변"]
        );
        assert_eq!(terms.short, vec!["--"]);
        assert_eq!(Terms::parse("中").short, vec!["中"]);
    }

    #[test]
    fn a_question_is_cut_into_bigrams_and_words_without_punctuation() {
        let terms = Terms::parse("提交前运行什么？用cargo，还是clippy");
        assert_eq!(
            terms.grams,
            vec!["提交", "交前", "前运", "运行", "行什", "什么", "还是"]
        );
        assert_eq!(terms.words, vec!["cargo", "clippy"]);
        assert!(terms.short.is_empty(), "{:?}", terms.short);
    }

    #[test]
    fn fts_syntax_in_a_query_is_quoted_as_text() {
        let terms = Terms::parse(r#"say "hi" NOT (a* OR -b)"#);
        assert_eq!(
            terms.expression(false).as_deref(),
            Some(r#""say"* OR """hi"""* OR "not"* OR "(a*"* OR "or" OR "-b)"*"#)
        );
        assert_eq!(
            Terms::parse("用户喜欢 中文").expression(true).as_deref(),
            Some(r#""用户" AND "户喜" AND "喜欢" AND "中文""#)
        );
    }
}
