//! Telling the model when a failed command was probably refused by the
//! sandbox, and what the user can change. Landlock reports nothing to the
//! parent, so the signal is the command's own words: the errno texts a
//! refused write or connection produces, in a failed command's output.

use super::{SandboxMode, SandboxPolicy};

/// What a refused write prints (EACCES, EPERM, EROFS, EBUSY on a
/// protected mount point).
const WRITE_SIGNS: &[&str] = &[
    "permission denied",
    "operation not permitted",
    "read-only file system",
    "device or resource busy",
    "eacces",
    "eperm",
    "erofs",
];

/// What a refused connection, bind or name lookup prints.
const NET_SIGNS: &[&str] = &[
    "permission denied",
    "couldn't connect",
    "could not connect",
    "failed to connect",
    "connection refused",
    "network is unreachable",
    "could not resolve",
    "temporary failure in name resolution",
    "name or service not known",
    "eacces",
];

/// Whether the output names git or its directory: a refused write there
/// gets the way to commit.
fn mentions_git(lower: &str) -> bool {
    lower.contains(".git/")
        || lower.contains(".git'")
        || lower.contains("git ")
        || lower.starts_with("git")
        || lower.contains("fatal:")
}

/// The note for a failed command whose `output` shows a sign of a refused
/// write or connection, or `None`.
pub(super) fn note(policy: &SandboxPolicy, output: &str) -> Option<String> {
    let lower = output.to_ascii_lowercase();
    let wrote = WRITE_SIGNS.iter().any(|s| lower.contains(s));
    let connected = !policy.network && NET_SIGNS.iter().any(|s| lower.contains(s));
    if !wrote && !connected {
        return None;
    }
    let mut what = Vec::new();
    if wrote {
        what.push(match policy.mode {
            SandboxMode::ReadOnly => {
                "commands may write nothing but their private TMPDIR".to_owned()
            }
            _ => "commands may write only inside the workspace, the temp directory and sandbox_writable paths, never a git directory (.git, a nested repository's .git, core.hooksPath), .nanohermes, hooks.json or .mcp.json".to_owned(),
        });
    }
    if wrote && mentions_git(&lower) {
        what.push(
            "git's own files are read-only to commands: to commit, use the git_commit tool; \
             for anything else that changes the repository (checkout, stash, config), ask the user"
                .to_owned(),
        );
    }
    if connected {
        what.push(match policy.proxied() {
            Some(_) => "commands reach only the domains of sandbox_allowed_domains, through the proxy in HTTP_PROXY (no other TCP, no UDP, no DNS of their own)".to_owned(),
            None => "commands have no network at all (TCP, UDP, DNS)".to_owned(),
        });
    }
    let mut widen = Vec::new();
    if wrote && policy.mode == SandboxMode::WorkspaceWrite {
        widen.push("sandbox_writable = [\"/some/path\"]");
    }
    if connected && policy.proxied().is_some() {
        widen.push("sandbox_allowed_domains = [\"the.domain\"]");
    } else if connected {
        widen.push("sandbox_network = true");
    }
    widen.push("sandbox = \"danger-full-access\"");
    Some(format!(
        "note: this command ran in the sandbox ({}), which may have refused it: {}. \
         Do not work around it; if the task needs more, ask the user to widen the sandbox \
         in ~/.nanohermes/config.toml ({})",
        policy.describe(),
        what.join("; "),
        widen.join(", or ")
    ))
}
