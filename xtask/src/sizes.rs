//! The size report: product files over [`FILE_LINES`] lines and product
//! functions over [`FN_LINES`] lines. It is printed, never a failure.
//!
//! Product code is each workspace crate's `src/`, without `#[cfg(test)]`
//! modules written inline (`mod tests { … }`); `tests/`, `examples/` and
//! `benches/` are outside `src/` and so not counted. Functions are found by
//! a lexical scan, not a parser: comments, strings and character literals
//! are blanked, then each `fn NAME` item is measured from its `fn` line to
//! its matching closing brace. That is approximate (a `fn` produced by a
//! macro is not seen; a nested `fn` is counted both on its own and inside
//! its parent) and good enough to point at what to split.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::metadata::Workspace;

/// A product file longer than this is reported.
pub const FILE_LINES: usize = 600;
/// A product function longer than this is reported.
pub const FN_LINES: usize = 80;

/// A product file over [`FILE_LINES`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LongFile {
    /// The file, relative to the workspace root.
    pub path: PathBuf,
    /// Its lines, without inline `#[cfg(test)]` modules.
    pub lines: usize,
}

/// A product function over [`FN_LINES`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LongFn {
    /// The file, relative to the workspace root.
    pub path: PathBuf,
    /// The function's name.
    pub name: String,
    /// The 1-based line of its `fn` keyword.
    pub line: usize,
    /// Its length in lines, `fn` line to closing brace.
    pub lines: usize,
}

/// The size report of the whole workspace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SizeReport {
    /// Product files scanned.
    pub files: usize,
    /// Files over the limit, longest first.
    pub long_files: Vec<LongFile>,
    /// Functions over the limit, longest first.
    pub long_fns: Vec<LongFn>,
}

/// Measures every `.rs` file under each workspace package's `src/`.
pub fn report(ws: &Workspace) -> Result<SizeReport> {
    let mut files = Vec::new();
    for pkg in &ws.packages {
        collect_rs(&pkg.dir.join("src"), &mut files)?;
    }
    files.sort();
    let mut report = SizeReport {
        files: files.len(),
        ..SizeReport::default()
    };
    for file in files {
        let src =
            fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        let rel = file.strip_prefix(&ws.root).unwrap_or(&file).to_path_buf();
        let m = measure(&src);
        if m.lines > FILE_LINES {
            report.long_files.push(LongFile {
                path: rel.clone(),
                lines: m.lines,
            });
        }
        for (name, line, lines) in m.fns {
            if lines > FN_LINES {
                report.long_fns.push(LongFn {
                    path: rel.clone(),
                    name,
                    line,
                    lines,
                });
            }
        }
    }
    report
        .long_files
        .sort_by_key(|f| std::cmp::Reverse(f.lines));
    report.long_fns.sort_by_key(|f| std::cmp::Reverse(f.lines));
    Ok(report)
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        // A package without `src/` (a manifest-only member) has no product.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", dir.display())),
    };
    for entry in entries {
        let entry = entry?;
        let path = entry.path();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            collect_rs(&path, out)?;
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    Ok(())
}

/// What [`measure`] finds in one source file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Measure {
    /// Lines, without inline `#[cfg(test)]` modules.
    pub lines: usize,
    /// Every `fn` item outside them: name, 1-based line, length in lines.
    pub fns: Vec<(String, usize, usize)>,
}

/// Measures one source file (see the module docs for what is counted).
pub fn measure(src: &str) -> Measure {
    let mut code = blank_non_code(src);
    let test_lines = blank_test_modules(&mut code);
    let total = src.lines().count();
    Measure {
        lines: total - test_lines,
        fns: functions(&code),
    }
}

/// Replaces comments, string literals and character literals with spaces,
/// keeping newlines, so braces and keywords inside them are not seen.
pub fn blank_non_code(src: &str) -> Vec<u8> {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == b'/' && next == Some(b'/') {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if c == b'/' && next == Some(b'*') {
            // Block comments nest in Rust.
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                    depth += 1;
                    j += 2;
                } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if (c == b'r' || (c == b'b' && next == Some(b'r')))
            && (i == 0 || !ident(b[i - 1]))
            && raw_string_end(b, i).is_some()
        {
            let end = raw_string_end(b, i).unwrap_or(b.len());
            blank(&mut out, i, end);
            i = end;
        } else if c == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if c == b'\'' {
            // A character literal, or else a lifetime / label (left as is).
            if next == Some(b'\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != b'\'' {
                    j += 1;
                }
                blank(&mut out, i, j + 1);
                i = j + 1;
            } else {
                let width = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                if b.get(i + 1 + width) == Some(&b'\'') {
                    blank(&mut out, i, i + 2 + width);
                    i += 2 + width;
                } else {
                    i += 1;
                }
            }
        } else {
            i += 1;
        }
    }
    out
}

/// Where a raw string starting at `i` (`r"`, `r#"`, `br"`, …) ends, if one
/// starts there.
fn raw_string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + if b[i] == b'b' { 2 } else { 1 };
    let hashes = b[j..].iter().take_while(|&&c| c == b'#').count();
    j += hashes;
    if b.get(j) != Some(&b'"') {
        return None;
    }
    j += 1;
    while j < b.len() {
        if b[j] == b'"'
            && b[j + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == b'#')
                .count()
                == hashes
        {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(b.len())
}

/// Blanks each `#[cfg(test)] mod NAME { … }` in `code` (already through
/// [`blank_non_code`]) and returns how many lines they spanned.
fn blank_test_modules(code: &mut [u8]) -> usize {
    const ATTR: &[u8] = b"#[cfg(test)]";
    let mut removed = 0;
    let mut i = 0;
    while let Some(p) = find(code, ATTR, i) {
        let mut j = p + ATTR.len();
        j = skip_ws(code, j);
        // Further attributes between `#[cfg(test)]` and the module.
        while code.get(j) == Some(&b'#') {
            match code[j..].iter().position(|&c| c == b']') {
                Some(q) => j = skip_ws(code, j + q + 1),
                None => break,
            }
        }
        if code[j..].starts_with(b"pub ") {
            j = skip_ws(code, j + 4);
        }
        if !code[j..].starts_with(b"mod ") {
            i = p + ATTR.len();
            continue;
        }
        let Some(open) = code[j..].iter().position(|&c| c == b'{' || c == b';') else {
            break;
        };
        let open = j + open;
        if code[open] == b';' {
            i = open;
            continue;
        }
        let close = matching_brace(code, open).unwrap_or(code.len() - 1);
        removed += code[p..=close].iter().filter(|&&c| c == b'\n').count() + 1;
        for c in &mut code[p..=close] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        i = close + 1;
    }
    removed
}

/// Every `fn NAME` item with a body in `code`: name, line, length.
fn functions(code: &[u8]) -> Vec<(String, usize, usize)> {
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut fns = Vec::new();
    let mut from = 0;
    while let Some(p) = find(code, b"fn", from) {
        from = p + 2;
        if (p > 0 && ident(code[p - 1])) || !code.get(p + 2).is_some_and(u8::is_ascii_whitespace) {
            continue;
        }
        let start = skip_ws(code, p + 2);
        let len = code[start..].iter().take_while(|&&c| ident(c)).count();
        if len == 0 {
            continue;
        }
        let name = String::from_utf8_lossy(&code[start..start + len]).into_owned();
        // The body's `{`, or a `;` for a body-less declaration, at bracket
        // depth zero (so `-> [u8; 4]` is not the end of the signature).
        let mut depth = 0i32;
        let mut body = None;
        for (k, &c) in code.iter().enumerate().skip(start + len) {
            match c {
                b'(' | b'[' => depth += 1,
                b')' | b']' => depth -= 1,
                b'{' if depth == 0 => {
                    body = Some(k);
                    break;
                }
                b';' if depth == 0 => break,
                _ => {}
            }
        }
        let Some(open) = body else { continue };
        let Some(close) = matching_brace(code, open) else {
            continue;
        };
        let line = code[..p].iter().filter(|&&c| c == b'\n').count() + 1;
        let lines = code[p..=close].iter().filter(|&&c| c == b'\n').count() + 1;
        fns.push((name, line, lines));
    }
    fns
}

fn matching_brace(code: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (k, &c) in code.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn skip_ws(code: &[u8], mut j: usize) -> usize {
    while code.get(j).is_some_and(u8::is_ascii_whitespace) {
        j += 1;
    }
    j
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(lines: usize) -> String {
        (0..lines)
            .map(|i| format!("    let x{i} = {i};\n"))
            .collect()
    }

    #[test]
    fn a_function_is_measured_from_fn_to_its_closing_brace() {
        let src = format!(
            "/// doc\nfn long() {{\n{}}}\n\nfn short() -> [u8; 2] {{ [0; 2] }}\n",
            body(81)
        );
        let m = measure(&src);
        assert_eq!(m.fns[0], ("long".to_owned(), 2, 83));
        assert_eq!(m.fns[1], ("short".to_owned(), 86, 1));
        assert_eq!(m.lines, 86);
    }

    #[test]
    fn braces_in_strings_comments_and_chars_are_not_code() {
        let src = "fn a() {\n    let s = \"}}\"; // }\n    let c = '}';\n    /* } /* } */ } */\n    let r = r#\"}\"#;\n    let l: &'static str = s;\n}\nfn b() {}\n";
        let fns = measure(src).fns;
        assert_eq!(fns.len(), 2, "{fns:?}");
        assert_eq!(fns[0], ("a".to_owned(), 1, 7));
        assert_eq!(fns[1], ("b".to_owned(), 8, 1));
    }

    #[test]
    fn inline_test_modules_are_not_product() {
        let src = format!(
            "fn kept() {{}}\n\n#[cfg(test)]\nmod tests {{\n    #[test]\n    fn long_test() {{\n{}    }}\n}}\n",
            body(90)
        );
        let m = measure(&src);
        assert_eq!(m.fns, vec![("kept".to_owned(), 1, 1)]);
        assert_eq!(m.lines, 2);
    }

    #[test]
    fn declarations_and_fn_pointer_types_are_not_functions() {
        let src = "trait T {\n    fn decl(&self) -> u8;\n}\ntype F = fn(u8) -> u8;\nfn real(f: F) -> u8 { f(1) }\n";
        let names: Vec<String> = measure(src).fns.into_iter().map(|f| f.0).collect();
        assert_eq!(names, ["real"]);
    }
}
