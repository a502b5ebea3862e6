//! `--file`: loaded at start, written atomically, corrupt files refused.

use std::io::Read;

use nanohermes_todo::{Store, StoreError};
use serde_json::json;

use crate::support::{client, ok};

#[tokio::test]
async fn a_list_survives_into_a_second_server_on_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state/todos.json");
    let first = client(Store::open(&file).unwrap()).await;
    let written = ok(
        &first,
        "todo_write",
        json!({"todos": [
            {"content": "Persist me", "status": "completed"},
            {"content": "And me", "status": "in_progress"}
        ]}),
    )
    .await;
    first.cancel().await.unwrap();
    let second = client(Store::open(&file).unwrap()).await;
    assert_eq!(ok(&second, "todo_read", json!({})).await, written);
}

#[tokio::test]
async fn a_missing_file_starts_an_empty_list() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("none.json")).unwrap();
    assert!(store.read().is_empty());
}

#[tokio::test]
async fn a_write_replaces_the_file_by_rename_and_leaves_no_temp_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("todos.json");
    let client = client(Store::open(&file).unwrap()).await;
    ok(
        &client,
        "todo_write",
        json!({"todos": [{"content": "Old", "status": "pending"}]}),
    )
    .await;
    // A reader holding the old file keeps seeing the whole old list: the new
    // one arrives as a new file renamed over the path, never by rewriting.
    let mut old_handle = std::fs::File::open(&file).unwrap();
    ok(
        &client,
        "todo_write",
        json!({"todos": [{"content": "New", "status": "pending"}]}),
    )
    .await;
    let mut old_text = String::new();
    old_handle.read_to_string(&mut old_text).unwrap();
    assert!(old_text.contains("\"Old\""), "{old_text}");
    let new_text = std::fs::read_to_string(&file).unwrap();
    assert!(
        new_text.contains("\"New\"") && !new_text.contains("\"Old\""),
        "{new_text}"
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["todos.json"]);
}

#[tokio::test]
async fn the_file_is_plain_json_with_a_version() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("todos.json");
    let client = client(Store::open(&file).unwrap()).await;
    ok(
        &client,
        "todo_write",
        json!({"todos": [{"content": "A", "status": "in_progress"}]}),
    )
    .await;
    let value: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(
        value,
        json!({"version": 1, "todos": [{"content": "A", "status": "in_progress"}]})
    );
}

#[test]
fn a_corrupt_file_is_an_error_at_open() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("todos.json");
    std::fs::write(&file, "{ not json").unwrap();
    let error = Store::open(&file).unwrap_err();
    assert!(matches!(error, StoreError::Corrupt(..)));
    let text = error.to_string();
    assert!(
        text.starts_with(&format!("the todo file {} is corrupt (", file.display())),
        "{text}"
    );
    assert!(
        text.ends_with("); fix it or delete it to start an empty list"),
        "{text}"
    );
}

#[test]
fn a_file_breaking_the_rules_is_corrupt_too() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("todos.json");
    let two_in_progress = json!({"version": 1, "todos": [
        {"content": "a", "status": "in_progress"},
        {"content": "b", "status": "in_progress"}
    ]});
    std::fs::write(&file, two_in_progress.to_string()).unwrap();
    assert!(matches!(Store::open(&file), Err(StoreError::Corrupt(..))));
    std::fs::write(&file, json!({"version": 9, "todos": []}).to_string()).unwrap();
    assert!(
        Store::open(&file)
            .unwrap_err()
            .to_string()
            .contains("unknown version 9")
    );
}

#[tokio::test]
async fn a_failed_save_keeps_the_previous_list() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sub/todos.json");
    let client = client(Store::open(&file).unwrap()).await;
    // The file's directory becomes a regular file, so nothing can be saved.
    std::fs::write(dir.path().join("sub"), "").unwrap();
    let text = crate::support::err(
        &client,
        "todo_write",
        json!({"todos": [{"content": "Lost?", "status": "pending"}]}),
    )
    .await;
    assert!(text.starts_with("cannot save the todo list to "), "{text}");
    assert!(text.ends_with("; the previous list is kept"), "{text}");
    assert_eq!(
        ok(&client, "todo_read", json!({})).await,
        "Todo list is empty\n"
    );
}

#[tokio::test]
async fn a_save_keeps_the_file_mode_and_a_new_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("todos.json");
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let client = client(Store::open(&file).unwrap()).await;
    let write = json!({"todos": [{"content": "A", "status": "pending"}]});
    ok(&client, "todo_write", write.clone()).await;
    assert_eq!(mode(&file), 0o600);
    // The user shares the list with their group: a save must not undo that.
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    ok(&client, "todo_write", write).await;
    assert_eq!(mode(&file), 0o640);
}
