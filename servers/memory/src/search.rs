//! Ranking a query against the database, in two tiers.
//!
//! 1. **Every term.** Memories containing all the query's terms, ranked by
//!    bm25 over the index; substring terms filter the same rows. With only
//!    substring terms, the newest come first. Requiring every term keeps
//!    the set bm25 must score small.
//! 2. **Any term**, only when tier 1 found fewer than `limit`: memories
//!    containing some of the terms, those containing more distinct terms
//!    first, then by bm25, then newest. A question in Chinese or Japanese
//!    almost always lands here, since its bigrams include pieces the stored
//!    text lacks (`什么`, `行什`).
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
//!
//! Tier 2 reads each term's rows on its own (the newest [`TERM_ROWS`] of
//! a common term, all of a rarer one; no scoring, so this is cheap) and counts per memory how many terms it holds and how
//! rare they are. The best [`SCORED_CANDIDATES`] by that count get exact
//! counts (an older memory found through a rare term is checked for the
//! common terms too) and are ordered by count, then bm25. bm25 is scored
//! over the window where every term's rows were read in full, so it stays
//! bounded; an older candidate ranks after the scored ones with as many
//! terms, by the rarity of its terms.
//!
//! **Scoped.** Every tier reads only the memories of the store's project
//! and the global ones ([`SCOPE`], joined on the row), so another
//! project's memories are never returned and never take a candidate's
//! place; bounds such as [`RANKED_CANDIDATES`] still count every row the
//! index matches. The joins are `CROSS JOIN`s, which SQLite never
//! reorders: the index drives and each of its rows looks up its memory by
//! id, rather than the planner walking the memories of a project and
//! probing the index for each.

use std::cmp::Ordering;
use std::collections::HashMap;

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params_from_iter};

use crate::store::{Memory, memory_from_row};
use crate::text::{Terms, normalise};

/// Most matches of one index expression that bm25 scores: beyond it, the
/// newest this many are scored and older ones are left out of the ranking.
pub const RANKED_CANDIDATES: usize = 2_000;

/// Tier-2 candidates scored with bm25 after counting matched terms.
pub const SCORED_CANDIDATES: usize = 200;

/// Newest matches of one indexed term read in tier 2: a term with fewer
/// is read in full (a rare term finds old memories too), a commoner one
/// stands for itself by its newest this many.
pub const TERM_ROWS: usize = 500;

/// Most rows tier 2 scores with bm25 (the newest matches of any term).
pub const SCORED_ROWS: usize = 400;

/// Newest matches of one substring term read in tier 2 (it has no index,
/// so a rare one costs a scan of the table).
pub const SUBSTRING_CANDIDATES: usize = 40;

/// The index over every memory's text and tags (see [`crate::text`]).
pub const INDEX: &str = "memories_index";

/// Substring test of one short term against text and tags (two parameters).
const CONTAINS: &str = "(instr(m.norm, ?) > 0 OR instr(m.tags, ?) > 0)";

/// The rows of one project and the global ones (the project as one
/// parameter). The unary `+` keeps SQLite from driving a query by an index
/// on these columns (walking every memory of the project, then probing the
/// index or the id list): the scope only filters rows found otherwise.
pub const SCOPE: &str = "(+m.project = ? OR +m.global = 1)";

/// The best `limit` memories for `terms` among `project`'s and the global ones.
pub fn run(
    conn: &Connection,
    terms: &Terms,
    limit: usize,
    project: &str,
) -> rusqlite::Result<Vec<Memory>> {
    let mut hits = every_term(conn, terms, limit, project)?;
    if hits.len() < limit && terms.len() > 1 {
        for hit in any_term(conn, terms, project)? {
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
/// matching `expression`, or `None` when fewer match. Walking the index
/// newest first stops there, so this costs at most that many rows.
fn newest_bound(conn: &Connection, expression: &str) -> rusqlite::Result<Option<i64>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT rowid FROM {INDEX} WHERE {INDEX} MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET {}",
        RANKED_CANDIDATES - 1
    ))?;
    stmt.query_row([expression], |r| r.get(0)).optional()
}

fn every_term(
    conn: &Connection,
    terms: &Terms,
    limit: usize,
    project: &str,
) -> rusqlite::Result<Vec<Memory>> {
    let expression = terms.expression(true);
    let mut query = Query {
        conditions: Vec::new(),
        args: Vec::new(),
    };
    let (from, order) = match &expression {
        Some(e) => {
            query.filter(&format!("{INDEX} MATCH ?"), [e.clone()]);
            (
                format!("{INDEX} CROSS JOIN memories m ON m.id = {INDEX}.rowid"),
                format!("bm25({INDEX}, 1.0, 0.5)"),
            )
        }
        None => ("memories m".to_string(), "m.id DESC".to_string()),
    };
    for term in &terms.short {
        query.filter(CONTAINS, [term.clone(), term.clone()]);
    }
    query.filter(SCOPE, [project.to_string()]);
    // With no filter on the joined row, the index ranks alone and only the
    // best `limit` rows are joined back to their text.
    let filtered = query.conditions.len() > 1;
    let sql = |conditions: &[String]| match expression {
        Some(_) if !filtered => format!(
            "SELECT m.id, m.kind, m.text, m.tags FROM (SELECT rowid AS id, {order} AS score
             FROM {INDEX} WHERE {} ORDER BY score LIMIT {limit}) f
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
    if let Some(expression) = &expression
        && let Some(bound) = newest_bound(conn, expression)?
    {
        let mut bounded = query.clone();
        bounded.conditions.push(format!("{INDEX}.rowid >= ?"));
        bounded.args.push(Value::Integer(bound));
        let hits = run(&bounded)?;
        if hits.len() == limit {
            return Ok(hits);
        }
    }
    run(&query)
}

/// The rows one term was read for in tier 2.
struct TermRows<'a> {
    /// The term as the query holds it, for the substring check.
    term: &'a str,
    /// Memories holding it (the newest [`RANKED_CANDIDATES`] at most).
    ids: std::collections::HashSet<i64>,
    /// When the read stopped at the limit, the oldest id read: older
    /// memories may hold the term without being in `ids`.
    cut_at: Option<i64>,
}

/// What tier 2 knows about one memory.
#[derive(Default)]
struct Tally {
    matched: usize,
    rarity: f64,
}

fn any_term(conn: &Connection, terms: &Terms, project: &str) -> rusqlite::Result<Vec<Memory>> {
    let newest: i64 = conn.query_row("SELECT coalesce(max(id), 0) FROM memories", [], |r| {
        r.get(0)
    })?;
    let mut per_term: Vec<TermRows<'_>> = Vec::new();
    let mut by_index = conn.prepare_cached(&format!(
        "SELECT {INDEX}.rowid FROM {INDEX} CROSS JOIN memories m ON m.id = {INDEX}.rowid
         WHERE {INDEX} MATCH ?1 AND {SCOPE} ORDER BY {INDEX}.rowid DESC LIMIT {TERM_ROWS}"
    ))?;
    for (term, expression) in terms.indexed() {
        let ids = by_index
            .query_map(rusqlite::params![expression, project], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<i64>>>()?;
        per_term.push(term_rows(term, ids, TERM_ROWS));
    }
    // A substring term has no index: its newest few matches stand for it.
    let mut by_substring = conn.prepare_cached(&format!(
        "SELECT id FROM memories m WHERE {CONTAINS} AND {SCOPE} ORDER BY id DESC LIMIT {SUBSTRING_CANDIDATES}"
    ))?;
    for term in &terms.short {
        let ids = by_substring
            .query_map([term, term, project], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<i64>>>()?;
        per_term.push(term_rows(term, ids, SUBSTRING_CANDIDATES));
    }

    // Count matched terms per memory, each weighted by its rarity (an IDF
    // from the rows read; a cut-off term counts as common).
    let mut tallies: HashMap<i64, Tally> = HashMap::new();
    for rows in &per_term {
        let rarity = ((newest as f64 + 1.0) / (rows.ids.len() as f64 + 1.0)).ln_1p();
        for id in &rows.ids {
            let tally = tallies.entry(*id).or_default();
            tally.matched += 1;
            tally.rarity += rarity;
        }
    }
    let mut best: Vec<(i64, Tally)> = tallies.into_iter().collect();
    best.sort_by(|(a_id, a), (b_id, b)| {
        b.matched
            .cmp(&a.matched)
            .then(b.rarity.partial_cmp(&a.rarity).unwrap_or(Ordering::Equal))
            .then(b_id.cmp(a_id))
    });
    best.truncate(SCORED_CANDIDATES);
    if best.is_empty() {
        return Ok(Vec::new());
    }
    let rarity: HashMap<i64, f64> = best.iter().map(|(id, t)| (*id, t.rarity)).collect();

    // bm25 over the newest SCORED_ROWS matches in the window where every
    // term's rows were read in full, no older than the oldest candidate:
    // scoring costs a lookup per row, so it stays bounded. Older candidates (found through a rarer term) rank after
    // scored ones that hold as many terms, by rarity.
    let window = per_term
        .iter()
        .filter_map(|rows| rows.cut_at)
        .max()
        .unwrap_or(i64::MIN)
        .max(best.iter().map(|(id, _)| *id).min().unwrap_or(i64::MIN));
    let mut scores: HashMap<i64, f64> = HashMap::new();
    if let Some(expression) = terms.expression(false) {
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {INDEX}.rowid, bm25({INDEX}, 1.0, 0.5) FROM {INDEX}
             CROSS JOIN memories m ON m.id = {INDEX}.rowid
             WHERE {INDEX} MATCH ?1 AND {INDEX}.rowid >= ?2 AND {SCOPE}
             ORDER BY {INDEX}.rowid DESC LIMIT {SCORED_ROWS}"
        ))?;
        for row in stmt.query_map(rusqlite::params![expression, window, project], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, f64>(1)?))
        })? {
            let (id, score) = row?;
            if rarity.contains_key(&id) {
                scores.insert(id, score);
            }
        }
    }
    let list = best
        .iter()
        .map(|(id, _)| id.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let mut stmt = conn.prepare(&format!(
        "SELECT id, kind, text, tags FROM memories m WHERE id IN ({list}) AND {SCOPE}"
    ))?;
    let mut ranked: Vec<(usize, f64, f64, Memory)> = stmt
        .query_map([project], memory_from_row)?
        .map(|memory| {
            let memory = memory?;
            let matched = exact_matches(&memory, &per_term);
            let score = scores.get(&memory.id).copied().unwrap_or(f64::INFINITY);
            let rare = rarity.get(&memory.id).copied().unwrap_or(0.0);
            Ok((matched, score, rare, memory))
        })
        .collect::<rusqlite::Result<_>>()?;
    ranked.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.partial_cmp(&b.1).unwrap_or(Ordering::Equal))
            .then(b.2.partial_cmp(&a.2).unwrap_or(Ordering::Equal))
            .then(b.3.id.cmp(&a.3.id))
    });
    Ok(ranked.into_iter().map(|(.., m)| m).collect())
}

fn term_rows(term: &str, ids: Vec<i64>, limit: usize) -> TermRows<'_> {
    let cut_at = (ids.len() == limit).then(|| ids.last().copied()).flatten();
    TermRows {
        term,
        ids: ids.into_iter().collect(),
        cut_at,
    }
}

/// How many terms `memory` holds: known from the rows read, and for an
/// older memory than a cut-off term's rows, checked in its text and tags.
fn exact_matches(memory: &Memory, per_term: &[TermRows<'_>]) -> usize {
    let mut text = None;
    per_term
        .iter()
        .filter(|rows| {
            if rows.ids.contains(&memory.id) {
                return true;
            }
            match rows.cut_at {
                Some(oldest) if memory.id < oldest => {
                    let text = text.get_or_insert_with(|| {
                        format!("{} {}", normalise(&memory.text), memory.tags.join(" "))
                    });
                    text.contains(rows.term)
                }
                _ => false,
            }
        })
        .count()
}
