//! One task's view of a workspace's shared hub: the declarations its mode
//! and rules allow, and calls routed to the servers every task shares.
//!
//! Tasks share the hub (one set of tool servers per workspace) but never a
//! history or a policy. The hub sits behind a read-write lock: calls take
//! it shared, so they never wait for each other; a changed tool list is
//! applied at a step boundary only when no call of any task is in flight
//! (`try_write`), otherwise at a later boundary.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use serde_json::{Map, Value};
use tokio::sync::RwLock;

use nanohermes_core::policy::Policy;
use nanohermes_core::toolbox::{ToolBox, ToolFacts};
use nanohermes_hub::Hub;

/// The tools one task sees.
pub struct TaskTools {
    hub: Arc<RwLock<Hub>>,
    policy: Policy,
    declarations: Vec<Value>,
    facts: HashMap<String, ToolFacts>,
}

impl TaskTools {
    /// The tools of `hub` that `policy` lets the model see.
    pub async fn new(hub: Arc<RwLock<Hub>>, policy: Policy) -> TaskTools {
        let mut tools = TaskTools {
            hub,
            policy,
            declarations: Vec::new(),
            facts: HashMap::new(),
        };
        let hub = tools.hub.clone();
        tools.narrow(&*hub.read().await);
        tools
    }

    /// Takes the hub's current declarations, narrowed by the policy, and
    /// remembers every tool's facts (a withheld tool called from memory is
    /// still refused with the policy's reason, not "unknown").
    fn narrow(&mut self, hub: &Hub) {
        self.facts.clear();
        self.declarations.clear();
        for declaration in hub.declarations() {
            let Some(name) = declaration
                .get("function")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
            else {
                continue;
            };
            let Some(facts) = hub.facts(name) else {
                continue;
            };
            if self.policy.allows(name, &facts) {
                self.declarations.push(declaration.clone());
            }
            self.facts.insert(name.to_owned(), facts);
        }
    }
}

impl ToolBox for TaskTools {
    fn declarations(&self) -> &[Value] {
        &self.declarations
    }

    fn facts(&self, name: &str) -> Option<ToolFacts> {
        self.facts.get(name).cloned()
    }

    fn call(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> impl Future<Output = String> + Send {
        self.call_with(name, arguments, mcp_tools::CallGrants::none())
    }

    fn call_with(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        grants: mcp_tools::CallGrants,
    ) -> impl Future<Output = String> + Send {
        let hub = self.hub.clone();
        let name = name.to_owned();
        // The hub is shared: this task's policy decides what its search
        // may surface.
        let policy = self.policy.clone();
        async move {
            let hub = hub.read().await;
            if name == nanohermes_hub::TOOL_SEARCH && hub.facts(&name).is_some() {
                return hub.search_tools(&arguments, |name, facts| policy.allows(name, facts));
            }
            hub.call_with(&name, arguments, grants).await
        }
    }

    async fn refresh(&mut self) -> Vec<String> {
        let hub = self.hub.clone();
        let Ok(mut hub) = hub.try_write() else {
            return Vec::new();
        };
        let notices = hub.refresh().await;
        self.narrow(&hub);
        notices
    }
}
