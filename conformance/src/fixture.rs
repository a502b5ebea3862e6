//! The fixture's `ServerHandler`: routes each request to the fixture module
//! that answers it, adds the 2026-07-28 cache hints (`ttlMs`,
//! `cacheScope`) to every list and read, and keeps the little state the
//! scenarios need (legacy resource subscriptions, the log level, open
//! `subscriptions/listen` streams).

#![allow(deprecated)] // resources/subscribe and logging/setLevel: legacy era

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    ErrorData, GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, RoleServer, SubscriptionContext, SubscriptionSink};
use rmcp::{ServerHandler, model::CallToolResult, model::ContentBlock};

use crate::mrtr::Mrtr;
use crate::{catalog, mrtr, tools};

/// How long a client may cache lists and reads: the fixture never changes.
const CACHE_TTL_MS: u64 = 60_000;

/// The conformance fixture server. Cheap to clone: each HTTP session gets a
/// clone sharing one state.
#[derive(Clone)]
pub struct Fixture {
    mrtr: Mrtr,
    state: Arc<State>,
}

#[derive(Default)]
struct State {
    legacy_subscriptions: Mutex<BTreeSet<String>>,
    log_level: Mutex<Option<LoggingLevel>>,
    listeners: Mutex<BTreeMap<u64, SubscriptionSink>>,
    next_listener: AtomicU64,
}

impl Fixture {
    /// A fixture with a fresh request-state key.
    pub fn new() -> Self {
        Self {
            mrtr: Mrtr::new().expect("/dev/urandom is readable"),
            state: Arc::default(),
        }
    }

    fn listeners(&self) -> Vec<SubscriptionSink> {
        let listeners = self.state.listeners.lock().expect("listener lock");
        listeners.values().cloned().collect()
    }

    async fn trigger(&self, tools: bool) -> Result<CallToolResponse, ErrorData> {
        for sink in self.listeners() {
            // A listener that did not ask for this kind refuses it; fine.
            let _ = if tools {
                sink.notify_tool_list_changed().await
            } else {
                sink.notify_prompt_list_changed().await
            };
        }
        let what = if tools { "Tool" } else { "Prompt" };
        Ok(CallToolResult::success(vec![ContentBlock::text(format!(
            "{what} list change triggered"
        ))])
        .into())
    }
}

impl ServerHandler for Fixture {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_resources_list_changed()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .enable_completions()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(
                "nanohermes-conformance",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions("The MCP conformance suite's fixture server, on the NanoHermes kit")
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // Lets rmcp check `Mcp-Param-*` headers against this tool's schema.
        (name == "test_custom_header").then(tools::custom_header_tool)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let key = self.state.next_listener.fetch_add(1, Ordering::Relaxed);
        let sink = context.sink().clone();
        self.state
            .listeners
            .lock()
            .expect("listener lock")
            .insert(key, sink);
        context.cancelled().await;
        self.state
            .listeners
            .lock()
            .expect("listener lock")
            .remove(&key);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = tools::list().into_iter().chain(mrtr::list()).collect();
        Ok(ListToolsResult::with_all_items(tools)
            .with_ttl_ms(CACHE_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        cx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        match request.name.as_ref() {
            "test_trigger_tool_change" => return self.trigger(true).await,
            "test_trigger_prompt_change" => return self.trigger(false).await,
            "test_streaming_elicitation" => return Mrtr::streaming_elicitation(),
            _ => {}
        }
        if let Some(answer) = self.mrtr.call(&request, &cx) {
            return answer;
        }
        if let Some(answer) = tools::call(&request, &cx).await {
            return answer;
        }
        Err(ErrorData::invalid_params(
            format!(
                "unknown tool {}; tools/list names the tools this server has",
                request.name
            ),
            None,
        ))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(catalog::resources())
            .with_ttl_ms(CACHE_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(
            ListResourceTemplatesResult::with_all_items(catalog::templates())
                .with_ttl_ms(CACHE_TTL_MS)
                .with_cache_scope(CacheScope::Public),
        )
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        catalog::read(&request.uri).map(|read| {
            read.with_ttl_ms(CACHE_TTL_MS)
                .with_cache_scope(CacheScope::Public)
                .into()
        })
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let mut subscribed = self
            .state
            .legacy_subscriptions
            .lock()
            .expect("subscription lock");
        subscribed.insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let mut subscribed = self
            .state
            .legacy_subscriptions
            .lock()
            .expect("subscription lock");
        subscribed.remove(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _cx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(ListPromptsResult::with_all_items(catalog::prompts())
            .with_ttl_ms(CACHE_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name == mrtr::PROMPT {
            return Ok(Mrtr::prompt(request.input_responses.as_ref()));
        }
        catalog::prompt(&request).map(Into::into)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        catalog::complete(&request)
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _cx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        *self.state.log_level.lock().expect("log level lock") = Some(request.level);
        Ok(())
    }
}
