//! `edit_file`: replace an exact string, refusing ambiguous matches.

/// Replaces `old` with `new` in `text`. Without `replace_all`, `old` must
/// occur exactly once. Returns the new text and the number of replacements.
pub(crate) fn replace_exact(
    text: &str,
    old: &str,
    new: &str,
    replace_all: bool,
    shown: &str,
) -> Result<(String, usize), String> {
    if old.is_empty() {
        return Err(
            "old_string is empty; to create or overwrite a whole file use write_file".into(),
        );
    }
    if old == new {
        return Err("old_string and new_string are identical; nothing to change".into());
    }
    let count = text.matches(old).count();
    match count {
        0 => {
            let hint = if text.contains("\r\n") && !old.contains('\r') {
                " (the file uses CRLF line endings)"
            } else {
                ""
            };
            Err(format!(
                "old_string not found in {shown}{hint}; read the file and match it exactly, whitespace and indentation included"
            ))
        }
        1 => Ok((text.replacen(old, new, 1), 1)),
        n if replace_all => Ok((text.replace(old, new), n)),
        n => Err(format!(
            "old_string occurs {n} times in {shown}; pass replace_all=true or add surrounding context to make it unique"
        )),
    }
}

/// The 1-based line range the first replacement occupies in the new text,
/// so the result can tell the model where the edit landed.
pub(crate) fn first_edit_lines(old_text: &str, old: &str, new: &str) -> (usize, usize) {
    let start = old_text.find(old).unwrap_or(0);
    let first = old_text[..start].matches('\n').count() + 1;
    let last = first + new.matches('\n').count();
    (first, last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unique_match_is_replaced() {
        let (out, n) = replace_exact("a b c", "b", "x", false, "f").unwrap();
        assert_eq!((out.as_str(), n), ("a x c", 1));
    }

    #[test]
    fn several_matches_need_replace_all() {
        let err = replace_exact("b b b", "b", "x", false, "f").unwrap_err();
        assert!(err.contains("occurs 3 times"), "{err}");
        assert!(err.contains("replace_all=true"), "{err}");
        let (out, n) = replace_exact("b b b", "b", "x", true, "f").unwrap();
        assert_eq!((out.as_str(), n), ("x x x", 3));
    }

    #[test]
    fn no_match_says_to_read_the_file() {
        let err = replace_exact("abc", "zzz", "x", false, "f").unwrap_err();
        assert!(err.starts_with("old_string not found in f"), "{err}");
        assert!(err.contains("read the file and match it exactly"), "{err}");
    }

    #[test]
    fn crlf_files_get_a_hint() {
        let err = replace_exact("a\r\nb\r\n", "a\nb", "x", false, "f").unwrap_err();
        assert!(err.contains("CRLF"), "{err}");
    }

    #[test]
    fn edit_lines_point_at_the_change() {
        assert_eq!(first_edit_lines("l1\nl2\nl3\n", "l2", "x\ny"), (2, 3));
    }
}
