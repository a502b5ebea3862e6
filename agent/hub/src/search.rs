//! Ranked search over tool descriptions: BM25 over four weighted fields.
//!
//! `tool_search` ([`super::deferred`]) ranks the deferred tools with this
//! index. Each tool is one document of four fields — its name, its
//! server, its title and its description — weighted 3, 2, 2 and 1 (BM25F
//! in its simple form: a term's frequency is the weighted sum over the
//! fields, and so is the document's length). Words are cut at every
//! character that is not a letter or a digit, at `snake_case` and
//! `camelCase` boundaries, lower-cased, and a plural `s` is dropped, so
//! "list issues" finds `listIssue` and `list_issues` alike. A query that
//! is exactly a tool's name ranks that tool first.
//!
//! The index is built once per tool list (a rebuild of the hub), so a
//! query only walks the postings of its own words: well under a
//! millisecond over a thousand tools (`examples/defer_bench.rs`).

use std::collections::HashMap;

/// BM25's term-frequency saturation.
const K1: f32 = 1.2;
/// BM25's length normalisation.
const B: f32 = 0.75;

/// Field weights: name, server, title, description.
const WEIGHTS: [f32; 4] = [3.0, 2.0, 2.0, 1.0];

/// One document to index: the four fields of one tool.
#[derive(Debug, Clone, Copy)]
pub struct Fields<'a> {
    /// The name the model calls.
    pub name: &'a str,
    /// The server that offers it.
    pub server: &'a str,
    /// Its title (may be empty).
    pub title: &'a str,
    /// Its description (may be empty).
    pub description: &'a str,
}

/// An inverted index over documents of [`Fields`], ranked by BM25.
#[derive(Debug, Default, Clone)]
pub struct Index {
    /// Term → (document, weighted term frequency), by document.
    postings: HashMap<String, Vec<(u32, f32)>>,
    /// Weighted length of each document.
    lengths: Vec<f32>,
    /// Each document's name, lower-cased (the exact-name boost).
    names: Vec<String>,
    average: f32,
}

impl Index {
    /// Indexes `docs`; a document's number is its position.
    pub fn new<'a>(docs: impl IntoIterator<Item = Fields<'a>>) -> Index {
        let mut index = Index::default();
        for (doc, fields) in docs.into_iter().enumerate() {
            let mut frequencies: HashMap<String, f32> = HashMap::new();
            let mut length = 0.0;
            let texts = [fields.name, fields.server, fields.title, fields.description];
            for (text, weight) in texts.into_iter().zip(WEIGHTS) {
                for term in terms(text) {
                    *frequencies.entry(term).or_default() += weight;
                    length += weight;
                }
            }
            for (term, frequency) in frequencies {
                index
                    .postings
                    .entry(term)
                    .or_default()
                    .push((doc as u32, frequency));
            }
            index.lengths.push(length);
            index.names.push(fields.name.to_lowercase());
        }
        let total: f32 = index.lengths.iter().sum();
        index.average = if index.lengths.is_empty() {
            1.0
        } else {
            (total / index.lengths.len() as f32).max(1.0)
        };
        index
    }

    /// How many documents are indexed.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// The documents matching `query`, best first, at most `limit`, each
    /// with its score; `keep` may refuse a document (it is then skipped,
    /// not counted). Ties keep document order.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        keep: impl Fn(usize) -> bool,
    ) -> Vec<(usize, f32)> {
        let mut words = terms(query);
        words.sort();
        words.dedup();
        let n = self.len() as f32;
        let mut scores: HashMap<u32, f32> = HashMap::new();
        for word in &words {
            let Some(postings) = self.postings.get(word) else {
                continue;
            };
            let df = postings.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(doc, tf) in postings {
                let norm = 1.0 - B + B * self.lengths[doc as usize] / self.average;
                *scores.entry(doc).or_default() += idf * tf * (K1 + 1.0) / (tf + K1 * norm);
            }
        }
        // The model often knows the exact name: it comes first.
        let exact = query.trim().to_lowercase();
        if let Some(doc) = self.names.iter().position(|name| *name == exact) {
            let top = scores.values().copied().fold(0.0, f32::max);
            scores.insert(doc as u32, top + 1.0);
        }
        let mut ranked: Vec<(usize, f32)> = scores
            .into_iter()
            .map(|(doc, score)| (doc as usize, score))
            .filter(|&(doc, _)| keep(doc))
            .collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(limit);
        ranked
    }
}

/// The words of `text`: cut at non-alphanumerics and at `camelCase`
/// boundaries, lower-cased, a plural `s` dropped from words longer than
/// three letters.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            flush(&mut word, &mut out);
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            flush(&mut word, &mut out);
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    flush(&mut word, &mut out);
    out
}

fn flush(word: &mut String, out: &mut Vec<String>) {
    if word.is_empty() {
        return;
    }
    let mut term = std::mem::take(word);
    if term.chars().count() > 3 && term.ends_with('s') && !term.ends_with("ss") {
        term.pop();
    }
    out.push(term);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields<'a>(name: &'a str, description: &'a str) -> Fields<'a> {
        Fields {
            name,
            server: "gh",
            title: "",
            description,
        }
    }

    #[test]
    fn words_are_cut_at_case_and_punctuation_and_plurals_drop_their_s() {
        assert_eq!(
            terms("gh__listIssues: List the ISSUES of a repo, class"),
            [
                "gh", "list", "issue", "list", "the", "issue", "of", "a", "repo", "class"
            ]
        );
    }

    #[test]
    fn the_best_match_comes_first_and_an_exact_name_wins() {
        let index = Index::new([
            fields("gh__create_issue", "Create a new issue in a repository"),
            fields("gh__list_issues", "List the issues of a repository"),
            fields("gh__merge_pull_request", "Merge a pull request"),
        ]);
        let hits = index.search("list issues", 10, |_| true);
        assert_eq!(hits[0].0, 1, "{hits:?}");
        assert_eq!(hits.len(), 2, "{hits:?}");
        let hits = index.search("pull request merge", 10, |_| true);
        assert_eq!(hits[0].0, 2);
        assert_eq!(index.search("gh__create_issue", 1, |_| true)[0].0, 0);
        assert!(index.search("kubernetes", 10, |_| true).is_empty());
        // A refused document is skipped, not counted against the limit.
        let hits = index.search("issue", 1, |doc| doc != 0 && doc != 1);
        assert!(hits.is_empty(), "{hits:?}");
        let hits = index.search("issue", 1, |doc| doc != 0);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [1]);
    }
}
