//! Tasks over PostgreSQL: any replica answers `tasks/get`, `tasks/update`
//! and `tasks/cancel` from the task's row; the replica that holds the
//! row's lease runs it.
//!
//! - **Signals** ([`SIGNAL_POLL`]): the runner polls for cancels and
//!   answers stored by other replicas and delivers them in-process (the
//!   interrupt flag, the approval's oneshot), so they take effect at the
//!   run's next step boundary, or while it waits for the answer.
//! - **Heartbeat** ([`HEARTBEAT`]): renews the leases of this replica's
//!   runs and publishes their step lines; a run whose lease was lost is
//!   interrupted, and its writes are fenced anyway.
//! - **Takeover** ([`CLAIM_POLL`]): a working task whose lease ran out
//!   (its replica died) is claimed with `FOR UPDATE SKIP LOCKED`, and its
//!   session continued from the last step boundary stored.
//! - **Workspaces**: a second task on a workspace that has a working task
//!   anywhere is refused (a unique index over working rows).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolResult, DetailedTask, InputRequests, InputResponses, Task, TaskPayload, TaskStatus,
};
use tokio::sync::oneshot;

use super::Registration;
use super::pg::Pg;
use super::rows::{Claimed, NewTask, Refused};
use crate::serve::tasks::{TTL, iso8601, now_iso, result_object, task_of_parts};
use nanohermes_core::interrupt::Interrupt;
use nanohermes_core::policy::approval::Answer;

/// How often the runner looks for cancels and answers.
pub const SIGNAL_POLL: Duration = Duration::from_millis(100);
/// How often leases are renewed.
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// How often a replica looks for tasks whose runner died.
pub const CLAIM_POLL: Duration = Duration::from_secs(1);
/// How often a replica drops tasks past their time to live.
const EXPIRY_SWEEP: Duration = Duration::from_secs(600);

/// A run on this replica.
struct Live {
    interrupt: Interrupt,
    last_step: Arc<Mutex<String>>,
    /// The approval it waits on.
    answer: Option<oneshot::Sender<Answer>>,
    /// This replica is stopping: the run gives the task back at its step
    /// boundary instead of finishing it.
    released: bool,
}

/// This replica's view of the shared tasks.
pub struct Replicas {
    pg: Arc<Pg>,
    replica: String,
    live: Mutex<HashMap<String, Live>>,
    /// Set on SIGTERM: no more takeovers.
    stopping: AtomicBool,
}

impl Replicas {
    /// Replica `replica` on `pg` (migrated).
    pub fn new(pg: Arc<Pg>, replica: String) -> Replicas {
        Replicas {
            pg,
            replica,
            live: Mutex::default(),
            stopping: AtomicBool::new(false),
        }
    }

    /// The database.
    pub fn pg(&self) -> &Arc<Pg> {
        &self.pg
    }

    /// This replica's id.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Live>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Inserts the task's row, leased to this replica.
    pub async fn register(&self, new: Registration<'_>) -> Result<Task, String> {
        let task_id = nanohermes_session::new_id();
        let now = now_iso();
        let row = NewTask {
            task_id: &task_id,
            owner: new.owner,
            hidden: new.hidden,
            session_id: new.session_id,
            workspace: new.workspace,
            args: new.args,
            answers: new.answers,
            now: &now,
        };
        match self.pg.insert_task(&row, &self.replica).await {
            Ok(()) => {}
            Err(Refused::WorkspaceBusy) => {
                return Err(format!(
                    "workspace {} has a task running (on this or another replica); \
                     one task per workspace at a time: wait for it, or use another workspace",
                    new.workspace
                ));
            }
            Err(Refused::Store(e)) => return Err(e.to_string()),
        }
        self.adopt(&task_id, new.interrupt, new.last_step);
        Ok(task_of_parts(
            &task_id,
            TaskStatus::Working,
            &now,
            &now,
            Some("started".to_owned()),
        ))
    }

    /// Runs task `id` here (registered or taken over).
    pub fn adopt(&self, id: &str, interrupt: Interrupt, last_step: Arc<Mutex<String>>) {
        self.live().insert(
            id.to_owned(),
            Live {
                interrupt,
                last_step,
                answer: None,
                released: false,
            },
        );
    }

    /// The end of this replica's run of task `id`.
    pub async fn finish(&self, id: &str, result: &CallToolResult) {
        let released = self.live().remove(id).is_some_and(|live| live.released);
        if released {
            if let Err(e) = self.pg.release(id, &self.replica).await {
                tracing::warn!("task {id}: cannot release its lease: {e}");
            }
            return;
        }
        let text = serde_json::to_string(&result_object(result)).unwrap_or_default();
        match self.pg.finish(id, &self.replica, &text, &now_iso()).await {
            Ok(true) => {}
            Ok(false) => tracing::warn!("task {id}: lease lost; another replica finishes it"),
            Err(e) => tracing::warn!("task {id}: cannot record its end: {e}"),
        }
    }

    /// `tasks/get`.
    pub async fn get(&self, id: &str, owner: &str) -> Result<Option<DetailedTask>, String> {
        let Some(row) = self.pg.task(id, owner).await.map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        let status = match row.status.as_str() {
            "completed" => TaskStatus::Completed,
            "cancelled" => TaskStatus::Cancelled,
            _ => TaskStatus::Working,
        };
        if status == TaskStatus::Working
            && let Some(question) = &row.question
            && let Ok(input_requests) = serde_json::from_str::<InputRequests>(question)
        {
            let task = task_of_parts(
                id,
                status,
                &row.created_at,
                &row.updated_at,
                Some("waiting for approval".to_owned()),
            );
            return Ok(Some(DetailedTask::new(
                task,
                TaskPayload::InputRequired { input_requests },
            )));
        }
        let message = (status == TaskStatus::Working).then(|| {
            if row.cancel_requested {
                "cancelling: stops at the next step boundary".to_owned()
            } else {
                row.last_step.clone()
            }
        });
        let payload = match (status, &row.result) {
            (TaskStatus::Completed, Some(result)) => TaskPayload::Completed {
                result: serde_json::from_str(result).unwrap_or_default(),
            },
            (TaskStatus::Cancelled, _) => TaskPayload::Cancelled,
            _ => TaskPayload::Working,
        };
        let task = task_of_parts(id, status, &row.created_at, &row.updated_at, message);
        Ok(Some(DetailedTask::new(task, payload)))
    }

    /// The run of task `id` waits for the answer to `requests`: stored
    /// for every replica to show, answered through the store.
    pub async fn ask(&self, id: &str, requests: InputRequests, answer: oneshot::Sender<Answer>) {
        let question = serde_json::to_string(&requests).unwrap_or_default();
        if let Some(live) = self.live().get_mut(id) {
            live.answer = Some(answer);
        }
        if let Err(e) = self
            .pg
            .set_question(id, &self.replica, Some(&question))
            .await
        {
            // Nobody can answer a question that was not stored: no.
            tracing::warn!("task {id}: cannot store its question, denied: {e}");
            if let Some(answer) = self.live().get_mut(id).and_then(|l| l.answer.take()) {
                let _ = answer.send(Answer::No);
            }
        }
    }

    /// `tasks/update`: the answer is stored; the runner picks it up.
    pub async fn answer(
        &self,
        id: &str,
        owner: &str,
        key: &str,
        responses: &InputResponses,
    ) -> Result<(), String> {
        let row = self.pg.task(id, owner).await.map_err(|e| e.to_string())?;
        let Some(row) = row else {
            return Err(format!("no task {id}"));
        };
        if row.status != "working" {
            return Err(format!("task {id} is not running"));
        }
        let Some(question) = row
            .question
            .and_then(|q| serde_json::from_str::<InputRequests>(&q).ok())
        else {
            return Err(format!("task {id} is not waiting for input"));
        };
        let Some(response) = responses.get(key) else {
            let keys = question.keys().cloned().collect::<Vec<_>>().join(", ");
            return Err(format!("task {id} waits for the input request(s) {keys}"));
        };
        let text = serde_json::to_string(response).unwrap_or_default();
        match self.pg.answer(id, owner, &text).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(format!("task {id} is not waiting for input")),
            Err(e) => Err(e.to_string()),
        }
    }

    /// `tasks/cancel`.
    pub async fn cancel(&self, id: &str, owner: &str) -> Result<(), String> {
        if self.pg.cancel(id, owner).await.map_err(|e| e.to_string())? {
            return Ok(());
        }
        match self.pg.task(id, owner).await.map_err(|e| e.to_string())? {
            Some(_) => Err(format!("task {id} has already ended")),
            None => Err(format!("no task {id}")),
        }
    }

    /// Delivers stored cancels and answers to this replica's runs.
    async fn deliver(&self) {
        let signals = match self.pg.signals(&self.replica).await {
            Ok(signals) => signals,
            Err(e) => {
                tracing::info!("store: signals: {e}");
                return;
            }
        };
        for signal in signals {
            if signal.cancel
                && let Some(live) = self.live().get_mut(&signal.task_id)
            {
                live.interrupt.request();
                // A question open now is answered no: the run reaches its
                // step boundary instead of waiting for an answer nobody
                // will send.
                if let Some(waiting) = live.answer.take() {
                    let _ = waiting.send(Answer::No);
                }
            }
            let Some(answer) = signal.answer else {
                continue;
            };
            // Cleared before the run goes on, so its next question is not
            // wiped by this clearing.
            if let Err(e) = self
                .pg
                .set_question(&signal.task_id, &self.replica, None)
                .await
            {
                tracing::info!("store: clearing an answer: {e}");
                continue;
            }
            let value = serde_json::from_str(&answer).unwrap_or_default();
            let waiting = self
                .live()
                .get_mut(&signal.task_id)
                .and_then(|live| live.answer.take());
            if let Some(waiting) = waiting {
                let _ = waiting.send(crate::serve::approval::answer_of_value(&value));
            }
        }
    }

    /// Renews this replica's leases; interrupts runs whose lease is gone.
    async fn renew(&self) {
        let (ids, steps): (Vec<String>, Vec<String>) = self
            .live()
            .iter()
            .map(|(id, live)| {
                let step = live
                    .last_step
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                (id.clone(), step)
            })
            .unzip();
        if ids.is_empty() {
            return;
        }
        let kept = match self.pg.heartbeat(&self.replica, &ids, &steps).await {
            Ok(kept) => kept,
            Err(e) => {
                tracing::warn!("store: heartbeat: {e}");
                return;
            }
        };
        for id in ids.iter().filter(|id| !kept.contains(id)) {
            if let Some(live) = self.live().get(id) {
                tracing::warn!("task {id}: lease lost; stopping at the next step boundary");
                live.interrupt.request();
            }
        }
    }

    /// Starts the signal, heartbeat and takeover loops; `take_over` runs
    /// a claimed task.
    pub fn start(self: &Arc<Self>, take_over: impl Fn(Claimed) + Send + Sync + 'static) {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                me.deliver().await;
                tokio::time::sleep(SIGNAL_POLL).await;
            }
        });
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(HEARTBEAT).await;
                me.renew().await;
            }
        });
        let me = self.clone();
        tokio::spawn(async move {
            let mut last_expiry = None::<tokio::time::Instant>;
            loop {
                tokio::time::sleep(CLAIM_POLL).await;
                // Ended tasks are kept for TTL, as in the file store.
                if last_expiry.is_none_or(|at| at.elapsed() > EXPIRY_SWEEP) {
                    last_expiry = Some(tokio::time::Instant::now());
                    let cutoff = iso8601(std::time::SystemTime::now() - TTL);
                    if let Err(e) = me.pg.expire(&cutoff).await {
                        tracing::info!("store: expiring old tasks: {e}");
                    }
                }
                if me.stopping.load(Ordering::Relaxed) {
                    return;
                }
                match me.pg.claim(&me.replica).await {
                    Ok(Some(claimed)) => {
                        tracing::warn!("taking over task {}", claimed.task_id);
                        take_over(claimed);
                    }
                    Ok(None) => {}
                    Err(e) => tracing::info!("store: claim: {e}"),
                }
            }
        });
    }

    /// SIGTERM: no more takeovers; every run stops at its next step
    /// boundary and gives its task back. Returns once all have, or at
    /// `deadline` (a run still in a step then is left to lose its lease).
    pub async fn stop(&self, deadline: Duration) {
        self.stopping.store(true, Ordering::Relaxed);
        for live in self.live().values_mut() {
            live.released = true;
            live.interrupt.request();
        }
        let until = tokio::time::Instant::now() + deadline;
        while !self.live().is_empty() && tokio::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
