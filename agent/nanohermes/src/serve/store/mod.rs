//! Where `nanohermes serve` keeps what outlives a request: task handles,
//! their status and result, pending approvals and their answers,
//! cancellation requests and session histories.
//!
//! One interface ([`Store`]), two implementations:
//! - **files** (the default, nothing to install): task handles under
//!   `$NANOHERMES_HOME/tasks/` ([`super::tasks::TaskStore`]), sessions in
//!   `WORKSPACE/.nanohermes/sessions/`; one process.
//! - **PostgreSQL** (`--store postgres://user@host:port/db`): every
//!   replica reads and answers every task; a task runs on the replica
//!   holding its lease ([`replicas`]), and sessions are rows appended per
//!   step ([`sessions`]).

pub mod http;
pub mod pg;
pub mod replicas;
pub mod rows;
pub mod sessions;
pub mod tls;

use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolResult, DetailedTask, InputRequests, InputResponses, Task};
use tokio::sync::oneshot;

use super::tasks::TaskStore;
use nanohermes_core::interrupt::Interrupt;
use nanohermes_core::policy::approval::Answer;
pub use replicas::Replicas;

/// What a new run registers with the store.
pub struct Registration<'a> {
    /// Who may see the task (see [`owner_of`]).
    pub owner: &'a str,
    /// A blocking call: no handle is answered.
    pub hidden: bool,
    /// The session the run writes.
    pub session_id: &'a str,
    /// The canonical workspace.
    pub workspace: &'a str,
    /// The `run_task` arguments as JSON.
    pub args: &'a str,
    /// How the host answers approvals (`input_required` or `never`).
    pub answers: &'a str,
    /// The run's interrupt flag.
    pub interrupt: Interrupt,
    /// The run's latest step line.
    pub last_step: Arc<Mutex<String>>,
}

/// The store of one server: files, or PostgreSQL shared by replicas.
pub enum Store {
    /// Files under `$NANOHERMES_HOME/tasks/` and the workspaces.
    Files(TaskStore),
    /// PostgreSQL.
    Postgres(Arc<Replicas>),
}

impl Store {
    /// A new run: its task handle (`None` for a blocking call in the file
    /// store, which keeps no record of those), or why it may not start.
    pub async fn register(&self, new: Registration<'_>) -> Result<Option<Task>, String> {
        match self {
            Store::Files(files) => Ok((!new.hidden)
                .then(|| files.create(new.session_id, new.owner, new.interrupt, new.last_step))),
            Store::Postgres(replicas) => replicas.register(new).await.map(Some),
        }
    }

    /// Records the end of task `id` with `result`.
    pub async fn finish(&self, id: &str, result: &CallToolResult) {
        match self {
            Store::Files(files) => files.finish(id, result),
            Store::Postgres(replicas) => replicas.finish(id, result).await,
        }
    }

    /// Task `id` as `owner` sees it.
    pub async fn get(&self, id: &str, owner: &str) -> Result<Option<DetailedTask>, String> {
        match self {
            Store::Files(files) => Ok(files.get(id, owner)),
            Store::Postgres(replicas) => replicas.get(id, owner).await,
        }
    }

    /// Task `id` waits for the answer to `requests`.
    pub async fn ask(&self, id: &str, requests: InputRequests, answer: oneshot::Sender<Answer>) {
        match self {
            Store::Files(files) => files.ask(id, requests, answer),
            Store::Postgres(replicas) => replicas.ask(id, requests, answer).await,
        }
    }

    /// `tasks/update` from `owner`.
    pub async fn answer(
        &self,
        id: &str,
        owner: &str,
        key: &str,
        responses: &InputResponses,
    ) -> Result<(), String> {
        match self {
            Store::Files(files) => files.answer(id, owner, key, responses),
            Store::Postgres(replicas) => replicas.answer(id, owner, key, responses).await,
        }
    }

    /// `tasks/cancel` from `owner`.
    pub async fn cancel(&self, id: &str, owner: &str) -> Result<(), String> {
        match self {
            Store::Files(files) => files.cancel(id, owner),
            Store::Postgres(replicas) => replicas.cancel(id, owner).await,
        }
    }
}

/// Who a request speaks for: the SHA-256 of its `Authorization` header
/// (empty without one), so a task is visible only to the bearer that
/// created it, on every replica, without the token itself being stored.
pub fn owner_of(authorization: Option<&[u8]>) -> String {
    use sha2::Digest as _;
    let Some(value) = authorization else {
        return String::new();
    };
    sha2::Sha256::digest(value)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Connects to the PostgreSQL store at `url`, creates or migrates its
/// schema and names this replica; prints the start line naming both.
pub async fn open_postgres(url: &str) -> Result<Arc<Replicas>, String> {
    let pg = pg::Pg::new(url)?;
    let version = pg
        .migrate()
        .await
        .map_err(|e| format!("--store {url}: {e}"))?;
    let replica = replica_id();
    // Scripts and tests read this line (the next one names the address).
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!(
            "nanohermes serve: store {} (schema version {version}, {}), replica {replica}\n",
            pg.shown(),
            pg.tls()
        )
        .as_bytes(),
    );
    Ok(Arc::new(Replicas::new(Arc::new(pg), replica)))
}

/// This replica's id: host name, process id and a random suffix (a
/// restarted process with a reused pid is still another replica).
fn replica_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "host".to_owned());
    let mut random = [0u8; 3];
    nanohermes_session::fill_random(&mut random);
    let suffix: String = random.iter().map(|b| format!("{b:02x}")).collect();
    format!("{host}-{}-{suffix}", std::process::id())
}
