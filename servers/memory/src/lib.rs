//! Long-term memory for NanoHermes as an MCP server, stored in one SQLite
//! file (default `~/.nanohermes/memory.db`).
//!
//! | tool | does | hints |
//! |---|---|---|
//! | `memory_save {text, kind, tags?}` | saves a lesson, preference, correction or fact; a duplicate (same text ignoring case and spacing) answers `already known (id N)` | not read-only, idempotent |
//! | `memory_search {query, limit?}` | ranked hits with id, kind, text and tags | read-only |
//! | `memory_list {kind?, limit?}` | newest first | read-only |
//! | `memory_forget {id}` | deletes one memory; an unknown id is an error | destructive |
//!
//! Invariants:
//! - Search finds Chinese, Japanese and Korean as well as English, also for
//!   a question phrased differently from the stored text: one FTS5
//!   `unicode61` index holds words of space-separated scripts (word and
//!   prefix matches) and every CJK run cut into overlapping bigrams, the
//!   query is cut the same way, and memories holding every term come
//!   first, then those holding the most terms, each by bm25 (see [`text`]
//!   and [`search`]). A single CJK letter is matched as a substring.
//! - A query is text, never FTS5 syntax: quotes, `*`, `-`, `OR` and
//!   parentheses cannot cause a syntax error.
//! - Several processes may write one database at once and lose nothing
//!   (WAL, busy timeout, `BEGIN IMMEDIATE` writes, a `UNIQUE` normal form).
//! - `PRAGMA user_version` holds the schema version for later migrations.
//! - Memory stays in its project: every memory carries the server's
//!   workspace root; the tools see that project's memories and the ones
//!   the user marked global (`nanohermes-memory global ID`, no tool).

pub mod schema;
pub mod search;
pub mod server;
pub mod store;
pub mod text;

pub use server::MemoryServer;
pub use store::{Kind, Memory, MemoryError, MemoryStore, Owned, Saved, default_db_path};
