//! The permission gate: the first check `execute` makes for every call.
//!
//! Listing a tool to the model is advertising; this check is the gate
//! (DESIGN invariant 4); the hub also declares only what [`Policy::allows`],
//! so the model is not offered tools it cannot run. What counts as read-only
//! is decided by the hub: a `readOnlyHint` from a trusted server only (see
//! [`crate::hub`]). Today there are two modes; approval prompts,
//! allow/deny lists and hooks are later additions behind the same call.

use crate::toolbox::ToolFacts;

/// What the agent may run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Policy {
    /// Every known tool runs without asking.
    #[default]
    AllowAll,
    /// Only tools annotated read-only run.
    ReadOnly,
}

impl Policy {
    /// Whether a tool with these facts may run. The hub offers the model only
    /// the tools this allows ([`crate::hub::Hub::offer_only`]); [`check`](Self::check)
    /// gates each call with the same rule.
    pub fn allows(&self, facts: &ToolFacts) -> bool {
        match self {
            Policy::AllowAll => true,
            Policy::ReadOnly => facts.read_only,
        }
    }

    /// Whether the call may run; the error is the reason, for the model.
    pub fn check(&self, name: &str, facts: &ToolFacts) -> Result<(), String> {
        if self.allows(facts) {
            return Ok(());
        }
        Err(format!(
            "`{name}` is not available in read-only mode; use read-only tools and describe the change instead"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_mode_refuses_tools_not_annotated_read_only() {
        let writer = ToolFacts { read_only: false };
        let reader = ToolFacts { read_only: true };
        assert!(Policy::ReadOnly.check("read_file", &reader).is_ok());
        assert_eq!(
            Policy::ReadOnly.check("write_file", &writer).unwrap_err(),
            "`write_file` is not available in read-only mode; use read-only tools and describe the change instead"
        );
        assert!(Policy::AllowAll.check("write_file", &writer).is_ok());
    }
}
