//! The system prompt: identity, operating rules, workspace root, then the
//! user's and the project's guidance and the list of skills.
//!
//! It is resent with every request, so the fixed part stays short (seed
//! article): no persona, no planning ritual. Project conventions come from
//! the project's own files ([`guidance`]): AGENTS.md layered from the user's
//! home and every directory down to the workspace (or a fallback name such
//! as CLAUDE.md), NANOHERMES.md, and skills ([`skills`]), which are only
//! listed here (name and description) and loaded in full by the `skill`
//! tool (the hub's `skill` meta-tool).

pub mod guidance;
pub mod skills;

use std::path::Path;

pub use guidance::{Guidance, GuidanceSources, load};
pub use skills::Skill;

/// The system prompt for an agent working in `workspace`, with `guidance`
/// (from [`load`]; [`Guidance::default`] for none) after the fixed part.
pub fn system_prompt(workspace: &Path, guidance: &Guidance) -> String {
    let mut prompt = base_prompt(workspace);
    guidance.render_into(&mut prompt);
    prompt
}

/// Adds the one line saying that more tools exist than are declared, with
/// the count per server (a bounded catalogue, never every name), and which
/// servers are still connecting; nothing when neither.
pub fn add_deferred_line(prompt: &mut String, counts: &[(String, usize)], connecting: &[String]) {
    if !counts.is_empty() {
        prompt.push_str(&format!(
            "\nMore tools exist than are declared ({}); call {} with a few words to find one, \
             and it is declared from your next step on.\n",
            crate::toolbox::counts_text(counts),
            crate::toolbox::TOOL_SEARCH
        ));
    }
    if !connecting.is_empty() {
        prompt.push_str(&format!(
            "\nServers still connecting: {}; their tools will be found with {}.\n",
            connecting.join(", "),
            crate::toolbox::TOOL_SEARCH
        ));
    }
}

/// The fixed part: identity, operating rules, workspace root.
fn base_prompt(workspace: &Path) -> String {
    format!(
        "You are NanoHermes, a terminal coding agent working in the user's workspace: you read
and change code, run commands, search the codebase and answer questions about the project.

Rules:
- Use your tools to inspect code and run commands; never guess file contents or command output.
- Read a file before editing it. Prefer targeted edits (edit_file) to rewrites; keep changes minimal.
- Do not add features, refactors or \"improvements\" beyond what the user asked for.
- There is no TTY: use non-interactive commands (pass auto-confirm flags).
- Say briefly what you are doing, then act; do not over-narrate.
- After each tool result, decide the next step. When the task is done, reply with a concise
  summary and stop calling tools.

Workspace root: {}
Paths given to tools are relative to the workspace root.
",
        workspace.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_names_the_workspace_and_stays_short() {
        let prompt = system_prompt(Path::new("/tmp/project"), &Guidance::default());
        assert!(prompt.starts_with("You are NanoHermes"));
        assert!(prompt.contains("Workspace root: /tmp/project\n"));
        assert!(prompt.len() < 900, "{} bytes", prompt.len());
        assert!(!prompt.contains("# Project guidance"), "{prompt}");
    }
}
