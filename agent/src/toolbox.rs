//! What the loop needs from the tools: declarations to advertise, facts to
//! gate on, and a call that always answers with a string.
//!
//! The loop depends on this trait, not on the MCP hub, so its contract is
//! stated in three methods; [`crate::hub::Hub`] implements it.

use std::future::Future;

use serde_json::{Map, Value};

use crate::hub::Hub;

/// What the gate needs to know about a declared tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolFacts {
    /// The tool only reads (MCP `readOnlyHint`).
    pub read_only: bool,
}

/// A set of tools the agent can offer the model and run.
pub trait ToolBox {
    /// OpenAI `tools` array entries, sent with every request.
    fn declarations(&self) -> &[Value];

    /// Facts about the tool `name`, or `None` when no such tool is declared.
    fn facts(&self, name: &str) -> Option<ToolFacts>;

    /// Runs the tool; failures come back as `ERROR: …` strings, never panics.
    fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> impl Future<Output = String> + Send;

    /// The declared tool names, for error messages.
    fn names(&self) -> Vec<String> {
        self.declarations()
            .iter()
            .filter_map(|d| d.get("function")?.get("name")?.as_str().map(str::to_owned))
            .collect()
    }
}

impl ToolBox for Hub {
    fn declarations(&self) -> &[Value] {
        Hub::declarations(self)
    }

    fn facts(&self, name: &str) -> Option<ToolFacts> {
        self.tool(name).map(|tool| ToolFacts {
            read_only: tool.read_only,
        })
    }

    fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> impl Future<Output = String> + Send {
        Hub::call(self, name, arguments)
    }
}
