//! What the loop needs from the tools: declarations to advertise, facts to
//! gate on, and a call that always answers with a string.
//!
//! The loop depends on this trait, not on the MCP hub, so its contract is
//! stated in three methods, plus two with defaults: [`ToolBox::refresh`]
//! (the step boundary, where a server's changed tool list is applied) and
//! [`ToolBox::unknown_tool`]. The MCP client (`nanohermes-hub`) implements it.

use std::future::Future;

use serde_json::{Map, Value};

/// What the gate needs to know about a declared tool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFacts {
    /// The tool only reads (MCP `readOnlyHint`, believed only from a
    /// trusted server).
    pub read_only: bool,
    /// The tool may destroy something (MCP `destructiveHint`, which
    /// defaults to true for a tool that is not read-only; an untrusted
    /// server's tools count as destructive).
    pub destructive: bool,
    /// The tool's server is one of the built-ins.
    pub builtin: bool,
    /// The server that offers it (empty for the hub's meta-tools).
    pub server: String,
    /// The tool's name on its server.
    pub raw_name: String,
}

impl ToolFacts {
    /// A tool of the built-in shell server (`run_command`, the task tools).
    pub fn is_shell(&self) -> bool {
        self.builtin && self.server == "shell"
    }

    /// A tool of the built-in files server (what AcceptEdits runs unasked).
    pub fn is_file_edit(&self) -> bool {
        self.builtin && self.server == "files"
    }
}

/// The meta-tool that finds deferred tools: a tool box that declares only
/// part of its tools offers it, and the policy lets it through an allow
/// list (it finds only tools the policy offers).
pub const TOOL_SEARCH: &str = "tool_search";

/// Tools per server, as the prompt and `tool_search` show them: "gh: 120, jira: 80".
pub fn counts_text(counts: &[(String, usize)]) -> String {
    counts
        .iter()
        .map(|(server, n)| format!("{server}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A set of tools the agent can offer the model and run.
pub trait ToolBox {
    /// OpenAI `tools` array entries, sent with every request.
    fn declarations(&self) -> &[Value];

    /// [`declarations`](Self::declarations) as a request sends them; a box
    /// that keeps their encoding between requests returns it here.
    fn encoded_declarations(&self) -> nanohermes_llm::JsonList<'_> {
        nanohermes_llm::JsonList::Values(self.declarations())
    }

    /// Facts about the tool `name`, or `None` when no such tool is declared.
    fn facts(&self, name: &str) -> Option<ToolFacts>;

    /// Runs the tool; failures come back as `ERROR: …` strings, never panics.
    fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> impl Future<Output = String> + Send;

    /// [`call`](Self::call) with what the agent's policy grants this one
    /// call (a read-only sandbox, an approved protected write); a box
    /// that cannot carry grants ignores them, which only ever narrows.
    fn call_with(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        grants: mcp_tools::CallGrants,
    ) -> impl Future<Output = String> + Send {
        let _ = grants;
        self.call(name, arguments)
    }

    /// Called by the loop at each step boundary, before a request is built,
    /// so the declarations sent are current. Never called while a tool
    /// runs (it takes `&mut self`). Returns notices for the user (a
    /// server's tools changed, or listing them failed).
    fn refresh(&mut self) -> impl Future<Output = Vec<String>> + Send {
        std::future::ready(Vec::new())
    }

    /// The first path that decides what runs later (`.git`, `.nanohermes/`,
    /// `.mcp.json`, `hooks.json`) the call to `facts`' tool with
    /// `arguments` writes, so the loop asks the user about that one call
    /// first. The default says none: a box whose tools guard such paths
    /// themselves refuses the write without the grant the answer brings.
    fn protected_target(
        &self,
        facts: &ToolFacts,
        arguments: &str,
    ) -> Option<crate::policy::protected::ProtectedTarget> {
        let _ = (facts, arguments);
        None
    }

    /// The result of a call to `name`, which is not declared.
    fn unknown_tool(&self, name: &str) -> String {
        unknown_tool_message(name, &self.names())
    }

    /// The declared tool names, for error messages.
    fn names(&self) -> Vec<String> {
        self.declarations()
            .iter()
            .filter_map(|d| d.get("function")?.get("name")?.as_str().map(str::to_owned))
            .collect()
    }
}

/// The default answer to a call of an undeclared tool.
pub fn unknown_tool_message(name: &str, declared: &[String]) -> String {
    format!(
        "ERROR: unknown tool `{name}`; the available tools are: {}",
        declared.join(", ")
    )
}
