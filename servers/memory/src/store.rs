//! The memory database: one SQLite file, safe for several processes at once.
//!
//! Invariants:
//! - the file is in WAL mode with a busy timeout, and every write runs in a
//!   `BEGIN IMMEDIATE` transaction, so concurrent writers queue instead of
//!   failing or losing rows;
//! - the normal form of a memory's text is a `UNIQUE` column, so two
//!   processes racing to save the same memory cannot both insert it;
//! - `PRAGMA user_version` records the schema version; [`MemoryStore::open`]
//!   migrates older files and refuses newer ones;
//! - opening a file whose schema is current writes nothing: a write at open
//!   would append a WAL frame, and the first frame of a new WAL costs an
//!   fsync of the WAL and of its directory (about 15 ms, most of the
//!   server's start before this rule);
//! - [`MemoryStore::open_in_background`] lets a server answer its handshake
//!   while the file opens; the first call waits for the open, and a failed
//!   open is reported by that call and tried again by the next.
//! - **Memory stays in its project**: every memory carries the project it
//!   was saved in (a store's [`MemoryStore::in_project`], the server's
//!   workspace root), and `save`, `search`, `list` and `forget` see only
//!   that project's memories plus those the user marked global
//!   ([`MemoryStore::set_global`], reached only from the
//!   `nanohermes-memory global` command, never from a tool). Memories
//!   saved before version 3 have no project (`''`): no project sees them
//!   until the user marks them global or forgets them.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

use crate::search::INDEX;
use crate::text::{Terms, index_form, normalise};

/// Version of the schema this code writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 3;

/// How long a write waits for another process's write to finish.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Page cache of the connection, in KiB (SQLite's default is 2 MiB): a search
/// joins up to [`crate::search::RANKED_CANDIDATES`] rows back to their text,
/// which is several times faster when the pages stay cached. Memory is only
/// used as pages are read, so a small database costs little.
pub const CACHE_KIB: i64 = 64 * 1024;

/// Longest text a memory may hold, in bytes: memories are short notes.
pub const MAX_TEXT_BYTES: usize = 4_000;

/// What kind of thing a memory records: a `lesson` (what worked or failed), a
/// `preference` (how the user likes things), a `correction` (a mistake the user
/// corrected) or a `fact` (about the user, project or environment).
// No doc comments on the variants and inlined: schemars then emits a plain
// `enum` in place, a fraction of the bytes of a `$defs` `oneOf` of documented
// consts; the meanings are in the tool arguments' descriptions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
#[allow(missing_docs)]
pub enum Kind {
    Lesson,
    Preference,
    Correction,
    Fact,
}

impl Kind {
    /// The name stored in the database and shown to the model.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Lesson => "lesson",
            Kind::Preference => "preference",
            Kind::Correction => "correction",
            Kind::Fact => "fact",
        }
    }
}

/// One stored memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    /// Row id, stable for the memory's life.
    pub id: i64,
    /// Its kind, as stored (`lesson`, `preference`, `correction`, `fact`).
    pub kind: String,
    /// The text as saved.
    pub text: String,
    /// Tags, case-folded.
    pub tags: Vec<String>,
}

/// A memory with where it belongs, for the user's own listing
/// ([`MemoryStore::list_all`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owned {
    /// The memory.
    pub memory: Memory,
    /// The project it was saved in; empty for one saved before projects.
    pub project: String,
    /// Whether the user marked it global (seen in every project).
    pub global: bool,
}

/// The outcome of [`MemoryStore::save`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    /// A new memory with this id.
    New(i64),
    /// A memory with the same normal form already existed under this id.
    Known(i64),
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The text was empty or only whitespace.
    #[error("the memory text is empty; write the lesson, preference, correction or fact to keep")]
    EmptyText,
    /// The text was over [`MAX_TEXT_BYTES`].
    #[error(
        "the memory text is {0} bytes, over the {MAX_TEXT_BYTES}-byte limit; save one short point per memory"
    )]
    TooLong(usize),
    /// The query held no searchable term.
    #[error("the query is empty; give one or more words to look for")]
    EmptyQuery,
    /// No memory has this id (in the project, for a tool call).
    #[error("no memory has id {0}; memory_search or memory_list shows the ids")]
    NotFound(i64),
    /// The memory is global: only the user changes it.
    #[error(
        "memory {0} is global (the user marked it for every project), so it cannot be forgotten from here; ask the user to run `nanohermes-memory local {0}` or `nanohermes-memory forget {0}`"
    )]
    Global(i64),
    /// The file's schema is newer than this code.
    #[error(
        "the memory database has schema version {0}, newer than this server's {SCHEMA_VERSION}; upgrade nanohermes-memory"
    )]
    NewerSchema(i64),
    /// The database directory could not be created.
    #[error("cannot create {path}: {source}")]
    Dir {
        /// The directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// SQLite reported an error.
    #[error("memory database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The thread of [`MemoryStore::open_in_background`] panicked.
    #[error("the thread opening the database stopped; the next call opens it again")]
    OpenThreadPanicked,
    /// A deferred open ([`MemoryStore::open_in_background`]) failed.
    #[error(
        "cannot open the memory database {path}: {source}; fix the file or pass another --db PATH"
    )]
    Open {
        /// The database file.
        path: PathBuf,
        /// Why it failed.
        source: Box<MemoryError>,
    },
}

/// A memory database. Cheap to share behind an `Arc`; calls block, so async
/// callers run them on a blocking thread.
pub struct MemoryStore {
    path: PathBuf,
    slot: Mutex<Slot>,
    /// The project this store saves into and reads from (see
    /// [`MemoryStore::in_project`]); empty until given one.
    project: String,
}

/// The connection, or how to get it.
enum Slot {
    /// Being opened by a thread of its own.
    Opening(std::thread::JoinHandle<Result<Connection, MemoryError>>),
    Open(Connection),
    /// The last open failed (or none was started): open on next use.
    Closed,
}

/// The locked connection of a store; only made when the slot is open.
struct Conn<'a>(std::sync::MutexGuard<'a, Slot>);

impl std::ops::Deref for Conn<'_> {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        match &*self.0 {
            Slot::Open(conn) => conn,
            _ => unreachable!("a Conn is only made over an open slot"),
        }
    }
}

impl std::ops::DerefMut for Conn<'_> {
    fn deref_mut(&mut self) -> &mut Connection {
        match &mut *self.0 {
            Slot::Open(conn) => conn,
            _ => unreachable!("a Conn is only made over an open slot"),
        }
    }
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStore").finish_non_exhaustive()
    }
}

/// `~/.nanohermes/memory.db`, or `None` when the home directory is unknown.
pub fn default_db_path() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").or_else(|| std::env::var_os("USERPROFILE"))?;
    Some(PathBuf::from(home).join(".nanohermes").join("memory.db"))
}

impl MemoryStore {
    /// Opens (creating it and its parent directory if needed) the database at
    /// `path` and brings its schema up to [`SCHEMA_VERSION`].
    pub fn open(path: &Path) -> Result<Self, MemoryError> {
        let conn = open_connection(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            slot: Mutex::new(Slot::Open(conn)),
            project: String::new(),
        })
    }

    /// A store whose database is opened (as [`MemoryStore::open`] does) on
    /// a thread of its own, so a server can answer its handshake meanwhile.
    /// The first call waits for that open; if it failed, the call returns
    /// [`MemoryError::Open`] and the next call opens again. A failed open
    /// is also written to stderr as `LABEL: cannot open ...`, for whoever
    /// reads the server's log.
    pub fn open_in_background(path: &Path, label: &'static str) -> Self {
        let owned = path.to_path_buf();
        let slot = std::thread::Builder::new()
            .name("memory-open".into())
            .spawn(move || {
                let opened = open_connection(&owned);
                if let Err(e) = &opened {
                    use std::io::Write;
                    // Not eprintln!, which panics when stderr is closed.
                    let _ = writeln!(
                        std::io::stderr(),
                        "{label}: cannot open the memory database {}: {e}; tool calls will try again",
                        owned.display()
                    );
                }
                opened
            })
            .map_or(Slot::Closed, Slot::Opening);
        Self {
            path: path.to_path_buf(),
            slot: Mutex::new(slot),
            project: String::new(),
        }
    }

    /// A store that opens its database on the first call, not before (for
    /// `--print-schema`, which must not create a file).
    pub fn open_on_first_use(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            slot: Mutex::new(Slot::Closed),
            project: String::new(),
        }
    }

    /// This store scoped to `project` (the server passes its workspace's
    /// canonical root): saves are tagged with it, and reads see its
    /// memories plus the global ones. A store never given a project works
    /// in the unnamed one, where memories from before version 3 are.
    pub fn in_project(mut self, project: &Path) -> Self {
        self.project = project.to_string_lossy().into_owned();
        self
    }

    /// The project this store is scoped to.
    pub fn project(&self) -> &str {
        &self.project
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Saves a memory, or finds the one with the same normal form.
    pub fn save(&self, text: &str, kind: Kind, tags: &[String]) -> Result<Saved, MemoryError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(MemoryError::EmptyText);
        }
        if text.len() > MAX_TEXT_BYTES {
            return Err(MemoryError::TooLong(text.len()));
        }
        let norm = normalise(text);
        let tags = normalise_tags(tags).join(", ");
        let mut conn = self.lock()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Known when this project, or a global memory, says the same.
        let known: Option<i64> = tx
            .query_row(
                &format!("SELECT id FROM memories m WHERE norm = ?1 AND {VISIBLE} ORDER BY global DESC LIMIT 1"),
                params![norm, self.project],
                |r| r.get(0),
            )
            .optional()?;
        let outcome = match known {
            Some(id) => Saved::Known(id),
            None => {
                tx.execute(
                    "INSERT INTO memories (kind, text, norm, tags, created_at, project)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![kind.as_str(), text, norm, tags, unix_now(), self.project],
                )?;
                let id = tx.last_insert_rowid();
                index(&tx, id, text, &tags)?;
                Saved::New(id)
            }
        };
        tx.commit()?;
        Ok(outcome)
    }

    /// Memories matching `query`, best first, at most `limit`; see
    /// [`crate::search`] for the ranking.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<Memory>, MemoryError> {
        let terms = Terms::parse(query);
        if terms.is_empty() {
            return Err(MemoryError::EmptyQuery);
        }
        let conn = self.lock()?;
        Ok(crate::search::run(&conn, &terms, limit, &self.project)?)
    }

    /// The newest memories first, optionally of one kind, at most `limit`.
    pub fn list(&self, kind: Option<Kind>, limit: usize) -> Result<Vec<Memory>, MemoryError> {
        let conn = self.lock()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT id, kind, text, tags FROM memories m
             WHERE (?1 IS NULL OR kind = ?1) AND {VISIBLE_3} ORDER BY id DESC LIMIT ?2"
        ))?;
        let rows = stmt.query_map(
            params![kind.map(Kind::as_str), limit as i64, self.project],
            memory_from_row,
        )?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Every memory of every project, newest first, for the user
    /// (`nanohermes-memory list`); never offered to the model.
    pub fn list_all(&self, limit: usize) -> Result<Vec<Owned>, MemoryError> {
        let conn = self.lock()?;
        let mut stmt = conn.prepare_cached(
            "SELECT id, kind, text, tags, project, global FROM memories ORDER BY id DESC LIMIT ?1",
        )?;
        let rows = stmt.query_map([limit as i64], |r| {
            Ok(Owned {
                memory: memory_from_row(r)?,
                project: r.get(4)?,
                global: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Marks memory `id` global (seen in every project) or not, whatever
    /// project it belongs to: the user's decision, made with
    /// `nanohermes-memory global|local ID`. No tool calls this.
    pub fn set_global(&self, id: i64, global: bool) -> Result<Memory, MemoryError> {
        let mut conn = self.lock()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let memory = tx
            .query_row(
                "SELECT id, kind, text, tags FROM memories WHERE id = ?1",
                [id],
                memory_from_row,
            )
            .optional()?
            .ok_or(MemoryError::NotFound(id))?;
        tx.execute(
            "UPDATE memories SET global = ?2 WHERE id = ?1",
            params![id, global],
        )?;
        tx.commit()?;
        Ok(memory)
    }

    /// Deletes memory `id` whatever its project, for the user
    /// (`nanohermes-memory forget ID`).
    pub fn forget_any(&self, id: i64) -> Result<Memory, MemoryError> {
        self.delete(id, false)
    }

    /// Deletes the memory with `id` of this store's project and returns
    /// it; another project's memory is [`MemoryError::NotFound`], a global
    /// one [`MemoryError::Global`] (only the user changes those).
    pub fn forget(&self, id: i64) -> Result<Memory, MemoryError> {
        self.delete(id, true)
    }

    fn delete(&self, id: i64, scoped: bool) -> Result<Memory, MemoryError> {
        let mut conn = self.lock()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let (memory, project, global) = tx
            .query_row(
                "SELECT id, kind, text, tags, project, global FROM memories WHERE id = ?1",
                [id],
                |r| {
                    Ok((
                        memory_from_row(r)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, bool>(5)?,
                    ))
                },
            )
            .optional()?
            .ok_or(MemoryError::NotFound(id))?;
        if scoped && global {
            return Err(MemoryError::Global(id));
        }
        if scoped && project != self.project {
            return Err(MemoryError::NotFound(id));
        }
        tx.execute("DELETE FROM memories WHERE id = ?1", [id])?;
        tx.execute(&format!("DELETE FROM {INDEX} WHERE rowid = ?1"), [id])?;
        tx.commit()?;
        Ok(memory)
    }

    /// How many memories the database holds, in every project.
    pub fn count(&self) -> Result<i64, MemoryError> {
        let conn = self.lock()?;
        Ok(conn.query_row("SELECT count(*) FROM memories", [], |r| r.get(0))?)
    }

    /// Saves many memories in one transaction (for seeding and benchmarks);
    /// duplicates are skipped. Returns how many were new.
    pub fn save_batch<'a>(
        &self,
        memories: impl IntoIterator<Item = (&'a str, Kind)>,
    ) -> Result<usize, MemoryError> {
        let mut conn = self.lock()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut new = 0;
        {
            let mut stmt = tx.prepare_cached(
                "INSERT INTO memories (kind, text, norm, tags, created_at, project)
                 VALUES (?1, ?2, ?3, '', ?4, ?5)
                 ON CONFLICT (project, norm) DO NOTHING",
            )?;
            let now = unix_now();
            for (text, kind) in memories {
                let text = text.trim();
                if stmt.execute(params![
                    kind.as_str(),
                    text,
                    normalise(text),
                    now,
                    self.project
                ])? == 1
                {
                    index(&tx, tx.last_insert_rowid(), text, "")?;
                    new += 1;
                }
            }
        }
        tx.commit()?;
        Ok(new)
    }

    /// The connection, after waiting for (or retrying) its open.
    fn lock(&self) -> Result<Conn<'_>, MemoryError> {
        // A panic while holding the lock leaves the connection usable: SQLite
        // rolls back the open transaction when it is dropped.
        let mut slot = self.slot.lock().unwrap_or_else(|e| e.into_inner());
        if !matches!(*slot, Slot::Open(_)) {
            let opened = match std::mem::replace(&mut *slot, Slot::Closed) {
                Slot::Opening(thread) => thread
                    .join()
                    .unwrap_or(Err(MemoryError::OpenThreadPanicked)),
                _ => open_connection(&self.path),
            };
            let conn = opened.map_err(|source| MemoryError::Open {
                path: self.path.clone(),
                source: Box::new(source),
            })?;
            *slot = Slot::Open(conn);
        }
        Ok(Conn(slot))
    }
}

/// Opens the database at `path` (creating it and its parent directory if
/// needed) in WAL mode and brings its schema up to [`SCHEMA_VERSION`].
fn open_connection(path: &Path) -> Result<Connection, MemoryError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| MemoryError::Dir {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let mut conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // Switching to WAL takes a lock once per file. A second process
    // opening at the same moment can get SQLITE_BUSY without SQLite
    // calling the busy handler (seen in CI), so the switch is retried.
    let mode: String = retry_busy(|| conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)))?;
    if !mode.eq_ignore_ascii_case("wal") {
        tracing::warn!("memory database journal mode is {mode}, not wal");
    }
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "cache_size", -CACHE_KIB)?;
    // Closing would checkpoint the WAL into the file, with two fsyncs, on
    // the owner's exit path (the agent's, when served in-process). The WAL
    // is as durable as `synchronous = NORMAL` makes any commit; the next
    // open (or SQLite's own 1000-page checkpoint) folds it in.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    )?;
    crate::schema::migrate(&mut conn)?;
    Ok(conn)
}

pub(crate) fn memory_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<Memory> {
    let tags: String = row.get(3)?;
    Ok(Memory {
        id: row.get(0)?,
        kind: row.get(1)?,
        text: row.get(2)?,
        tags: tags
            .split(", ")
            .filter(|t| !t.is_empty())
            .map(str::to_string)
            .collect(),
    })
}

fn normalise_tags(tags: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for tag in tags {
        let tag = normalise(tag).replace(',', " ");
        if !tag.is_empty() && !out.contains(&tag) {
            out.push(tag);
        }
    }
    out
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Adds memory `id` to the search index, in its [`index_form`]. The index
/// is contentless, so this code (not a trigger) keeps it in step with the
/// table, inside the same transaction as the row.
pub(crate) fn index(conn: &Connection, id: i64, text: &str, tags: &str) -> rusqlite::Result<()> {
    let mut stmt = conn.prepare_cached(&format!(
        "INSERT INTO {INDEX} (rowid, text, tags) VALUES (?1, ?2, ?3)"
    ))?;
    stmt.execute(params![id, index_form(text), index_form(tags)])?;
    Ok(())
}

/// Runs `step` again while SQLite answers "database is locked" on open,
/// for at most [`BUSY_TIMEOUT`].
fn retry_busy<T>(mut step: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match step() {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// The rows a scoped call sees (alias `m`, the project as parameter `?2`).
pub(crate) const VISIBLE: &str = "(m.project = ?2 OR m.global = 1)";
/// [`VISIBLE`] with the project as parameter `?3`.
const VISIBLE_3: &str = "(m.project = ?3 OR m.global = 1)";
