//! Chinese, Japanese and mixed questions phrased differently from the
//! stored text, on real SQLite files; and the upgrade of a database built
//! with the version-1 (trigram) index.

use nanohermes_memory::search::RANKED_CANDIDATES;
use nanohermes_memory::store::SCHEMA_VERSION;
use nanohermes_memory::{Kind, MemoryStore, Saved};

use super::{raw, search_ids, temp_store};

const COMMIT_RULE: &str = "提交前必须运行 cargo fmt 和 cargo clippy。";
const BACKUP_RULE: &str = "部署之前要先备份数据库";
const JA_COMMIT_RULE: &str = "コミットする前にテストを実行してください";

fn id(saved: Saved) -> i64 {
    match saved {
        Saved::New(id) | Saved::Known(id) => id,
    }
}

/// A store holding the three rules among unrelated memories; their ids.
fn rules() -> (tempfile::TempDir, MemoryStore, [i64; 3]) {
    let (dir, store) = temp_store();
    store
        .save("用户喜欢使用中文回答问题", Kind::Preference, &[])
        .unwrap();
    let commit = id(store.save(COMMIT_RULE, Kind::Lesson, &[]).unwrap());
    store
        .save("日志文件放在 /var/log 下面", Kind::Fact, &[])
        .unwrap();
    let backup = id(store.save(BACKUP_RULE, Kind::Lesson, &[]).unwrap());
    store
        .save("ユーザーは日本語の説明を好む", Kind::Preference, &[])
        .unwrap();
    let ja = id(store.save(JA_COMMIT_RULE, Kind::Lesson, &[]).unwrap());
    store
        .save("The build uses cargo nextest", Kind::Fact, &[])
        .unwrap();
    (dir, store, [commit, backup, ja])
}

fn first(store: &MemoryStore, query: &str) -> Option<i64> {
    search_ids(store, query).first().copied()
}

#[test]
fn a_chinese_question_finds_the_rule_it_asks_about() {
    let (_dir, store, [commit, backup, _]) = rules();
    assert_eq!(first(&store, "提交前运行什么"), Some(commit));
    assert_eq!(first(&store, "运行什么检查在提交之前"), Some(commit));
    assert_eq!(first(&store, "部署前备份什么"), Some(backup));
    assert_eq!(first(&store, "备份数据库"), Some(backup));
}

#[test]
fn a_japanese_question_finds_the_rule_it_asks_about() {
    let (_dir, store, [_, _, ja]) = rules();
    assert_eq!(first(&store, "コミット前に何を実行する"), Some(ja));
    assert_eq!(first(&store, "テストはいつ実行する"), Some(ja));
}

#[test]
fn a_question_sharing_no_words_finds_nothing() {
    let (_dir, store, _) = rules();
    assert_eq!(search_ids(&store, "今天天气怎么样"), Vec::<i64>::new());
    assert_eq!(search_ids(&store, "明日の天気は"), Vec::<i64>::new());
}

#[test]
fn a_memory_sharing_more_of_the_question_ranks_above_one_sharing_less() {
    let (_dir, store, [commit, ..]) = rules();
    // Shares only `运行` with the question.
    let weaker = id(store.save("服务器运行很慢", Kind::Fact, &[]).unwrap());
    let ids = search_ids(&store, "提交前运行什么");
    assert_eq!(ids[0], commit);
    assert!(ids.contains(&weaker), "{ids:?}");
    assert!(ids.iter().position(|&i| i == weaker) > Some(0));
}

#[test]
fn mixed_english_and_chinese_queries_still_work() {
    let (_dir, store, [commit, ..]) = rules();
    assert_eq!(first(&store, "clippy 提交前"), Some(commit));
    assert_eq!(first(&store, "提交前用clippy吗"), Some(commit));
    assert_eq!(first(&store, "cargo fmt"), Some(commit));
    assert_eq!(
        first(&store, "nextest"),
        Some(search_ids(&store, "nextest")[0])
    );
    assert_eq!(search_ids(&store, "nextest").len(), 1);
}

#[test]
fn an_old_memory_found_through_a_rare_piece_beats_newer_ones_with_a_common_one() {
    let (_dir, store) = temp_store();
    let old = id(store.save(COMMIT_RULE, Kind::Lesson, &[]).unwrap());
    // `运行` in many newer memories: more than one term's rows read.
    let texts: Vec<String> = (0..RANKED_CANDIDATES + 100)
        .map(|i| format!("服务{i}已经运行"))
        .collect();
    store
        .save_batch(texts.iter().map(|t| (t.as_str(), Kind::Fact)))
        .unwrap();
    assert_eq!(first(&store, "提交前运行什么"), Some(old));
}

#[test]
fn forgetting_a_chinese_memory_removes_it_from_the_index() {
    let (_dir, store, [commit, ..]) = rules();
    store.forget(commit).unwrap();
    assert!(!search_ids(&store, "提交前运行什么").contains(&commit));
}

/// The version-1 schema, as that code created it.
const OLD_SCHEMA: &str = "
CREATE TABLE memories (
    id         INTEGER PRIMARY KEY,
    kind       TEXT    NOT NULL CHECK (kind IN ('lesson', 'preference', 'correction', 'fact')),
    text       TEXT    NOT NULL,
    norm       TEXT    NOT NULL UNIQUE,
    tags       TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL
);
CREATE INDEX memories_kind ON memories (kind, id);
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    text, tags, content = 'memories', content_rowid = 'id', tokenize = 'trigram'
);
CREATE VIRTUAL TABLE memories_words USING fts5 (
    text, tags, content = 'memories', content_rowid = 'id',
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE TRIGGER memories_after_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, text, tags) VALUES (new.id, new.text, new.tags);
    INSERT INTO memories_words (rowid, text, tags) VALUES (new.id, new.text, new.tags);
END;
CREATE TRIGGER memories_after_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, tags)
    VALUES ('delete', old.id, old.text, old.tags);
    INSERT INTO memories_words (memories_words, rowid, text, tags)
    VALUES ('delete', old.id, old.text, old.tags);
END;
CREATE TRIGGER memories_after_update AFTER UPDATE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, tags)
    VALUES ('delete', old.id, old.text, old.tags);
    INSERT INTO memories_words (memories_words, rowid, text, tags)
    VALUES ('delete', old.id, old.text, old.tags);
    INSERT INTO memories_fts (rowid, text, tags) VALUES (new.id, new.text, new.tags);
    INSERT INTO memories_words (rowid, text, tags) VALUES (new.id, new.text, new.tags);
END;
PRAGMA user_version = 1;
";

#[test]
fn a_version_1_database_is_upgraded_and_its_memories_found_by_questions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    {
        let conn = raw(&path);
        conn.execute_batch(OLD_SCHEMA).unwrap();
        for (text, tags) in [
            (COMMIT_RULE, "git, 提交"),
            (BACKUP_RULE, ""),
            ("Run clippy before committing", "lint"),
        ] {
            conn.execute(
                "INSERT INTO memories (kind, text, norm, tags, created_at) VALUES ('lesson', ?1, lower(?1), ?2, 0)",
                [text, tags],
            )
            .unwrap();
        }
        // The old index answers the verbatim text, not the question.
        let old_hits: i64 = conn
            .query_row(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH '\"提交前运行什么\"'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(old_hits, 0);
    }
    let store = MemoryStore::open(&path).unwrap();
    assert_eq!(first(&store, "提交前运行什么"), Some(1));
    assert_eq!(first(&store, "部署前备份什么"), Some(2));
    assert_eq!(first(&store, "committing clippy"), Some(3));
    assert_eq!(first(&store, "lint"), Some(3));
    // Forgetting and saving work on the upgraded file.
    store.forget(1).unwrap();
    assert!(!search_ids(&store, "提交前运行什么").contains(&1));
    let new = id(store.save("提交前先拉取", Kind::Lesson, &[]).unwrap());
    assert_eq!(first(&store, "提交前运行什么"), Some(new));
    drop(store);

    let conn = raw(&path);
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let leftovers: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name IN
             ('memories_fts', 'memories_words', 'memories_after_insert')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(leftovers, 0);
    // Reopening an upgraded file does not index twice.
    let store = MemoryStore::open(&path).unwrap();
    assert_eq!(search_ids(&store, "部署前备份什么"), vec![2]);
}
