//! Writes to paths that decide what runs later: asked about one call at a
//! time, whatever the mode.
//!
//! The built-in files server refuses a write to `.git`, `.nanohermes/`,
//! `.mcp.json` or `hooks.json`  unless the
//! call carries the protected-write grant. The agent sends that grant only
//! after the user approved this very call: no mode approves it by itself
//! (not Goal, not AcceptEdits, not `auto_approve`), and an earlier "always"
//! for the tool neither answers the question nor is remembered from it.
//! With nobody to ask the call is refused with [`nobody_to_ask`].
//!
//! Which path a call writes is the tool box's to say
//! ([`crate::toolbox::ToolBox::protected_target`]): the hub asks the
//! built-in files server's own rules. It looks at the paths as the model
//! wrote them, normalised lexically (`a/../.git/x` is `.git/x`); the server
//! checks the resolved path too, so an alias through a symlink is still
//! refused there.

use crate::policy::approval::Approvals;

/// A protected path a call writes, and why it is protected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedTarget {
    /// The path as the call names it.
    pub path: String,
    /// Why writing it decides what runs later.
    pub why: &'static str,
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

/// Asks the user about `tool` writing `target` with `arguments`, this call
/// only: `Ok` when they said yes, otherwise the result the model reads
/// ([`nobody_to_ask`], [`declined`]).
pub async fn ask(
    approvals: &Approvals,
    tool: &str,
    target: &ProtectedTarget,
    arguments: &str,
) -> Result<(), String> {
    if !approvals.can_ask() {
        return Err(nobody_to_ask(tool, target));
    }
    if approvals
        .approve_once(tool, question(tool, target, arguments))
        .await
    {
        Ok(())
    } else {
        Err(declined(target))
    }
}
