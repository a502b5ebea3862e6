//! The four tools through a real MCP client connected in-process: argument
//! handling, the text the model reads, annotations, the schema file.

use std::path::Path;

use mcp_tools::ToolContext;
use mcp_tools::schema::{check_schema_file, tools_document};
use nanohermes_memory::{MemoryServer, MemoryStore};
use rmcp::service::{RoleClient, RunningService};

struct Session {
    _dir: tempfile::TempDir,
    client: RunningService<RoleClient, ()>,
}

fn server(dir: &Path) -> MemoryServer {
    let store = MemoryStore::open(&dir.join("memory.db")).unwrap();
    MemoryServer::new(ToolContext::new(dir).unwrap(), store)
}

async fn session() -> Session {
    let dir = tempfile::tempdir().unwrap();
    let client = mcp_tools::in_process::connect(server(dir.path()))
        .await
        .unwrap();
    Session { _dir: dir, client }
}

/// Calls `tool` and returns (isError, text).
async fn call(session: &Session, tool: &'static str, args: serde_json::Value) -> (bool, String) {
    mcp_tools::testing::call_text(&session.client, tool, args).await
}

#[tokio::test]
async fn save_then_search_in_chinese_through_mcp() {
    let s = session().await;
    let (err, text) = call(
        &s,
        "memory_save",
        serde_json::json!({"text": "用户喜欢使用中文回答问题", "kind": "preference", "tags": ["语言"]}),
    )
    .await;
    assert!(!err, "{text}");
    assert_eq!(text, "saved as memory 1");
    for query in ["中文", "中文回答", "语言"] {
        let (err, text) = call(&s, "memory_search", serde_json::json!({"query": query})).await;
        assert!(!err, "{text}");
        assert_eq!(
            text,
            format!(
                "1 memory matching {query:?}:\n[1] preference: 用户喜欢使用中文回答问题 (tags: 语言)\n"
            )
        );
    }
}

#[tokio::test]
async fn saving_a_duplicate_says_already_known_with_its_id() {
    let s = session().await;
    call(
        &s,
        "memory_save",
        serde_json::json!({"text": "Tabs not spaces", "kind": "preference"}),
    )
    .await;
    let (err, text) = call(
        &s,
        "memory_save",
        serde_json::json!({"text": " tabs   NOT spaces", "kind": "preference"}),
    )
    .await;
    assert!(!err);
    assert_eq!(text, "already known (id 1)");
}

#[tokio::test]
async fn search_without_hits_is_not_an_error() {
    let s = session().await;
    let (err, text) = call(
        &s,
        "memory_search",
        serde_json::json!({"query": "nothing here"}),
    )
    .await;
    assert!(!err);
    assert_eq!(
        text,
        "no memory matches \"nothing here\"; try other or fewer words"
    );
}

#[tokio::test]
async fn a_query_full_of_fts_syntax_is_searched_as_text() {
    let s = session().await;
    call(
        &s,
        "memory_save",
        serde_json::json!({"text": "never pass -- to cargo (really)", "kind": "lesson"}),
    )
    .await;
    let (err, text) = call(
        &s,
        "memory_search",
        serde_json::json!({"query": "\"(really)\" OR -- * NEAR("}),
    )
    .await;
    assert!(!err, "{text}");
    assert!(
        text.contains("[1] lesson: never pass -- to cargo (really)"),
        "{text}"
    );
}

#[tokio::test]
async fn list_filters_by_kind_newest_first() {
    let s = session().await;
    call(
        &s,
        "memory_save",
        serde_json::json!({"text": "lesson one", "kind": "lesson"}),
    )
    .await;
    call(
        &s,
        "memory_save",
        serde_json::json!({"text": "a fact", "kind": "fact"}),
    )
    .await;
    call(
        &s,
        "memory_save",
        serde_json::json!({"text": "lesson two", "kind": "lesson"}),
    )
    .await;
    let (err, text) = call(&s, "memory_list", serde_json::json!({"kind": "lesson"})).await;
    assert!(!err);
    assert_eq!(
        text,
        "2 memories, newest first:\n[3] lesson: lesson two\n[1] lesson: lesson one\n"
    );
    let (_, text) = call(&s, "memory_list", serde_json::json!({"limit": 1})).await;
    assert_eq!(text, "1 memory, newest first:\n[3] lesson: lesson two\n");
}

#[tokio::test]
async fn forgetting_an_unknown_id_is_a_clear_error() {
    let s = session().await;
    call(
        &s,
        "memory_save",
        serde_json::json!({"text": "wrong fact", "kind": "fact"}),
    )
    .await;
    let (err, text) = call(&s, "memory_forget", serde_json::json!({"id": 1})).await;
    assert!(!err);
    assert_eq!(text, "forgot [1] fact: wrong fact");
    let (err, text) = call(&s, "memory_forget", serde_json::json!({"id": 1})).await;
    assert!(err);
    assert_eq!(
        text,
        "no memory has id 1; memory_search or memory_list shows the ids"
    );
}

#[tokio::test]
async fn an_unknown_kind_is_refused() {
    let s = session().await;
    let (err, text) = call(
        &s,
        "memory_save",
        serde_json::json!({"text": "x", "kind": "opinion"}),
    )
    .await;
    assert!(err);
    assert!(text.contains("unknown variant `opinion`"), "{text}");
}

#[tokio::test]
async fn a_zero_limit_is_refused() {
    let s = session().await;
    let (err, text) = call(&s, "memory_list", serde_json::json!({"limit": 0})).await;
    assert!(err);
    assert_eq!(text, "limit must be at least 1");
}

#[tokio::test]
async fn annotations_say_what_each_tool_may_do() {
    let s = session().await;
    let tools = s.client.list_all_tools().await.unwrap();
    let hints = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        let a = tool.annotations.clone().unwrap();
        (a.read_only_hint, a.destructive_hint, a.idempotent_hint)
    };
    assert_eq!(hints("memory_save"), (Some(false), Some(false), Some(true)));
    assert_eq!(hints("memory_search").0, Some(true));
    assert_eq!(hints("memory_list").0, Some(true));
    assert_eq!(
        hints("memory_forget"),
        (Some(false), Some(true), Some(true))
    );
}

#[tokio::test]
async fn schema_file_matches_the_code() {
    let dir = tempfile::tempdir().unwrap();
    let doc = tools_document("memory", server(dir.path())).await.unwrap();
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/memory.json");
    check_schema_file(&path, &doc).unwrap();
}
