//! Paths that decide what runs later, which the file tools write only with
//! the user's approval of that one call.
//!
//! Git runs hooks and takes config (filters, `core.fsmonitor`,
//! `core.sshCommand`) from a `.git` directory; NanoHermes starts MCP
//! servers and hooks from `.mcp.json`, `hooks.json` and `.nanohermes/`. A
//! write there by a model that read a hostile file would run code outside
//! the sandbox the next time git or NanoHermes starts. So a write whose
//! resolved target is one of them is refused unless the call carries
//! [`mcp_tools::CallGrants::protected_write`], which the agent sends only
//! after the user said yes to that call.
//!
//! The server checks the resolved path (symlinks followed), so an alias
//! such as `link -> .git` is caught; the agent checks the path as written,
//! lexically, to know whom to ask before sending the call.

use std::path::{Component, Path};

/// Why `rel` (a path relative to the workspace root) is protected, or
/// `None`: any component named `.git` (the directory, its contents, or a
/// `.git` file that points elsewhere) or `.nanohermes`, at any depth, or a
/// last component named `.mcp.json` or `hooks.json`.
pub fn why_protected(rel: &Path) -> Option<&'static str> {
    let names: Vec<&std::ffi::OsStr> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    if names.iter().any(|n| *n == ".git") {
        return Some("git runs its hooks and the commands its config names from a .git directory");
    }
    if names.iter().any(|n| *n == ".nanohermes") {
        return Some("NanoHermes reads its configuration, hooks and MCP servers from .nanohermes/");
    }
    match names.last() {
        Some(n) if *n == ".mcp.json" => {
            Some("the MCP servers it names are started on the next run")
        }
        Some(n) if *n == "hooks.json" => Some("the commands it names run as hooks on the next run"),
        _ => None,
    }
}

/// The refusal the model reads for a write to the protected `shown`.
pub(crate) fn refusal(shown: &str, why: &str) -> String {
    format!(
        "{shown} is a protected path: {why}, so writing it decides what runs later, outside the sandbox. \
         It needs the user's explicit approval of this call, which this call does not carry. \
         Do not look for another way to write it: tell the user the exact change and ask them to approve it \
         (the agent asks on a terminal) or to make it themselves"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_the_sandbox_protects_is_protected_here_too() {
        use mcp_tools::spawn::{PROTECTED_DIRS, PROTECTED_FILES};
        for dir in PROTECTED_DIRS {
            assert!(
                why_protected(Path::new(dir).join("x").as_path()).is_some(),
                "{dir}"
            );
        }
        for file in PROTECTED_FILES {
            assert!(
                why_protected(Path::new("pkg").join(file).as_path()).is_some(),
                "{file}"
            );
        }
    }

    #[test]
    fn git_agent_config_and_hook_files_are_protected_at_any_depth() {
        for path in [
            ".git",
            ".git/config",
            ".git/hooks/pre-commit",
            "sub/.git/config",
            "sub/.git",
            ".nanohermes/config.toml",
            "pkg/.nanohermes/sessions/x.json",
            ".mcp.json",
            "pkg/.mcp.json",
            "hooks.json",
            "pkg/hooks.json",
        ] {
            assert!(why_protected(Path::new(path)).is_some(), "{path}");
        }
        for path in [
            "src/main.rs",
            ".github/workflows/ci.yml",
            ".gitignore",
            "git/config",
            "hooks.json.bak",
            ".mcp.json/../x",
            "mcp.json",
        ] {
            assert!(why_protected(Path::new(path)).is_none(), "{path}");
        }
    }
}
