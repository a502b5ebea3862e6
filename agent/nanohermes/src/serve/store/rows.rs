//! The statements on `nh_tasks`: one task row per `run_task` run, which
//! any replica reads and answers, and whose lease says which replica runs
//! it now.
//!
//! Every write the runner makes is fenced by `lease_owner = replica`: a
//! replica that lost its lease (it stalled past [`super::pg::LEASE`] and
//! another took the task over) changes nothing any more.

use tokio_postgres::error::SqlState;

use super::pg::{LEASE, Pg, PgError};

/// A new task's row.
pub struct NewTask<'a> {
    /// The handle.
    pub task_id: &'a str,
    /// Who may see it (the digest of the bearer that created it).
    pub owner: &'a str,
    /// A blocking call: no handle was given, nobody polls it.
    pub hidden: bool,
    /// The session the run writes.
    pub session_id: &'a str,
    /// The canonical workspace.
    pub workspace: &'a str,
    /// The `run_task` arguments, as JSON (what a takeover runs again with).
    pub args: &'a str,
    /// How the host answers approvals (`input_required` or `never`).
    pub answers: &'a str,
    /// Now, ISO 8601.
    pub now: &'a str,
}

/// A task as `tasks/get` needs it.
#[derive(Debug, Clone)]
pub struct TaskRow {
    /// `working`, `completed` or `cancelled`.
    pub status: String,
    /// ISO 8601.
    pub created_at: String,
    /// ISO 8601.
    pub updated_at: String,
    /// The `CallToolResult` of a completed task, as JSON.
    pub result: Option<String>,
    /// The latest step line.
    pub last_step: String,
    /// Whether `tasks/cancel` asked it to stop.
    pub cancel_requested: bool,
    /// The input requests it waits on, as JSON, unless already answered.
    pub question: Option<String>,
}

/// A task this replica just took over.
#[derive(Debug, Clone)]
pub struct Claimed {
    /// The handle.
    pub task_id: String,
    /// The digest of the bearer that created it.
    pub owner: String,
    /// A blocking call whose caller is gone with its replica.
    pub hidden: bool,
    /// The session to continue.
    pub session_id: String,
    /// The `run_task` arguments, as JSON.
    pub args: String,
    /// How the host answers approvals.
    pub answers: String,
    /// Whether a cancel is pending.
    pub cancel_requested: bool,
}

/// What the owner must act on: a cancel, or an answer to deliver.
#[derive(Debug, Clone)]
pub struct Signal {
    /// The task.
    pub task_id: String,
    /// Stop at the next step boundary.
    pub cancel: bool,
    /// The host's input responses, as JSON.
    pub answer: Option<String>,
}

/// Why a row could not be made.
#[derive(Debug)]
pub enum Refused {
    /// Another task works in the workspace now (on any replica).
    WorkspaceBusy,
    /// The store failed.
    Store(PgError),
}

fn lease_secs() -> f64 {
    LEASE.as_secs_f64()
}

impl Pg {
    /// Inserts a working task leased to `replica`. Refused when another
    /// task works in the same workspace (a unique index over working rows
    /// decides, so two replicas racing cannot both win).
    pub async fn insert_task(&self, task: &NewTask<'_>, replica: &str) -> Result<(), Refused> {
        let result = self
            .with(|client| async move {
                let result = client
                    .execute(
                        "INSERT INTO nh_tasks (task_id, owner, hidden, status, created_at, updated_at,
                            session_id, workspace, args, answers, lease_owner, lease_until)
                         VALUES ($1, $2, $3, 'working', $4, $4, $5, $6, $7, $8, $9,
                            now() + make_interval(secs => $10))",
                        &[
                            &task.task_id,
                            &task.owner,
                            &task.hidden,
                            &task.now,
                            &task.session_id,
                            &task.workspace,
                            &task.args,
                            &task.answers,
                            &replica,
                            &lease_secs(),
                        ],
                    )
                    .await;
                let result = match result {
                    Ok(_) => Ok(Ok(())),
                    Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                        // A retry whose first attempt committed before its
                        // connection dropped finds its own row.
                        match client
                            .query_opt("SELECT 1 FROM nh_tasks WHERE task_id = $1", &[&task.task_id])
                            .await
                        {
                            Ok(Some(_)) => Ok(Ok(())),
                            Ok(None) => Ok(Err(Refused::WorkspaceBusy)),
                            Err(e) => Err(PgError::from(e)),
                        }
                    }
                    Err(e) => Err(PgError::from(e)),
                };
                (client, result)
            })
            .await;
        match result {
            Ok(inner) => inner,
            Err(e) => Err(Refused::Store(e)),
        }
    }

    /// Task `id` as `owner` sees it (`None`: no such task for them).
    pub async fn task(&self, id: &str, owner: &str) -> Result<Option<TaskRow>, PgError> {
        self.with(|client| async move {
            let result = client
                .query_opt(
                    "SELECT status, created_at, updated_at, result, last_step, cancel_requested,
                        CASE WHEN answer IS NULL THEN question END
                     FROM nh_tasks WHERE task_id = $1 AND owner = $2 AND NOT hidden",
                    &[&id, &owner],
                )
                .await
                .map(|row| {
                    row.map(|row| TaskRow {
                        status: row.get(0),
                        created_at: row.get(1),
                        updated_at: row.get(2),
                        result: row.get(3),
                        last_step: row.get(4),
                        cancel_requested: row.get(5),
                        question: row.get(6),
                    })
                })
                .map_err(PgError::from);
            (client, result)
        })
        .await
    }

    /// The runner's question (`None`: answered or gone), fenced.
    pub async fn set_question(
        &self,
        id: &str,
        replica: &str,
        question: Option<&str>,
    ) -> Result<(), PgError> {
        self.with(|client| async move {
            let result = client
                .execute(
                    "UPDATE nh_tasks SET question = $3, answer = NULL
                     WHERE task_id = $1 AND lease_owner = $2 AND status = 'working'",
                    &[&id, &replica, &question],
                )
                .await
                .map(|_| ())
                .map_err(PgError::from);
            (client, result)
        })
        .await
    }

    /// `tasks/update`: stores `answer` for the runner, wherever it runs.
    /// `false` when the task is not waiting for input (or not `owner`'s).
    pub async fn answer(&self, id: &str, owner: &str, answer: &str) -> Result<bool, PgError> {
        self.with(|client| async move {
            let result = client
                .execute(
                    "UPDATE nh_tasks SET answer = $3
                     WHERE task_id = $1 AND owner = $2 AND status = 'working'
                       AND question IS NOT NULL AND answer IS NULL",
                    &[&id, &owner, &answer],
                )
                .await
                .map(|n| n == 1)
                .map_err(PgError::from);
            (client, result)
        })
        .await
    }

    /// `tasks/cancel`: `false` when the task is not working (or not
    /// `owner`'s).
    pub async fn cancel(&self, id: &str, owner: &str) -> Result<bool, PgError> {
        self.with(|client| async move {
            let result = client
                .execute(
                    "UPDATE nh_tasks SET cancel_requested = true
                     WHERE task_id = $1 AND owner = $2 AND status = 'working'",
                    &[&id, &owner],
                )
                .await
                .map(|n| n == 1)
                .map_err(PgError::from);
            (client, result)
        })
        .await
    }

    /// The end of a run: `cancelled` when a cancel was asked for, else
    /// `completed` with `result`. Fenced: `false` when `replica` no longer
    /// holds the lease (another replica finishes it).
    pub async fn finish(
        &self,
        id: &str,
        replica: &str,
        result: &str,
        now: &str,
    ) -> Result<bool, PgError> {
        self.with(|client| async move {
            let result = client
                .execute(
                    "UPDATE nh_tasks SET
                        status = CASE WHEN cancel_requested THEN 'cancelled' ELSE 'completed' END,
                        result = CASE WHEN cancel_requested THEN NULL ELSE $3 END,
                        updated_at = $4, question = NULL, answer = NULL, lease_owner = NULL
                     WHERE task_id = $1 AND lease_owner = $2 AND status = 'working'",
                    &[&id, &replica, &result, &now],
                )
                .await
                .map(|n| n == 1)
                .map_err(PgError::from);
            (client, result)
        })
        .await
    }

    /// Gives task `id` up at a step boundary (this replica is stopping):
    /// its lease ends now, so another replica continues it at once.
    pub async fn release(&self, id: &str, replica: &str) -> Result<(), PgError> {
        self.with(|client| async move {
            let result = client
                .execute(
                    "UPDATE nh_tasks SET lease_owner = NULL, lease_until = now(), question = NULL,
                        answer = NULL
                     WHERE task_id = $1 AND lease_owner = $2 AND status = 'working'",
                    &[&id, &replica],
                )
                .await
                .map(|_| ())
                .map_err(PgError::from);
            (client, result)
        })
        .await
    }

    /// Renews the leases of `ids` (with each one's step line); returns the
    /// ids whose lease this replica still holds.
    pub async fn heartbeat(
        &self,
        replica: &str,
        ids: &[String],
        steps: &[String],
    ) -> Result<Vec<String>, PgError> {
        self.with(|client| async move {
            let result = client
                .query(
                    "UPDATE nh_tasks t SET lease_until = now() + make_interval(secs => $4),
                        last_step = u.step
                     FROM unnest($2::text[], $3::text[]) AS u(id, step)
                     WHERE t.task_id = u.id AND t.lease_owner = $1 AND t.status = 'working'
                     RETURNING t.task_id",
                    &[&replica, &ids, &steps, &lease_secs()],
                )
                .await
                .map(|rows| rows.iter().map(|row| row.get(0)).collect())
                .map_err(PgError::from);
            (client, result)
        })
        .await
    }

    /// Cancels and answers waiting for this replica's runs.
    pub async fn signals(&self, replica: &str) -> Result<Vec<Signal>, PgError> {
        self.with(|client| async move {
            let result = client
                .query(
                    "SELECT task_id, cancel_requested, answer FROM nh_tasks
                     WHERE lease_owner = $1 AND status = 'working'
                       AND (cancel_requested OR answer IS NOT NULL)",
                    &[&replica],
                )
                .await
                .map(|rows| {
                    rows.iter()
                        .map(|row| Signal {
                            task_id: row.get(0),
                            cancel: row.get(1),
                            answer: row.get(2),
                        })
                        .collect()
                })
                .map_err(PgError::from);
            (client, result)
        })
        .await
    }

    /// Takes over one working task whose lease ran out, if any; rows
    /// another replica is claiming at the same moment are skipped.
    pub async fn claim(&self, replica: &str) -> Result<Option<Claimed>, PgError> {
        self.with(|client| async move {
            let result = client
                .query_opt(
                    "UPDATE nh_tasks SET lease_owner = $1,
                        lease_until = now() + make_interval(secs => $2),
                        takeovers = takeovers + 1, question = NULL, answer = NULL
                     WHERE task_id = (
                        SELECT task_id FROM nh_tasks
                        WHERE status = 'working' AND lease_until < now()
                        ORDER BY lease_until
                        FOR UPDATE SKIP LOCKED LIMIT 1)
                     RETURNING task_id, owner, hidden, session_id, args, answers, cancel_requested",
                    &[&replica, &lease_secs()],
                )
                .await
                .map(|row| {
                    row.map(|row| Claimed {
                        task_id: row.get(0),
                        owner: row.get(1),
                        hidden: row.get(2),
                        session_id: row.get(3),
                        args: row.get(4),
                        answers: row.get(5),
                        cancel_requested: row.get(6),
                    })
                })
                .map_err(PgError::from);
            (client, result)
        })
        .await
    }
}

impl Pg {
    /// Drops ended tasks last changed before `cutoff` (ISO 8601, which
    /// sorts as text), as the file store drops expired task files.
    pub async fn expire(&self, cutoff: &str) -> Result<u64, PgError> {
        self.with(|client| async move {
            let result = client
                .execute(
                    "DELETE FROM nh_tasks WHERE status <> 'working' AND updated_at < $1",
                    &[&cutoff],
                )
                .await
                .map_err(PgError::from);
            (client, result)
        })
        .await
    }
}
