//! Content search: a parallel walk, one ripgrep `Searcher` per walker
//! thread, and a stable, bounded rendering sorted by path.
//!
//! Every matching line is counted, so the footer can say how many were not
//! shown, but only the lines that can still be shown are kept: each walker
//! thread keeps the files with the smallest paths that together hold
//! `max_results` matches, which bounds memory on any tree.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use grep_matcher::Matcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};

use crate::walk::{PathFilter, parallel_walker, relative_to};

/// Longest line shown, in bytes; a longer line shows a window around its
/// first match, so one minified file cannot flood the output.
pub const MAX_LINE_BYTES: usize = 300;

/// What to search for and where.
#[derive(Debug, Clone)]
pub struct SearchRequest {
    /// The workspace root; shown paths are relative to it.
    pub root: PathBuf,
    /// The file or directory to search (inside `root`).
    pub start: PathBuf,
    /// Only files this glob selects are searched.
    pub filter: Option<PathFilter>,
    /// The compiled pattern.
    pub matcher: RegexMatcher,
    /// Lines of context before and after each match.
    pub context_lines: usize,
    /// Most matching lines kept for the output.
    pub max_results: usize,
}

/// One line kept for the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A matching line: its number and (possibly cut) text.
    Match(u64, String),
    /// A context line: its number and (possibly cut) text.
    Context(u64, String),
    /// A gap between two non-adjacent groups of lines.
    Break,
}

/// The hits in one file.
#[derive(Debug, Clone)]
pub struct FileHits {
    /// Path relative to the workspace root.
    pub path: PathBuf,
    /// Every matching line in the file, shown or not.
    pub matches: u64,
    /// The lines kept, in file order.
    pub entries: Vec<Entry>,
    stored: usize,
}

/// The result of a search, before rendering.
#[derive(Debug, Default)]
pub struct SearchOutcome {
    /// Files with kept hits, sorted by path.
    pub files: Vec<FileHits>,
    /// Matching lines in all files searched.
    pub total_matches: u64,
    /// Files with at least one matching line.
    pub files_matched: u64,
    /// Files or directories that could not be read.
    pub unreadable: u64,
}

/// Compiles the pattern the way the tool takes it; the error quotes the
/// pattern and says how to search for it literally.
pub fn build_matcher(
    pattern: &str,
    case_insensitive: bool,
    fixed_strings: bool,
) -> Result<RegexMatcher, String> {
    RegexMatcherBuilder::new()
        .case_insensitive(case_insensitive)
        .fixed_strings(fixed_strings)
        .line_terminator(Some(b'\n'))
        .build(pattern)
        .map_err(|e| {
            format!(
                "invalid regex `{pattern}`: {e}\n(the pattern is a Rust regex; escape special characters, or set fixed_strings: true to search for the text literally)"
            )
        })
}

/// Runs the search. Blocking: call it from a blocking thread.
pub fn search(request: &SearchRequest) -> SearchOutcome {
    let results = Mutex::new(Vec::new());
    let mut builder = WorkerBuilder {
        request,
        results: &results,
    };
    parallel_walker(&request.start).visit(&mut builder);
    let mut outcome = SearchOutcome::default();
    for partial in results.into_inner().unwrap_or_else(|e| e.into_inner()) {
        outcome.files.extend(partial.files);
        outcome.total_matches += partial.total_matches;
        outcome.files_matched += partial.files_matched;
        outcome.unreadable += partial.unreadable;
    }
    outcome.files.sort_by(|a, b| a.path.cmp(&b.path));
    outcome
}

/// Room kept at the end of the output for the footer lines.
const FOOTER_ROOM: usize = 300;

/// Renders an outcome as `path:line:text` lines (context lines as
/// `path-line-text`, gaps as `--`): at most `max_results` matching lines
/// and about `max_bytes` bytes, cut at a line, then a footer saying how
/// many more matches were not shown (so the footer is never clamped away).
pub fn render(
    outcome: &SearchOutcome,
    request: &SearchRequest,
    pattern: &str,
    max_bytes: usize,
) -> String {
    let budget = max_bytes.saturating_sub(FOOTER_ROOM);
    let mut out = String::new();
    let mut line = String::new();
    let mut shown: u64 = 0;
    let max = request.max_results as u64;
    'files: for (index, file) in outcome.files.iter().enumerate() {
        if shown >= max {
            break;
        }
        let path = file.path.to_string_lossy();
        let separator = request.context_lines > 0 && index > 0;
        for entry in separator
            .then_some(&Entry::Break)
            .into_iter()
            .chain(&file.entries)
        {
            line.clear();
            match entry {
                Entry::Match(number, text) => {
                    if shown >= max {
                        break 'files;
                    }
                    line.push_str(&format!("{path}:{number}:{text}\n"));
                }
                Entry::Context(number, text) => line.push_str(&format!("{path}-{number}-{text}\n")),
                Entry::Break => {
                    if shown >= max {
                        break 'files;
                    }
                    line.push_str("--\n");
                }
            }
            if out.len() + line.len() > budget {
                break 'files;
            }
            if matches!(entry, Entry::Match(..)) {
                shown += 1;
            }
            out.push_str(&line);
        }
    }
    if out.ends_with("--\n") {
        out.truncate(out.len() - 3);
    }
    if outcome.total_matches == 0 {
        out.push_str(&format!("No matches for `{pattern}`."));
    } else if outcome.total_matches > shown {
        let more = outcome.total_matches - shown;
        out.push_str(&format!(
            "[{more} more matches not shown ({} matches in {} files); narrow the pattern, path or glob, or raise max_results]",
            outcome.total_matches, outcome.files_matched
        ));
    }
    if outcome.unreadable > 0 {
        out.push_str(&format!(
            "\n[{} files or directories could not be read]",
            outcome.unreadable
        ));
    }
    out
}

/// What one walker thread found; handed over when the thread's visitor is
/// dropped at the end of the walk.
#[derive(Default)]
struct Partial {
    files: Vec<FileHits>,
    stored: usize,
    total_matches: u64,
    files_matched: u64,
    unreadable: u64,
}

impl Partial {
    fn add(&mut self, hits: FileHits, max_results: usize) {
        self.total_matches += hits.matches;
        self.files_matched += 1;
        self.stored += hits.stored;
        self.files.push(hits);
        if self.stored > 2 * max_results + 64 {
            self.prune(max_results);
        }
    }

    /// Keeps the files with the smallest paths that together hold at least
    /// `max_results` kept matches. A dropped file sorts after all of them,
    /// so none of its lines could be shown.
    fn prune(&mut self, max_results: usize) {
        self.files.sort_by(|a, b| a.path.cmp(&b.path));
        let mut kept = 0;
        let mut keep_files = 0;
        for file in &self.files {
            if kept >= max_results {
                break;
            }
            kept += file.stored;
            keep_files += 1;
        }
        self.files.truncate(keep_files);
        self.stored = kept;
    }
}

struct WorkerBuilder<'s> {
    request: &'s SearchRequest,
    results: &'s Mutex<Vec<Partial>>,
}

impl<'s> ParallelVisitorBuilder<'s> for WorkerBuilder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        let context = self.request.context_lines;
        Box::new(Worker {
            request: self.request,
            results: self.results,
            searcher: SearcherBuilder::new()
                .line_number(true)
                .binary_detection(BinaryDetection::quit(b'\x00'))
                .before_context(context)
                .after_context(context)
                .build(),
            matcher: self.request.matcher.clone(),
            partial: Partial::default(),
        })
    }
}

struct Worker<'s> {
    request: &'s SearchRequest,
    results: &'s Mutex<Vec<Partial>>,
    searcher: Searcher,
    matcher: RegexMatcher,
    partial: Partial,
}

impl ParallelVisitor for Worker<'_> {
    fn visit(&mut self, entry: Result<DirEntry, ignore::Error>) -> WalkState {
        let entry = match entry {
            Ok(entry) => entry,
            Err(_) => {
                self.partial.unreadable += 1;
                return WalkState::Continue;
            }
        };
        // Only regular files: symlinks are never followed, so the search
        // cannot leave the workspace.
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            return WalkState::Continue;
        }
        let relative = relative_to(&self.request.root, entry.path());
        if let Some(filter) = &self.request.filter
            && !filter.selects(&relative)
        {
            return WalkState::Continue;
        }
        self.search_file(entry.path(), relative);
        WalkState::Continue
    }
}

impl Worker<'_> {
    fn search_file(&mut self, path: &Path, relative: PathBuf) {
        let mut sink = Collect {
            matcher: &self.matcher,
            cap: self.request.max_results,
            storing: true,
            binary: false,
            hits: FileHits {
                path: relative,
                matches: 0,
                entries: Vec::new(),
                stored: 0,
            },
        };
        match self.searcher.search_path(&self.matcher, path, &mut sink) {
            Ok(()) if !sink.binary && sink.hits.matches > 0 => {
                self.partial.add(sink.hits, self.request.max_results);
            }
            Ok(()) => {}
            Err(_) => self.partial.unreadable += 1,
        }
    }
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        let partial = std::mem::take(&mut self.partial);
        self.results
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(partial);
    }
}

/// The sink for one file: counts every match, keeps at most `cap` of them
/// (with their context), and notices binary files so they can be dropped.
struct Collect<'m> {
    matcher: &'m RegexMatcher,
    cap: usize,
    storing: bool,
    binary: bool,
    hits: FileHits,
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        let first = mat.line_number().unwrap_or(0);
        for (number, line) in (first..).zip(mat.lines()) {
            self.hits.matches += 1;
            if self.hits.stored >= self.cap {
                self.storing = false;
            }
            if self.storing {
                self.hits
                    .entries
                    .push(Entry::Match(number, cut_line(line, Some(self.matcher))));
                self.hits.stored += 1;
            }
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        if self.storing && !matches!(context.kind(), SinkContextKind::Other) {
            let number = context.line_number().unwrap_or(0);
            self.hits
                .entries
                .push(Entry::Context(number, cut_line(context.bytes(), None)));
        }
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if self.storing {
            self.hits.entries.push(Entry::Break);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// One line as shown: without its terminator, invalid UTF-8 replaced, and
/// cut to a window of [`MAX_LINE_BYTES`] around the first match when longer.
pub fn cut_line(line: &[u8], matcher: Option<&RegexMatcher>) -> String {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() <= MAX_LINE_BYTES {
        return String::from_utf8_lossy(line).into_owned();
    }
    let first_match = matcher
        .and_then(|m| m.find(line).ok().flatten())
        .map_or(0, |m| m.start());
    let mut start = first_match.saturating_sub(MAX_LINE_BYTES / 4);
    let mut end = (start + MAX_LINE_BYTES).min(line.len());
    start = start.min(end.saturating_sub(MAX_LINE_BYTES));
    // Keep whole UTF-8 characters at both edges of the window.
    while start < end && is_continuation(line[start]) {
        start += 1;
    }
    while end < line.len() && end > start && is_continuation(line[end]) {
        end -= 1;
    }
    format!(
        "{}{}{} [line cut: {} bytes]",
        if start > 0 { "…" } else { "" },
        String::from_utf8_lossy(&line[start..end]),
        if end < line.len() { "…" } else { "" },
        line.len()
    )
}

fn is_continuation(byte: u8) -> bool {
    byte & 0b1100_0000 == 0b1000_0000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_lines_lose_only_their_terminator() {
        assert_eq!(cut_line(b"hello\r\n", None), "hello");
        assert_eq!(cut_line("héllo\n".as_bytes(), None), "héllo");
    }

    #[test]
    fn a_long_line_shows_a_window_around_its_first_match() {
        let mut line = "a".repeat(10_000);
        line.push_str("NEEDLE");
        line.push_str(&"b".repeat(10_000));
        let matcher = build_matcher("NEEDLE", false, false).unwrap();
        let cut = cut_line(line.as_bytes(), Some(&matcher));
        assert!(cut.contains("NEEDLE"), "{cut}");
        assert!(cut.starts_with('…'));
        assert!(cut.ends_with("… [line cut: 20006 bytes]"), "{cut}");
        assert!(cut.len() < MAX_LINE_BYTES + 60);
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let line = "日本語".repeat(500);
        let cut = cut_line(line.as_bytes(), None);
        assert!(!cut.contains('\u{FFFD}'), "{cut}");
    }

    #[test]
    fn an_invalid_regex_error_quotes_the_pattern() {
        let err = build_matcher("foo(bar", false, false).unwrap_err();
        assert!(err.starts_with("invalid regex `foo(bar`"), "{err}");
        assert!(err.contains("fixed_strings"));
        assert!(build_matcher("foo(bar", false, true).is_ok());
    }
}
