//! Git's quoted paths in patch headers.
//!
//! Git writes a path with unusual bytes (non-ASCII with the default
//! `core.quotePath`, a tab, a newline, a quote, a backslash) between double
//! quotes with C escapes: `"b/dir/na\303\257ve.txt"`, `"a/tab\there"`.
//! Octal escapes are bytes, so a UTF-8 name comes back from its bytes.

/// If `raw` starts with a quoted path, its unquoted text and what follows
/// the closing quote; `None` when `raw` does not start with `"`.
pub(crate) fn unquote(raw: &str) -> Option<Result<(String, &str), String>> {
    let body = raw.strip_prefix('"')?;
    Some(unquote_body(raw, body))
}

fn unquote_body<'a>(raw: &str, body: &'a str) -> Result<(String, &'a str), String> {
    let bad = |why: &str| format!("bad quoted path {raw}: {why}");
    let bytes = body.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let name = String::from_utf8(out)
                    .map_err(|_| bad("its bytes are not UTF-8, which a file name here must be"))?;
                return Ok((name, &body[i + 1..]));
            }
            b'\\' => {
                let Some(&escape) = bytes.get(i + 1) else {
                    break;
                };
                i += 2;
                let byte = match escape {
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b'f' => 0x0c,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'v' => 0x0b,
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'0'..=b'3' => {
                        let digits = bytes
                            .get(i - 1..i + 2)
                            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
                        let Some(digits) = digits else {
                            return Err(bad("an octal escape needs three digits, as in \\303"));
                        };
                        i += 2;
                        digits.iter().fold(0u8, |n, d| n * 8 + (d - b'0'))
                    }
                    other => {
                        return Err(bad(&format!(
                            "unknown escape \\{}",
                            char::from(other).escape_default()
                        )));
                    }
                };
                out.push(byte);
            }
            other => {
                out.push(other);
                i += 1;
            }
        }
    }
    Err(bad("the closing quote is missing"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn un(raw: &str) -> String {
        unquote(raw).unwrap().unwrap().0
    }

    #[test]
    fn git_escapes_come_back_as_the_names_bytes() {
        assert_eq!(un(r#""b/dir/na\303\257ve.txt""#), "b/dir/naïve.txt");
        assert_eq!(un(r#""a/tab\there""#), "a/tab\there");
        assert_eq!(un(r#""a/\"q\\b""#), "a/\"q\\b");
        assert_eq!(un(r#""\a\b\f\n\r\v\001""#), "\u{7}\u{8}\u{c}\n\r\u{b}\u{1}");
        let (name, rest) = unquote("\"b/x y\"\t2024-01-01").unwrap().unwrap();
        assert_eq!((name.as_str(), rest), ("b/x y", "\t2024-01-01"));
        assert!(unquote("b/plain").is_none());
    }

    #[test]
    fn broken_quoting_is_an_error_not_a_name() {
        for raw in [r#""b/open"#, r#""b/\q""#, r#""b/\30""#, r#""b/\377""#] {
            let err = unquote(raw).unwrap().unwrap_err();
            assert!(err.starts_with("bad quoted path"), "{raw}: {err}");
        }
    }
}
