//! The real `nanohermes-memory` binary over stdio: every tool once, the
//! default database path, and two processes writing one file at once.

use std::path::Path;

use rmcp::ServiceExt;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use tokio::process::Command;

use super::raw;

type Client = RunningService<RoleClient, ()>;

async fn spawn(configure: impl FnOnce(&mut Command)) -> Client {
    let command = Command::new(env!("CARGO_BIN_EXE_nanohermes-memory")).configure(configure);
    ().serve(TokioChildProcess::new(command).unwrap())
        .await
        .unwrap()
}

async fn spawn_on(db: &Path) -> Client {
    let db = db.to_path_buf();
    spawn(move |c| {
        c.arg("--db").arg(db);
    })
    .await
}

async fn call(client: &Client, tool: &'static str, args: serde_json::Value) -> (bool, String) {
    mcp_tools::testing::call_text(client, tool, args).await
}

#[tokio::test]
async fn the_binary_lists_and_serves_every_tool() {
    let dir = tempfile::tempdir().unwrap();
    let client = spawn_on(&dir.path().join("memory.db")).await;
    let mut names: Vec<String> = client
        .list_all_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "memory_forget",
            "memory_list",
            "memory_save",
            "memory_search"
        ]
    );
    let saved = call(
        &client,
        "memory_save",
        serde_json::json!({"text": "用户喜欢使用中文回答问题", "kind": "preference"}),
    )
    .await;
    assert_eq!(saved, (false, "saved as memory 1".to_string()));
    let found = call(
        &client,
        "memory_search",
        serde_json::json!({"query": "中文"}),
    )
    .await;
    assert_eq!(
        found,
        (
            false,
            "1 memory matching \"中文\":\n[1] preference: 用户喜欢使用中文回答问题\n".to_string()
        )
    );
    let listed = call(&client, "memory_list", serde_json::json!({})).await;
    assert_eq!(
        listed,
        (
            false,
            "1 memory, newest first:\n[1] preference: 用户喜欢使用中文回答问题\n".to_string()
        )
    );
    let forgot = call(&client, "memory_forget", serde_json::json!({"id": 1})).await;
    assert!(!forgot.0, "{}", forgot.1);
    let again = call(&client, "memory_forget", serde_json::json!({"id": 1})).await;
    assert!(again.0);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn without_db_the_database_is_created_under_home() {
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().to_path_buf();
    let client = spawn(move |c| {
        c.env("HOME", &home_path).env_remove("NANOHERMES_MEMORY_DB");
    })
    .await;
    let saved = call(
        &client,
        "memory_save",
        serde_json::json!({"text": "home default", "kind": "fact"}),
    )
    .await;
    assert!(!saved.0, "{}", saved.1);
    client.cancel().await.unwrap();
    assert!(home.path().join(".nanohermes/memory.db").is_file());
}

/// Each process saves `PER_PROCESS` memories of its own plus the same
/// `SHARED` memories as the other, all requests in flight at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_writing_one_database_lose_nothing() {
    const PER_PROCESS: usize = 150;
    const SHARED: usize = 30;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memory.db");
    let (a, b) = tokio::join!(spawn_on(&db), spawn_on(&db));

    async fn write_all(client: &Client, name: &'static str) -> Vec<(bool, String)> {
        let own = (0..PER_PROCESS).map(|i| {
            serde_json::json!({"text": format!("process {name} memory {i} 记忆库"), "kind": "fact"})
        });
        let shared = (0..SHARED)
            .map(|i| serde_json::json!({"text": format!("shared memory {i}"), "kind": "lesson"}));
        let calls = own
            .chain(shared)
            .map(|args| call(client, "memory_save", args));
        futures::future::join_all(calls).await
    }

    let (ra, rb) = tokio::join!(write_all(&a, "a"), write_all(&b, "b"));
    for (is_error, text) in ra.iter().chain(&rb) {
        assert!(!is_error, "a save failed: {text}");
    }
    let new = ra
        .iter()
        .chain(&rb)
        .filter(|(_, text)| text.starts_with("saved"))
        .count();
    assert_eq!(
        new,
        2 * PER_PROCESS + SHARED,
        "each shared memory is new exactly once"
    );
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();

    let conn = raw(&db);
    let count: i64 = conn
        .query_row("SELECT count(*) FROM memories", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count as usize, 2 * PER_PROCESS + SHARED);
    let integrity: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    conn.execute(
        "INSERT INTO memories_index(memories_index) VALUES('integrity-check')",
        [],
    )
    .unwrap();
    // `记忆库` is indexed as its bigrams, next to each other.
    let indexed: i64 = conn
        .query_row(
            "SELECT count(*) FROM memories_index WHERE memories_index MATCH '\"记忆 忆库\"'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        indexed as usize,
        2 * PER_PROCESS,
        "the index holds every memory"
    );
}
