//! Writes to paths that decide what runs later: asked about one call at a
//! time, whatever the mode.
//!
//! The built-in files server refuses a write to `.git`, `.nanohermes/`,
//! `.mcp.json` or `hooks.json` ([`nanohermes_files::protected`]) unless the
//! call carries the protected-write grant. The agent sends that grant only
//! after the user approved this very call: no mode approves it by itself
//! (not Goal, not AcceptEdits, not `auto_approve`), and an earlier "always"
//! for the tool neither answers the question nor is remembered from it.
//! With nobody to ask the call is refused with [`nobody_to_ask`].
//!
//! The agent looks at the paths as the model wrote them, normalised
//! lexically (`a/../.git/x` is `.git/x`); the server checks the resolved
//! path too, so an alias through a symlink is still refused there.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::toolbox::ToolFacts;

/// A protected path a call writes, and why it is protected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedTarget {
    /// The path as the call names it.
    pub path: String,
    /// Why writing it decides what runs later.
    pub why: &'static str,
}

/// The first protected path the call to a built-in files write tool
/// (`write_file`, `edit_file`, `apply_patch`) names; `None` for any other
/// tool, for arguments that do not parse (the server answers those), and
/// for a call that writes no protected path.
pub fn protected_target(facts: &ToolFacts, arguments: &str) -> Option<ProtectedTarget> {
    if !facts.is_file_edit() {
        return None;
    }
    let arguments: Value = serde_json::from_str(arguments).ok()?;
    let paths: Vec<String> = match facts.raw_name.as_str() {
        "write_file" | "edit_file" => vec![arguments.get("path")?.as_str()?.to_owned()],
        "apply_patch" => nanohermes_files::patch_paths(arguments.get("patch")?.as_str()?).ok()?,
        _ => return None,
    };
    paths.into_iter().find_map(|path| {
        let why = nanohermes_files::protected::why_protected(&normalise(&path))?;
        Some(ProtectedTarget { path, why })
    })
}

/// `path` with `.` dropped and each `..` popping the name before it (a
/// `..` with nothing to pop is dropped: the server refuses an escape).
fn normalise(path: &str) -> PathBuf {
    let mut out = PathBuf::new();
    for component in Path::new(path).components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// The question put to the user for `tool` writing `target`.
pub fn question(tool: &str, target: &ProtectedTarget, arguments: &str) -> String {
    format!(
        "nanohermes wants `{tool}` to write {}, a protected path: {}; a change there decides what runs later, outside the sandbox.\n{}\nAllow this one call? [y]es / [n]o:",
        target.path,
        target.why,
        mcp_tools::clamp::clamp(arguments, 400)
    )
}

/// The result the model reads when nobody can approve the write.
pub fn nobody_to_ask(tool: &str, target: &ProtectedTarget) -> String {
    format!(
        "ERROR: `{tool}` was not run: {} is a protected path ({}), and writing it needs the user's explicit approval of this call, which no mode gives by itself; nobody can be asked here (no terminal, or a host that cannot answer). Do not retry it or look for another way to write it: tell the user the exact change, so they can run nanohermes interactively and approve it, or make the change themselves",
        target.path, target.why
    )
}

/// The result the model reads when the user said no.
pub fn declined(target: &ProtectedTarget) -> String {
    format!(
        "ERROR: the user did not approve writing the protected path {}. Do not retry it; ask what to do instead",
        target.path
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(tool: &str) -> ToolFacts {
        ToolFacts {
            read_only: false,
            destructive: true,
            builtin: true,
            server: "files".into(),
            raw_name: tool.into(),
        }
    }

    fn target(tool: &str, arguments: Value) -> Option<String> {
        protected_target(&files(tool), &arguments.to_string()).map(|t| t.path)
    }

    #[test]
    fn file_writes_to_protected_paths_are_found_in_every_tool() {
        let write = |path: &str| {
            target(
                "write_file",
                serde_json::json!({"path": path, "content": ""}),
            )
        };
        assert_eq!(write(".mcp.json").as_deref(), Some(".mcp.json"));
        assert_eq!(
            write("src/../.git/config").as_deref(),
            Some("src/../.git/config")
        );
        assert_eq!(
            write("./pkg/hooks.json").as_deref(),
            Some("./pkg/hooks.json")
        );
        assert_eq!(write("src/main.rs"), None);
        assert_eq!(write(".git/../src/main.rs"), None);
        let edit = target(
            "edit_file",
            serde_json::json!({"path": "a/.nanohermes/config.toml", "old_string": "a", "new_string": "b"}),
        );
        assert_eq!(edit.as_deref(), Some("a/.nanohermes/config.toml"));
        let patch = "--- a/notes.txt\n+++ \"b/.git/hooks/pre-comm\\151t\"\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(
            target("apply_patch", serde_json::json!({ "patch": patch })).as_deref(),
            Some(".git/hooks/pre-commit")
        );
        // Reads, other servers and unparsable arguments are not this check's.
        assert_eq!(
            target("read_file", serde_json::json!({"path": ".mcp.json"})),
            None
        );
        let external = ToolFacts {
            builtin: false,
            ..files("write_file")
        };
        assert!(protected_target(&external, r#"{"path": ".mcp.json"}"#).is_none());
        assert!(protected_target(&files("write_file"), "{not json").is_none());
    }
}
