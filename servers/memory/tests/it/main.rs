//! Integration tests of the memory server. `store` drives the SQLite store
//! directly, `tools` goes through an in-process MCP client, `process` spawns
//! the real binary (one client, then two processes writing one file).

mod cjk;
mod process;
mod store;
mod tools;

use std::path::Path;

use nanohermes_memory::MemoryStore;

/// A fresh store in a new temp directory (kept alive by the returned guard).
pub fn temp_store() -> (tempfile::TempDir, MemoryStore) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = MemoryStore::open(&dir.path().join("memory.db")).expect("open store");
    (dir, store)
}

/// Ids of the memories `store.search(query)` returns, in rank order.
pub fn search_ids(store: &MemoryStore, query: &str) -> Vec<i64> {
    store
        .search(query, 10)
        .expect("search")
        .iter()
        .map(|m| m.id)
        .collect()
}

/// Opens a plain SQLite connection on a database file, for checks that must
/// not go through the code under test.
pub fn raw(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).expect("open raw connection")
}
