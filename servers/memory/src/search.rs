//! Ranking a query against the database, in two tiers.
//!
//! 1. **Every term.** Memories containing all the query's terms. One index
//!    drives the query and ranks it by bm25 (the word index when the query
//!    has word terms, else the trigram index); the other index and the
//!    substring terms filter the same rows. With only substring terms, the
//!    newest come first. Requiring every term keeps the set bm25 must score
//!    small.
//! 2. **Any term**, only when tier 1 found fewer than `limit`: memories
//!    containing some of the terms, those containing more distinct terms
//!    first, then by bm25, then newest.
//!
//! Every tier-1 hit contains all terms and so ranks above any tier-2 hit:
//! the order is the one a single "most terms, then bm25" sort would give.
//!
//! **Bounded scoring.** Scoring costs time per matching row, so when an
//! index expression matches more than [`RANKED_CANDIDATES`] memories, only
//! the newest [`RANKED_CANDIDATES`] of them are scored (a `rowid` lower
//! bound the index applies itself). A very common word thus ranks its
//! recent memories, not an older one that bm25 would put first. Recall is
//! kept: if the bounded tier 1 finds fewer than `limit`, it runs again
//! unbounded, so a memory holding every term is never missed.

use std::cmp::Ordering;

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params_from_iter};

use crate::store::{Memory, memory_from_row};
use crate::text::Terms;

/// Most matches of one index expression that bm25 scores: beyond it, the
/// newest this many are scored and older ones are left out of the ranking.
pub const RANKED_CANDIDATES: usize = 2_000;

/// Substring test of one short term against text and tags (two parameters).
const CONTAINS: &str = "(instr(m.norm, ?) > 0 OR instr(m.tags, ?) > 0)";

/// The best `limit` memories for `terms`.
pub fn run(conn: &Connection, terms: &Terms, limit: usize) -> rusqlite::Result<Vec<Memory>> {
    let mut hits = every_term(conn, terms, limit)?;
    if hits.len() < limit && terms.len() > 1 {
        let pool = (limit * 4).max(40);
        for hit in any_term(conn, terms, pool)? {
            if hits.len() == limit {
                break;
            }
            if !hits.iter().any(|h| h.id == hit.id) {
                hits.push(hit);
            }
        }
    }
    Ok(hits)
}

/// The SQL and parameters of one query, built piece by piece.
#[derive(Clone)]
struct Query {
    conditions: Vec<String>,
    args: Vec<Value>,
}

impl Query {
    fn filter(&mut self, condition: &str, args: impl IntoIterator<Item = String>) {
        self.conditions.push(condition.to_string());
        self.args.extend(args.into_iter().map(Value::Text));
    }
}

/// The rowid of the oldest of the newest [`RANKED_CANDIDATES`] memories
/// matching `expression` in `table`, or `None` when fewer match. Walking
/// the index newest first stops there, so this costs at most that many rows.
fn newest_bound(conn: &Connection, table: &str, expression: &str) -> rusqlite::Result<Option<i64>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT rowid FROM {table} WHERE {table} MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET {}",
        RANKED_CANDIDATES - 1
    ))?;
    stmt.query_row([expression], |r| r.get(0)).optional()
}

fn every_term(conn: &Connection, terms: &Terms, limit: usize) -> rusqlite::Result<Vec<Memory>> {
    let words = terms.words_expression(true);
    let grams = terms.grams_expression(true);
    let mut query = Query {
        conditions: Vec::new(),
        args: Vec::new(),
    };
    let (from, order, driver) = match (&words, &grams) {
        (Some(w), _) => {
            query.filter("memories_words MATCH ?", [w.clone()]);
            (
                "memories_words JOIN memories m ON m.id = memories_words.rowid",
                "bm25(memories_words, 1.0, 0.5)",
                Some(("memories_words", w)),
            )
        }
        (None, Some(g)) => {
            query.filter("memories_fts MATCH ?", [g.clone()]);
            (
                "memories_fts JOIN memories m ON m.id = memories_fts.rowid",
                "bm25(memories_fts, 1.0, 0.5)",
                Some(("memories_fts", g)),
            )
        }
        (None, None) => ("memories m", "m.id DESC", None),
    };
    if let (Some(_), Some(g)) = (&words, &grams) {
        query.filter(
            "m.id IN (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?)",
            [g.clone()],
        );
    }
    for term in &terms.short {
        query.filter(CONTAINS, [term.clone(), term.clone()]);
    }
    // With no filter on the joined row, the index ranks alone and only the
    // best `limit` rows are joined back to their text.
    let filtered = query.conditions.len() > 1;
    let sql = |conditions: &[String]| match driver {
        Some((table, _)) if !filtered => format!(
            "SELECT m.id, m.kind, m.text, m.tags FROM (SELECT rowid AS id, {order} AS score
             FROM {table} WHERE {} ORDER BY score LIMIT {limit}) f
             JOIN memories m ON m.id = f.id ORDER BY f.score",
            conditions.join(" AND ")
        ),
        _ => format!(
            "SELECT m.id, m.kind, m.text, m.tags FROM {from} WHERE {} ORDER BY {order} LIMIT {limit}",
            conditions.join(" AND ")
        ),
    };
    let run = |query: &Query| -> rusqlite::Result<Vec<Memory>> {
        let mut stmt = conn.prepare_cached(&sql(&query.conditions))?;
        let rows = stmt.query_map(params_from_iter(&query.args), memory_from_row)?;
        rows.collect()
    };
    if let Some((table, expression)) = driver
        && let Some(bound) = newest_bound(conn, table, expression)?
    {
        let mut bounded = query.clone();
        bounded.conditions.push(format!("{table}.rowid >= ?"));
        bounded.args.push(Value::Integer(bound));
        let hits = run(&bounded)?;
        if hits.len() == limit {
            return Ok(hits);
        }
    }
    run(&query)
}

struct Candidate {
    memory: Memory,
    score: f64,
    matched: usize,
}

fn any_term(conn: &Connection, terms: &Terms, pool: usize) -> rusqlite::Result<Vec<Memory>> {
    let mut candidates: Vec<Candidate> = Vec::new();
    let indexed = [
        ("memories_words", terms.words_expression(false)),
        ("memories_fts", terms.grams_expression(false)),
    ];
    for (table, expression) in indexed {
        let Some(expression) = expression else {
            continue;
        };
        let bound = newest_bound(conn, table, &expression)?.unwrap_or(i64::MIN);
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT m.id, m.kind, m.text, m.tags, f.score FROM (SELECT rowid AS id,
             bm25({table}, 1.0, 0.5) AS score FROM {table}
             WHERE {table} MATCH ?1 AND rowid >= ?2 ORDER BY score LIMIT {pool}) f
             JOIN memories m ON m.id = f.id ORDER BY f.score"
        ))?;
        let rows = stmt.query_map(rusqlite::params![expression, bound], |r| {
            Ok(Candidate {
                memory: memory_from_row(r)?,
                score: r.get(4)?,
                matched: 0,
            })
        })?;
        for row in rows {
            add(&mut candidates, row?);
        }
    }
    if !terms.short.is_empty() {
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT m.id, m.kind, m.text, m.tags FROM memories m
             WHERE {} ORDER BY m.id DESC LIMIT {pool}",
            vec![CONTAINS; terms.short.len()].join(" OR ")
        ))?;
        let args = terms.short.iter().flat_map(|t| [t, t]);
        let rows = stmt.query_map(params_from_iter(args), |r| {
            Ok(Candidate {
                memory: memory_from_row(r)?,
                score: f64::INFINITY,
                matched: 0,
            })
        })?;
        for row in rows {
            add(&mut candidates, row?);
        }
    }
    for candidate in &mut candidates {
        let text = crate::text::normalise(&candidate.memory.text);
        let tags = candidate.memory.tags.join(" ");
        candidate.matched = terms
            .all()
            .filter(|t| text.contains(t) || tags.contains(t))
            .count();
    }
    candidates.sort_by(|a, b| {
        b.matched
            .cmp(&a.matched)
            .then(a.score.partial_cmp(&b.score).unwrap_or(Ordering::Equal))
            .then(b.memory.id.cmp(&a.memory.id))
    });
    Ok(candidates.into_iter().map(|c| c.memory).collect())
}

/// Adds `candidate`, or keeps the better score of the two if it is there.
fn add(candidates: &mut Vec<Candidate>, candidate: Candidate) {
    match candidates
        .iter_mut()
        .find(|c| c.memory.id == candidate.memory.id)
    {
        Some(existing) => existing.score = existing.score.min(candidate.score),
        None => candidates.push(candidate),
    }
}
