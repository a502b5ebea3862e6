//! Tool patterns for `allow` and `deny`, in the spellings other agents use.
//!
//! A pattern is matched against every name a tool goes by: the name the
//! model sees (`read_file`, `fx__echo`), `SERVER__TOOL` with the server's
//! raw tool name (`files__write_file`, so built-ins can be named by server
//! too) and Claude Code's `mcp__SERVER__TOOL`. Claude Code's server-wide
//! `mcp__SERVER` means every tool of that server. `*` matches any run of
//! characters (`shell__*`, `mcp__github__*`, `*_file`).

use crate::toolbox::ToolFacts;

/// Whether `pattern` names the tool `name` with `facts`.
pub fn matches(pattern: &str, name: &str, facts: &ToolFacts) -> bool {
    let pattern = pattern.trim();
    // `mcp__SERVER` (no tool part): every tool of the server.
    if let Some(rest) = pattern.strip_prefix("mcp__")
        && !rest.contains("__")
    {
        return !facts.server.is_empty() && glob(rest, &facts.server);
    }
    if glob(pattern, name) {
        return true;
    }
    if facts.server.is_empty() {
        return false;
    }
    let qualified = format!("{}__{}", facts.server, facts.raw_name);
    glob(pattern, &qualified) || glob(pattern, &format!("mcp__{qualified}"))
}

/// `*` matches any run of characters (none included); everything else is
/// literal.
fn glob(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(server: &str, raw_name: &str) -> ToolFacts {
        ToolFacts {
            server: server.into(),
            raw_name: raw_name.into(),
            ..ToolFacts::default()
        }
    }

    #[test]
    fn star_matches_any_run_and_the_rest_is_literal() {
        assert!(glob("shell__*", "shell__run_command"));
        assert!(glob("*_file", "write_file"));
        assert!(glob("a*b*c", "abc"));
        assert!(glob("a*b*c", "a-x-b-y-c"));
        assert!(!glob("a*b*c", "a-x-c"));
        assert!(!glob("ab*ab", "ab"), "the parts may not overlap");
        assert!(glob("*", ""));
        assert!(!glob("read_file", "read_file2"));
    }

    #[test]
    fn a_tool_is_matched_by_every_name_it_goes_by() {
        let external = facts("fx", "echo");
        for pattern in [
            "fx__echo",
            "mcp__fx__echo",
            "mcp__fx",
            "mcp__fx__*",
            "fx__*",
            "*",
        ] {
            assert!(matches(pattern, "fx__echo", &external), "{pattern}");
        }
        for pattern in ["echo", "mcp__fy", "mcp__fx__touch", "fx"] {
            assert!(!matches(pattern, "fx__echo", &external), "{pattern}");
        }
        let builtin = facts("files", "write_file");
        for pattern in ["write_file", "files__write_file", "files__*", "mcp__files"] {
            assert!(matches(pattern, "write_file", &builtin), "{pattern}");
        }
        // A hub meta-tool belongs to no server.
        assert!(!matches(
            "mcp__files",
            "mcp_read_resource",
            &ToolFacts::default()
        ));
    }
}
