//! The stream as servers really send it: line ends, streams cut short,
//! error frames, tool-call deltas without `index`. Client level: one
//! `Client::chat` per test against the scripted model. A scenario the
//! scripted turns can express (a stream cut before the turn's end, a line
//! too long) runs on every wire; raw chat frames stay on chat.

use nanohermes_llm::{AssistantTurn, ChatEvent, Client, JsonList, LlmError, ModelSettings};
use serde_json::{Value, json};

use crate::support::history::assert_requests_valid_on;
use crate::support::mock_model::{
    MockModel, Reply, WireApi, call, chunk, sse, sse_without_done, text, tool_calls, usage_frame,
};
use crate::support::{on_every_wire, settings, settings_on};

fn history() -> Vec<Value> {
    vec![
        json!({"role":"system","content":"test"}),
        json!({"role":"user","content":"hi"}),
    ]
}

/// The result, the text shown, and the retry notices' errors.
async fn chat(settings: ModelSettings) -> (Result<AssistantTurn, LlmError>, String, Vec<String>) {
    let client = Client::new(settings).unwrap();
    let (mut shown, mut retries) = (String::new(), Vec::new());
    let mut on_event = |event: ChatEvent<'_>| match event {
        ChatEvent::Text(text) => shown.push_str(text),
        ChatEvent::Retry { error, .. } => retries.push(error.to_string()),
        ChatEvent::Fallback { .. } | ChatEvent::Reasoning(_) => {}
    };
    let result = client
        .chat((&history()).into(), JsonList::Values(&[]), &mut on_event)
        .await;
    (result, shown, retries)
}

async fn a_stream_cut_inside_a_tool_call_is_retried_and_the_partial_turn_never_returned(
    wire: WireApi,
) {
    // A whole-looking call (its JSON even parses) but not the end of the
    // turn (chat: neither a finish reason nor [DONE]; responses: no
    // `response.completed`; messages: no `message_delta` nor
    // `message_stop`): the connection was cut before the turn ended.
    let cut = tool_calls(&[call(
        "call_partial",
        "write_file",
        json!({"path":"a.txt","content":"x"}),
    )])
    .cut_short();
    let mock = MockModel::start(vec![
        cut.into(),
        Reply::Sse(vec![]).into(),
        text(&["whole"]).into(),
    ])
    .await;

    let (result, shown, retries) = chat(settings_on(&mock, wire)).await;

    let turn = result.unwrap();
    assert_eq!(turn.content, "whole");
    assert!(turn.tool_calls.is_empty(), "{turn:?}");
    assert_eq!(shown, "whole");
    assert_eq!(
        retries.len(),
        2,
        "the cut stream and the empty body: {retries:?}"
    );
    for error in &retries {
        assert!(
            error.starts_with("the model server's stream ended before the turn was complete"),
            "{error}"
        );
    }
    assert_eq!(mock.requests().len(), 3);
    assert_requests_valid_on(&mock.requests(), wire);
}
on_every_wire!(a_stream_cut_inside_a_tool_call_is_retried_and_the_partial_turn_never_returned);

async fn a_stream_cut_on_every_attempt_is_an_error_not_a_turn(wire: WireApi) {
    let cut = || text(&["Hel"]).cut_short().into();
    let mock = MockModel::start(vec![cut(), cut(), cut()]).await;

    let (result, _, retries) = chat(settings_on(&mock, wire)).await;

    assert_eq!(result.unwrap_err(), LlmError::Incomplete);
    assert_eq!(retries.len(), 2);
    assert_eq!(mock.requests().len(), 3);
    assert_requests_valid_on(&mock.requests(), wire);
}
on_every_wire!(a_stream_cut_on_every_attempt_is_an_error_not_a_turn);

// Chat only: `[DONE]` and a finish reason are chat's own ends of a
// stream (the other wires' ends are in wires.rs and the wire unit tests).
#[tokio::test]
async fn eof_after_a_finish_reason_without_done_is_a_whole_turn() {
    let mock = MockModel::start(vec![
        sse_without_done(&[
            chunk(json!({"content":"all"}), None),
            chunk(json!({}), Some("stop")),
            usage_frame(),
        ])
        .into(),
    ])
    .await;

    let (result, _, retries) = chat(settings(&mock)).await;

    let turn = result.unwrap();
    assert_eq!(
        (turn.content.as_str(), turn.finish_reason.as_deref()),
        ("all", Some("stop"))
    );
    assert!(retries.is_empty());
}

// Chat only: raw chat error frames (the other wires' error events
// are read by their own unit tests).
#[tokio::test]
async fn mid_stream_error_frames_are_retried_by_their_meaning_whatever_their_code() {
    let frames = [
        json!({"error":{"code":"server_error","message":"The server had an error processing your request"}}),
        json!({"error":{"code":"rate_limit_exceeded","message":"Rate limit reached for gpt-4.1-mini"}}),
        json!({"error":{"code":null,"message":"Overloaded","type":"overloaded_error"}}),
        json!({"error":{"code":null,"message":"Request timed out"}}),
        json!({"error":{"code":429,"message":"Too many requests"}}),
        json!({"error":{"code":500,"message":""}}),
        json!({"error":{"code":"503","message":"Service unavailable"}}),
    ];
    for frame in frames {
        let broken = sse_without_done(&[chunk(json!({"content":"par"}), None), frame.clone()]);
        let mock = MockModel::start(vec![broken.into(), text(&["partial answer"]).into()]).await;

        let (result, shown, retries) = chat(settings(&mock)).await;

        assert_eq!(
            result.map(|t| t.content).as_deref(),
            Ok("partial answer"),
            "{frame}"
        );
        assert_eq!(shown, "partial answer", "{frame}");
        assert_eq!(retries.len(), 1, "{frame}");
        assert!(retries[0].starts_with("the model server failed mid-stream"));
    }
}

// Chat only: raw chat error frames.
#[tokio::test]
async fn refused_error_frames_fail_at_once_with_a_clear_error() {
    let frames = [
        (
            json!({"error":{"code":400,"message":"'messages' is required","type":"invalid_request_error"}}),
            "the model server failed mid-stream (code 400, invalid_request_error): 'messages' is required (not retried: the server refused the request as it is)",
        ),
        (
            json!({"error":{"code":"context_length_exceeded","message":"This model's maximum context length is 8192 tokens"}}),
            "the model server failed mid-stream (code context_length_exceeded): This model's maximum context length is 8192 tokens (not retried: the server refused the request as it is)",
        ),
        (
            // A context error that llama.cpp reports with code 500.
            json!({"error":{"code":500,"message":"the request exceeds the available context size","type":"exceed_context_size_error"}}),
            "the model server failed mid-stream (code 500, exceed_context_size_error): the request exceeds the available context size (not retried: the server refused the request as it is)",
        ),
    ];
    for (frame, expected) in frames {
        let mock = MockModel::start(vec![sse(&[frame]).into(), text(&["no"]).into()]).await;

        let (result, _, retries) = chat(settings(&mock)).await;

        assert_eq!(result.unwrap_err().to_string(), expected);
        assert!(retries.is_empty());
        assert_eq!(mock.requests().len(), 1);
    }
}

// Chat only: the frames are raw chat chunks with CR line ends.
#[tokio::test]
async fn cr_and_crlf_line_ends_decode_like_lf_even_split_between_reads() {
    let frame = |content: &str| format!("data: {}", chunk(json!({"content":content}), None));
    let stop = format!("data: {}", chunk(json!({}), Some("stop")));
    let cr = Reply::Sse(vec![
        format!("{}\r\r{}\r", frame("a"), frame("b")).into_bytes(),
        // The CR of a CRLF ends this read, its LF starts the next one.
        format!("\r{}\r", frame("c")).into_bytes(),
        format!("\n\r\n{stop}\r\n\r\ndata: [DONE]\r\n\r\n").into_bytes(),
    ]);
    let mock = MockModel::start(vec![cr.into()]).await;

    let (result, shown, retries) = chat(settings(&mock)).await;

    assert_eq!(result.unwrap().content, "abc");
    assert_eq!(shown, "abc");
    assert!(retries.is_empty());
}

async fn megabytes_without_a_line_break_fail_with_a_clear_error(wire: WireApi) {
    let mut pieces = vec![b"data: {\"choices\":[{\"delta\":{\"content\":\"".to_vec()];
    pieces.extend(std::iter::repeat_n(vec![b'x'; 256 * 1024], 20));
    let mock = MockModel::start(vec![Reply::Sse(pieces).into(), text(&["no"]).into()]).await;

    let (result, _, retries) = chat(settings_on(&mock, wire)).await;

    let error = result.unwrap_err().to_string();
    assert!(
        error.starts_with("unexpected response from the model server: the stream sent"),
        "{error}"
    );
    assert!(error.contains("without a line break"), "{error}");
    assert!(retries.is_empty());
    assert_requests_valid_on(&mock.requests(), wire);
}
on_every_wire!(megabytes_without_a_line_break_fail_with_a_clear_error);

// Chat only: `index` is a field of chat's tool-call deltas.
#[tokio::test]
async fn tool_call_deltas_without_index_are_told_apart_by_id() {
    let delta = |call: Value| chunk(json!({"tool_calls":[call]}), None);
    let stream = sse(&[
        delta(
            json!({"id":"a","type":"function","function":{"name":"read_file","arguments":"{\"path\":"}}),
        ),
        delta(json!({"function":{"arguments":"\"a.rs\"}"}})),
        delta(json!({"id":"b","type":"function","function":{"name":"read_file","arguments":""}})),
        delta(json!({"function":{"arguments":"{\"path\":\"b.rs\"}"}})),
        chunk(json!({}), Some("tool_calls")),
    ]);
    let mock = MockModel::start(vec![stream.into()]).await;

    let (result, _, _) = chat(settings(&mock)).await;

    let calls: Vec<_> = result
        .unwrap()
        .tool_calls
        .into_iter()
        .map(|c| (c.id, c.arguments))
        .collect();
    assert_eq!(
        calls,
        [
            ("a".to_owned(), r#"{"path":"a.rs"}"#.to_owned()),
            ("b".to_owned(), r#"{"path":"b.rs"}"#.to_owned())
        ]
    );
}

// Chat only: the whole response is a chat completion body.
#[tokio::test]
async fn the_finish_reason_of_a_whole_response_is_kept() {
    let mock = MockModel::start(vec![
        Reply::Json(json!({"choices":[{"finish_reason":"length","message":{
            "role":"assistant","content":null,"tool_calls":[
                {"id":"c1","type":"function","function":{"name":"write_file","arguments":"{\"pa"}}]}}]}))
        .into(),
    ])
    .await;
    let mut settings = settings(&mock);
    settings.body.stream = false;

    let (result, _, _) = chat(settings).await;

    let turn = result.unwrap();
    assert_eq!(turn.finish_reason.as_deref(), Some("length"));
    assert!(turn.is_cut_off(0));
}

// Chat only: the paced frames are raw chat chunks.
#[tokio::test]
async fn the_idle_timeout_is_restarted_by_events_not_by_keep_alives() {
    use std::time::{Duration, Instant};
    // A slow model: an event every 400 ms, 2.4 s in all, under a 1 s idle
    // timeout: never idle, so never cut.
    let mut frames: Vec<Vec<u8>> = ["one ", "two ", "three ", "four ", "five"]
        .iter()
        .map(|p| format!("data: {}\n\n", chunk(json!({"content":p}), None)).into_bytes())
        .collect();
    frames.push(
        format!(
            "data: {}\n\ndata: [DONE]\n\n",
            chunk(json!({}), Some("stop"))
        )
        .into_bytes(),
    );
    // Keep-alive comments every 300 ms and no event: idle after 1 s.
    let pings = vec![b": keep-alive\n\n".to_vec(); 10];
    let mock = MockModel::start(vec![
        Reply::Paced(frames, Duration::from_millis(400)).into(),
        Reply::Paced(pings, Duration::from_millis(300)).into(),
    ])
    .await;
    let mut settings = settings(&mock);
    settings.stream_idle_timeout = Duration::from_millis(1000);
    settings.retry.max_retries = 0;

    let (result, shown, retries) = chat(settings.clone()).await;
    assert_eq!(result.unwrap().content, "one two three four five");
    assert_eq!(shown, "one two three four five");
    assert!(retries.is_empty(), "{retries:?}");

    let started = Instant::now();
    let (result, _, _) = chat(settings).await;
    let elapsed = started.elapsed();
    assert_eq!(
        result.unwrap_err(),
        LlmError::IdleTimeout {
            idle: Duration::from_millis(1000)
        }
    );
    assert!(
        elapsed >= Duration::from_millis(1000) && elapsed < Duration::from_millis(2500),
        "{elapsed:?}"
    );
}
