//! The store on real SQLite files: dedup, ranking, CJK, query safety,
//! forgetting, schema version.

use nanohermes_memory::search::RANKED_CANDIDATES;
use nanohermes_memory::store::SCHEMA_VERSION;
use nanohermes_memory::{Kind, MemoryError, MemoryStore, Saved};

use super::{raw, search_ids, temp_store};

fn new_id(saved: Saved) -> i64 {
    match saved {
        Saved::New(id) => id,
        Saved::Known(id) => panic!("expected a new memory, got known {id}"),
    }
}

#[test]
fn duplicate_text_ignoring_case_and_spacing_is_already_known() {
    let (_dir, store) = temp_store();
    let id = new_id(
        store
            .save("Use  tabs, not spaces", Kind::Preference, &[])
            .unwrap(),
    );
    let again = store
        .save("  use tabs,\n NOT spaces ", Kind::Fact, &[])
        .unwrap();
    assert_eq!(again, Saved::Known(id));
    assert_eq!(store.count().unwrap(), 1);
}

#[test]
fn chinese_memory_is_found_by_two_and_four_character_queries() {
    let (_dir, store) = temp_store();
    let id = new_id(
        store
            .save("用户喜欢使用中文回答问题", Kind::Preference, &[])
            .unwrap(),
    );
    store
        .save("The build uses cargo nextest", Kind::Fact, &[])
        .unwrap();
    assert_eq!(search_ids(&store, "中文"), vec![id]);
    assert_eq!(search_ids(&store, "中文回答"), vec![id]);
    assert_eq!(search_ids(&store, "中"), vec![id]);
    assert!(search_ids(&store, "日本語").is_empty());
}

#[test]
fn japanese_and_korean_memories_are_found() {
    let (_dir, store) = temp_store();
    let ja = new_id(
        store
            .save("ユーザーは日本語の説明を好む", Kind::Preference, &[])
            .unwrap(),
    );
    let ko = new_id(
        store
            .save("사용자는 한국어 답변을 선호한다", Kind::Preference, &[])
            .unwrap(),
    );
    assert_eq!(search_ids(&store, "日本語"), vec![ja]);
    assert_eq!(search_ids(&store, "한국어"), vec![ko]);
    assert_eq!(search_ids(&store, "답변"), vec![ko]);
}

#[test]
fn english_search_is_case_insensitive_and_matches_word_parts() {
    let (_dir, store) = temp_store();
    let id = new_id(
        store
            .save(
                "Run Clippy with -D warnings before committing",
                Kind::Lesson,
                &[],
            )
            .unwrap(),
    );
    assert_eq!(search_ids(&store, "clippy"), vec![id]);
    assert_eq!(search_ids(&store, "COMMIT"), vec![id]);
}

#[test]
fn memories_matching_more_terms_rank_first() {
    let (_dir, store) = temp_store();
    let one = new_id(
        store
            .save("cargo is the build tool", Kind::Fact, &[])
            .unwrap(),
    );
    let both = new_id(
        store
            .save("cargo test runs the test suite", Kind::Fact, &[])
            .unwrap(),
    );
    let _none = store.save("the sky is blue", Kind::Fact, &[]).unwrap();
    assert_eq!(search_ids(&store, "cargo suite"), vec![both, one]);
}

#[test]
fn mixed_short_and_long_terms_rank_memories_with_both_first() {
    let (_dir, store) = temp_store();
    let short_only = new_id(store.save("中文界面", Kind::Fact, &[]).unwrap());
    let both = new_id(
        store
            .save("commit messages in 中文", Kind::Preference, &[])
            .unwrap(),
    );
    let long_only = new_id(store.save("commit often", Kind::Lesson, &[]).unwrap());
    let ids = search_ids(&store, "中文 commit");
    assert_eq!(ids[0], both);
    assert_eq!(ids.len(), 3);
    assert!(ids.contains(&short_only) && ids.contains(&long_only));
}

#[test]
fn tags_are_searchable_and_folded() {
    let (_dir, store) = temp_store();
    let id = new_id(
        store
            .save(
                "prefer small commits",
                Kind::Preference,
                &["Git".to_string(), "workflow".to_string(), "git".to_string()],
            )
            .unwrap(),
    );
    assert_eq!(search_ids(&store, "workflow"), vec![id]);
    let hit = &store.search("workflow", 1).unwrap()[0];
    assert_eq!(hit.tags, vec!["git", "workflow"]);
}

#[test]
fn query_syntax_characters_are_plain_text_not_errors() {
    let (_dir, store) = temp_store();
    let id = new_id(
        store
            .save(
                r#"the flag "--no-verify" is (never) OK"#,
                Kind::Correction,
                &[],
            )
            .unwrap(),
    );
    for query in [
        r#""--no-verify""#,
        "(never)",
        "never*",
        "NOT OR AND",
        "-",
        "\"",
        "a:b",
        "NEAR(flag verify)",
        "^flag",
        r#"" OR "x"#,
    ] {
        let hits = store.search(query, 10);
        assert!(hits.is_ok(), "query {query:?} failed: {hits:?}");
    }
    assert_eq!(search_ids(&store, r#""--no-verify""#), vec![id]);
    assert_eq!(search_ids(&store, "(never)"), vec![id]);
}

#[test]
fn empty_query_is_refused() {
    let (_dir, store) = temp_store();
    assert!(matches!(
        store.search("  \n ", 5),
        Err(MemoryError::EmptyQuery)
    ));
}

#[test]
fn empty_and_oversized_texts_are_refused() {
    let (_dir, store) = temp_store();
    assert!(matches!(
        store.save("   ", Kind::Fact, &[]),
        Err(MemoryError::EmptyText)
    ));
    assert!(matches!(
        store.save(&"x".repeat(5_000), Kind::Fact, &[]),
        Err(MemoryError::TooLong(5_000))
    ));
}

#[test]
fn forgotten_memory_is_gone_from_search_and_list() {
    let (_dir, store) = temp_store();
    let id = new_id(store.save("temporary fact", Kind::Fact, &[]).unwrap());
    let forgotten = store.forget(id).unwrap();
    assert_eq!(forgotten.text, "temporary fact");
    assert!(search_ids(&store, "temporary").is_empty());
    assert!(store.list(None, 10).unwrap().is_empty());
    assert!(matches!(store.forget(id), Err(MemoryError::NotFound(i)) if i == id));
}

#[test]
fn list_is_newest_first_and_filters_by_kind() {
    let (_dir, store) = temp_store();
    let a = new_id(store.save("first lesson", Kind::Lesson, &[]).unwrap());
    let b = new_id(store.save("a fact", Kind::Fact, &[]).unwrap());
    let c = new_id(store.save("second lesson", Kind::Lesson, &[]).unwrap());
    let all: Vec<i64> = store.list(None, 10).unwrap().iter().map(|m| m.id).collect();
    assert_eq!(all, vec![c, b, a]);
    let lessons: Vec<i64> = store
        .list(Some(Kind::Lesson), 10)
        .unwrap()
        .iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(lessons, vec![c, a]);
    assert_eq!(store.list(None, 1).unwrap().len(), 1);
}

#[test]
fn memories_persist_across_reopening_and_schema_version_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/dir/memory.db");
    let id = {
        let store = MemoryStore::open(&path).unwrap();
        new_id(store.save("persisted", Kind::Fact, &[]).unwrap())
    };
    let store = MemoryStore::open(&path).unwrap();
    assert_eq!(search_ids(&store, "persisted"), vec![id]);
    let conn = raw(&path);
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn a_database_from_a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    raw(&path)
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    assert!(matches!(
        MemoryStore::open(&path),
        Err(MemoryError::NewerSchema(v)) if v == SCHEMA_VERSION + 1
    ));
}

#[test]
fn the_unique_normal_form_is_enforced_by_the_database() {
    let (dir, store) = temp_store();
    store.save("Same text", Kind::Fact, &[]).unwrap();
    let conn = raw(&dir.path().join("memory.db"));
    let second = conn.execute(
        "INSERT INTO memories (kind, text, norm, tags, created_at) VALUES ('fact', 'SAME TEXT', 'same text', '', 0)",
        [],
    );
    assert!(
        second.is_err(),
        "a second row with the same normal form was accepted"
    );
}

/// Saves `n` memories that all contain `rust`, each a little different.
fn save_common_word(store: &MemoryStore, n: usize) {
    let texts: Vec<String> = (0..n)
        .map(|i| format!("rust notes about crate number {i} and its build"))
        .collect();
    store
        .save_batch(texts.iter().map(|t| (t.as_str(), Kind::Fact)))
        .unwrap();
}

#[test]
fn a_very_common_word_ranks_only_its_newest_candidates() {
    let (_dir, store) = temp_store();
    // The best bm25 match for `rust`, but older than the newest candidates.
    let old_best = new_id(store.save("rust rust", Kind::Fact, &[]).unwrap());
    save_common_word(&store, RANKED_CANDIDATES + 100);
    let newest_best = new_id(store.save("rust rust.", Kind::Lesson, &[]).unwrap());
    let ids = search_ids(&store, "rust");
    assert_eq!(ids.len(), 10);
    assert_eq!(ids[0], newest_best);
    assert!(!ids.contains(&old_best));
}

#[test]
fn below_the_candidate_bound_the_best_bm25_match_wins_whatever_its_age() {
    let (_dir, store) = temp_store();
    let old_best = new_id(store.save("rust rust", Kind::Fact, &[]).unwrap());
    save_common_word(&store, RANKED_CANDIDATES - 100);
    assert_eq!(search_ids(&store, "rust")[0], old_best);
}

#[test]
fn an_old_memory_with_every_term_is_found_past_the_candidate_bound() {
    let (_dir, store) = temp_store();
    let old_zh = new_id(store.save("rust 中文 docs", Kind::Fact, &[]).unwrap());
    let old_rare = new_id(store.save("rust zeppelin", Kind::Fact, &[]).unwrap());
    save_common_word(&store, RANKED_CANDIDATES + 100);
    assert_eq!(search_ids(&store, "rust 中文")[0], old_zh);
    assert_eq!(search_ids(&store, "zeppelin rust")[0], old_rare);
}

/// The WAL file's length (0 when it is absent).
fn wal_len(db: &std::path::Path) -> u64 {
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::metadata(wal).map_or(0, |m| m.len())
}

/// Closing leaves the WAL for the next open to fold in: no checkpoint (two
/// fsyncs) on the owner's exit path.
#[test]
fn closing_does_not_checkpoint_and_the_next_open_sees_every_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let id = {
        let store = MemoryStore::open(&path).unwrap();
        new_id(store.save("kept in the wal", Kind::Fact, &[]).unwrap())
    };
    assert!(wal_len(&path) > 0, "closing checkpointed the WAL away");
    let store = MemoryStore::open(&path).unwrap();
    assert_eq!(search_ids(&store, "wal"), vec![id]);
}

#[test]
fn opening_a_current_database_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let id = {
        let store = MemoryStore::open(&path).unwrap();
        new_id(store.save("kept across opens", Kind::Fact, &[]).unwrap())
    };
    // A write at open would append a WAL frame, whose first one costs an
    // fsync of the WAL and its directory.
    let before = wal_len(&path);
    let store = MemoryStore::open(&path).unwrap();
    assert_eq!(wal_len(&path), before, "opening wrote to the WAL");
    assert_eq!(search_ids(&store, "kept"), vec![id]);
    assert_eq!(wal_len(&path), before, "a search wrote to the WAL");
    store
        .save("a write still goes to the WAL", Kind::Fact, &[])
        .unwrap();
    assert!(wal_len(&path) > before);
}

#[test]
fn a_background_open_that_fails_is_reported_by_the_call_and_retried_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "a file where the directory should be").unwrap();
    let path = blocker.join("memory.db");
    let store = MemoryStore::open_in_background(&path, "test");
    let error = store.count().unwrap_err();
    assert!(matches!(error, MemoryError::Open { .. }), "{error:?}");
    let message = error.to_string();
    assert!(
        message.starts_with(&format!(
            "cannot open the memory database {}: ",
            path.display()
        )),
        "{message}"
    );
    std::fs::remove_file(&blocker).unwrap();
    let id = new_id(
        store
            .save("saved after the retry", Kind::Fact, &[])
            .unwrap(),
    );
    assert_eq!(search_ids(&store, "retry"), vec![id]);
    assert!(path.is_file());
}

#[test]
fn a_background_open_finds_what_an_earlier_store_saved() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let id = {
        let store = MemoryStore::open(&path).unwrap();
        new_id(
            store
                .save("saved before the background open", Kind::Lesson, &[])
                .unwrap(),
        )
    };
    let store = MemoryStore::open_in_background(&path, "test");
    assert_eq!(search_ids(&store, "background"), vec![id]);
    assert_eq!(store.count().unwrap(), 1);
}

#[test]
fn a_store_opened_on_first_use_creates_no_file_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("later/memory.db");
    let store = MemoryStore::open_on_first_use(&path);
    assert!(!path.exists());
    assert_eq!(store.list(None, 10).unwrap(), vec![]);
    assert!(path.is_file());
}

#[test]
fn a_version_2_database_migrates_and_its_memories_belong_to_no_project() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    {
        // A file as version 2 left it, with one memory.
        let conn = raw(&path);
        conn.execute_batch(
            "CREATE TABLE memories (
                id INTEGER PRIMARY KEY,
                kind TEXT NOT NULL CHECK (kind IN ('lesson', 'preference', 'correction', 'fact')),
                text TEXT NOT NULL, norm TEXT NOT NULL UNIQUE,
                tags TEXT NOT NULL DEFAULT '', created_at INTEGER NOT NULL);
             CREATE INDEX memories_kind ON memories (kind, id);
             CREATE VIRTUAL TABLE memories_index USING fts5 (
                text, tags, content = '', contentless_delete = 1,
                tokenize = 'unicode61 remove_diacritics 2');
             INSERT INTO memories VALUES (7, 'fact', 'old deploy notes', 'old deploy notes', '', 0);
             INSERT INTO memories_index (rowid, text, tags) VALUES (7, 'old deploy notes', '');
             PRAGMA user_version = 2;",
        )
        .unwrap();
    }
    let project = dir.path().canonicalize().unwrap();
    let store = MemoryStore::open(&path).unwrap().in_project(&project);
    let version: i64 = raw(&path)
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    // Kept, but no project sees it: it is never recalled on its own.
    assert_eq!(store.count().unwrap(), 1);
    assert!(store.search("deploy notes", 10).unwrap().is_empty());
    assert!(store.list(None, 10).unwrap().is_empty());
    let all = store.list_all(10).unwrap();
    assert_eq!(
        (all[0].memory.id, all[0].project.as_str(), all[0].global),
        (7, "", false)
    );
    // Until the user marks it global: then every project finds it by its index entry.
    store.set_global(7, true).unwrap();
    let found = store.search("deploy notes", 10).unwrap();
    assert_eq!(found.iter().map(|m| m.id).collect::<Vec<_>>(), [7]);
    // A new memory with the same text in a project is "already known".
    assert_eq!(
        store.save("Old deploy notes", Kind::Fact, &[]).unwrap(),
        Saved::Known(7)
    );
}

#[test]
fn another_projects_many_memories_never_crowd_out_this_projects_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let mine = MemoryStore::open(&path).unwrap().in_project(&b);
    mine.save("deploy with the blue script", Kind::Fact, &[])
        .unwrap();
    let theirs = MemoryStore::open(&path).unwrap().in_project(&a);
    let texts: Vec<String> = (0..RANKED_CANDIDATES + 500)
        .map(|n| format!("deploy step {n} of the red script"))
        .collect();
    theirs
        .save_batch(texts.iter().map(|t| (t.as_str(), Kind::Fact)))
        .unwrap();
    for query in ["deploy", "deploy script", "deploy blue"] {
        let found = mine.search(query, 10).unwrap();
        assert_eq!(
            found.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(),
            ["deploy with the blue script"],
            "{query}"
        );
    }
    assert_eq!(theirs.search("deploy", 10).unwrap().len(), 10);
    assert!(theirs.search("blue", 10).unwrap().is_empty());
}
