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
//! - Search finds Chinese, Japanese and Korean as well as English: words of
//!   space-separated scripts go to an FTS5 `unicode61` index (word and
//!   prefix matches), CJK terms to an FTS5 `trigram` index (substring
//!   matches, no word segmentation needed), both ranked by bm25; CJK terms
//!   of one or two characters, below the trigram size, are matched as
//!   substrings instead (see [`text`] and [`search`]).
//! - A query is text, never FTS5 syntax: quotes, `*`, `-`, `OR` and
//!   parentheses cannot cause a syntax error.
//! - Several processes may write one database at once and lose nothing
//!   (WAL, busy timeout, `BEGIN IMMEDIATE` writes, a `UNIQUE` normal form).
//! - `PRAGMA user_version` holds the schema version for later migrations.

pub mod search;
pub mod server;
pub mod store;
pub mod text;

pub use server::MemoryServer;
pub use store::{Kind, Memory, MemoryError, MemoryStore, Saved, default_db_path};
