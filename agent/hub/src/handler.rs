//! The hub's side of what a server sends unasked: [`Notified`], the rmcp
//! `ClientHandler` of every connection, and the list-changed flags it sets.
//!
//! - It says who the agent is ([`client_config`]: the `initialize` info and
//!   capabilities, form elicitation only when someone can answer one).
//! - It answers a legacy `elicitation/create` through the hub's
//!   [`Elicitor`](super::input::Elicitor) (input.rs).
//! - A `tools/list_changed` notification only sets a flag ([`ListChanged`]);
//!   the step-boundary refresh (refresh.rs) consumes it. On a 2025-11-25
//!   (`initialize`) connection the notification arrives unasked, in
//!   [`Notified::on_tool_list_changed`]; a 2026-07-28 connection sends it
//!   only on a `subscriptions/listen` stream, which [`listen`] opens.
//!
//! One handler per link, so a restarted server starts with clean flags.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::ClientHandler;
use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, Implementation,
    ProtocolVersion, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleClient};
use tokio::task::JoinHandle;

use super::input::{self, SharedElicitor};

/// The client handler of a new link: what the agent says about itself in
/// `initialize`, and fresh list-changed flags (H11).
///
/// The version it asks for there is 2025-11-25, the newest that has an
/// `initialize`: rmcp's `ClientConfig::new` defaults to its latest
/// (2026-07-28), which removed the handshake, so a strict legacy server
/// would refuse it. The modern lifecycle takes its versions from the
/// lifecycle mode (connect.rs), not from here.
///
/// It declares form elicitation only when `elicitor` can answer one.
pub(crate) fn client_config(elicitor: Option<&SharedElicitor>) -> Notified {
    let mut capabilities = ClientCapabilities::default();
    capabilities.elicitation = input::capability(elicitor);
    let mut config = ClientConfig::new(
        capabilities,
        Implementation::new("nanohermes", env!("CARGO_PKG_VERSION")),
    );
    config.protocol_version = ProtocolVersion::V_2025_11_25;
    Notified::new(config, elicitor.cloned())
}

/// The list-changed flags of one link: set by a notification,
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
/// records list-changed notifications. One per link, so a restarted
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

    /// The flags this link's notifications set.
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
