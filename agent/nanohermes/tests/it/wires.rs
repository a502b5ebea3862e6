//! The three wires end to end: the real agent loop against the strict
//! scripted model speaking chat completions, Responses or Anthropic
//! Messages. One `async fn` per scenario takes the wire; one
//! `#[tokio::test]` per wire runs it. The strict mock refuses what the real
//! provider refuses, so a run whose every request was accepted replayed its
//! reasoning verbatim, answered every call, and forged nothing. The last
//! tests send deliberately broken requests, so the mock cannot be silently
//! lenient.

use std::path::Path;

use nanohermes_core::agent::{Agent, AgentConfig, AgentParts, Outcome};
use nanohermes_core::interrupt::Interrupt;
use nanohermes_hub::Hub;
use nanohermes_llm::{Client, ModelSettings, WireApi};
use serde_json::{Value, json};

use crate::support::history::{assert_history_valid, assert_wire_requests_valid};
use crate::support::mock_model::{
    Figures, MockModel, Options, Recorded, Reply, Step, Stop, Turn, call, call_raw, call_split,
    text, tool_calls, tool_calls_cut_off,
};
use crate::support::{Capture, hub, settings};

/// Every rule on: chat checks arguments and DeepSeek's thinking replay;
/// the other wires always check theirs.
const STRICT: Options = Options {
    keep_alive: false,
    strict: true,
    thinking: true,
    accounted_usage: false,
    toolless: None,
    plain_model: false,
};

/// Settings on the mock for `wire`, with a stable cache key, for a model
/// that reasons (thinking on).
fn on(mock: &MockModel, wire: WireApi) -> ModelSettings {
    let mut settings = settings(mock);
    settings.wire = wire;
    settings.body.thinking = true;
    settings.prompt_cache_key = Some("session-wires".into());
    settings
}

/// An agent on `wire` with the files server in `workspace`.
async fn agent_on(
    mock: &MockModel,
    wire: WireApi,
    workspace: &Path,
    parts: impl Into<AgentParts>,
) -> Agent<Hub> {
    let client = Client::new(on(mock, wire)).expect("a client for the wire");
    Agent::new(
        client,
        hub(workspace, vec![]).await,
        "You are NanoHermes, in a test.",
        parts,
    )
}

/// How many reasoning parts a request sends back, whatever the wire:
/// chat's `reasoning_content`, Responses `reasoning` items, Anthropic
/// `thinking` blocks.
fn replayed_reasoning(request: &Recorded) -> usize {
    match request.wire {
        Some(WireApi::Chat) => request
            .messages()
            .iter()
            .filter(|m| m.get("reasoning_content").is_some())
            .count(),
        Some(WireApi::Responses) => request
            .input()
            .iter()
            .filter(|i| i["type"] == "reasoning")
            .count(),
        _ => request
            .messages()
            .iter()
            .filter_map(|m| m["content"].as_array())
            .flatten()
            .filter(|b| b["type"] == "thinking" || b["type"] == "redacted_thinking")
            .count(),
    }
}

// ---- A multi-step coding task with a thought on every tool turn ----

async fn coding_task(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::with_options(
        STRICT,
        vec![
            tool_calls(&[call("call_ls", "list_dir", json!({}))])
                .with_thought(&["The workspace ", "is empty; ", "I will look first."])
                .into(),
            // Two calls in one turn, the second's arguments in three deltas.
            tool_calls(&[
                call(
                    "call_lib",
                    "write_file",
                    json!({"path":"src/lib.rs","content":"pub fn add(a: i32, b: i32) -> i32 { a + b }\n"}),
                ),
                call_split(
                    "call_test",
                    "write_file",
                    json!({"path":"tests/add.rs","content":"#[test]\nfn adds() { assert_eq!(mylib::add(2, 2), 4); }\n"}),
                    3,
                ),
            ])
            .with_thought(&["Write the function ", "and its test together."])
            .into(),
            tool_calls(&[call("call_read", "read_file", json!({"path":"src/lib.rs"}))])
                .with_thought(&["Check what was written."])
                .into(),
            text(&["Added `add` ", "and a test."])
                .with_thought(&["Both files are in place."])
                .into(),
        ],
    )
    .await;
    let mut agent = agent_on(&mock, wire, dir.path(), AgentConfig::default()).await;
    let mut ui = Capture::default();

    let summary = agent
        .run("add an add function with a test", &mut ui)
        .await
        .unwrap();

    assert_eq!(summary.outcome, Outcome::Done, "{:?}", ui.notices);
    assert_eq!(summary.final_text, "Added `add` and a test.");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("tests/add.rs")).unwrap(),
        "#[test]\nfn adds() { assert_eq!(mylib::add(2, 2), 4); }\n"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    // Every request accepted by the strict mock: the reasoning of each tool
    // turn went back with it, byte for byte.
    assert_wire_requests_valid(&requests, wire);
    assert_history_valid(agent.messages());
    // One reasoning part per earlier tool turn, sent back each time.
    let replayed: Vec<usize> = requests.iter().map(replayed_reasoning).collect();
    assert_eq!(
        replayed,
        [0, 1, 2, 3],
        "reasoning parts sent back per request"
    );
    // The transcript keeps each turn's reasoning with the wire that wrote it.
    let kept: Vec<&Value> = agent
        .messages()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| &m["reasoning"])
        .collect();
    assert_eq!(kept.len(), 4);
    for reasoning in kept {
        assert_eq!(reasoning["wire"], wire.as_str(), "{reasoning}");
    }
    let issued = mock.issued();
    for id in ["call_ls", "call_lib", "call_test", "call_read"] {
        assert!(
            issued.contains_key(&(wire, id.to_owned())),
            "the mock handed out reasoning with {id}"
        );
    }
}

#[tokio::test]
async fn coding_task_with_thoughts_and_parallel_calls_on_chat() {
    coding_task(WireApi::Chat).await;
}

#[tokio::test]
async fn coding_task_with_thoughts_and_parallel_calls_on_responses() {
    coding_task(WireApi::Responses).await;
}

#[tokio::test]
async fn coding_task_with_thoughts_and_parallel_calls_on_messages() {
    coding_task(WireApi::Messages).await;
}

// ---- Reasoning of one wire resumed on another: dropped, never forged ----

async fn resumed_on_another_wire(first: WireApi, second: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::with_options(
        STRICT,
        vec![
            tool_calls(&[call("call_one", "list_dir", json!({}))])
                .with_thought(&["First look."])
                .into(),
            text(&["Looked."]).with_thought(&["Nothing there."]).into(),
            // The second wire's run.
            tool_calls(&[call(
                "call_two",
                "write_file",
                json!({"path":"a.txt","content":"a"}),
            )])
            .with_thought(&["Now write."])
            .into(),
            text(&["Written."]).into(),
        ],
    )
    .await;
    let mut before = agent_on(&mock, first, dir.path(), AgentConfig::default()).await;
    let summary = before.run("look", &mut Capture::default()).await.unwrap();
    assert_eq!(summary.outcome, Outcome::Done);
    let history = before.messages()[1..].to_vec();

    let client = Client::new(on(&mock, second)).expect("a client for the second wire");
    let mut after = Agent::resume(
        client,
        hub(dir.path(), vec![]).await,
        "You are NanoHermes, in a test.",
        AgentConfig::default(),
        history,
    );
    let summary = after
        .run("now write a.txt", &mut Capture::default())
        .await
        .unwrap();

    assert_eq!(summary.outcome, Outcome::Done);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "a"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    assert_wire_requests_valid(&requests[..2], first);
    // The strict second wire accepted both: nothing of the first wire's
    // reasoning was translated into its own form.
    assert_wire_requests_valid(&requests[2..], second);
    assert_eq!(
        replayed_reasoning(&requests[2]),
        0,
        "first wire's reasoning dropped"
    );
    assert_eq!(
        replayed_reasoning(&requests[3]),
        1,
        "second wire's own kept"
    );
    assert_history_valid(after.messages());
}

#[tokio::test]
async fn chat_reasoning_resumed_on_responses_is_dropped() {
    resumed_on_another_wire(WireApi::Chat, WireApi::Responses).await;
}

#[tokio::test]
async fn responses_reasoning_resumed_on_messages_is_dropped() {
    resumed_on_another_wire(WireApi::Responses, WireApi::Messages).await;
}

#[tokio::test]
async fn messages_reasoning_resumed_on_chat_is_dropped() {
    resumed_on_another_wire(WireApi::Messages, WireApi::Chat).await;
}

// ---- A call cut off by the token budget ----

/// A `write_file` call's argument text where the token budget ran out.
const CUT: &str = r#"{"path":"big.txt","content":"line 1\nline 2"#;

async fn cut_off_call(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::with_options(
        STRICT,
        vec![
            tool_calls_cut_off(&[
                call(
                    "c_whole",
                    "write_file",
                    json!({"path":"first.txt","content":"1"}),
                ),
                call_raw("c_cut", "write_file", CUT),
            ])
            .with_thought(&["Write both."])
            .into(),
            text(&["I will write it in parts"]).into(),
        ],
    )
    .await;
    let mut agent = agent_on(&mock, wire, dir.path(), AgentConfig::default()).await;

    let summary = agent
        .run("write big.txt", &mut Capture::default())
        .await
        .unwrap();

    assert_eq!(summary.outcome, Outcome::Done);
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_wire_requests_valid(&requests, wire);
    assert_history_valid(agent.messages());
    assert!(dir.path().join("first.txt").exists(), "a whole call runs");
    assert!(
        !dir.path().join("big.txt").exists(),
        "the cut call is refused"
    );
    // The cut argument text is nowhere in the history sent back.
    let sent = requests[1].body.to_string();
    assert!(!sent.contains("line 2"), "{sent}");
    let answer = agent
        .messages()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == "c_cut")
        .expect("the cut call is answered");
    assert!(
        answer["content"]
            .as_str()
            .unwrap()
            .starts_with("ERROR: your call to `write_file` was cut off at the max_tokens limit"),
        "{answer}"
    );
}

#[tokio::test]
async fn cut_off_call_is_refused_and_its_text_kept_out_on_chat() {
    cut_off_call(WireApi::Chat).await;
}

#[tokio::test]
async fn cut_off_call_is_refused_and_its_text_kept_out_on_responses() {
    cut_off_call(WireApi::Responses).await;
}

#[tokio::test]
async fn cut_off_call_is_refused_and_its_text_kept_out_on_messages() {
    cut_off_call(WireApi::Messages).await;
}

// ---- An interrupt at a step boundary ----

async fn interrupted(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let interrupt = Interrupt::default();
    let flag = interrupt.clone();
    let mock = MockModel::with_options(
        STRICT,
        vec![
            tool_calls(&[
                call("call_a", "list_dir", json!({})),
                call(
                    "call_b",
                    "write_file",
                    json!({"path":"b.txt","content":"b"}),
                ),
            ])
            .with_thought(&["List and write."])
            .when_requested(move || flag.request()),
            text(&["never asked"]).into(),
        ],
    )
    .await;
    let parts = AgentParts {
        interrupt,
        ..Default::default()
    };
    let mut agent = agent_on(&mock, wire, dir.path(), parts).await;

    let summary = agent
        .run("list and write", &mut Capture::default())
        .await
        .unwrap();

    assert_eq!(summary.outcome, Outcome::Interrupted);
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_wire_requests_valid(&requests, wire);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("b.txt")).unwrap(),
        "b"
    );
    assert_history_valid(agent.messages());
    let roles: Vec<_> = agent
        .messages()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool", "tool"]);
    // The reasoning stays with its turn, ready to be sent back.
    assert_eq!(agent.messages()[2]["reasoning"]["wire"], wire.as_str());
}

#[tokio::test]
async fn interrupt_stops_at_a_step_boundary_on_chat() {
    interrupted(WireApi::Chat).await;
}

#[tokio::test]
async fn interrupt_stops_at_a_step_boundary_on_responses() {
    interrupted(WireApi::Responses).await;
}

#[tokio::test]
async fn interrupt_stops_at_a_step_boundary_on_messages() {
    interrupted(WireApi::Messages).await;
}

// ---- The cache share of a 12-step task ----

/// A system prompt of a realistic size (the real one is about 8 KiB):
/// OpenAI caches nothing under 1024 tokens.
fn long_system_prompt() -> String {
    let mut prompt = String::from("You are NanoHermes, in a test.\n");
    for n in 1..=60 {
        prompt.push_str(&format!(
            "Rule {n}: read before you write, keep each change small, run the tests after it, and say what you changed.\n"
        ));
    }
    prompt
}

async fn cache_share(wire: WireApi) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let mut script: Vec<Step> = Vec::new();
    for n in 0..11 {
        let id = format!("call_{n}");
        let turn = match n % 3 {
            0 => tool_calls(&[call(
                &id,
                "write_file",
                json!({"path":format!("src/m{n}.rs"),"content":format!("pub fn f{n}() {{}}\n")}),
            )]),
            1 => tool_calls(&[call(
                &id,
                "read_file",
                json!({"path":format!("src/m{}.rs", n - 1)}),
            )]),
            _ => tool_calls(&[call(&id, "list_dir", json!({"path":"src"}))]),
        };
        script.push(
            turn.with_thought(&[&format!("Step {n}: next file.")])
                .into(),
        );
    }
    script.push(text(&["All twelve steps done."]).into());
    let options = Options {
        accounted_usage: true,
        ..STRICT
    };
    let mock = MockModel::with_options(options, script).await;
    let client = Client::new(on(&mock, wire)).expect("a client for the wire");
    let mut agent = Agent::new(
        client,
        hub(dir.path(), vec![]).await,
        &long_system_prompt(),
        AgentConfig::default(),
    );

    let summary = agent
        .run("write eleven modules", &mut Capture::default())
        .await
        .unwrap();

    assert_eq!(summary.outcome, Outcome::Done);
    let requests = mock.requests();
    assert_eq!(requests.len(), 12);
    assert_wire_requests_valid(&requests, wire);
    let later = &requests[1..];
    let cached: usize = later.iter().map(|r| r.cached_bytes).sum();
    let prompt: usize = later.iter().map(|r| r.prompt_bytes).sum();
    let share = cached as f64 / prompt as f64;
    eprintln!(
        "{wire}: {cached} of {prompt} prompt bytes served from cache after the first request: {share:.3}"
    );
    // The figures reached the agent's usage ledger through the wire.
    assert!(agent.usage().cached_tokens > 0, "{:?}", agent.usage());
    share
}

#[tokio::test]
async fn cache_share_of_a_twelve_step_task_on_chat() {
    let share = cache_share(WireApi::Chat).await;
    assert!(share >= 0.9, "chat cache share {share:.3}");
}

#[tokio::test]
async fn cache_share_of_a_twelve_step_task_on_responses() {
    let share = cache_share(WireApi::Responses).await;
    assert!(share >= 0.9, "responses cache share {share:.3}");
}

#[tokio::test]
async fn cache_share_of_a_twelve_step_task_on_messages() {
    let share = cache_share(WireApi::Messages).await;
    assert!(share >= 0.9, "messages cache share {share:.3}");
}

// ---- Each strict rule refuses a broken request ----

/// Sends `body` to the mock's `path` with `headers`; the status and body.
async fn post(
    mock: &MockModel,
    path: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> (u16, String) {
    let mut request = reqwest::Client::new()
        .post(format!("{}/{path}", mock.base_url()))
        .header("content-type", "application/json")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.expect("the mock answers");
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// The JSON `data:` payloads of an SSE body.
fn events(stream: &str) -> Vec<Value> {
    stream
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str(data).ok())
        .collect()
}

/// Sends each `(name, broken body or headers, expected status, expected
/// text)`: each must be refused as stated, recorded as refused, and use
/// no script step (the valid request after them still gets its step).
async fn assert_refusals(
    mock: &MockModel,
    path: &str,
    headers: &[(&str, &str)],
    cases: Vec<(&str, Value, u16, &str)>,
) {
    let before = mock.requests().len();
    for (name, body, code, expected) in &cases {
        let (status, answer) = post(mock, path, headers, body).await;
        assert_eq!(status, *code, "{name}: {answer}");
        assert!(answer.contains(expected), "{name}: {answer}");
    }
    let requests = mock.requests();
    assert_eq!(requests.len(), before + cases.len());
    for (request, (name, ..)) in requests[before..].iter().zip(&cases) {
        assert!(request.refused.is_some(), "{name} not recorded as refused");
    }
}

/// Removes the item or block at `at` in the array at `pointer`.
fn without(mut body: Value, pointer: &str, at: usize) -> Value {
    body.pointer_mut(pointer)
        .and_then(Value::as_array_mut)
        .expect("an array")
        .remove(at);
    body
}

/// Sets the value at `pointer`.
fn with(mut body: Value, pointer: &str, value: Value) -> Value {
    *body.pointer_mut(pointer).expect("a value there") = value;
    body
}

#[tokio::test]
async fn chat_rules_refuse_a_missing_or_altered_reasoning_content_and_bad_arguments() {
    let mock = MockModel::with_options(
        STRICT,
        vec![
            tool_calls(&[call("call_1", "list_dir", json!({}))])
                .with_thought(&["I should ", "list it."])
                .into(),
            text(&["ok"]).into(),
        ],
    )
    .await;
    let first = json!({"model":"m","stream":true,"messages":[
        {"role":"system","content":"s"},{"role":"user","content":"list"}]});
    let (status, stream) = post(&mock, "chat/completions", &[], &first).await;
    assert_eq!(status, 200);
    let thought: String = events(&stream)
        .iter()
        .filter_map(|e| {
            e["choices"][0]["delta"]["reasoning_content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(thought, "I should list it.");
    let valid = json!({"model":"m","stream":true,"messages":[
        {"role":"system","content":"s"},{"role":"user","content":"list"},
        {"role":"assistant","content":null,"reasoning_content":thought,"tool_calls":[
            {"id":"call_1","type":"function","function":{"name":"list_dir","arguments":"{}"}}]},
        {"role":"tool","tool_call_id":"call_1","content":"empty"}]});

    let message = "reasoning_content` in the thinking mode must be passed back";
    assert_refusals(
        &mock,
        "chat/completions",
        &[],
        vec![
            (
                "no reasoning_content",
                without_key(valid.clone(), 2, "reasoning_content"),
                400,
                message,
            ),
            (
                "altered reasoning_content",
                with(
                    valid.clone(),
                    "/messages/2/reasoning_content",
                    json!("I should"),
                ),
                400,
                message,
            ),
            (
                "arguments not an object",
                with(
                    valid.clone(),
                    "/messages/2/tool_calls/0/function/arguments",
                    json!("[1]"),
                ),
                500,
                "Failed to parse tool call arguments as JSON",
            ),
        ],
    )
    .await;

    let (status, stream) = post(&mock, "chat/completions", &[], &valid).await;
    assert_eq!(status, 200, "{stream}");
    assert!(stream.contains(r#""content":"ok""#), "{stream}");
}

/// `body` without the key `key` of message `index`.
fn without_key(mut body: Value, index: usize, key: &str) -> Value {
    body["messages"][index]
        .as_object_mut()
        .expect("a message")
        .remove(key);
    body
}

#[tokio::test]
async fn responses_rules_refuse_each_broken_request() {
    let mock = MockModel::with_options(
        STRICT,
        vec![
            tool_calls(&[call("call_1", "list_dir", json!({}))])
                .with_thought(&["I should ", "list it."])
                .into(),
            text(&["ok"]).into(),
        ],
    )
    .await;
    let first = json!({"model":"m","stream":true,"store":false,
        "include":["reasoning.encrypted_content"],
        "input":[{"role":"user","content":"list"}]});
    let (status, stream) = post(&mock, "responses", &[], &first).await;
    assert_eq!(status, 200, "{stream}");
    let done: Vec<Value> = events(&stream)
        .into_iter()
        .filter(|e| e["type"] == "response.output_item.done")
        .map(|e| e["item"].clone())
        .collect();
    let [reasoning, function_call] = done.as_slice() else {
        panic!("two items: {done:?}")
    };
    assert_eq!(reasoning["type"], "reasoning");
    assert!(
        reasoning["encrypted_content"]
            .as_str()
            .unwrap()
            .starts_with("enc_1_")
    );
    assert_eq!(reasoning["summary"][0]["text"], "I should list it.");
    assert!(stream.contains("event: response.completed"), "{stream}");
    let valid = json!({"model":"m","stream":true,"store":false,
        "include":["reasoning.encrypted_content"],
        "input":[{"role":"user","content":"list"}, reasoning, function_call,
                 {"type":"function_call_output","call_id":"call_1","output":"empty"}]});

    let mut forged = reasoning.clone();
    forged["encrypted_content"] = json!("enc_1_0000000000000000");
    assert_refusals(
        &mock,
        "responses",
        &[],
        vec![
            (
                "store missing",
                without_field(valid.clone(), "store"),
                400,
                "`store` must be false",
            ),
            (
                "store true",
                with(valid.clone(), "/store", json!(true)),
                400,
                "`store` must be false",
            ),
            (
                "include missing",
                without_field(valid.clone(), "include"),
                400,
                "reasoning.encrypted_content",
            ),
            (
                "unknown item type",
                with(valid.clone(), "/input/0", json!({"type":"bogus"})),
                400,
                "Invalid value: 'bogus'",
            ),
            (
                "output without its call",
                without(without(valid.clone(), "/input", 2), "/input", 1),
                400,
                "No tool call found for function call output with call_id call_1",
            ),
            (
                "call without its output",
                without(valid.clone(), "/input", 3),
                400,
                "No tool output found for function call call_1",
            ),
            (
                "call without its reasoning item",
                without(valid.clone(), "/input", 1),
                400,
                "without its required 'reasoning' item",
            ),
            (
                "altered encrypted content",
                with(valid.clone(), "/input/1", forged),
                400,
                "could not be verified",
            ),
            (
                "reasoning item without its call",
                with(
                    valid.clone(),
                    "/input/2",
                    json!({"role":"user","content":"go"}),
                ),
                400,
                "without its required following item",
            ),
        ],
    )
    .await;

    let (status, stream) = post(&mock, "responses", &[], &valid).await;
    assert_eq!(status, 200, "{stream}");
    assert!(stream.contains(r#""delta":"ok""#), "{stream}");

    // A model without reasoning refuses the include.
    let plain = MockModel::with_options(
        Options {
            plain_model: true,
            ..Options::default()
        },
        vec![text(&["ok"]).into()],
    )
    .await;
    assert_refusals(
        &plain,
        "responses",
        &[],
        vec![(
            "include without reasoning",
            first.clone(),
            400,
            "Encrypted content is not supported with this model.",
        )],
    )
    .await;
    let (status, stream) = post(&plain, "responses", &[], &without_field(first, "include")).await;
    assert_eq!(status, 200, "{stream}");
}

/// `body` without its top-level `key`.
fn without_field(mut body: Value, key: &str) -> Value {
    body.as_object_mut().expect("an object").remove(key);
    body
}

#[tokio::test]
async fn messages_rules_refuse_each_broken_request() {
    let mock = MockModel::with_options(
        STRICT,
        vec![
            tool_calls(&[call("call_1", "list_dir", json!({"path":"src"}))])
                .with_thought(&["I should ", "list it."])
                .into(),
            text(&["ok"]).into(),
        ],
    )
    .await;
    let headers = [
        ("x-api-key", "test-key"),
        ("anthropic-version", "2023-06-01"),
    ];
    let first = json!({"model":"m","max_tokens":100,"stream":true,
        "messages":[{"role":"user","content":"list"}]});
    let (status, stream) = post(&mock, "messages", &headers, &first).await;
    assert_eq!(status, 200, "{stream}");
    let all = events(&stream);
    let signature = all
        .iter()
        .find_map(|e| e["delta"]["signature"].as_str())
        .expect("a signature delta");
    assert!(signature.starts_with("sig_1_"), "{signature}");
    let partial: Vec<&str> = all
        .iter()
        .filter_map(|e| e["delta"]["partial_json"].as_str())
        .collect();
    assert_eq!(
        partial.len(),
        2,
        "the input JSON split mid-way: {partial:?}"
    );
    assert_eq!(partial.concat(), r#"{"path":"src"}"#);
    assert!(stream.contains(r#""stop_reason":"tool_use""#), "{stream}");
    assert!(stream.contains("event: ping"), "{stream}");
    let valid = json!({"model":"m","max_tokens":100,"stream":true,
        "messages":[
            {"role":"user","content":"list"},
            {"role":"assistant","content":[
                {"type":"thinking","thinking":"I should list it.","signature":signature},
                {"type":"tool_use","id":"call_1","name":"list_dir","input":{"path":"src"}}]},
            {"role":"user","content":[
                {"type":"tool_result","tool_use_id":"call_1","content":"empty"}]}]});

    // Header rules: the valid body with one header missing.
    let no_key = [("anthropic-version", "2023-06-01")];
    let (status, answer) = post(&mock, "messages", &no_key, &valid).await;
    assert_eq!(
        (status, answer.contains("x-api-key")),
        (401, true),
        "{answer}"
    );
    let no_version = [("x-api-key", "test-key")];
    let (status, answer) = post(&mock, "messages", &no_version, &valid).await;
    assert_eq!(
        (status, answer.contains("anthropic-version")),
        (400, true),
        "{answer}"
    );

    let marked = json!({"type":"text","text":"x","cache_control":{"type":"ephemeral"}});
    let five_marks = with(
        valid.clone(),
        "/messages/0/content",
        json!([marked, marked, marked, marked, marked]),
    );
    let bad_id = with(
        with(valid.clone(), "/messages/1/content/1/id", json!("call 1!")),
        "/messages/2/content/0/tool_use_id",
        json!("call 1!"),
    );
    assert_refusals(
        &mock,
        "messages",
        &headers,
        vec![
            (
                "max_tokens missing",
                without_field(valid.clone(), "max_tokens"),
                400,
                "max_tokens: Field required",
            ),
            (
                "tool_use id pattern",
                bad_id,
                400,
                "String should match pattern '^[a-zA-Z0-9_-]+$'",
            ),
            (
                "tool_use unanswered",
                with(valid.clone(), "/messages/2/content", json!("go on")),
                400,
                "`tool_use` ids were found without `tool_result` blocks immediately after: call_1",
            ),
            (
                "text before the tool_result",
                with(
                    valid.clone(),
                    "/messages/2/content",
                    json!([{"type":"text","text":"here"},
                           {"type":"tool_result","tool_use_id":"call_1","content":"empty"}]),
                ),
                400,
                "`tool_use` ids were found without `tool_result` blocks immediately after: call_1",
            ),
            (
                "tool_result answering another id",
                with(
                    valid.clone(),
                    "/messages/2/content/0/tool_use_id",
                    json!("call_9"),
                ),
                400,
                "`tool_use` ids were found without `tool_result` blocks immediately after: call_1",
            ),
            (
                "tool_result answering nothing",
                with(
                    valid.clone(),
                    "/messages/0/content",
                    json!([{"type":"tool_result","tool_use_id":"call_9","content":"x"}]),
                ),
                400,
                "unexpected `tool_use_id` found in `tool_result` blocks: call_9",
            ),
            (
                "thinking block missing",
                without(valid.clone(), "/messages/1/content", 0),
                400,
                "Expected `thinking` or `redacted_thinking`, but found `tool_use`",
            ),
            (
                "signature altered",
                with(
                    valid.clone(),
                    "/messages/1/content/0/signature",
                    json!(format!("{signature}x")),
                ),
                400,
                "Invalid `signature` in `thinking` block",
            ),
            (
                "thinking text altered",
                with(
                    valid.clone(),
                    "/messages/1/content/0/thinking",
                    json!("I should list."),
                ),
                400,
                "Invalid `signature` in `thinking` block",
            ),
            (
                "empty text block",
                with(
                    valid.clone(),
                    "/messages/0/content",
                    json!([{"type":"text","text":""}]),
                ),
                400,
                "text content blocks must be non-empty",
            ),
            (
                "five cache_control breakpoints",
                five_marks,
                400,
                "A maximum of 4 blocks with cache_control may be provided. Found 5.",
            ),
            (
                "roles not alternating",
                with(valid.clone(), "/messages/1/role", json!("user")),
                400,
                "roles must alternate",
            ),
        ],
    )
    .await;

    let (status, stream) = post(&mock, "messages", &headers, &valid).await;
    assert_eq!(status, 200, "{stream}");
    assert!(stream.contains(r#""text":"ok""#), "{stream}");
    assert!(stream.contains(r#""stop_reason":"end_turn""#), "{stream}");
}

// ---- The cache accounting itself ----

#[tokio::test]
async fn cache_figures_follow_each_providers_rule() {
    let options = Options {
        accounted_usage: true,
        ..Options::default()
    };
    let mock =
        MockModel::with_options(options, (0..8).map(|_| text(&["a"]).into()).collect()).await;
    let long = "x".repeat(6000);
    let chat = |key: Option<&str>, system: &str, turns: usize| {
        let mut messages = vec![
            json!({"role":"system","content":system}),
            json!({"role":"user","content":"q0"}),
        ];
        for n in 1..turns {
            messages.push(json!({"role":"assistant","content":"a"}));
            messages.push(json!({"role":"user","content":format!("q{n}")}));
        }
        let mut body = json!({"model":"m","stream":true,"messages":messages});
        if let Some(key) = key {
            body["prompt_cache_key"] = key.into();
        }
        body
    };
    let cached_tokens = |stream: &str| {
        events(stream)
            .iter()
            .find_map(|e| e["usage"]["prompt_tokens_details"]["cached_tokens"].as_u64())
            .expect("a usage frame with cached tokens")
    };
    // A, then B extending it under the same key: B's cache serves A's
    // whole render, rounded down to 128-token blocks.
    post(&mock, "chat/completions", &[], &chat(Some("k1"), &long, 1)).await;
    let (_, b) = post(&mock, "chat/completions", &[], &chat(Some("k1"), &long, 2)).await;
    // The same under another key, and without a key: nothing cached.
    post(&mock, "chat/completions", &[], &chat(Some("k2"), &long, 2)).await;
    post(&mock, "chat/completions", &[], &chat(None, &long, 2)).await;
    // A shorter prompt repeated: under 1024 tokens (though past 640),
    // never cached.
    let short = "y".repeat(3000);
    post(&mock, "chat/completions", &[], &chat(Some("k3"), &short, 1)).await;
    post(&mock, "chat/completions", &[], &chat(Some("k3"), &short, 2)).await;
    let requests = mock.requests();
    let a = requests[0].prompt_bytes;
    assert!(a >= 4 * 1024, "A is past 1024 tokens: {a}");
    let expected = a / 4 / 128 * 128 * 4;
    let cached: Vec<usize> = requests.iter().map(|r| r.cached_bytes).collect();
    assert_eq!(cached, [0, expected, 0, 0, 0, 0]);
    assert!(expected < a && a - expected < 128 * 4, "{expected} of {a}");
    assert_eq!(cached_tokens(&b), (expected / 4) as u64);

    // Anthropic: the first request writes up to its last breakpoint; the
    // next reads that prefix and writes the rest up to its own.
    let headers = [("x-api-key", "k"), ("anthropic-version", "2023-06-01")];
    let mark = json!({"type":"ephemeral"});
    let system = json!([{"type":"text","text":long,"cache_control":mark}]);
    let first = json!({"model":"m","max_tokens":10,"stream":true,"system":system,
        "messages":[{"role":"user","content":[{"type":"text","text":"q0","cache_control":mark}]}]});
    let second = json!({"model":"m","max_tokens":10,"stream":true,"system":system,
        "messages":[{"role":"user","content":[{"type":"text","text":"q0"}]},
                    {"role":"assistant","content":"a"},
                    {"role":"user","content":[{"type":"text","text":"q1","cache_control":mark}]}]});
    let (_, m1) = post(&mock, "messages", &headers, &first).await;
    let (_, m2) = post(&mock, "messages", &headers, &second).await;
    let requests = mock.requests();
    let (m1_request, m2_request) = (&requests[6], &requests[7]);
    assert_eq!(m1_request.refused, None);
    assert_eq!(
        (m1_request.cached_bytes, m1_request.cache_write_bytes),
        (0, m1_request.prompt_bytes)
    );
    assert_eq!(m2_request.cached_bytes, m1_request.prompt_bytes);
    assert_eq!(
        m2_request.cache_write_bytes,
        m2_request.prompt_bytes - m1_request.prompt_bytes
    );
    let usage = |stream: &str| {
        events(stream)
            .into_iter()
            .find(|e| e["type"] == "message_start")
            .map(|e| e["message"]["usage"].clone())
            .expect("message_start")
    };
    assert_eq!(usage(&m1)["cache_read_input_tokens"], 0);
    assert_eq!(
        usage(&m2)["cache_read_input_tokens"],
        (m1_request.prompt_bytes / 4) as u64
    );
    assert_eq!(
        usage(&m2)["cache_creation_input_tokens"],
        ((m2_request.prompt_bytes - m1_request.prompt_bytes) / 4) as u64
    );
}

// ---- The per-wire checker of recorded requests must fail on what it claims ----

/// A request as if recorded on `wire`, with `body` and `refused`.
fn recorded(wire: WireApi, body: Value, refused: Option<&str>) -> Recorded {
    Recorded {
        path: format!("/v1/{}", wire.path()),
        headers: vec![],
        body,
        body_len: 0,
        at: std::time::Instant::now(),
        wire: Some(wire),
        refused: refused.map(str::to_owned),
        prompt_bytes: 0,
        cached_bytes: 0,
        cache_write_bytes: 0,
    }
}

/// The checker's panic message, or `None` when it accepted the request.
fn wire_rejection(request: Recorded) -> Option<String> {
    let wire = request.wire.expect("a wire");
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        assert_wire_requests_valid(&[request], wire)
    }));
    let payload = outcome.err()?;
    Some(
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default(),
    )
}

#[test]
fn the_wire_checker_catches_refusals_and_unanswered_or_misplaced_calls() {
    let call = json!({"type":"function_call","call_id":"c1","name":"list_dir","arguments":"{}"});
    let output = json!({"type":"function_call_output","call_id":"c1","output":"x"});
    let input = |items: Vec<Value>| json!({"input": items});
    assert_eq!(
        wire_rejection(recorded(
            WireApi::Responses,
            input(vec![call.clone(), output.clone()]),
            None
        )),
        None
    );
    let cases = [
        (
            recorded(WireApi::Responses, input(vec![call.clone()]), None),
            "unanswered calls",
        ),
        (
            recorded(
                WireApi::Responses,
                input(vec![output.clone(), call.clone()]),
                None,
            ),
            "output before its call",
        ),
        (
            recorded(
                WireApi::Responses,
                input(vec![
                    call.clone(),
                    output.clone(),
                    call.clone(),
                    output.clone(),
                ]),
                None,
            ),
            "call id c1 used twice",
        ),
        (
            recorded(
                WireApi::Responses,
                input(vec![call.clone(), output.clone()]),
                Some("{}"),
            ),
            "was refused",
        ),
    ];
    for (request, expected) in cases {
        let message = wire_rejection(request).unwrap_or_else(|| panic!("accepted: {expected}"));
        assert!(message.contains(expected), "{message}");
    }

    let uses = json!({"role":"assistant","content":[
        {"type":"tool_use","id":"a","name":"x","input":{}},
        {"type":"tool_use","id":"b","name":"x","input":{}}]});
    let results = |ids: [&str; 2]| {
        json!({"role":"user","content":[
            {"type":"tool_result","tool_use_id":ids[0],"content":"1"},
            {"type":"tool_result","tool_use_id":ids[1],"content":"2"}]})
    };
    let messages =
        |answer: Value| json!({"messages":[{"role":"user","content":"go"}, uses.clone(), answer]});
    assert_eq!(
        wire_rejection(recorded(
            WireApi::Messages,
            messages(results(["a", "b"])),
            None
        )),
        None
    );
    let message = wire_rejection(recorded(
        WireApi::Messages,
        messages(results(["b", "a"])),
        None,
    ))
    .expect("answers out of order are refused");
    assert!(message.contains("answers in call order"), "{message}");
}

// ---- What each wire renders for the rarer endings ----

#[tokio::test]
async fn each_wire_renders_refusals_pauses_cut_offs_and_usage_overrides() {
    let figures = Figures {
        input: 500,
        output: 40,
        cached: 384,
        cache_write: 16,
        reasoning: 12,
    };
    let script = || {
        vec![
            text(&["I can", "not help."])
                .with_stop(Stop::Refusal)
                .into(),
            text(&["Still working"])
                .with_stop(Stop::PauseTurn)
                .with_usage(figures)
                .into(),
            Reply::Turn(Turn {
                text: vec!["cut he".into()],
                cut_off: true,
                ..Turn::default()
            })
            .into(),
        ]
    };
    let chat_body = json!({"model":"m","stream":true,"messages":[{"role":"user","content":"q"}]});
    let mock = MockModel::start(script()).await;
    let mut streams = Vec::new();
    for _ in 0..3 {
        streams.push(post(&mock, "chat/completions", &[], &chat_body).await.1);
    }
    assert!(
        streams[0].contains(r#""refusal":"I can""#),
        "{}",
        streams[0]
    );
    assert!(
        streams[1].contains(r#""cached_tokens":384"#),
        "{}",
        streams[1]
    );
    assert!(
        streams[1].contains(r#""reasoning_tokens":12"#),
        "{}",
        streams[1]
    );
    assert!(
        streams[2].contains(r#""finish_reason":"length""#),
        "{}",
        streams[2]
    );

    let responses_body = json!({"model":"m","stream":true,"store":false,"input":"q"});
    let mock = MockModel::start(script()).await;
    let mut streams = Vec::new();
    for _ in 0..3 {
        streams.push(post(&mock, "responses", &[], &responses_body).await.1);
    }
    assert!(
        streams[0].contains("event: response.refusal.delta"),
        "{}",
        streams[0]
    );
    assert!(
        streams[0].contains("event: response.completed"),
        "{}",
        streams[0]
    );
    let completed = events(&streams[1])
        .into_iter()
        .find(|e| e["type"] == "response.completed")
        .expect("completed");
    assert_eq!(
        completed["response"]["usage"],
        json!({"input_tokens":500,"input_tokens_details":{"cached_tokens":384},
               "output_tokens":40,"output_tokens_details":{"reasoning_tokens":12},
               "total_tokens":540})
    );
    let incomplete = events(&streams[2])
        .into_iter()
        .find(|e| e["type"] == "response.incomplete")
        .expect("incomplete");
    assert_eq!(
        incomplete["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
    assert!(
        !streams[2].contains("response.output_item.done"),
        "{}",
        streams[2]
    );

    let headers = [("x-api-key", "k"), ("anthropic-version", "2023-06-01")];
    let messages_body = json!({"model":"m","max_tokens":10,"stream":true,
        "messages":[{"role":"user","content":"q"}]});
    let mock = MockModel::start(script()).await;
    let mut streams = Vec::new();
    for _ in 0..3 {
        streams.push(post(&mock, "messages", &headers, &messages_body).await.1);
    }
    let stop = |stream: &str| {
        events(stream)
            .into_iter()
            .find(|e| e["type"] == "message_delta")
            .map(|e| e["delta"]["stop_reason"].clone())
            .expect("message_delta")
    };
    assert_eq!(stop(&streams[0]), "refusal");
    assert_eq!(stop(&streams[1]), "pause_turn");
    assert_eq!(stop(&streams[2]), "max_tokens");
    let start = events(&streams[1])
        .into_iter()
        .find(|e| e["type"] == "message_start")
        .expect("message_start");
    assert_eq!(
        start["message"]["usage"],
        json!({"input_tokens":100,"cache_creation_input_tokens":16,
               "cache_read_input_tokens":384,"output_tokens":1})
    );
    assert!(streams[1].ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
}

/// A model without reasoning refuses the encrypted-reasoning `include`
/// that every Responses request asks for: the wire drops it once, asks
/// again at once (not a retry), and sends it no more in that process.
#[tokio::test]
async fn a_responses_model_without_reasoning_refuses_the_include_once_and_then_answers() {
    let plain = MockModel::with_options(
        Options {
            plain_model: true,
            ..Options::default()
        },
        vec![
            tool_calls(&[call("c1", "list_dir", json!({}))]).into(),
            text(&["done"]).into(),
        ],
    )
    .await;
    let mut settings = settings(&plain);
    settings.wire = WireApi::Responses;
    settings.retry.max_retries = 0;
    let dir = tempfile::tempdir().unwrap();
    let mut agent = Agent::new(
        Client::new(settings).unwrap(),
        hub(dir.path(), vec![]).await,
        "You are NanoHermes, in a test.",
        AgentConfig::default(),
    );
    let summary = agent.run("list", &mut Capture::default()).await.unwrap();
    assert_eq!(summary.final_text, "done");
    let requests = plain.requests();
    assert_eq!(requests.len(), 3, "one refused, then two answered");
    assert!(requests[0].refused.is_some());
    assert!(requests[0].body.get("include").is_some());
    for answered in &requests[1..] {
        assert!(answered.refused.is_none());
        assert!(answered.body.get("include").is_none());
    }
}
