//! Background tasks: commands that keep running between tool calls.
//!
//! Each task is a command in its own process group, driven by a tokio task
//! that interleaves its stdout and stderr into one bounded buffer of unread
//! output. Its whole process tree lives until the task is killed or ends
//! (then it is killed like any command's), or the server goes away:
//! dropping the [`Tasks`] table kills every tree.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_tools::spawn::{ProcessTree, Sandbox, Signal};
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::capture::Captured;
use crate::run::{Stream, describe_status, drive, spawn_sh};

/// Most tasks running at once.
pub const MAX_RUNNING: usize = 16;
/// Most tasks remembered (running or finished); the oldest finished ones
/// are forgotten first.
pub const MAX_KEPT: usize = 64;
/// How long `task_kill` waits after SIGTERM before it sends SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// The background tasks of one server.
#[derive(Debug)]
pub struct Tasks {
    buffer_limit: usize,
    sandbox: Sandbox,
    table: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    next_id: u32,
    tasks: BTreeMap<u32, Arc<Task>>,
}

#[derive(Debug)]
struct Task {
    command: String,
    sandbox: Sandbox,
    started: Instant,
    tree: Arc<ProcessTree>,
    state: Arc<Mutex<TaskState>>,
    done: watch::Receiver<bool>,
    driver: AbortHandle,
    /// The sandbox note for output read so far that looked refused, until
    /// a failed status shows it: the refusal may be read in an earlier
    /// `task_output` than the exit.
    denial: Mutex<Denial>,
}

/// Whether a task's output looked refused by the sandbox, and whether that was said.
#[derive(Debug, Default)]
struct Denial {
    note: Option<String>,
    said: bool,
    /// How many hosts the network allowlist had refused at the last note.
    refused_said: usize,
}

#[derive(Debug)]
struct TaskState {
    unread: Captured,
    status: Option<String>,
    killed_on_request: bool,
}

impl Tasks {
    /// An empty table; each task keeps at most about `buffer_limit` bytes
    /// of unread output (its head and tail) and runs under `sandbox`.
    pub fn new(buffer_limit: usize, sandbox: Sandbox) -> Self {
        Self {
            buffer_limit,
            sandbox,
            table: Mutex::new(Table {
                next_id: 1,
                tasks: BTreeMap::new(),
            }),
        }
    }

    /// Starts `command` in `cwd` under the tasks' sandbox; returns the
    /// task id, the group id and the sandbox's warning, if any. Must run
    /// inside a tokio runtime.
    pub fn start(&self, command: &str, cwd: &Path) -> Result<(u32, i32, Option<String>), String> {
        self.start_in(command, cwd, &self.sandbox.clone())
    }

    /// [`start`](Self::start) under `sandbox`, a narrower one than the
    /// tasks' (a call granted only the read-only sandbox).
    pub fn start_in(
        &self,
        command: &str,
        cwd: &Path,
        sandbox: &Sandbox,
    ) -> Result<(u32, i32, Option<String>), String> {
        let mut table = self.lock();
        let running = table.tasks.values().filter(|t| !t.is_done()).count();
        if running >= MAX_RUNNING {
            return Err(format!(
                "{running} tasks are already running, the most allowed; stop one with task_kill first"
            ));
        }
        table.forget_finished_beyond(MAX_KEPT - 1);
        let (mut child, tree, warning) = spawn_sh(command, cwd, sandbox)?;
        let tree = Arc::new(tree);
        let pgid = tree.pgid();
        let state = Arc::new(Mutex::new(TaskState {
            unread: Captured::new(self.buffer_limit),
            status: None,
            killed_on_request: false,
        }));
        let (done_tx, done) = watch::channel(false);
        let driver = {
            let tree = tree.clone();
            let state = state.clone();
            tokio::spawn(async move {
                let ended = drive(
                    &mut child,
                    &tree,
                    None,
                    std::future::pending(),
                    |_: Stream, bytes| {
                        lock(&state).unread.push(bytes);
                    },
                )
                .await;
                lock(&state).status = Some(describe_status(ended.status));
                let _ = done_tx.send(true);
            })
            .abort_handle()
        };
        let id = table.next_id;
        table.next_id += 1;
        table.tasks.insert(
            id,
            Arc::new(Task {
                command: command.to_string(),
                sandbox: sandbox.clone(),
                started: Instant::now(),
                tree,
                state,
                done,
                driver,
                denial: Mutex::default(),
            }),
        );
        Ok((id, pgid, warning))
    }

    /// The task's status line and the output it produced since the last
    /// read, rendered in at most about `budget` bytes.
    pub fn output(&self, id: u32, budget: usize) -> Result<String, String> {
        let task = self.get(id)?;
        Ok(task.report(budget))
    }

    /// Stops a task: SIGTERM to its group, then SIGKILL to its whole tree
    /// after [`KILL_GRACE`]. Returns its final report.
    pub async fn kill(&self, id: u32, budget: usize) -> Result<String, String> {
        let task = self.get(id)?;
        if !task.is_done() {
            lock(&task.state).killed_on_request = true;
            task.tree.signal_group(Signal::SIGTERM);
            let mut done = task.done.clone();
            let _ = tokio::time::timeout(KILL_GRACE, done.wait_for(|d| *d)).await;
            task.tree.kill();
            let _ = tokio::time::timeout(KILL_GRACE, done.wait_for(|d| *d)).await;
        }
        Ok(task.report(budget))
    }

    /// Kills every task's process tree (the server is going away).
    pub fn kill_all(&self) {
        for task in self.lock().tasks.values() {
            task.driver.abort();
            task.tree.kill();
        }
    }

    fn get(&self, id: u32) -> Result<Arc<Task>, String> {
        let table = self.lock();
        table.tasks.get(&id).cloned().ok_or_else(|| {
            let known: Vec<String> = table.tasks.keys().map(u32::to_string).collect();
            if known.is_empty() {
                format!("no task with id {id}: no tasks have been started (use task_start)")
            } else {
                format!("no task with id {id}; known task ids: {}", known.join(", "))
            }
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        self.kill_all();
    }
}

impl Table {
    fn forget_finished_beyond(&mut self, keep: usize) {
        while self.tasks.len() > keep {
            let oldest_done = self
                .tasks
                .iter()
                .find(|(_, t)| t.is_done())
                .map(|(id, _)| *id);
            match oldest_done {
                Some(id) => {
                    self.tasks.remove(&id);
                }
                None => break,
            }
        }
    }
}

impl Task {
    fn is_done(&self) -> bool {
        *self.done.borrow()
    }

    fn report(&self, budget: usize) -> String {
        let (unread, status, killed) = {
            let mut state = lock(&self.state);
            (
                state.unread.take(),
                state.status.clone(),
                state.killed_on_request,
            )
        };
        let failed = status.as_deref().is_some_and(|s| s != "exit code: 0");
        let status = match status {
            None => format!(
                "running for {} s (process group {})",
                self.started.elapsed().as_secs(),
                self.tree.pgid()
            ),
            Some(status) if killed => format!("{status} (stopped by task_kill)"),
            Some(status) => status,
        };
        let mut out = format!("status: {status}\ncommand: {}\n", self.command);
        if unread.is_empty() {
            out.push_str("(no new output)\n");
        } else {
            out.push_str("--- new output\n");
            let rendered = unread.render(budget);
            out.push_str(&rendered);
            if !out.ends_with('\n') {
                out.push('\n');
            }
            // Judged as if failed: the exit may come in a later read.
            let mut denial = lock(&self.denial);
            if denial.note.is_none() {
                denial.note = self.sandbox.explain_failure(false, &rendered);
            }
        }
        let mut denial = lock(&self.denial);
        if failed
            && !denial.said
            && let Some(note) = denial.note.clone()
        {
            out.push_str(&note);
            out.push('\n');
            denial.said = true;
        }
        let refused = self.tree.refused_domains();
        if refused.len() > denial.refused_said {
            denial.refused_said = refused.len();
            if let Some(note) = Sandbox::refused_note(&refused) {
                out.push_str(&note);
                out.push('\n');
            }
        }
        out
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
