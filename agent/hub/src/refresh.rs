//! `tools/list_changed`: a server's new tool list reaches the model at the
//! next step boundary, never in the middle of a step.
//!
//! The notification only sets a flag ([`ListChanged`], owned by
//! [`Notified`], the client handler of each connection).
//! [`Hub::refresh`], which the loop calls before each model request,
//! consumes the flags, lists again the tools of each server that said its
//! list changed or was restarted since its last listing (a new process may
//! offer other tools), and rebuilds names and declarations. It takes
//! `&mut Hub` while every tool call borrows `&Hub`, so a refresh cannot
//! overlap a call.
//!
//! Rules:
//! - A refresh that fails (an error, or no answer within
//!   [`REFRESH_TIMEOUT`]) keeps the server's previous tools and says so in
//!   one notice; it is not retried until the server says its list changed
//!   again.
//! - A tool that a refresh removed answers
//!   `ERROR: tool X is no longer offered by server S`.
//! - Eras: on a 2025-11-25 (`initialize`) connection the notification
//!   arrives unasked, in [`Notified::on_tool_list_changed`]. A 2026-07-28
//!   connection sends it only on a `subscriptions/listen` stream, so the
//!   hub opens one per such connection that advertises `listChanged`
//!   ([`listen`]); a server without that capability is still listed again
//!   after each restart.
//! - Resource and prompt lists are not cached here: the meta-tools
//!   ([`super::resources`]) list them live on every call (rmcp's response
//!   cache is invalidated by their list-changed notifications), so only
//!   the tool list needs bookkeeping.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures::future::join_all;
use rmcp::ClientHandler;
use rmcp::ErrorData;
use rmcp::model::{
    ClientConfig, ElicitRequestParams, ElicitResult, ServerNotification, SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleClient};
use serde_json::Value;
use tokio::task::JoinHandle;

use super::Hub;
use super::agents;
use super::deferred;
use super::input::{self, SharedElicitor};
use super::names::NameTable;
use super::resources::{self, Offered};
use super::skills;
use nanohermes_core::policy::Policy;
use nanohermes_core::toolbox::ToolFacts;

/// How long a refresh waits for a server's new tool list.
pub const REFRESH_TIMEOUT: Duration = Duration::from_secs(30);

/// The list-changed flags of one connection: set by a notification,
/// consumed at the step boundary.
#[derive(Debug, Default)]
pub(crate) struct ListChanged {
    tools: AtomicBool,
}

impl ListChanged {
    /// Records `notifications/tools/list_changed`.
    pub(crate) fn mark_tools(&self) {
        self.tools.store(true, Ordering::SeqCst);
    }

    /// Whether the tools changed since the last call, clearing the flag.
    pub(crate) fn take_tools(&self) -> bool {
        self.tools.swap(false, Ordering::SeqCst)
    }
}

/// The hub's client handler: says who the agent is (`get_info`) and
/// records list-changed notifications. One per connection, so a restarted
/// server starts with clean flags.
#[derive(Debug, Clone)]
pub(crate) struct Notified {
    info: ClientConfig,
    changed: Arc<ListChanged>,
    /// Who answers a legacy `elicitation/create` (input.rs).
    elicitor: Option<SharedElicitor>,
}

impl Notified {
    /// A handler announcing `info`; `elicitor` answers elicitations.
    pub(crate) fn new(info: ClientConfig, elicitor: Option<SharedElicitor>) -> Notified {
        Notified {
            info,
            changed: Arc::default(),
            elicitor,
        }
    }

    /// The flags this connection's notifications set.
    pub(crate) fn changed(&self) -> Arc<ListChanged> {
        Arc::clone(&self.changed)
    }
}

impl ClientHandler for Notified {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.mark_tools();
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let server = context
            .peer
            .peer_info()
            .and_then(|info| info.server_info.as_ref().map(|i| i.name.clone()))
            .unwrap_or_default();
        Ok(input::elicit(self.elicitor.as_ref(), &server, request).await)
    }
}

/// Opens a `subscriptions/listen` stream for tool list changes on a
/// 2026-07-28 connection whose server advertises `tools.listChanged`, and
/// marks `changed` for each notification. `None` for a legacy connection
/// (its notifications arrive unasked) or a server without the capability.
/// The task ends when the connection closes.
pub(crate) fn listen(
    server: &str,
    peer: &Peer<RoleClient>,
    changed: Arc<ListChanged>,
) -> Option<JoinHandle<()>> {
    let info = peer.peer_info()?;
    if info.protocol_version.has_initialize() {
        return None;
    }
    let filter = SubscriptionFilter::builder()
        .tools_list_changed()
        .build()
        .supported_by(&info.capabilities);
    filter.tools_list_changed?;
    let peer = peer.clone();
    let server = server.to_string();
    Some(tokio::spawn(async move {
        let mut subscription = match peer.listen(filter).await {
            Ok(subscription) => subscription,
            Err(e) => {
                tracing::warn!(%server, "cannot subscribe to tool list changes: {e}");
                return;
            }
        };
        while let Ok(Some(notification)) = subscription.next().await {
            if matches!(
                notification,
                ServerNotification::ToolListChangedNotification(_)
            ) {
                changed.mark_tools();
            }
        }
    }))
}

/// One server's last tool listing.
pub(crate) struct Listing {
    /// Its tools are named `SERVER__TOOL`.
    prefixed: bool,
    /// Its read-only annotations are believed.
    trusted: bool,
    /// As the server listed them.
    tools: Vec<Tool>,
    /// The connection they were listed on.
    generation: u64,
}

/// The hub's bookkeeping for rebuilding its tool table.
#[derive(Default)]
pub(crate) struct Catalog {
    /// Per server, in the hub's server order.
    listings: Vec<Listing>,
    /// The policy [`Hub::offer_only`] narrowed the declarations to.
    pub(crate) offered: Option<Policy>,
    /// Model name → server, for tools a refresh removed.
    removed: HashMap<String, String>,
    /// Which servers offer resources and prompts (for the meta-tools).
    pub(crate) meta: Offered,
    /// The `subscriptions/listen` tasks of 2026-07-28 connections.
    pub(crate) listeners: Vec<JoinHandle<()>>,
}

impl Catalog {
    /// Records the first listing of the next server.
    pub(crate) fn listed(&mut self, prefixed: bool, trusted: bool, tools: Vec<Tool>) {
        self.listings.push(Listing {
            prefixed,
            trusted,
            tools,
            generation: 0,
        });
    }

    /// Remembers the policy the declarations are narrowed to.
    pub(crate) fn offer(&mut self, policy: Policy) {
        self.offered = Some(policy);
    }

    /// The server that offered tool `name` until a refresh removed it.
    pub(crate) fn removed(&self, name: &str) -> Option<&str> {
        self.removed.get(name).map(String::as_str)
    }
}

impl Drop for Catalog {
    fn drop(&mut self) {
        self.listeners.iter().for_each(JoinHandle::abort);
    }
}

impl Hub {
    /// Recomputes names, declarations and the meta-tools from the
    /// listings, and returns the warnings not given before.
    pub(super) fn rebuild(&mut self) -> Vec<String> {
        let before: HashMap<String, String> = self
            .tools
            .iter()
            .map(|t| (t.name.clone(), t.server.clone()))
            .collect();
        self.tools.clear();
        self.declarations.clear();
        self.by_name.clear();
        let warned = self.warnings.len();

        let mut table = NameTable::default();
        // Claimed first, so no server tool can take a meta-tool's name.
        for name in resources::NAMES.into_iter().chain([
            skills::SKILL,
            agents::AGENT_LIST,
            deferred::TOOL_SEARCH,
        ]) {
            table.claim(name);
        }
        let listings = std::mem::take(&mut self.catalog.listings);
        for (server_idx, listing) in listings.iter().enumerate() {
            let server = self.connections[server_idx].name().to_string();
            let prefix = listing.prefixed.then_some(server.as_str());
            let mut tools: Vec<&Tool> = listing.tools.iter().collect();
            tools.sort_by(|a, b| a.name.cmp(&b.name));
            for tool in tools {
                self.add_tool(
                    &mut table,
                    &server,
                    prefix,
                    listing.trusted,
                    tool,
                    server_idx,
                );
            }
        }
        self.catalog.listings = listings;

        self.catalog.meta = Offered::of(&self.connections);
        self.declarations.extend(resources::declarations(
            &self.catalog.meta,
            &self.connections,
        ));
        self.declarations.extend(skills::declaration(&self.skills));
        if let Some(policy) = &self.catalog.offered {
            let (by_name, tools, meta) = (&self.by_name, &self.tools, &self.catalog.meta);
            let skill_list = &self.skills;
            self.declarations.retain(|declaration| {
                let name = declaration_name(declaration);
                let facts = match by_name.get(name) {
                    Some((tool, _)) => Some(tools[*tool].facts()),
                    None if skills::declares(skill_list, name) => Some(skills::FACTS),
                    None => meta.declares(name).then_some(resources::FACTS),
                };
                facts.is_some_and(|facts: ToolFacts| policy.allows(name, &facts))
            });
        }
        // After the narrowing, so only offered tools are ever deferred.
        self.split_deferred();
        // After the narrowing: it lists only the run_task tools offered.
        let offered = self.catalog.offered.clone();
        self.declare_agents(|name, facts| offered.as_ref().is_none_or(|p| p.allows(name, facts)));

        for (name, server) in before {
            if !self.by_name.contains_key(&name) {
                self.catalog.removed.insert(name, server);
            }
        }
        let by_name = &self.by_name;
        self.catalog
            .removed
            .retain(|name, _| !by_name.contains_key(name));

        let fresh = self.warnings.split_off(warned);
        let mut new = Vec::new();
        for warning in fresh {
            if !self.warnings.contains(&warning) {
                self.warnings.push(warning.clone());
                new.push(warning);
            }
        }
        new
    }

    /// Opens the `subscriptions/listen` streams of 2026-07-28 connections
    /// (see [`listen`]).
    pub(super) fn listen_for_changes(&mut self) {
        for server in &self.connections {
            if let Some((peer, _, changed)) = server.watch()
                && let Some(task) = listen(server.name(), &peer, changed)
            {
                self.catalog.listeners.push(task);
            }
        }
    }

    /// The step boundary: lists again the tools of every server that said
    /// they changed or was restarted since, and rebuilds the declarations.
    /// Returns one notice per change or failure, for the user. Cheap when
    /// nothing changed: no request is sent.
    pub async fn refresh(&mut self) -> Vec<String> {
        // Servers that finished connecting late, and tools surfaced by
        // `tool_search` or a call by name, are declared from this step.
        let mut late = self.admit_finished().await;
        let rebuild = !late.is_empty() | self.deferral.surfaced.take_changed();
        let mut notices = self.relist().await;
        if rebuild {
            late.extend(self.rebuild());
        }
        late.append(&mut notices);
        late
    }

    /// Lists again the tools of the servers that changed or restarted.
    async fn relist(&mut self) -> Vec<String> {
        let due: Vec<_> = self
            .connections
            .iter()
            .enumerate()
            .filter_map(|(i, server)| {
                let (peer, generation, changed) = server.watch()?;
                let restarted = generation != self.catalog.listings[i].generation;
                let flagged = changed.take_tools();
                (restarted || flagged).then_some((i, peer, generation, changed, restarted))
            })
            .collect();
        if due.is_empty() {
            return Vec::new();
        }
        let listed = join_all(due.into_iter().map(
            |(i, peer, generation, changed, restarted)| async move {
                let tools = tokio::time::timeout(REFRESH_TIMEOUT, peer.list_all_tools()).await;
                (i, peer, generation, changed, restarted, tools)
            },
        ))
        .await;

        let mut notices = Vec::new();
        let mut relisted = Vec::new();
        for (i, peer, generation, changed, restarted, tools) in listed {
            let name = self.connections[i].name().to_string();
            if restarted && let Some(task) = listen(&name, &peer, changed) {
                self.catalog.listeners.push(task);
            }
            // Even a failed listing is not retried for this connection:
            // the failure is told once.
            self.catalog.listings[i].generation = generation;
            let failure = match tools {
                Ok(Ok(mut tools)) => {
                    tools.retain(|tool| self.filters[i].allows(&tool.name));
                    self.catalog.listings[i].tools = tools;
                    relisted.push(name);
                    continue;
                }
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("no answer within {} s", REFRESH_TIMEOUT.as_secs()),
            };
            let kept = self.catalog.listings[i].tools.len();
            notices.push(format!(
                "server {name} changed its tools, but listing them failed ({failure}); \
                 keeping its previous {kept} tools"
            ));
        }
        if relisted.is_empty() {
            return notices;
        }
        let before = self.names_by_server();
        notices.extend(self.rebuild());
        let after = self.names_by_server();
        for server in relisted {
            let (old, new) = (&before[&server], &after[&server]);
            let added: Vec<&str> = new.difference(old).map(String::as_str).collect();
            let removed: Vec<&str> = old.difference(new).map(String::as_str).collect();
            if added.is_empty() && removed.is_empty() {
                continue;
            }
            let mut notice = format!("server {server} changed its tools:");
            if !added.is_empty() {
                notice.push_str(&format!(" added {}", added.join(", ")));
            }
            if !removed.is_empty() {
                if !added.is_empty() {
                    notice.push(';');
                }
                notice.push_str(&format!(" removed {}", removed.join(", ")));
            }
            tracing::info!("{notice}");
            notices.push(notice);
        }
        notices
    }

    /// What the gate knows about tool or meta-tool `name`; `None` when it
    /// is not offered now.
    pub fn facts(&self, name: &str) -> Option<ToolFacts> {
        match self.tool(name) {
            Some(tool) => Some(tool.facts()),
            None if skills::declares(&self.skills, name) => Some(skills::FACTS),
            None if self.agents.declares(name) => Some(agents::FACTS),
            None if name == deferred::TOOL_SEARCH && self.deferral.active() => {
                Some(deferred::FACTS)
            }
            None => self.catalog.meta.declares(name).then_some(resources::FACTS),
        }
    }

    /// The server that offered tool `name` until a refresh removed it.
    pub fn removed_tool(&self, name: &str) -> Option<&str> {
        self.catalog.removed(name)
    }

    /// Every server's model-facing tool names.
    fn names_by_server(&self) -> HashMap<String, BTreeSet<String>> {
        let mut names: HashMap<String, BTreeSet<String>> = self
            .connections
            .iter()
            .map(|s| (s.name().to_string(), BTreeSet::new()))
            .collect();
        for tool in &self.tools {
            names
                .entry(tool.server.clone())
                .or_default()
                .insert(tool.name.clone());
        }
        names
    }
}

/// `function.name` of an OpenAI tool declaration.
pub(crate) fn declaration_name(declaration: &Value) -> &str {
    declaration
        .get("function")
        .and_then(|f| f.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// What a call to a tool that a refresh removed answers.
pub fn no_longer_offered(name: &str, server: &str) -> String {
    format!(
        "ERROR: tool {name} is no longer offered by server {server}; its tool list changed, \
         use one of the tools declared now"
    )
}
