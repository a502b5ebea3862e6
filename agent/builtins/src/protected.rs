//! Writes of the built-in files server to paths that decide what runs
//! later (`.git`, `.nanohermes/`, `.mcp.json`, `hooks.json`), found from a
//! call's arguments before it is sent, so the agent can ask the user first.
//!
//! The paths are looked at as the model wrote them, normalised lexically
//! (`a/../.git/x` is `.git/x`); the server checks the resolved path too, so
//! an alias through a symlink is still refused there.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

/// The first protected path a call to the built-in files tool `tool`
/// (`write_file`, `edit_file`, `apply_patch`) writes, as the call names
/// it, and why it is protected; `None` for any other tool, for arguments
/// that do not parse (the server answers those), and for a call that
/// writes no protected path.
pub fn protected_write(tool: &str, arguments: &str) -> Option<(String, &'static str)> {
    let arguments: Value = serde_json::from_str(arguments).ok()?;
    let paths: Vec<String> = match tool {
        "write_file" | "edit_file" => vec![arguments.get("path")?.as_str()?.to_owned()],
        "apply_patch" => nanohermes_files::patch_paths(arguments.get("patch")?.as_str()?).ok()?,
        _ => return None,
    };
    paths.into_iter().find_map(|path| {
        let why = nanohermes_files::protected::why_protected(&normalise(&path))?;
        Some((path, why))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn target(tool: &str, arguments: Value) -> Option<String> {
        protected_write(tool, &arguments.to_string()).map(|(path, _)| path)
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
        // Reads and unparsable arguments are not this check's.
        assert_eq!(
            target("read_file", serde_json::json!({"path": ".mcp.json"})),
            None
        );
        assert!(protected_write("write_file", "{not json").is_none());
    }
}
