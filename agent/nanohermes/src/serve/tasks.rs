//! `run_task` as an MCP task (the `io.modelcontextprotocol/tasks`
//! extension): a handle answered at once, `tasks/get` and `tasks/cancel`,
//! and every task's state in a file under `$NANOHERMES_HOME/tasks/`, so a
//! handle outlives the server process.
//!
//! rmcp's own task manager keeps tasks in memory; this store writes each
//! change with [`mcp_tools::write_atomic`]. A task that was working when
//! its server died cannot go on (its run died with it); the next server
//! reports it completed with status `interrupted` and the session to
//! continue, which was written at its last step boundary.
//!
//! This is the file implementation of [`super::store::Store`]; with the
//! PostgreSQL one, such a task is continued by another replica instead.
//! A task is visible only to the bearer that created it (`owner`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::model::{
    CallToolResult, DetailedTask, InputRequests, InputResponses, JsonObject, Task, TaskPayload,
    TaskStatus,
};
use serde::{Deserialize, Serialize};
use tokio::sync::oneshot;

use super::run_task::{RunStatus, RunTaskOutput};
use nanohermes_core::interrupt::Interrupt;
use nanohermes_core::policy::approval::Answer;

/// How often a host should poll `tasks/get`.
pub const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// How long a task is kept after it was created.
pub const TTL: Duration = Duration::from_secs(24 * 3600);

/// A task as written to its file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The handle.
    pub task_id: String,
    /// `working`, `completed` or `cancelled`.
    pub status: TaskStatus,
    /// When it was created, ISO 8601 UTC.
    pub created_at: String,
    /// When it last changed, ISO 8601 UTC.
    pub last_updated_at: String,
    /// The session the run writes.
    pub session_id: String,
    /// Who may see it: [`super::store::owner_of`] the bearer that created
    /// it (empty in files written before owners were recorded).
    #[serde(default)]
    pub owner: String,
    /// The `CallToolResult` of a completed task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<JsonObject>,
}

/// A task whose run is in this process.
struct Live {
    interrupt: Interrupt,
    last_step: Arc<Mutex<String>>,
    cancelled: bool,
    /// The question the run waits on (status `input_required`).
    question: Option<Pending>,
}

/// An approval a task waits on until `tasks/update` answers it.
struct Pending {
    requests: InputRequests,
    answer: oneshot::Sender<Answer>,
}

/// Every task of this `$NANOHERMES_HOME`.
pub struct TaskStore {
    dir: Option<PathBuf>,
    records: Mutex<HashMap<String, TaskRecord>>,
    live: Mutex<HashMap<String, Live>>,
}

impl TaskStore {
    /// Loads the tasks under `dir` (`None`: memory only), dropping expired
    /// ones and closing those whose run died with an earlier server.
    pub fn open(dir: Option<PathBuf>) -> TaskStore {
        let store = TaskStore {
            dir,
            records: Mutex::default(),
            live: Mutex::default(),
        };
        let Some(dir) = &store.dir else {
            return store;
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return store;
        };
        let now = SystemTime::now();
        for entry in entries.flatten() {
            let path = entry.path();
            let expired = entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| now.duration_since(t).unwrap_or_default() > TTL);
            if expired {
                let _ = std::fs::remove_file(&path);
                continue;
            }
            let Some(mut record) = std::fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice::<TaskRecord>(&b).ok())
            else {
                continue;
            };
            if record.status == TaskStatus::Working {
                let output = RunTaskOutput {
                    status: RunStatus::Interrupted,
                    ..RunTaskOutput::error(
                        format!(
                            "the server restarted while this task ran; its session was kept at the last step: call run_task with session_id {:?} to continue",
                            record.session_id
                        ),
                        &record.session_id,
                    )
                };
                record.status = TaskStatus::Completed;
                record.result = Some(result_object(&super::handler::tool_result(&output)));
                record.last_updated_at = now_iso();
                store.write(&record);
            }
            store
                .records
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(record.task_id.clone(), record);
        }
        store
    }

    /// A new working task for a run that writes `session_id`, stopped by
    /// `interrupt`, reporting its steps to `last_step`.
    pub fn create(
        &self,
        session_id: &str,
        owner: &str,
        interrupt: Interrupt,
        last_step: Arc<Mutex<String>>,
    ) -> Task {
        let now = now_iso();
        let record = TaskRecord {
            task_id: nanohermes_session::new_id(),
            status: TaskStatus::Working,
            created_at: now.clone(),
            last_updated_at: now,
            session_id: session_id.to_owned(),
            owner: owner.to_owned(),
            result: None,
        };
        self.write(&record);
        let task = task_of(&record, Some("started".to_owned()));
        self.live().insert(
            record.task_id.clone(),
            Live {
                interrupt,
                last_step,
                cancelled: false,
                question: None,
            },
        );
        self.records().insert(record.task_id.clone(), record);
        task
    }

    /// Records the end of task `id`: `cancelled` when `tasks/cancel` asked
    /// for it, else `completed` with `result`.
    pub fn finish(&self, id: &str, result: &CallToolResult) {
        let cancelled = self.live().remove(id).is_some_and(|live| live.cancelled);
        let mut records = self.records();
        let Some(record) = records.get_mut(id) else {
            return;
        };
        record.status = if cancelled {
            TaskStatus::Cancelled
        } else {
            TaskStatus::Completed
        };
        record.result = (!cancelled).then(|| result_object(result));
        record.last_updated_at = now_iso();
        let record = record.clone();
        drop(records);
        self.write(&record);
    }

    /// The state of task `id`, or `None` when there is no such task for
    /// `owner`.
    pub fn get(&self, id: &str, owner: &str) -> Option<DetailedTask> {
        let record = self.records().get(id).cloned()?;
        if record.owner != owner {
            return None;
        }
        let message = self.live().get(id).map(|live| {
            if live.cancelled {
                "cancelling: stops at the next step boundary".to_owned()
            } else {
                live.last_step
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone()
            }
        });
        let waiting = self
            .live()
            .get(id)
            .and_then(|live| live.question.as_ref())
            .filter(|q| !q.answer.is_closed())
            .map(|q| q.requests.clone());
        if let Some(input_requests) = waiting {
            let task = task_of(&record, Some("waiting for approval".to_owned()));
            return Some(DetailedTask::new(
                task,
                TaskPayload::InputRequired { input_requests },
            ));
        }
        let payload = match (&record.status, &record.result) {
            (TaskStatus::Completed, Some(result)) => TaskPayload::Completed {
                result: result.clone(),
            },
            (TaskStatus::Cancelled, _) => TaskPayload::Cancelled,
            _ => TaskPayload::Working,
        };
        Some(DetailedTask::new(task_of(&record, message), payload))
    }

    /// Task `id` waits for the answer to `requests` (status
    /// `input_required` until [`TaskStore::answer`]).
    pub fn ask(&self, id: &str, requests: InputRequests, answer: oneshot::Sender<Answer>) {
        if let Some(live) = self.live().get_mut(id) {
            live.question = Some(Pending { requests, answer });
        }
    }

    /// `tasks/update`: the host's `responses` to the question task `id`
    /// waits on; the answer is read from the response named `key`.
    pub fn answer(
        &self,
        id: &str,
        owner: &str,
        key: &str,
        responses: &InputResponses,
    ) -> Result<(), String> {
        if !self.owned_by(id, owner) {
            return Err(format!("no task {id}"));
        }
        let mut live = self.live();
        let Some(task) = live.get_mut(id) else {
            return Err(format!("task {id} is not running"));
        };
        let Some(pending) = task.question.take() else {
            return Err(format!("task {id} is not waiting for input"));
        };
        let Some(response) = responses.get(key) else {
            let keys = pending
                .requests
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ");
            task.question = Some(pending);
            return Err(format!("task {id} waits for the input request(s) {keys}"));
        };
        let _ = pending
            .answer
            .send(super::approval::answer_of_value(response));
        Ok(())
    }

    /// Asks task `id` to stop at its next step boundary. `Err` when there
    /// is no such task or it has already ended.
    pub fn cancel(&self, id: &str, owner: &str) -> Result<(), String> {
        if !self.owned_by(id, owner) {
            return Err(format!("no task {id}"));
        }
        let mut live = self.live();
        match live.get_mut(id) {
            Some(task) => {
                task.cancelled = true;
                task.interrupt.request();
                Ok(())
            }
            None if self.records().contains_key(id) => Err(format!("task {id} has already ended")),
            None => Err(format!("no task {id}")),
        }
    }

    /// Whether task `id` exists and `owner` created it.
    fn owned_by(&self, id: &str, owner: &str) -> bool {
        self.records().get(id).is_some_and(|r| r.owner == owner)
    }

    fn write(&self, record: &TaskRecord) {
        let Some(dir) = &self.dir else {
            return;
        };
        let path = dir.join(format!("{}.json", record.task_id));
        let result = mcp_tools::atomic::write_private_json(&path, record);
        if let Err(e) = result {
            tracing::warn!(
                "cannot write task {} under {}: {e}",
                record.task_id,
                dir.display()
            );
        }
    }

    fn records(&self) -> std::sync::MutexGuard<'_, HashMap<String, TaskRecord>> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn live(&self) -> std::sync::MutexGuard<'_, HashMap<String, Live>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(super) fn task_of_parts(
    task_id: &str,
    status: TaskStatus,
    created_at: &str,
    last_updated_at: &str,
    message: Option<String>,
) -> Task {
    let mut task = Task::new(
        task_id.to_owned(),
        status,
        created_at.to_owned(),
        last_updated_at.to_owned(),
    )
    .with_ttl_ms(TTL.as_millis() as u64)
    .with_poll_interval_ms(POLL_INTERVAL.as_millis() as u64);
    if let Some(message) = message {
        task = task.with_status_message(message);
    }
    task
}

fn task_of(record: &TaskRecord, message: Option<String>) -> Task {
    task_of_parts(
        &record.task_id,
        record.status,
        &record.created_at,
        &record.last_updated_at,
        message,
    )
}

pub(super) fn result_object(result: &CallToolResult) -> JsonObject {
    match serde_json::to_value(result) {
        Ok(serde_json::Value::Object(object)) => object,
        _ => JsonObject::new(),
    }
}

/// Now, as `2026-12-01T12:34:56Z`.
pub fn now_iso() -> String {
    iso8601(SystemTime::now())
}

/// `time` in UTC as ISO 8601 with seconds.
pub(super) fn iso8601(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil-from-days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_8601_utc() {
        assert_eq!(iso8601(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        let t = UNIX_EPOCH + Duration::from_secs(1_796_135_696);
        assert_eq!(iso8601(t), "2026-12-01T14:34:56Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_825_600);
        assert_eq!(iso8601(leap), "2000-02-29T12:00:00Z");
    }
}
