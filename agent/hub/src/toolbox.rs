//! The hub as the loop's tool box: core's [`ToolBox`] contract, met by
//! the MCP client. The loop never sees MCP; this file is the adapter.

use std::future::Future;

use nanohermes_core::policy::protected::ProtectedTarget;
use nanohermes_core::toolbox::{ToolBox, ToolFacts, unknown_tool_message};
use serde_json::{Map, Value};

use crate::Hub;

impl ToolBox for Hub {
    fn declarations(&self) -> &[Value] {
        Hub::declarations(self)
    }

    fn encoded_declarations(&self) -> nanohermes_llm::JsonList<'_> {
        nanohermes_llm::JsonList::Encoded(Hub::encoded_declarations(self))
    }

    fn facts(&self, name: &str) -> Option<ToolFacts> {
        // Tools and the resource/prompt meta-tools.
        Hub::facts(self, name)
    }

    fn refresh(&mut self) -> impl Future<Output = Vec<String>> + Send {
        Hub::refresh(self)
    }

    fn unknown_tool(&self, name: &str) -> String {
        match self.removed_tool(name) {
            Some(server) => crate::no_longer_offered(name, server),
            None => unknown_tool_message(name, &self.names()),
        }
    }

    fn protected_target(&self, facts: &ToolFacts, arguments: &str) -> Option<ProtectedTarget> {
        // Only the built-in files server's writes are known; it refuses a
        // protected write without the grant whatever is asked here.
        if !facts.is_file_edit() {
            return None;
        }
        let (path, why) = nanohermes_builtins::protected_write(&facts.raw_name, arguments)?;
        Some(ProtectedTarget { path, why })
    }

    fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> impl Future<Output = String> + Send {
        Hub::call(self, name, arguments)
    }

    fn call_with(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        grants: mcp_tools::CallGrants,
    ) -> impl Future<Output = String> + Send {
        Hub::call_with(self, name, arguments, grants)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nanohermes_core::agent::Agent;

    /// Compile-time check: a run over the hub can be spawned on a
    /// multi-threaded runtime (`run_task` does).
    #[allow(dead_code)]
    fn run_future_is_send(agent: &mut Agent<Hub>, ui: &mut nanohermes_core::events::TerminalUi) {
        fn assert_send<T: Send>(_: &T) {}
        assert_send(&agent.run("task", ui));
    }

    fn files(tool: &str) -> ToolFacts {
        ToolFacts {
            read_only: false,
            destructive: true,
            builtin: true,
            server: "files".into(),
            raw_name: tool.into(),
        }
    }

    #[tokio::test]
    async fn only_the_builtin_files_writes_are_asked_about() {
        let dir = tempfile::tempdir().unwrap();
        let hub = Hub::start(crate::HubConfig::new(dir.path(), Vec::new()))
            .await
            .unwrap();
        let args = r#"{"path": ".mcp.json", "content": ""}"#;
        let target = hub.protected_target(&files("write_file"), args).unwrap();
        assert_eq!(target.path, ".mcp.json");
        let external = ToolFacts {
            builtin: false,
            ..files("write_file")
        };
        assert!(hub.protected_target(&external, args).is_none());
    }
}
