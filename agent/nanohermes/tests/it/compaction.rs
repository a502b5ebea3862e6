//! Compaction: the cut over random histories (a property test), a long
//! scripted run past a small threshold, and the context-length error that
//! compacts and retries once; the runs on every wire.

use nanohermes_core::agent::AgentParts;
use nanohermes_core::agent::Outcome;
use nanohermes_core::compaction::{
    self, CompactionConfig, OMISSION_NOTE, SUMMARY_HEADER, cut_point, summary_message,
};
use nanohermes_core::history::{system_message, tool_message, user_message};
use nanohermes_llm::Client;
use serde_json::{Value, json};

use crate::support::history::{assert_history_valid, assert_requests_valid_on};
use crate::support::mock_model::{MockModel, WireApi, call, status, text, tool_calls};
use crate::support::{Capture, agent, agent_with, hub, on_every_wire, settings_on};

/// A seeded xorshift64: the same histories on every run, no new crate.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Appends one random step to a valid history: a user message, a text
/// answer, or an assistant message with 1-4 calls and their results.
fn grow(messages: &mut Vec<Value>, rng: &mut XorShift, next_id: &mut u64) {
    match rng.below(4) {
        0 => messages.push(user_message(&"u".repeat(rng.below(200) as usize + 1))),
        1 => messages
            .push(json!({"role":"assistant","content":"a".repeat(rng.below(200) as usize + 1)})),
        _ => {
            let n = rng.below(4) + 1;
            let ids: Vec<String> = (0..n)
                .map(|_| {
                    *next_id += 1;
                    format!("c{next_id}")
                })
                .collect();
            let calls: Vec<Value> = ids
                .iter()
                .map(|id| json!({"id":id,"type":"function","function":{"name":"t","arguments":"{}"}}))
                .collect();
            messages.push(json!({"role":"assistant","content":null,"tool_calls":calls}));
            for id in &ids {
                let size = rng.below(400) as usize + 1;
                messages.push(tool_message(id, &"r".repeat(size)));
            }
        }
    }
}

#[test]
fn compaction_never_orphans_a_tool_message_over_random_histories() {
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    for _ in 0..2000 {
        let mut next_id = 0;
        let mut messages = vec![system_message("s"), user_message("task")];
        for _ in 0..rng.below(30) {
            grow(&mut messages, &mut rng, &mut next_id);
        }
        let keep = rng.below(14) as usize;
        let before = messages.clone();
        match cut_point(&messages, keep) {
            None => {
                // Nothing could be dropped only when the tail is all there is.
                assert!(before.len() <= keep + 1, "keep {keep}: {before:#?}");
            }
            Some(cut) => {
                assert!(
                    before.get(cut).is_none_or(|m| m["role"] != "tool"),
                    "the cut lands on a result"
                );
                let dropped = splice(&mut messages, cut, summary_message(Some("s")));
                assert_eq!(dropped.len(), cut - 1);
                assert_eq!(&messages[2..], &before[cut..], "the tail is kept verbatim");
                assert_history_valid(&messages);
            }
        }
    }
}

/// What the loop does at a cut: `messages[1..cut]` becomes `replacement`,
/// through the transcript the agent keeps.
fn splice(messages: &mut Vec<Value>, cut: usize, replacement: Value) -> Vec<Value> {
    let mut transcript = nanohermes_core::transcript::Transcript::new(std::mem::take(messages));
    let dropped = transcript.splice(1..cut, vec![replacement]);
    *messages = transcript.to_vec();
    dropped
}

#[test]
fn a_loop_that_compacts_whenever_due_keeps_a_valid_history() {
    // As the loop does it: grow a step, compact when past the limits,
    // repeatedly, on small limits so it happens often.
    let mut rng = XorShift(42);
    for _ in 0..200 {
        let config = CompactionConfig {
            threshold_chars: rng.below(3000) as usize + 200,
            keep_messages: rng.below(12) as usize,
        };
        let mut next_id = 0;
        let mut messages = vec![system_message("s"), user_message("task")];
        let mut compactions = 0;
        for _ in 0..60 {
            grow(&mut messages, &mut rng, &mut next_id);
            if config.is_due(&messages)
                && let Some(cut) = cut_point(&messages, config.keep_messages)
            {
                let kept = messages.len() - cut;
                splice(&mut messages, cut, summary_message(None));
                compactions += 1;
                assert_eq!(messages.len(), kept + 2);
                assert_eq!(messages[1], user_message(OMISSION_NOTE));
            }
            assert_history_valid(&messages);
        }
        assert!(compactions > 0, "{config:?}");
    }
}

async fn a_long_run_past_a_small_threshold_keeps_going_with_a_valid_history(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("big.txt"), "x".repeat(3000)).unwrap();
    let read = |id: &'static str| tool_calls(&[call(id, "read_file", json!({"path":"big.txt"}))]);
    // Step 1 stays under 4 000 characters; from step 2 on every step is
    // past it, so each is followed by a summary request. One summary
    // request fails (HTTP 400): the omission note replaces it.
    let mock = MockModel::start(vec![
        read("c1").into(),
        read("c2").into(),
        text(&["summary one"]).into(),
        read("c3").into(),
        text(&["summary two"]).into(),
        read("c4").into(),
        status(400, "summariser refused").into(),
        read("c5").into(),
        text(&["summary four"]).into(),
        read("c6").into(),
        text(&["summary five"]).into(),
        text(&["all read"]).into(),
    ])
    .await;
    let mut agent = agent_with(
        settings_on(&mock, wire),
        hub(dir.path(), vec![]).await,
        AgentParts {
            compaction: CompactionConfig {
                threshold_chars: 4000,
                keep_messages: 4,
            },
            ..Default::default()
        },
    );
    let mut ui = Capture::default();

    let summary = agent.run("read big.txt six times", &mut ui).await.unwrap();

    assert_eq!(summary.outcome, Outcome::Done);
    assert_eq!(summary.final_text, "all read");
    assert_eq!(summary.iterations, 7);
    assert_eq!(summary.tool_calls, 6);
    let messages = agent.messages();
    assert_history_valid(messages);
    // The last summary, the last two steps verbatim, the answer.
    assert_eq!(
        messages[1],
        user_message(&format!("{SUMMARY_HEADER}\nsummary five"))
    );
    assert_eq!(messages.len(), 7, "{messages:#?}");
    assert_eq!(messages[2]["tool_calls"][0]["id"], "c5");
    assert_eq!(messages[4]["tool_calls"][0]["id"], "c6");

    let requests = mock.requests();
    assert_eq!(requests.len(), 12);
    assert_requests_valid_on(&requests, wire);
    let summaries: Vec<usize> = (0..requests.len())
        .filter(|&i| requests[i].body.get("tools").is_none())
        .collect();
    assert_eq!(
        summaries,
        [2, 4, 6, 8, 10],
        "the summary requests carry no tools"
    );
    // The request after the failed summary starts with the omission note,
    // the one after a good summary with it.
    assert_eq!(requests[7].history()[1], user_message(OMISSION_NOTE));
    assert_eq!(
        requests[5].history()[1],
        user_message(&format!("{SUMMARY_HEADER}\nsummary two"))
    );
    // The summariser read what it replaced (the earlier summary included).
    let summarised = requests[4].history();
    let transcript = summarised[1]["content"].as_str().unwrap();
    assert!(transcript.contains("summary one"), "{transcript}");
    assert!(
        transcript.contains("[called read_file (c1)"),
        "{transcript}"
    );
    // No request's history grew past two steps' worth once compaction began.
    let largest = requests[3..]
        .iter()
        .map(|r| compaction::history_chars(&r.history()))
        .max()
        .unwrap();
    assert!(largest < 8_000, "{largest}");
    assert_eq!(
        ui.notices
            .iter()
            .filter(|n| n.starts_with("compacted the history"))
            .count(),
        5,
        "{:?}",
        ui.notices
    );
    assert!(
        ui.notices
            .iter()
            .any(|n| n.ends_with("replaced by an omission note (the summary request failed)")),
        "{:?}",
        ui.notices
    );
}
on_every_wire!(a_long_run_past_a_small_threshold_keeps_going_with_a_valid_history);

const TOO_LONG: &str = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9120 tokens";

fn earlier() -> Vec<Value> {
    vec![
        user_message("the old task"),
        json!({"role":"assistant","content":"the old answer"}),
        user_message("a second task"),
        json!({"role":"assistant","content":"the second answer"}),
    ]
}

fn resumed(
    mock: &MockModel,
    wire: WireApi,
    hub: nanohermes_hub::Hub,
) -> nanohermes_core::agent::Agent<nanohermes_hub::Hub> {
    let client = Client::new(settings_on(mock, wire)).unwrap();
    nanohermes_core::agent::Agent::resume(
        client,
        hub,
        "You are NanoHermes, in a test.",
        nanohermes_core::agent::AgentParts {
            compaction: CompactionConfig {
                threshold_chars: compaction::DEFAULT_THRESHOLD_CHARS,
                keep_messages: 2,
            },
            ..Default::default()
        },
        earlier(),
    )
}

async fn a_context_length_error_compacts_the_history_and_retries_once(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        status(400, TOO_LONG).into(),
        text(&["they asked for two things"]).into(),
        text(&["done"]).into(),
    ])
    .await;
    let mut agent = resumed(&mock, wire, hub(dir.path(), vec![]).await);
    let mut ui = Capture::default();

    let summary = agent.run("the new task", &mut ui).await.unwrap();

    assert_eq!(
        (summary.outcome, summary.final_text.as_str()),
        (Outcome::Done, "done")
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert_requests_valid_on(&requests, wire);
    assert_eq!(requests[0].history().len(), 6);
    let summarised = requests[1].history();
    let transcript = summarised[1]["content"].as_str().unwrap();
    assert!(transcript.contains("the old task"), "{transcript}");
    assert!(requests[1].body.get("tools").is_none());
    assert_eq!(
        requests[2].history()[1..],
        [
            user_message(&format!("{SUMMARY_HEADER}\nthey asked for two things")),
            json!({"role":"assistant","content":"the second answer"}),
            user_message("the new task"),
        ]
    );
    assert_history_valid(agent.messages());
    assert!(
        ui.notices
            .iter()
            .any(|n| n.starts_with("the history does not fit the model's context")),
        "{:?}",
        ui.notices
    );
}
on_every_wire!(a_context_length_error_compacts_the_history_and_retries_once);

async fn a_second_context_length_error_ends_the_run_with_a_valid_history(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![
        status(400, TOO_LONG).into(),
        text(&["short summary"]).into(),
        status(400, TOO_LONG).into(),
        text(&["never asked"]).into(),
    ])
    .await;
    let mut agent = resumed(&mock, wire, hub(dir.path(), vec![]).await);
    let mut ui = Capture::default();

    let error = agent.run("the new task", &mut ui).await.unwrap_err();

    assert!(error.is_context_length(), "{error}");
    assert_eq!(mock.requests().len(), 3, "retried once, not twice");
    assert_requests_valid_on(&mock.requests(), wire);
    assert_history_valid(agent.messages());
}
on_every_wire!(a_second_context_length_error_ends_the_run_with_a_valid_history);

async fn a_context_length_error_with_nothing_to_compact_is_the_runs_error(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![status(400, TOO_LONG).into(), text(&["x"]).into()]).await;
    let mut agent = agent(settings_on(&mock, wire), hub(dir.path(), vec![]).await);
    let mut ui = Capture::default();

    let error = agent.run("one huge task", &mut ui).await.unwrap_err();

    assert!(error.is_context_length(), "{error}");
    assert_eq!(mock.requests().len(), 1);
    assert_requests_valid_on(&mock.requests(), wire);
}
on_every_wire!(a_context_length_error_with_nothing_to_compact_is_the_runs_error);

async fn a_forced_compaction_keeps_the_last_messages_and_notes_a_failed_summary(wire: WireApi) {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start(vec![status(400, "no").into()]).await;
    let mut agent = resumed(&mock, wire, hub(dir.path(), vec![]).await);

    // Under every threshold, but forced: the last 2 stay.
    assert_eq!(agent.compact().await, 2);

    assert_eq!(
        agent.messages()[1..],
        [
            user_message(OMISSION_NOTE),
            user_message("a second task"),
            json!({"role":"assistant","content":"the second answer"}),
        ]
    );
    assert_eq!(
        agent.compact().await,
        1,
        "the note itself is compacted next"
    );
    assert_eq!(agent.compact().await, 1);
    assert_requests_valid_on(&mock.requests(), wire);
}
on_every_wire!(a_forced_compaction_keeps_the_last_messages_and_notes_a_failed_summary);
