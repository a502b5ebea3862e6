//! A legacy (2025-11-25) session's standalone GET stream, opened before the
//! requests that follow `notifications/initialized`.
//!
//! rmcp opens that stream in a task of its own once `initialized` is
//! accepted, and sends the next requests without waiting for it, so on a
//! busy machine the GET can reach the server after a `tools/call` whose
//! response stream the server then closes early (SEP-1699 polling: a
//! priming event with an id and `retry`, the response later, to a GET with
//! `Last-Event-ID`). A server that hands a pending response to whatever GET
//! it gets next (the conformance suite's `sse-retry` server) then sends it
//! down the standalone stream instead of the resumed one, and the client
//! never resumes; and whatever the server sends on the standalone stream
//! before it is open (a `list_changed`, say) is lost. [`StreamFirst`] holds
//! each POST after `initialized` until the standalone GET has its answer (a
//! stream, or a refusal such as 405), at most [`STANDALONE_WAIT`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientNotification, ClientRequest};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::{Error as SseError, Sse};
use tokio::sync::watch;
use tokio::time::Instant;

/// The longest a POST waits for the standalone GET's answer: servers answer
/// it at once; one that holds its headers back costs this much, once per
/// session, and then the requests go as they would have without the wait.
pub const STANDALONE_WAIT: Duration = Duration::from_secs(2);

/// Whether POSTs wait for the standalone GET, and until when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Open,
    Opening { deadline: Instant },
}

/// See the module documentation: `inner`, with POSTs held while a new
/// session's standalone GET is on its way. Clones share the state.
#[derive(Clone)]
pub struct StreamFirst<C> {
    inner: C,
    phase: Arc<watch::Sender<Phase>>,
}

impl<C> StreamFirst<C> {
    /// Wraps `inner`.
    pub fn new(inner: C) -> StreamFirst<C> {
        StreamFirst {
            inner,
            phase: Arc::new(watch::Sender::new(Phase::Open)),
        }
    }

    /// Before a POST: waits while the standalone GET is being opened (not
    /// for the handshake itself, which comes before it).
    async fn before_post(&self, message: &ClientJsonRpcMessage) {
        if is_handshake(message) {
            return;
        }
        let mut phase = self.phase.subscribe();
        let Phase::Opening { deadline } = *phase.borrow_and_update() else {
            return;
        };
        let open = phase.wait_for(|p| *p == Phase::Open);
        // Past the deadline the request goes anyway (see STANDALONE_WAIT).
        let _ = tokio::time::timeout_at(deadline, open).await;
    }

    /// After a POST: an accepted `initialized` in a session (one with an
    /// id) is when rmcp opens the standalone GET.
    fn after_post<T, E>(
        &self,
        message: &ClientJsonRpcMessage,
        session_id: Option<&Arc<str>>,
        result: &Result<T, E>,
    ) {
        if result.is_ok() && session_id.is_some() && is_initialized(message) {
            self.phase.send_replace(Phase::Opening {
                deadline: Instant::now() + STANDALONE_WAIT,
            });
        }
    }

    /// After a GET: one without `Last-Event-ID` is the standalone stream
    /// (a resumption names the event it resumes after); answered either way.
    fn after_get(&self, standalone: bool) {
        if standalone {
            self.phase.send_replace(Phase::Open);
        }
    }
}

fn is_initialized(message: &ClientJsonRpcMessage) -> bool {
    matches!(
        message,
        ClientJsonRpcMessage::Notification(n)
            if matches!(n.notification, ClientNotification::InitializedNotification(_))
    )
}

fn is_handshake(message: &ClientJsonRpcMessage) -> bool {
    is_initialized(message)
        || matches!(
            message,
            ClientJsonRpcMessage::Request(r)
                if matches!(r.request, ClientRequest::InitializeRequest(_))
        )
}

type Sent<T, C> = Result<T, StreamableHttpError<<C as StreamableHttpClient>::Error>>;
type SseStream = BoxStream<'static, Result<Sse, SseError>>;

impl<C: StreamableHttpClient + Sync> StreamFirst<C> {
    /// `send` (the inner client's POST of `message`, not yet polled), held
    /// as [`Self::before_post`] says.
    async fn post(
        &self,
        message: &ClientJsonRpcMessage,
        session_id: Option<&Arc<str>>,
        send: impl Future<Output = Sent<StreamableHttpPostResponse, C>>,
    ) -> Sent<StreamableHttpPostResponse, C> {
        self.before_post(message).await;
        let result = send.await;
        self.after_post(message, session_id, &result);
        result
    }

    /// `open` (the inner client's GET, not yet polled), then
    /// [`Self::after_get`].
    async fn get(
        &self,
        standalone: bool,
        open: impl Future<Output = Sent<SseStream, C>>,
    ) -> Sent<SseStream, C> {
        let result = open.await;
        self.after_get(standalone);
        result
    }
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for StreamFirst<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Sent<StreamableHttpPostResponse, C> {
        let send = self.inner.post_message(
            uri,
            message.clone(),
            session_id.clone(),
            auth_header,
            custom_headers,
        );
        self.post(&message, session_id.as_ref(), send).await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Sent<StreamableHttpPostResponse, C> {
        let send = self.inner.post_message_with_max_sse_event_size(
            uri,
            message.clone(),
            session_id.clone(),
            auth_header,
            custom_headers,
            max_sse_event_size,
        );
        self.post(&message, session_id.as_ref(), send).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Sent<StreamableHttpPostResponse, C> {
        let send = self.inner.post_message_with_response_limits(
            uri,
            message.clone(),
            session_id.clone(),
            auth_header,
            custom_headers,
            limits,
        );
        self.post(&message, session_id.as_ref(), send).await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Sent<(), C> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Sent<SseStream, C> {
        let standalone = last_event_id.is_none();
        let open =
            self.inner
                .get_stream(uri, session_id, last_event_id, auth_header, custom_headers);
        self.get(standalone, open).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Sent<SseStream, C> {
        let standalone = last_event_id.is_none();
        let open = self.inner.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        );
        self.get(standalone, open).await
    }
}
