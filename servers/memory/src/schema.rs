//! The memory database's schema and its migrations, by `PRAGMA
//! user_version`: version 1 (the table, two indexes and their triggers),
//! 2 (one contentless bigram index), 3 (a project per memory, `global`).

use rusqlite::{Connection, TransactionBehavior};

use crate::store::{MemoryError, SCHEMA_VERSION, index};

/// Brings the schema from `user_version` up to [`SCHEMA_VERSION`], inside
/// one `BEGIN IMMEDIATE` transaction so two processes opening a new file at
/// once migrate it exactly once. A current schema is only read: no write
/// transaction, so no WAL frame and no fsync at open.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), MemoryError> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(MemoryError::NewerSchema(version));
    }
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    // Read again under the write lock: another process may have migrated
    // the file since.
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(MemoryError::NewerSchema(version));
    }
    if version == SCHEMA_VERSION {
        return Ok(()); // the transaction rolls back, writing nothing
    }
    if version < 1 {
        tx.execute_batch(SCHEMA_V1)?;
    }
    if version < 2 {
        tx.execute_batch(SCHEMA_V2)?;
        reindex(&tx)?;
    }
    if version < 3 {
        tx.execute_batch(SCHEMA_V3)?;
    }
    // Later versions add `if version < N { ... }` steps here.
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(())
}

const SCHEMA_V1: &str = "
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
";

/// Version 2: one contentless index of the [`crate::text::index_form`] (CJK bigrams)
/// replaces version 1's trigram and word indexes and their triggers, which
/// could not match a question phrased differently from the stored text.
const SCHEMA_V2: &str = "
DROP TRIGGER memories_after_insert;
DROP TRIGGER memories_after_delete;
DROP TRIGGER memories_after_update;
DROP TABLE memories_fts;
DROP TABLE memories_words;
CREATE VIRTUAL TABLE memories_index USING fts5 (
    text, tags, content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2'
);
";

/// Version 3: each memory belongs to a project (`project`, the server's
/// workspace root; `''` for the rows before, which no project sees) and may
/// be marked `global` by the user. The same text may now be saved once per
/// project, so the table is rebuilt with `UNIQUE (project, norm)`; ids are
/// kept, so the index (keyed by id) stays as it is.
const SCHEMA_V3: &str = "
CREATE TABLE memories_v3 (
    id         INTEGER PRIMARY KEY,
    kind       TEXT    NOT NULL CHECK (kind IN ('lesson', 'preference', 'correction', 'fact')),
    text       TEXT    NOT NULL,
    norm       TEXT    NOT NULL,
    tags       TEXT    NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    project    TEXT    NOT NULL DEFAULT '',
    global     INTEGER NOT NULL DEFAULT 0 CHECK (global IN (0, 1)),
    UNIQUE (project, norm)
);
INSERT INTO memories_v3 (id, kind, text, norm, tags, created_at)
    SELECT id, kind, text, norm, tags, created_at FROM memories;
DROP TABLE memories;
ALTER TABLE memories_v3 RENAME TO memories;
CREATE INDEX memories_kind ON memories (kind, id);
CREATE INDEX memories_global ON memories (global, id);
";

/// Indexes every memory anew (after [`SCHEMA_V2`] created the index).
fn reindex(conn: &Connection) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare("SELECT id, text, tags FROM memories")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let text: String = row.get(1)?;
        let tags: String = row.get(2)?;
        index(conn, row.get(0)?, &text, &tags)?;
    }
    Ok(())
}
