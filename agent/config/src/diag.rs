//! Config errors that point at the text: the file, the line, the key and
//! what is allowed there.
//!
//! serde reports `unknown field` / `unknown variant` / `invalid type` with a
//! byte span but not the key it happened under, so [`Located`] keeps the
//! spanned parse of the document ([`DeTable`]) and finds the key whose
//! name or value covers the span. The same map gives the line of a key for
//! errors found after parsing (bad combinations, bad names).

use std::fmt;
use std::ops::Range;
use std::path::Path;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// A configuration problem, shown as `FILE:LINE: message`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Where the problem is, as shown to the user (`~/.nanohermes/config.toml`,
    /// `--mcp`, `NANOHERMES_MODE`); empty when there is no place.
    pub file: String,
    /// The 1-based line, when the problem is in a file.
    pub line: Option<usize>,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl ConfigError {
    /// An error at `line` of `file`.
    pub fn at(file: &str, line: Option<usize>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            file: file.to_owned(),
            line,
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.file.is_empty(), self.line) {
            (true, _) => f.write_str(&self.message),
            (false, Some(line)) => write!(f, "{}:{line}: {}", self.file, self.message),
            (false, None) => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

/// Shows `path` the way a user writes it: `~/…` under `home`.
pub fn display_path(path: &Path, home: Option<&Path>) -> String {
    if let Some(rest) = home.and_then(|h| path.strip_prefix(h).ok()) {
        return Path::new("~").join(rest).display().to_string();
    }
    path.display().to_string()
}

/// The 1-based line of byte `offset` in `text`.
pub fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// A parsed TOML document that can say where its keys are.
pub struct Located<'a> {
    /// The file name shown in errors.
    pub file: &'a str,
    /// The document's text.
    pub text: &'a str,
    root: Spanned<DeTable<'a>>,
}

impl<'a> Located<'a> {
    /// Parses `text` (syntax only); a syntax error names the line.
    pub fn parse(file: &'a str, text: &'a str) -> Result<Located<'a>, ConfigError> {
        match DeTable::parse(text) {
            Ok(root) => Ok(Located { file, text, root }),
            Err(e) => {
                let line = e.span().map(|s| line_of(text, s.start));
                let message = format!("invalid TOML: {}", first_line(e.message()));
                Err(ConfigError::at(file, line, message))
            }
        }
    }

    /// The line of the key at `path`, or of its closest existing parent.
    pub fn line(&self, path: &[&str]) -> Option<usize> {
        let mut table = self.root.get_ref();
        let mut line = None;
        for key in path {
            let Some((k, v)) = table.iter().find(|(k, _)| k.get_ref().as_ref() == *key) else {
                break;
            };
            line = Some(line_of(self.text, k.span().start));
            match v.get_ref() {
                DeValue::Table(t) => table = t,
                _ => break,
            }
        }
        line
    }

    /// The byte range of the value at `path`, when every key exists.
    pub fn value_span(&self, path: &[&str]) -> Option<Range<usize>> {
        let mut table = self.root.get_ref();
        let (last, parents) = path.split_last()?;
        for key in parents {
            match entry(table, key)?.get_ref() {
                DeValue::Table(t) => table = t,
                _ => return None,
            }
        }
        entry(table, last).map(|v| v.span())
    }

    /// An error at the key `path`, e.g. `["mcp_servers", "gh", "url"]`.
    pub fn error_at(&self, path: &[&str], message: impl Into<String>) -> ConfigError {
        ConfigError::at(self.file, self.line(path), message)
    }

    /// Rewrites a serde error from deserializing this document into one that
    /// names the key and what is allowed.
    pub fn explain(&self, error: &toml::de::Error) -> ConfigError {
        let span = error.span();
        let line = span.as_ref().map(|s| line_of(self.text, s.start));
        let found = span
            .as_ref()
            .and_then(|s| find_key(self.root.get_ref(), s, &mut Vec::new()));
        let message = rewrite(error.message(), found.as_ref(), self.text);
        ConfigError::at(self.file, line, message)
    }
}

fn entry<'t, 'i>(table: &'t DeTable<'i>, key: &str) -> Option<&'t Spanned<DeValue<'i>>> {
    table
        .iter()
        .find(|(k, _)| k.get_ref().as_ref() == key)
        .map(|(_, v)| v)
}

/// The key whose name or value contains `span`: its dotted path, whether
/// the span is the name itself, and the value's span.
struct Found {
    path: Vec<String>,
    on_key: bool,
    value: Range<usize>,
}

fn find_key(table: &DeTable<'_>, span: &Range<usize>, prefix: &mut Vec<String>) -> Option<Found> {
    // A `[a.b]` header's value span does not cover the table's body, so
    // search the whole tree rather than descending by containment.
    let inside = |r: &Range<usize>| r.start <= span.start && span.end <= r.end.max(r.start + 1);
    for (k, v) in table.iter() {
        prefix.push(k.get_ref().to_string());
        let deeper = match v.get_ref() {
            DeValue::Table(t) => find_key(t, span, prefix),
            DeValue::Array(items) => items.iter().find_map(|item| match item.get_ref() {
                DeValue::Table(t) => find_key(t, span, prefix),
                _ => None,
            }),
            _ => None,
        };
        let found = deeper.or_else(|| {
            let (ks, vs) = (k.span(), v.span());
            (inside(&ks) || inside(&vs)).then(|| Found {
                path: prefix.clone(),
                on_key: inside(&ks),
                value: vs,
            })
        });
        prefix.pop();
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Turns serde's wording into ours.
fn rewrite(message: &str, found: Option<&Found>, text: &str) -> String {
    let message = first_line(message);
    let (list, name) = (backticked(message), found.map(|f| f.path.join(".")));
    if let Some(rest) = message.strip_prefix("unknown field ") {
        let key = list.first().cloned().unwrap_or_else(|| rest.to_owned());
        let allowed = list.get(1..).unwrap_or_default().join(", ");
        // The unknown key is the last segment of the path; its table is the rest.
        let within = found
            .filter(|f| f.on_key && f.path.len() > 1)
            .map(|f| format!(" in [{}]", f.path[..f.path.len() - 1].join(".")))
            .unwrap_or_default();
        return if allowed.is_empty() {
            format!("unknown key \"{key}\"{within}; no keys are allowed here")
        } else {
            format!("unknown key \"{key}\"{within}; allowed keys: {allowed}")
        };
    }
    let Some(f) = found else {
        return message.to_owned();
    };
    let name = name.unwrap_or_default();
    let value = text
        .get(f.value.clone())
        .map(first_line)
        .unwrap_or("")
        .trim();
    if message.starts_with("unknown variant ") {
        let allowed = list.get(1..).unwrap_or_default().join(", ");
        return format!("{name} = {value} is not allowed; use one of {allowed}");
    }
    if let Some(rest) = message.strip_prefix("invalid type: ") {
        let expected = rest.split_once(", expected ").map_or(rest, |(_, e)| e);
        return format!(
            "{name} = {value} is not allowed; expected {}",
            plain(expected)
        );
    }
    if message.starts_with("missing field ") {
        return format!("[{name}]: {message}");
    }
    format!("{name} = {value}: {message}")
}

/// serde's type names in words a user knows.
fn plain(expected: &str) -> &str {
    match expected {
        "f64" | "f32" => "a number",
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number of at least 0",
        "a boolean" => "true or false",
        "a sequence" => "an array like [\"a\", \"b\"]",
        other => other,
    }
}

/// The words between backticks, in order.
fn backticked(message: &str) -> Vec<String> {
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_count_from_one() {
        assert_eq!(line_of("a\nb\nc", 0), 1);
        assert_eq!(line_of("a\nb\nc", 2), 2);
        assert_eq!(line_of("a\nb\nc", 99), 3);
    }

    #[test]
    fn a_key_path_finds_its_line() {
        let text = "model = \"m\"\n\n[mcp_servers.gh]\ncommand = \"x\"\n";
        let doc = Located::parse("f.toml", text).unwrap();
        assert_eq!(doc.line(&["model"]), Some(1));
        assert_eq!(doc.line(&["mcp_servers", "gh", "command"]), Some(4));
        assert_eq!(doc.line(&["nothing"]), None);
    }

    #[test]
    fn a_syntax_error_names_the_line() {
        let err = Located::parse("f.toml", "a = 1\nb = = 2\n").err().unwrap();
        assert_eq!(err.line, Some(2));
        assert!(
            err.to_string().starts_with("f.toml:2: invalid TOML"),
            "{err}"
        );
    }

    #[test]
    fn home_is_shown_as_tilde() {
        let home = Path::new("/home/u");
        assert_eq!(
            display_path(Path::new("/home/u/.nanohermes/config.toml"), Some(home)),
            "~/.nanohermes/config.toml"
        );
        assert_eq!(display_path(Path::new("/w/x"), Some(home)), "/w/x");
    }
}
