//! Ranking a query against the database, in two tiers.
//!
//! 1. **Every term.** Memories containing all the query's terms, ranked by
//!    bm25 (newest first when every term is too short for the index). The
//!    long terms go to the trigram index as an `AND` of quoted strings; the
//!    short ones filter the same rows by substring. Requiring every term
//!    keeps the set bm25 must score small, which is what makes a search
//!    over 100 000 memories take milliseconds.
//! 2. **Any term**, only when tier 1 found fewer than `limit`: memories
//!    containing some of the terms, those containing more distinct terms
//!    first, then by bm25, then newest.
//!
//! Every tier-1 hit contains all terms and so ranks above any tier-2 hit:
//! the order is the one a single "most terms, then bm25" sort would give.

use std::cmp::Ordering;

use rusqlite::{Connection, params_from_iter};

use crate::store::{Memory, memory_from_row};
use crate::text::Terms;

/// Weights of the `text` and `tags` columns in bm25.
const BM25: &str = "bm25(memories_fts, 1.0, 0.5)";

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

fn every_term(conn: &Connection, terms: &Terms, limit: usize) -> rusqlite::Result<Vec<Memory>> {
    let filters = vec![CONTAINS; terms.short.len()];
    let short_args = terms.short.iter().flat_map(|t| [t.clone(), t.clone()]);
    let (sql, args): (String, Vec<String>) = match terms.fts_all() {
        Some(expression) => {
            let mut conditions = vec!["memories_fts MATCH ?"];
            conditions.extend(filters);
            (
                format!(
                    "SELECT m.id, m.kind, m.text, m.tags FROM memories_fts
                     JOIN memories m ON m.id = memories_fts.rowid
                     WHERE {} ORDER BY {BM25} LIMIT {limit}",
                    conditions.join(" AND ")
                ),
                std::iter::once(expression).chain(short_args).collect(),
            )
        }
        None => (
            format!(
                "SELECT m.id, m.kind, m.text, m.tags FROM memories m
                 WHERE {} ORDER BY m.id DESC LIMIT {limit}",
                filters.join(" AND ")
            ),
            short_args.collect(),
        ),
    };
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params_from_iter(args), memory_from_row)?;
    rows.collect()
}

struct Candidate {
    memory: Memory,
    score: f64,
    matched: usize,
}

fn any_term(conn: &Connection, terms: &Terms, pool: usize) -> rusqlite::Result<Vec<Memory>> {
    let mut candidates: Vec<Candidate> = Vec::new();
    if let Some(expression) = terms.fts_any() {
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT m.id, m.kind, m.text, m.tags, {BM25} AS score FROM memories_fts
             JOIN memories m ON m.id = memories_fts.rowid
             WHERE memories_fts MATCH ?1 ORDER BY score LIMIT {pool}"
        ))?;
        let rows = stmt.query_map([expression], |r| {
            Ok(Candidate {
                memory: memory_from_row(r)?,
                score: r.get(4)?,
                matched: 0,
            })
        })?;
        for row in rows {
            candidates.push(row?);
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
            let candidate = row?;
            if !candidates
                .iter()
                .any(|c| c.memory.id == candidate.memory.id)
            {
                candidates.push(candidate);
            }
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
