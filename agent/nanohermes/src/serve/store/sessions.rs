//! Sessions in PostgreSQL: one row per session, one per message, written
//! at every step boundary in one transaction, so a replica that dies
//! loses at most the step in flight and the next one reads a whole step.
//!
//! A step appends its new messages; a history changed in place
//! (compaction) is written again whole, in the same transaction. Messages
//! are kept as the exact JSON text the loop encoded (not `jsonb`, which
//! would reorder keys and change the bytes of the request prefix).

use std::path::PathBuf;
use std::sync::Arc;

use nanohermes_core::transcript::Transcript;
use nanohermes_core::usage::UsageLedger;
use nanohermes_session::{SessionFile, SessionUsage};
use serde_json::Value;

use super::pg::{Pg, PgError};

impl Pg {
    /// Session `id`, or `None` when the store has none.
    pub async fn load_session(&self, id: &str) -> Result<Option<SessionFile>, PgError> {
        self.with(|client| async move {
            let result = async {
                let Some(head) = client
                    .query_opt(
                        "SELECT workspace, usage, surfaced FROM nh_sessions WHERE session_id = $1",
                        &[&id],
                    )
                    .await?
                else {
                    return Ok(None);
                };
                let rows = client
                    .query(
                        "SELECT message FROM nh_messages WHERE session_id = $1 ORDER BY idx",
                        &[&id],
                    )
                    .await?;
                let messages = rows
                    .iter()
                    .map(|row| serde_json::from_str::<Value>(row.get(0)))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| PgError::Failed(format!("session {id}: {e}")))?;
                let workspace: String = head.get(0);
                Ok(Some(SessionFile {
                    version: nanohermes_session::VERSION,
                    id: id.to_owned(),
                    workspace: PathBuf::from(workspace),
                    messages,
                    usage: serde_json::from_str(head.get(1)).unwrap_or_default(),
                    surfaced: serde_json::from_str(head.get(2)).unwrap_or_default(),
                }))
            }
            .await;
            (client, result)
        })
        .await
    }
}

/// One session kept in the store, checkpoint by checkpoint (what
/// [`nanohermes_session::Appender`] is for a file).
pub struct PgSession {
    pg: Arc<Pg>,
    id: String,
    workspace: String,
    usage: UsageLedger,
    /// The task whose lease fences the writes, and the replica holding it.
    fence: Option<(String, String)>,
    /// The serial numbers of the messages stored, in order.
    written: Vec<u64>,
    /// Whether the store holds the start of the history this run began
    /// with (the messages loaded); until the first write it may not.
    loaded: usize,
}

impl PgSession {
    /// Keeps `session` (its `messages` are what the store holds now) in
    /// `pg`; writes count only while `fence` (task, replica) holds its
    /// lease.
    pub fn new(pg: Arc<Pg>, session: &SessionFile, fence: Option<(String, String)>) -> PgSession {
        PgSession {
            pg,
            id: session.id.clone(),
            workspace: session.workspace.display().to_string(),
            usage: session.usage.into(),
            fence,
            written: Vec::new(),
            loaded: session.messages.len(),
        }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Counts one model request.
    pub fn count(&mut self, usage: Option<nanohermes_llm::Usage>) {
        self.usage.record(usage);
    }

    /// Replaces the usage totals.
    pub fn set_usage(&mut self, usage: UsageLedger) {
        self.usage = usage;
    }

    /// A step boundary: stores `history` (system message left out) before
    /// returning, so the next step starts only once this one is durable.
    /// Blocks the calling worker (the loop's events are synchronous);
    /// serve runs on the multi-threaded runtime, where that is allowed.
    pub fn checkpoint(&mut self, history: &Transcript) -> Result<(), PgError> {
        let serials = history.serials().get(1..).unwrap_or_default().to_vec();
        let encoded: Vec<String> = history
            .encoded()
            .get(1..)
            .unwrap_or_default()
            .iter()
            .map(|raw| raw.get().to_owned())
            .collect();
        // The first write of a run knows the store holds the loaded
        // messages, whose serials are the history's first ones.
        if self.written.is_empty() && self.loaded > 0 && serials.len() >= self.loaded {
            self.written = serials[..self.loaded].to_vec();
        }
        let append = !self.written.is_empty() && serials.starts_with(&self.written);
        let from = if append { self.written.len() } else { 0 };
        let usage = serde_json::to_string(&SessionUsage::from(self.usage)).unwrap_or_default();
        let write = Write {
            id: &self.id,
            workspace: &self.workspace,
            usage: &usage,
            from,
            messages: &encoded[from..],
            fence: self.fence.as_ref(),
        };
        let pg = self.pg.clone();
        let stored = tokio::task::block_in_place(|| {
            tokio::runtime::Handle::current().block_on(pg.store_session(&write))
        });
        stored?;
        self.written = serials;
        self.loaded = 0;
        Ok(())
    }
}

struct Write<'a> {
    id: &'a str,
    workspace: &'a str,
    usage: &'a str,
    /// Messages before this index are kept; the rest are replaced.
    from: usize,
    messages: &'a [String],
    fence: Option<&'a (String, String)>,
}

impl Pg {
    async fn store_session(&self, write: &Write<'_>) -> Result<(), PgError> {
        self.with(|mut client| async move {
            let result = store_on(&mut client, write).await;
            (client, result)
        })
        .await
    }
}

async fn store_on(client: &mut tokio_postgres::Client, write: &Write<'_>) -> Result<(), PgError> {
    let tx = client.transaction().await?;
    if let Some((task, replica)) = write.fence {
        let holds = tx
            .query_opt(
                "SELECT 1 FROM nh_tasks WHERE task_id = $1 AND lease_owner = $2 FOR UPDATE",
                &[task, replica],
            )
            .await?;
        if holds.is_none() {
            return Err(PgError::Failed(format!(
                "task {task} is no longer leased to this replica; its session is not written"
            )));
        }
    }
    tx.execute(
        "INSERT INTO nh_sessions (session_id, workspace, usage, surfaced) VALUES ($1, $2, $3, '[]')
         ON CONFLICT (session_id) DO UPDATE SET usage = EXCLUDED.usage",
        &[&write.id, &write.workspace, &write.usage],
    )
    .await?;
    let from = write.from as i32;
    tx.execute(
        "DELETE FROM nh_messages WHERE session_id = $1 AND idx >= $2",
        &[&write.id, &from],
    )
    .await?;
    if !write.messages.is_empty() {
        let indices: Vec<i32> = (0..write.messages.len() as i32).map(|i| from + i).collect();
        tx.execute(
            "INSERT INTO nh_messages (session_id, idx, message)
             SELECT $1, i, m FROM unnest($2::int[], $3::text[]) AS u(i, m)",
            &[&write.id, &indices, &write.messages],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(())
}
