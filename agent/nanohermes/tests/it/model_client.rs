//! The model client: retries, `Retry-After`, the fallback model,
//! non-streaming answers. A scenario of statuses and scripted turns runs
//! on every wire (`on_every_wire!`); raw chat bodies and frames stay on
//! chat.

use std::time::Duration;

use nanohermes_llm::{ChatEvent, Client, JsonList, LlmError, ModelSettings};
use serde_json::{Value, json};

use crate::support::history::{assert_requests_valid, assert_requests_valid_on};
use crate::support::mock_model::{MockModel, Reply, WireApi, call, sse, status, text, tool_calls};
use crate::support::{on_every_wire, settings, settings_on};

fn history() -> Vec<Value> {
    vec![
        json!({"role":"system","content":"test"}),
        json!({"role":"user","content":"hi"}),
    ]
}

/// What the caller of `chat` saw: the text on screen and the notices.
#[derive(Debug, Default)]
struct Seen {
    text: String,
    retries: Vec<(u32, Duration)>,
    fallbacks: Vec<String>,
}

async fn chat(settings: ModelSettings) -> (Result<nanohermes_llm::AssistantTurn, LlmError>, Seen) {
    let client = Client::new(settings).unwrap();
    let mut seen = Seen::default();
    let mut on_event = |event: ChatEvent<'_>| match event {
        ChatEvent::Text(text) => seen.text.push_str(text),
        ChatEvent::Retry { attempt, delay, .. } => seen.retries.push((attempt, delay)),
        ChatEvent::Fallback { model, .. } => seen.fallbacks.push(model.to_owned()),
        ChatEvent::Reasoning(_) => {}
    };
    let result = client
        .chat((&history()).into(), JsonList::Values(&[]), &mut on_event)
        .await;
    (result, seen)
}

async fn a_429_is_retried_after_the_servers_retry_after(wire: WireApi) {
    let mock = MockModel::start(vec![
        Reply::Status {
            code: 429,
            headers: vec![("Retry-After".into(), "1".into())],
            body: r#"{"error":{"message":"Rate limit reached"}}"#.into(),
        }
        .into(),
        text(&["fine now"]).into(),
    ])
    .await;

    let (result, seen) = chat(settings_on(&mock, wire)).await;

    assert_eq!(result.unwrap().content, "fine now");
    assert_eq!(seen.retries, [(1, Duration::from_secs(1))]);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_requests_valid_on(&requests, wire);
    assert!(
        requests[1].at - requests[0].at >= Duration::from_millis(950),
        "Retry-After was not honoured"
    );
}
on_every_wire!(a_429_is_retried_after_the_servers_retry_after);

async fn three_server_errors_then_the_fallback_model_answers_once(wire: WireApi) {
    let mock = MockModel::start(vec![
        status(500, "boom").into(),
        status(502, "bad gateway").into(),
        status(503, "overloaded").into(),
        text(&["from the fallback"]).into(),
    ])
    .await;
    let mut settings = settings_on(&mock, wire);
    settings.fallback_model = Some("small-model".into());

    let (result, seen) = chat(settings).await;

    let turn = result.unwrap();
    assert_eq!(
        (turn.content.as_str(), turn.model.as_str()),
        ("from the fallback", "small-model")
    );
    assert_eq!(
        seen.retries,
        [
            (1, Duration::from_millis(10)),
            (2, Duration::from_millis(20))
        ]
    );
    assert_eq!(seen.fallbacks, ["small-model"]);
    let models: Vec<_> = mock
        .requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        models,
        ["main-model", "main-model", "main-model", "small-model"]
    );
    assert_requests_valid_on(&mock.requests(), wire);
}
on_every_wire!(three_server_errors_then_the_fallback_model_answers_once);

async fn the_fallback_model_gets_one_try_only(wire: WireApi) {
    let mock = MockModel::start(vec![
        status(500, "a").into(),
        status(500, "b").into(),
        status(500, "c").into(),
        status(500, "fallback down too").into(),
        text(&["never"]).into(),
    ])
    .await;
    let mut settings = settings_on(&mock, wire);
    settings.fallback_model = Some("small-model".into());

    let (result, _) = chat(settings).await;

    assert_eq!(
        result.unwrap_err().to_string(),
        format!(
            "the model server at {} answered HTTP 500: fallback down too",
            mock.base_url()
        )
    );
    assert_eq!(mock.requests().len(), 4);
    assert_requests_valid_on(&mock.requests(), wire);
}
on_every_wire!(the_fallback_model_gets_one_try_only);

async fn without_a_fallback_the_last_retryable_error_is_returned(wire: WireApi) {
    let mock = MockModel::start(vec![
        status(500, "a").into(),
        status(500, "b").into(),
        status(503, "c").into(),
    ])
    .await;

    let (result, seen) = chat(settings_on(&mock, wire)).await;

    assert!(
        result
            .unwrap_err()
            .to_string()
            .ends_with("answered HTTP 503: c")
    );
    assert_eq!(seen.retries.len(), 2);
    assert_eq!(mock.requests().len(), 3);
    assert_requests_valid_on(&mock.requests(), wire);
}
on_every_wire!(without_a_fallback_the_last_retryable_error_is_returned);

async fn client_errors_are_not_retried(wire: WireApi) {
    let mock = MockModel::start(vec![
        status(400, "'messages' is required").into(),
        text(&["no"]).into(),
    ])
    .await;
    let mut settings = settings_on(&mock, wire);
    settings.fallback_model = Some("small-model".into());

    let (result, seen) = chat(settings).await;

    assert!(
        result
            .unwrap_err()
            .to_string()
            .ends_with("answered HTTP 400: 'messages' is required")
    );
    assert!(seen.retries.is_empty() && seen.fallbacks.is_empty());
    assert_eq!(mock.requests().len(), 1);
    assert_requests_valid_on(&mock.requests(), wire);
}
on_every_wire!(client_errors_are_not_retried);

async fn a_dropped_connection_is_retried(wire: WireApi) {
    let mock = MockModel::start(vec![Reply::Drop.into(), text(&["after the drop"]).into()]).await;

    let (result, seen) = chat(settings_on(&mock, wire)).await;

    assert_eq!(result.unwrap().content, "after the drop");
    assert_eq!(seen.retries.len(), 1);
    assert_requests_valid_on(&mock.requests(), wire);
}
on_every_wire!(a_dropped_connection_is_retried);

// Chat only: the failure is a chat error frame written raw
// mid-stream; the other wires fail with their own events (wires.rs, stream.rs).
#[tokio::test]
async fn a_stream_that_fails_after_partial_text_is_retried_without_showing_text_twice() {
    let broken = sse(&[
        json!({"choices":[{"delta":{"content":"Hel"}}]}),
        json!({"choices":[{"delta":{"content":"lo wor"}}]}),
        json!({"error":{"code":503,"message":"overloaded"}}),
    ]);
    let mock = MockModel::start(vec![broken.into(), text(&["Hello", " world", "!"]).into()]).await;

    let (result, seen) = chat(settings(&mock)).await;

    assert_eq!(result.unwrap().content, "Hello world!");
    assert_eq!(seen.text, "Hello world!");
    assert_eq!(seen.retries.len(), 1);
    assert_requests_valid(&mock.requests());
}

// Chat only: a raw chat error frame.
#[tokio::test]
async fn an_error_frame_with_a_non_retryable_code_fails_at_once() {
    let broken = sse(&[json!({"error":{"code":400,"message":"context too long"}})]);
    let mock = MockModel::start(vec![broken.into(), text(&["no"]).into()]).await;

    let (result, _) = chat(settings(&mock)).await;

    assert_eq!(
        result.unwrap_err().to_string(),
        "the model server failed mid-stream (code 400): context too long (not retried: the server refused the request as it is)"
    );
    assert_eq!(mock.requests().len(), 1);
    assert_requests_valid(&mock.requests());
}

// Chat only: the whole response is a chat completion body written raw.
#[tokio::test]
async fn the_non_streaming_path_reads_whole_responses() {
    let mock = MockModel::start(vec![
        Reply::Json(json!({
            "choices":[{"message":{"role":"assistant","content":"Let me look.","tool_calls":[
                {"id":"c1","type":"function","function":{"name":"list_dir","arguments":"{}"}}]}}],
            "usage":{"prompt_tokens":12,"completion_tokens":3}
        }))
        .into(),
    ])
    .await;
    let mut settings = settings(&mock);
    settings.body.stream = false;

    let (result, seen) = chat(settings).await;

    let turn = result.unwrap();
    assert_eq!(turn.tool_calls[0].name, "list_dir");
    assert_eq!(turn.usage.map(|u| u.prompt_tokens), Some(12));
    assert_eq!(seen.text, "Let me look.");
    let body = &mock.requests()[0].body;
    assert_eq!(body["stream"], false);
    assert!(body.get("stream_options").is_none());
    assert_requests_valid(&mock.requests());
}

// Chat only: the answer is a chat completion body written raw.
#[tokio::test]
async fn a_json_answer_to_a_stream_request_is_read_whole() {
    let mock = MockModel::start(vec![
        Reply::Json(json!({"choices":[{"message":{"role":"assistant","content":"plain"}}]})).into(),
    ])
    .await;

    let (result, seen) = chat(settings(&mock)).await;

    assert_eq!(result.unwrap().usage, None);
    assert_eq!(seen.text, "plain");
    assert_requests_valid(&mock.requests());
}

async fn parallel_tool_call_deltas_are_kept_apart_by_index(wire: WireApi) {
    let mock = MockModel::start(vec![
        tool_calls(&[
            call("a", "read_file", json!({"path":"a.rs"})),
            call("b", "read_file", json!({"path":"b.rs"})),
        ])
        .into(),
    ])
    .await;

    let (result, _) = chat(settings_on(&mock, wire)).await;

    let calls = result.unwrap().tool_calls;
    let got: Vec<_> = calls
        .iter()
        .map(|c| (c.id.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        got,
        [("a", r#"{"path":"a.rs"}"#), ("b", r#"{"path":"b.rs"}"#)]
    );
    assert_requests_valid_on(&mock.requests(), wire);
}
on_every_wire!(parallel_tool_call_deltas_are_kept_apart_by_index);
