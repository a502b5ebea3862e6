//! The permission gate: the first check `execute` makes for every call.
//!
//! Listing a tool to the model is advertising; this check is the gate
//! (DESIGN invariant 4). The hub declares only what [`Policy::allows`]
//! (the hub's `Hub::offer_only`), and [`Policy::check`] gates every
//! call again, because a model may call a tool from memory after it was
//! filtered out. Three rules, strongest first (the seed article's order):
//!
//! 1. the mode's hard block, decided from MCP annotations so it governs
//!    external servers too: [`Mode::Plan`] runs only read-only tools,
//!    [`Mode::Debug`] read-only tools and the built-in shell server. A tool
//!    counts as read-only only when its server says so (`readOnlyHint`)
//!    and the hub believes that server (the hub's `trusted_annotations`);
//!    a tool without annotations is not read-only;
//! 2. `deny` patterns: a match never runs, whatever `allow` says;
//! 3. `allow` patterns: when set, only matching tools run.
//!
//! What passes may still need the user's yes ([`Verdict::Ask`], answered
//! by [`approval::Approvals`]): in [`Mode::Default`] (and for the shell in
//! [`Mode::Debug`]) the shell and destructive tools ask unless
//! `auto_approve`; in [`Mode::AcceptEdits`] file edits (the built-in files
//! server) run, the shell and other destructive tools ask; [`Mode::Goal`]
//! never asks (a goal run is unattended, bounded by its iteration cap).
//! One exception to every mode: a built-in file write to a path that
//! decides what runs later is asked about call by call ([`protected`]).

pub mod approval;
pub mod pattern;
pub mod protected;

pub use nanohermes_config::Mode;

use crate::toolbox::ToolFacts;

/// What the agent may run, and what it must ask about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    mode: Mode,
    allow: Option<Vec<String>>,
    deny: Vec<String>,
    auto_approve: bool,
}

impl Default for Policy {
    /// [`Policy::allow_all`].
    fn default() -> Self {
        Policy::allow_all()
    }
}

/// What the gate decided about one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It runs.
    Run,
    /// It runs only if the user says yes.
    Ask,
    /// It does not run; the reason is for the model.
    Refuse(String),
}

impl Policy {
    /// `mode` with the `allow` / `deny` patterns of [`pattern`];
    /// `auto_approve` lets the shell and destructive tools run without
    /// asking in [`Mode::Default`] and [`Mode::Debug`].
    pub fn new(
        mode: Mode,
        allow: Option<Vec<String>>,
        deny: Vec<String>,
        auto_approve: bool,
    ) -> Policy {
        Policy {
            mode,
            allow,
            deny,
            auto_approve,
        }
    }

    /// Every known tool runs without asking ([`Mode::Goal`], no lists): the
    /// library default, for embedders and tests.
    pub fn allow_all() -> Policy {
        Policy::new(Mode::Goal, None, Vec::new(), false)
    }

    /// Only read-only tools ([`Mode::Plan`], what `--read-only` means).
    pub fn read_only() -> Policy {
        Policy::new(Mode::Plan, None, Vec::new(), false)
    }

    /// The permission mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// What this policy grants every call: in Plan and Debug the built-in
    /// servers run commands in the read-only sandbox, whatever sandbox
    /// they were started with (a shared `serve` hub, `/mode plan`). The
    /// protected-write grant is the caller's, call by call ([`protected`]).
    pub fn call_grants(&self) -> mcp_tools::CallGrants {
        mcp_tools::CallGrants {
            read_only_sandbox: matches!(self.mode, Mode::Plan | Mode::Debug),
            protected_write: false,
        }
    }

    /// The `allow` patterns, when set.
    pub fn allow_list(&self) -> Option<&[String]> {
        self.allow.as_deref()
    }

    /// Whether the tool `name` with these facts may run at all (perhaps
    /// after asking). The hub offers the model only these tools.
    pub fn allows(&self, name: &str, facts: &ToolFacts) -> bool {
        self.refusal(name, facts).is_none()
    }

    /// The gate's decision for one call.
    pub fn check(&self, name: &str, facts: &ToolFacts) -> Verdict {
        if let Some(reason) = self.refusal(name, facts) {
            return Verdict::Refuse(reason);
        }
        let asks = match self.mode {
            Mode::Default => !self.auto_approve && (facts.is_shell() || facts.destructive),
            Mode::Debug => !self.auto_approve && facts.is_shell(),
            Mode::AcceptEdits => facts.is_shell() || (facts.destructive && !facts.is_file_edit()),
            Mode::Plan | Mode::Goal => false,
        };
        if asks { Verdict::Ask } else { Verdict::Run }
    }

    /// Why the tool may not run, by the three rules in order.
    fn refusal(&self, name: &str, facts: &ToolFacts) -> Option<String> {
        match self.mode {
            Mode::Plan if !facts.read_only => {
                return Some(format!(
                    "`{name}` is not available in read-only mode (plan mode: read-only tools only); use read-only tools and describe the change instead"
                ));
            }
            Mode::Debug if !facts.read_only && !facts.is_shell() => {
                return Some(format!(
                    "`{name}` is not available in debug mode (read-only tools and the shell only); reproduce the problem with the shell and describe the fix instead"
                ));
            }
            _ => {}
        }
        if let Some(rule) = self.deny.iter().find(|p| pattern::matches(p, name, facts)) {
            return Some(format!(
                "`{name}` is denied by the rule deny = [\"{rule}\"]; use another tool, or ask the user to change the rule"
            ));
        }
        // `tool_search` only finds tools the policy offers, so an allow
        // list that names tools need not name it too.
        let finder = name == crate::toolbox::TOOL_SEARCH && facts.server.is_empty();
        if let Some(allow) = &self.allow
            && !finder
            && !allow.iter().any(|p| pattern::matches(p, name, facts))
        {
            return Some(format!(
                "`{name}` is not in the allow list ({}); use an allowed tool, or ask the user to change the rule",
                allow.join(", ")
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin(server: &str, name: &str, read_only: bool, destructive: bool) -> ToolFacts {
        ToolFacts {
            read_only,
            destructive,
            builtin: true,
            server: server.into(),
            raw_name: name.into(),
        }
    }

    fn external(server: &str, name: &str) -> ToolFacts {
        // No annotations: not read-only, destructive (the MCP defaults).
        ToolFacts {
            read_only: false,
            destructive: true,
            builtin: false,
            server: server.into(),
            raw_name: name.into(),
        }
    }

    fn mode(mode: Mode) -> Policy {
        Policy::new(mode, None, Vec::new(), false)
    }

    #[test]
    fn plan_runs_only_read_only_tools_and_debug_adds_the_shell() {
        let read = builtin("files", "read_file", true, false);
        let write = builtin("files", "write_file", false, true);
        let shell = builtin("shell", "run_command", false, true);
        let task = builtin("shell", "task_start", false, true);
        let unannotated = external("fx", "touch");
        let plan = Policy::read_only();
        assert_eq!(plan.check("read_file", &read), Verdict::Run);
        assert_eq!(
            plan.check("write_file", &write),
            Verdict::Refuse("`write_file` is not available in read-only mode (plan mode: read-only tools only); use read-only tools and describe the change instead".into())
        );
        assert!(!plan.allows("run_command", &shell));
        assert!(!plan.allows("fx__touch", &unannotated));

        let debug = mode(Mode::Debug);
        assert!(debug.allows("read_file", &read));
        assert!(debug.allows("run_command", &shell));
        assert!(debug.allows("task_start", &task));
        assert!(!debug.allows("write_file", &write));
        assert!(!debug.allows("fx__touch", &unannotated));
        // An external server named `shell` is not the shell.
        assert!(!debug.allows("shell__run_command", &external("shell", "run_command")));
    }

    #[test]
    fn default_asks_for_the_shell_and_destructive_tools_unless_auto_approve() {
        let read = builtin("files", "read_file", true, false);
        let write = builtin("files", "write_file", false, true);
        let commit = builtin("git", "git_commit", false, false);
        let shell = builtin("shell", "run_command", false, true);
        let unannotated = external("fx", "touch");
        let default = mode(Mode::Default);
        assert_eq!(default.check("read_file", &read), Verdict::Run);
        assert_eq!(default.check("git_commit", &commit), Verdict::Run);
        assert_eq!(default.check("write_file", &write), Verdict::Ask);
        assert_eq!(default.check("run_command", &shell), Verdict::Ask);
        assert_eq!(default.check("fx__touch", &unannotated), Verdict::Ask);
        let approved = Policy::new(Mode::Default, None, Vec::new(), true);
        assert_eq!(approved.check("run_command", &shell), Verdict::Run);
        assert_eq!(approved.check("fx__touch", &unannotated), Verdict::Run);

        let edits = mode(Mode::AcceptEdits);
        assert_eq!(edits.check("write_file", &write), Verdict::Run);
        assert_eq!(edits.check("run_command", &shell), Verdict::Ask);
        assert_eq!(edits.check("fx__touch", &unannotated), Verdict::Ask);
        let edits_approved = Policy::new(Mode::AcceptEdits, None, Vec::new(), true);
        assert_eq!(
            edits_approved.check("run_command", &shell),
            Verdict::Ask,
            "always asks"
        );

        let goal = mode(Mode::Goal);
        for (name, facts) in [
            ("write_file", &write),
            ("run_command", &shell),
            ("fx__touch", &unannotated),
        ] {
            assert_eq!(goal.check(name, facts), Verdict::Run, "{name}");
        }
        assert_eq!(mode(Mode::Debug).check("run_command", &shell), Verdict::Ask);
    }

    #[test]
    fn deny_beats_allow_and_a_non_empty_allow_restricts() {
        let echo = external("fx", "echo");
        let touch = external("fx", "touch");
        let read = builtin("files", "read_file", true, false);
        let policy = Policy::new(
            Mode::Goal,
            Some(vec!["mcp__fx".into(), "read_file".into()]),
            vec!["mcp__fx__touch".into()],
            false,
        );
        assert_eq!(policy.check("fx__echo", &echo), Verdict::Run);
        assert_eq!(policy.check("read_file", &read), Verdict::Run);
        assert_eq!(
            policy.check("fx__touch", &touch),
            Verdict::Refuse("`fx__touch` is denied by the rule deny = [\"mcp__fx__touch\"]; use another tool, or ask the user to change the rule".into())
        );
        assert_eq!(
            policy.check("list_dir", &builtin("files", "list_dir", true, false)),
            Verdict::Refuse("`list_dir` is not in the allow list (mcp__fx, read_file); use an allowed tool, or ask the user to change the rule".into())
        );
        // The mode's block comes first.
        let plan = Policy::new(Mode::Plan, None, vec!["fx__*".into()], false);
        assert!(
            matches!(plan.check("fx__touch", &touch), Verdict::Refuse(r) if r.contains("read-only mode"))
        );
    }
}
