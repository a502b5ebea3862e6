//! The MCP server side of `nanohermes serve`: `run_task` as a blocking call
//! or as a task, cancellation, progress and approvals.
//!
//! Every run is a spawned tokio task that owns its agent, registered with
//! the store first ([`super::store`]: files, or PostgreSQL shared by
//! replicas, which may refuse it while its workspace is busy and may hand
//! it to another replica later). The request that started it only
//! watches: a cancellation (stdio `notifications/cancelled`, or a closed
//! HTTP response stream, which rmcp turns into the same token) sets the
//! run's interrupt flag, so the loop stops at its next step boundary with
//! a valid history, written to the session. Nothing is aborted mid-step,
//! whatever the request does.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock,
    CreateTaskResult, ElicitRequest, GetTaskParams, GetTaskResult, Implementation, InputRequest,
    InputRequests, InputRequiredResult, ListToolsResult, PaginatedRequestParams, RequestStateCodec,
    SealOptions, ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::approval::{self, HostAnswers, Question};
use super::progress::{ProgressTarget, ServeUi, SessionSink};
use super::run_task::{self, RUN_TASK, RunStatus, RunTaskArgs, RunTaskOutput, RunUsage};
use super::store::rows::Claimed;
use super::store::sessions::PgSession;
use super::store::{Registration, Store, owner_of};
use super::tools::TaskTools;
use super::workspaces::Workspaces;
use crate::app::{RunParts, assemble};
use crate::config::Rules;
use nanohermes_config::Mode;
use nanohermes_core::agent::{Agent, AgentConfig, Outcome};
use nanohermes_core::interrupt::Interrupt;
use nanohermes_core::policy::approval::Answer;
use nanohermes_core::prompt;
use nanohermes_core::usage::UsageLedger;
use nanohermes_session::{self as sessions, Appender, SessionFile, SessionStore, SessionUsage};

/// The key of the one input request an approval puts in a result.
const APPROVAL_KEY: &str = "approval";

/// `nanohermes serve`'s handler; clones share one state.
#[derive(Clone)]
pub struct AgentServer(Arc<Inner>);

struct Inner {
    workspaces: Workspaces,
    store: Store,
    /// Sessions a run is using now (one run per session at a time).
    busy: Mutex<HashSet<String>>,
    /// Runs paused on an approval a 2026-07-28 host has not answered yet,
    /// by the key sealed in their `requestState`.
    waiting: Mutex<HashMap<String, Waiting>>,
    /// Seals `requestState` (a key made for this process).
    codec: RequestStateCodec,
}

/// A run in flight and what its request watches.
struct Run {
    join: JoinHandle<RunTaskOutput>,
    interrupt: Interrupt,
    target: ProgressTarget,
    questions: Option<mpsc::Receiver<Question>>,
}

/// A run just started: what its request watches, and its task handle
/// (none for a blocking call in the file store).
struct Started {
    run: Run,
    task: Option<rmcp::model::Task>,
}

/// What a run is started with.
struct Begin {
    args: RunTaskArgs,
    how: HostAnswers,
    /// [`owner_of`] the request's bearer.
    owner: String,
    /// A blocking call: no handle is answered.
    hidden: bool,
    /// A task taken over from a replica that died: its id.
    resume: Option<String>,
}

/// A run waiting for the answer a retry brings.
struct Waiting {
    run: Run,
    answer: oneshot::Sender<Answer>,
}

impl AgentServer {
    /// A server for `workspaces`, keeping tasks and sessions in `store`.
    pub fn new(workspaces: Workspaces, store: Store) -> AgentServer {
        let mut key = [0u8; 32];
        sessions::fill_random(&mut key);
        let codec = RequestStateCodec::try_new(key.to_vec())
            .unwrap_or_else(|_| unreachable!("a 32-byte key is long enough"));
        AgentServer(Arc::new(Inner {
            workspaces,
            store,
            busy: Mutex::default(),
            waiting: Mutex::default(),
            codec,
        }))
    }

    /// Sets up the first root's workspace in the background, so the first
    /// task does not wait for its tool servers and model client (a failed
    /// setup is reported by that task).
    pub fn prepare_first_root(&self) {
        let inner = self.0.clone();
        tokio::spawn(async move {
            let root = inner.workspaces.roots()[0].clone();
            if let Err(e) = inner.workspaces.runtime(&root).await {
                tracing::warn!("workspace {}: {e}", root.display());
            }
        });
    }

    /// Shuts the workspaces' servers down.
    pub async fn shutdown(&self) {
        self.0.workspaces.shutdown().await;
    }

    async fn call(
        &self,
        params: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if params.name != RUN_TASK {
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool {:?}; this server offers run_task",
                    params.name
                ),
                None,
            ));
        }
        if let Some(state) = &params.request_state {
            return self.resume(state, &params, ctx).await;
        }
        let arguments = params.arguments.clone().unwrap_or_default();
        let args: RunTaskArgs = serde_json::from_value(serde_json::Value::Object(arguments))
            .map_err(|e| McpError::invalid_params(format!("run_task arguments: {e}"), None))?;
        // A task handle only for 2026-07-28 requests that declare the
        // extension (SEP-2663 came with that revision): hosts on
        // 2025-11-25 that declare it anyway, as the MCP Inspector CLI does,
        // expect a result, not a handle.
        let how = approval::host_answers(&ctx);
        let as_task = approval::is_modern(&ctx)
            && ctx
                .client_capabilities()
                .is_some_and(|caps| caps.supports_tasks());
        let begin = Begin {
            args,
            how,
            owner: owner_of_request(&ctx),
            hidden: !as_task,
            resume: None,
        };
        let started = match self.start(begin, Some(&ctx)).await {
            Ok(started) => started,
            Err(output) => return Ok(tool_result(&output).into()),
        };
        if as_task {
            return Ok(self.as_task(started).into());
        }
        self.drive(started.run, ctx).await
    }

    /// Runs task `claimed`, whose replica died, from its last step
    /// boundary (PostgreSQL store only).
    pub fn take_over(&self, claimed: Claimed) {
        let server = self.clone();
        tokio::spawn(async move {
            let Store::Postgres(replicas) = &server.0.store else {
                return;
            };
            let id = claimed.task_id.clone();
            let ended = |message: &str| RunTaskOutput {
                status: RunStatus::Interrupted,
                ..RunTaskOutput::error(message.to_owned(), &claimed.session_id)
            };
            // A blocking call's caller went with its replica: nobody waits
            // for a continuation; a cancelled task ends cancelled.
            if claimed.hidden || claimed.cancel_requested {
                let output = ended(&format!(
                    "the replica running this call stopped; its session was kept at the last step: call run_task with session_id {:?} to continue",
                    claimed.session_id
                ));
                replicas.finish(&id, &tool_result(&output)).await;
                return;
            }
            let args = match serde_json::from_str::<RunTaskArgs>(&claimed.args) {
                Ok(mut args) => {
                    args.session_id = Some(claimed.session_id.clone());
                    args
                }
                Err(e) => {
                    let output = ended(&format!("the stored task cannot be read: {e}"));
                    replicas.finish(&id, &tool_result(&output)).await;
                    return;
                }
            };
            let begin = Begin {
                args,
                how: HostAnswers::of_word(&claimed.answers),
                owner: claimed.owner.clone(),
                hidden: false,
                resume: Some(id.clone()),
            };
            match server.start(begin, None).await {
                Ok(mut started) => server.forward_questions(&id, &mut started.run),
                Err(output) => replicas.finish(&id, &tool_result(&output)).await,
            }
        });
    }

    /// Checks the arguments, loads or opens the session, registers the
    /// run with the store and spawns it. `ctx` is the request (`None` for
    /// a task taken over, which continues its stored session).
    async fn start(
        &self,
        begin: Begin,
        ctx: Option<&RequestContext<RoleServer>>,
    ) -> Result<Started, RunTaskOutput> {
        let Begin {
            args,
            how,
            owner,
            hidden,
            resume,
        } = begin;
        let given_session = args.session_id.clone().unwrap_or_default();
        let fail = |message: String| RunTaskOutput::error(message, &given_session);
        let workspace = self
            .0
            .workspaces
            .resolve(args.workspace.as_deref())
            .map_err(fail)?;
        let mode =
            match args.mode.as_deref() {
                None => None,
                Some(name) => Some(Mode::from_name(name).ok_or_else(|| {
                    fail(format!("mode {name:?} is not one of {}", Mode::names()))
                })?),
            };
        let store = SessionStore::of(&workspace);
        let (session, earlier) = match &self.0.store {
            Store::Files(_) => open_session(&store, &workspace, args.session_id.as_deref()).await,
            Store::Postgres(replicas) => {
                open_stored_session(
                    replicas.pg(),
                    &workspace,
                    args.session_id.as_deref(),
                    resume.is_some(),
                )
                .await
            }
        }
        .map_err(fail)?;
        let claim = SessionClaim::take(&self.0, &session).map_err(fail)?;
        // A host that gives up on a task whose workspace is still being
        // set up (its servers starting) gets its request back.
        let cancelled = async {
            match ctx {
                Some(ctx) => ctx.ct.cancelled().await,
                None => std::future::pending().await,
            }
        };
        let runtime = tokio::select! {
            runtime = self.0.workspaces.runtime(&workspace) => runtime.map_err(fail)?,
            () = cancelled => {
                return Err(fail("cancelled while the workspace was being set up".into()));
            }
        };
        // An agent that mounts itself stops here, max_agent_depth down.
        let hub = &runtime.config.hub;
        if let Some(reason) = nanohermes_hub::depth_refusal(hub.agent_depth, hub.max_agent_depth) {
            return Err(fail(reason));
        }

        let rules = narrowed_rules(&runtime.config.rules, mode).map_err(fail)?;
        let policy = rules.policy();
        let hooks = crate::app::hooks(&rules, &workspace, &runtime.config.hub.sandbox)
            .map_err(|e| fail(format!("{e:#}")))?;
        let config = AgentConfig {
            max_iterations: args
                .max_iterations
                .map_or(runtime.config.agent.max_iterations, |n| n.max(1) as usize),
            policy: policy.clone(),
        };
        let client = match &args.model {
            Some(model) if !model.trim().is_empty() => runtime.client.with_model(model.trim()),
            _ => runtime.client.clone(),
        };
        let (approvals, questions) = approval::approvals(&how, ctx.map(|ctx| &ctx.peer));
        let interrupt = Interrupt::default();
        let last_step = Arc::new(Mutex::new("starting".to_owned()));

        // The store decides whether the run may start (PostgreSQL: one
        // working task per workspace across replicas) before anything runs.
        let task_id = match &resume {
            Some(id) => {
                if let Store::Postgres(replicas) = &self.0.store {
                    replicas.adopt(id, interrupt.clone(), last_step.clone());
                }
                None
            }
            None => {
                let args_json = serde_json::to_string(&args).unwrap_or_default();
                let workspace_text = workspace.display().to_string();
                self.0
                    .store
                    .register(Registration {
                        owner: &owner,
                        hidden,
                        session_id: &session,
                        workspace: &workspace_text,
                        args: &args_json,
                        answers: how.word(),
                        interrupt: interrupt.clone(),
                        last_step: last_step.clone(),
                    })
                    .await
                    .map_err(fail)?
            }
        };
        // The row whose end the run records: a task's, a task taken
        // over, or (PostgreSQL only, whose lease keeps the workspace) a
        // blocking call's; the file store keeps none for blocking calls.
        let finish_id = resume
            .clone()
            .or_else(|| task_id.as_ref().map(|t| t.task_id.clone()));

        let tools = TaskTools::new(runtime.hub.clone(), policy).await;
        let mut system_prompt = prompt::system_prompt(&workspace, &runtime.guidance);
        {
            let hub = runtime.hub.read().await;
            prompt::add_deferred_line(
                &mut system_prompt,
                &hub.deferred_counts(),
                &hub.connecting(),
            );
        }
        // The stored messages come back in each checkpoint's history.
        let writer = match &self.0.store {
            Store::Files(_) => SessionSink::File(Appender::new(&store.path(&session), &earlier)),
            Store::Postgres(replicas) => {
                let fence = finish_id
                    .clone()
                    .map(|id| (id, replicas.replica().to_owned()));
                SessionSink::Store(
                    PgSession::new(replicas.pg().clone(), &earlier, fence),
                    interrupt.clone(),
                )
            }
        };
        let usage_before = earlier.usage;
        let continuing = resume.is_some() && !earlier.messages.is_empty();
        let run = RunParts {
            agent: config,
            approvals,
            interrupt: interrupt.clone(),
            hooks,
            session_id: session.to_string(),
        };
        let agent = assemble(
            &runtime.config,
            client,
            tools,
            &system_prompt,
            earlier.messages,
            run,
        );

        let target = ProgressTarget::default();
        let ui = ServeUi::new(target.clone(), last_step, Some(writer));
        let join = spawn_run(
            agent,
            ui,
            (!continuing).then_some(args.task),
            session.clone(),
            usage_before,
            claim,
            finish_id.map(|id| (self.0.clone(), id)),
        );
        Ok(Started {
            run: Run {
                join,
                interrupt,
                target,
                questions,
            },
            task: task_id,
        })
    }

    /// Answers with a task handle; the run records its result when it ends.
    fn as_task(&self, started: Started) -> CreateTaskResult {
        let Started { mut run, task } = started;
        let task = task.unwrap_or_else(|| unreachable!("a task run is registered with a handle"));
        self.forward_questions(&task.task_id, &mut run);
        CreateTaskResult::new(task)
    }

    /// A question of task `id`'s run becomes its input_required status,
    /// answered by tasks/update.
    fn forward_questions(&self, id: &str, run: &mut Run) {
        if let Some(mut questions) = run.questions.take() {
            let (inner, id) = (self.0.clone(), id.to_owned());
            tokio::spawn(async move {
                while let Some(question) = questions.recv().await {
                    inner
                        .store
                        .ask(&id, approval_request(&question.text), question.answer)
                        .await;
                }
            });
        }
    }

    /// Watches `run` for the request in `ctx`: forwards its progress,
    /// interrupts it when the request is cancelled, and turns a question
    /// into an input-required result.
    async fn drive(
        &self,
        mut run: Run,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        run.target.set(
            ctx.meta
                .get_progress_token()
                .map(|token| (ctx.peer.clone(), token)),
        );
        let question = tokio::select! {
            output = &mut run.join => return Ok(finished(output)),
            () = ctx.ct.cancelled() => None,
            question = next_question(&mut run.questions) => Some(question),
        };
        let Some(question) = question else {
            // Cancelled: stop at the next step boundary; a question still
            // open is answered no (its receiver is gone).
            run.interrupt.request();
            run.questions = None;
            run.target.set(None);
            return Ok(finished(run.join.await));
        };
        run.target.set(None);
        let key = sessions::new_id();
        let bound = bound_to(&ctx, &key);
        let state = self.0.codec.seal_with(
            key.as_bytes(),
            &SealOptions::new()
                .associated_data(bound.as_bytes())
                .ttl(approval::ANSWER_TIME),
        );
        let mut waiting = self.0.waiting.lock().unwrap_or_else(|e| e.into_inner());
        // Questions whose run gave up waiting (timed out) are dropped here.
        waiting.retain(|_, w| !w.answer.is_closed());
        waiting.insert(
            key,
            Waiting {
                run,
                answer: question.answer,
            },
        );
        let requests = approval_request(&question.text);
        Ok(InputRequiredResult::new(Some(requests), Some(state)).into())
    }

    /// A 2026-07-28 retry: the answer goes to the waiting run, which the
    /// retry then watches.
    async fn resume(
        &self,
        state: &str,
        params: &CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let invalid = || {
            McpError::invalid_params(
                "requestState is not one this server issued, or it expired; call run_task again without it",
                None,
            )
        };
        // The key is inside the seal; the seal is bound to the key and the
        // caller, so a state cannot be replayed by another client.
        let key = self.open(state, &ctx).ok_or_else(invalid)?;
        let waiting = self
            .0
            .waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key)
            .ok_or_else(invalid)?;
        let answer = params
            .input_responses
            .as_ref()
            .and_then(|responses| responses.get(APPROVAL_KEY))
            .map_or(Answer::No, approval::answer_of_value);
        let _ = waiting.answer.send(answer);
        self.drive(waiting.run, ctx).await
    }

    /// The key sealed in `state`, if this process sealed it for this caller.
    fn open(&self, state: &str, ctx: &RequestContext<RoleServer>) -> Option<String> {
        // The associated data includes the key itself, so each candidate
        // is tried against what it claims; the payload is the key.
        let waiting = self.0.waiting.lock().unwrap_or_else(|e| e.into_inner());
        waiting.keys().find_map(|key| {
            let bound = bound_to(ctx, key);
            let opened = self.0.codec.open_with(state, bound.as_bytes()).ok()?;
            (opened == key.as_bytes()).then(|| key.clone())
        })
    }
}

/// [`SessionStore::load`] off the runtime's workers.
async fn load_session(store: &SessionStore, id: &str) -> Result<Option<SessionFile>, String> {
    let (store, id) = (store.clone(), id.to_owned());
    tokio::task::spawn_blocking(move || store.load(&id))
        .await
        .map_err(|e| format!("reading the session failed: {e}"))?
}

/// The input requests of one approval question.
fn approval_request(question: &str) -> InputRequests {
    let mut requests = InputRequests::new();
    requests.insert(
        APPROVAL_KEY.to_owned(),
        InputRequest::Elicitation(ElicitRequest::new(approval::request(question))),
    );
    requests
}

/// What a sealed state is bound to: the question's key and the client.
fn bound_to(ctx: &RequestContext<RoleServer>, key: &str) -> String {
    let client = ctx.client_info().map(|info| info.name).unwrap_or_default();
    format!("nanohermes/run_task/approval|{key}|{client}")
}

async fn next_question(questions: &mut Option<mpsc::Receiver<Question>>) -> Question {
    match questions {
        Some(rx) => match rx.recv().await {
            Some(question) => question,
            None => std::future::pending().await,
        },
        None => std::future::pending().await,
    }
}

fn finished(output: Result<RunTaskOutput, tokio::task::JoinError>) -> CallToolResponse {
    let output =
        output.unwrap_or_else(|e| RunTaskOutput::error(format!("the run failed: {e}"), ""));
    tool_result(&output).into()
}

/// The `CallToolResult` of a run: the final text as content, the whole
/// output as `structuredContent`, `isError` for [`RunStatus::Error`].
pub fn tool_result(output: &RunTaskOutput) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(output.final_text.clone())]);
    result.structured_content = serde_json::to_value(output).ok();
    result.is_error = Some(output.status == RunStatus::Error);
    result
}

/// A session marked busy; unmarked when dropped, however the run ends.
struct SessionClaim {
    inner: Arc<Inner>,
    id: String,
}

impl SessionClaim {
    fn take(inner: &Arc<Inner>, id: &str) -> Result<SessionClaim, String> {
        let mut busy = inner.busy.lock().unwrap_or_else(|e| e.into_inner());
        if !busy.insert(id.to_owned()) {
            return Err(format!(
                "session {id} is running a task now; wait for its result, or omit session_id to start a new session"
            ));
        }
        Ok(SessionClaim {
            inner: inner.clone(),
            id: id.to_owned(),
        })
    }
}

impl Drop for SessionClaim {
    fn drop(&mut self) {
        self.inner
            .busy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
    }
}

impl ServerHandler for AgentServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("nanohermes", env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "NanoHermes, a coding agent. run_task hands it a whole task in a workspace; \
                 it returns the final answer and a session_id to continue the conversation.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(vec![run_task::tool()]))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        (name == RUN_TASK).then(run_task::tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.call(request, context).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        let owner = owner_of_request(&context);
        self.0
            .store
            .get(&request.task_id, &owner)
            .await
            .map_err(|e| McpError::internal_error(e, None))?
            .map(GetTaskResult::new)
            .ok_or_else(|| McpError::invalid_params(format!("no task {}", request.task_id), None))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let owner = owner_of_request(&context);
        self.0
            .store
            .answer(
                &request.task_id,
                &owner,
                APPROVAL_KEY,
                &request.input_responses,
            )
            .await
            .map_err(|e| McpError::invalid_params(e, None))
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let owner = owner_of_request(&context);
        self.0
            .store
            .cancel(&request.task_id, &owner)
            .await
            .map_err(|e| McpError::invalid_params(e, None))
    }
}

/// The session a task continues (`id`, read on the blocking pool: a
/// session file a repository planted as a FIFO must not hold a runtime
/// worker), or a new one.
async fn open_session(
    store: &SessionStore,
    workspace: &std::path::Path,
    id: Option<&str>,
) -> Result<(String, SessionFile), String> {
    let Some(id) = id else {
        let id = sessions::new_id();
        let fresh = SessionFile::new(&id, workspace);
        return Ok((id, fresh));
    };
    match load_session(store, id).await? {
        Some(file) => Ok((id.to_owned(), file)),
        None => Err(format!(
            "no session {id} in workspace {}; omit session_id to start one",
            workspace.display()
        )),
    }
}

/// Who sent the request of `ctx`: [`owner_of`] its `Authorization`
/// header (HTTP), or nobody in particular (stdio: the one host).
fn owner_of_request(ctx: &RequestContext<RoleServer>) -> String {
    let header = ctx
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.headers.get(http::header::AUTHORIZATION))
        .map(|value| value.as_bytes());
    owner_of(header)
}

/// The session a task continues, from the PostgreSQL store, or a new
/// one. A task taken over whose run stored nothing yet starts its session
/// afresh under the same id.
async fn open_stored_session(
    pg: &super::store::pg::Pg,
    workspace: &std::path::Path,
    id: Option<&str>,
    taken_over: bool,
) -> Result<(String, SessionFile), String> {
    let Some(id) = id else {
        let id = sessions::new_id();
        let fresh = SessionFile::new(&id, workspace);
        return Ok((id, fresh));
    };
    if !sessions::valid_id(id) {
        return Err(format!("session id {id:?} is not one this server made"));
    }
    match pg.load_session(id).await.map_err(|e| e.to_string())? {
        Some(file) if file.workspace == workspace => Ok((id.to_owned(), file)),
        None if taken_over => Ok((id.to_owned(), SessionFile::new(id, workspace))),
        _ => Err(format!(
            "no session {id} in workspace {}; omit session_id to start one",
            workspace.display()
        )),
    }
}

/// The server's rules with a task's `mode`, which may only narrow them.
fn narrowed_rules(rules: &Rules, mode: Option<Mode>) -> Result<Rules, String> {
    let mut rules = rules.clone();
    if let Some(mode) = mode {
        if mode.permissiveness() > rules.mode.permissiveness() {
            return Err(format!(
                "mode {} allows more than this server's mode {}; a task may only narrow it \
                 (start `nanohermes serve --mode {}` to allow it)",
                mode.name(),
                rules.mode.name(),
                mode.name()
            ));
        }
        rules.mode = mode;
    }
    Ok(rules)
}

/// Runs `task` (`None`: continues the history, a task taken over) on its
/// own tokio task and turns the end into `run_task`'s output; the
/// session's usage (earlier tasks' `usage_before` and this one's) is
/// written with the final history, then `claim` is let go, and the store
/// records the end of task `finish` (a run that panicked included).
fn spawn_run(
    mut agent: Agent<TaskTools>,
    mut ui: ServeUi,
    task: Option<String>,
    id: String,
    usage_before: SessionUsage,
    claim: SessionClaim,
    finish: Option<(Arc<Inner>, String)>,
) -> JoinHandle<RunTaskOutput> {
    let session = id.clone();
    let run = tokio::spawn(async move {
        let result = match &task {
            Some(task) => agent.run(task, &mut ui).await,
            None => agent.continue_run(&mut ui).await,
        };
        let usage = RunUsage::from(agent.usage());
        let mut session_usage = UsageLedger::from(usage_before);
        session_usage.absorb(agent.usage());
        ui.finish(agent.transcript(), session_usage);
        drop(claim);
        match result {
            Ok(summary) => RunTaskOutput {
                status: match summary.outcome {
                    Outcome::Done => RunStatus::Completed,
                    Outcome::Interrupted => RunStatus::Interrupted,
                    Outcome::IterationLimit => RunStatus::IterationLimit,
                },
                final_text: summary.final_text,
                iterations: summary.iterations as u64,
                tool_calls: summary.tool_calls as u64,
                usage,
                session_id: id,
            },
            Err(e) => RunTaskOutput {
                usage,
                ..RunTaskOutput::error(format!("the model request failed: {e}"), &id)
            },
        }
    });
    tokio::spawn(async move {
        let output = match run.await {
            Ok(output) => output,
            Err(e) => RunTaskOutput::error(format!("the run failed: {e}"), &session),
        };
        if let Some((inner, task_id)) = finish {
            inner.store.finish(&task_id, &tool_result(&output)).await;
        }
        output
    })
}
