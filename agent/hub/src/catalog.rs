//! The tool table: [`Catalog`] keeps each server's last listing, and
//! [`Hub::rebuild`] turns the listings into the names, declarations and
//! meta-tools the model sees (at start, after a refresh, and when a late
//! server or a surfaced deferred tool joins). [`Hub::facts`] is what the
//! permission gate reads about any offered tool or meta-tool.
//!
//! A tool that a rebuild removed is remembered with its server, so a call
//! to it answers [`no_longer_offered`] rather than "unknown tool".

use std::collections::HashMap;

use rmcp::model::Tool;
use tokio::task::JoinHandle;

use super::Hub;
use super::agents;
use super::declarations;
use super::deferred;
use super::names::NameTable;
use super::resources::{self, Offered};
use super::skills;
use nanohermes_core::policy::Policy;
use nanohermes_core::toolbox::ToolFacts;

/// One server's last tool listing.
pub(crate) struct Listing {
    /// Its tools are named `SERVER__TOOL`.
    prefixed: bool,
    /// Its read-only annotations are believed.
    trusted: bool,
    /// As the server listed them.
    pub(crate) tools: Vec<Tool>,
    /// The link they were listed on.
    pub(crate) generation: u64,
}

/// The hub's bookkeeping for rebuilding its tool table.
#[derive(Default)]
pub(crate) struct Catalog {
    /// Per server, in the hub's server order.
    pub(crate) listings: Vec<Listing>,
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
                let name = declarations::name(declaration);
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
}

/// What a call to a tool that a refresh removed answers.
pub fn no_longer_offered(name: &str, server: &str) -> String {
    format!(
        "ERROR: tool {name} is no longer offered by server {server}; its tool list changed, \
         use one of the tools declared now"
    )
}
