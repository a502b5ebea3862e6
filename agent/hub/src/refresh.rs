//! `tools/list_changed`: a server's new tool list reaches the model at the
//! next step boundary, never in the middle of a step.
//!
//! The notification only sets a flag ([`ListChanged`](super::handler::ListChanged), owned by
//! [`Notified`](super::handler::Notified), the client handler of each connection: handler.rs).
//! [`Hub::refresh`], which the loop calls before each model request,
//! consumes the flags, lists again the tools of each server that said its
//! list changed or was restarted since its last listing (a new process may
//! offer other tools), and rebuilds names and declarations
//! ([`Hub::rebuild`], catalog.rs). It takes
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
//!   arrives unasked, in the handler's `on_tool_list_changed`. A
//!   2026-07-28 connection sends it only on a `subscriptions/listen`
//!   stream, so the hub opens one per such connection that advertises
//!   `listChanged` ([`listen`](super::handler::listen)); a server without that capability is still listed again
//!   after each restart.
//! - Resource and prompt lists are not cached here: the meta-tools
//!   ([`super::resources`]) list them live on every call (rmcp's response
//!   cache is invalidated by their list-changed notifications), so only
//!   the tool list needs bookkeeping.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use futures::future::join_all;

use super::Hub;
use super::handler::listen;

/// How long a refresh waits for a server's new tool list.
pub const REFRESH_TIMEOUT: Duration = Duration::from_secs(30);

impl Hub {
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
