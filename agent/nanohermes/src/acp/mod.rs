//! `nanohermes acp`: the agent in an editor, over the Agent Client
//! Protocol (version 1) on stdio.
//!
//! Built on a thin hand-written JSON-RPC layer ([`rpc`]), not on the
//! `agent-client-protocol` crate: that crate (and its schema crate) turns
//! on `serde_json`'s `preserve_order` feature, which Cargo would unify into
//! every crate of the binary, changing the key order of the session files
//! and of every request body the prompt cache depends on. The messages
//! used here are few and the official TypeScript SDK's client checks them
//! from outside (`tests/it/acp.rs`).
//!
//! Each ACP session is one NanoHermes session: its `cwd` is the workspace,
//! loaded the way every command loads it ([`crate::app::load`], trust
//! rules included), its servers the configured ones plus the editor's
//! ([`servers`]), its agent started the way `run` starts one
//! ([`crate::app::start_agent`]) and kept across prompts, its history the
//! same session file `run` and `serve` write (so `session/load` replays
//! it, and `--resume ID` continues it on a terminal).

pub mod commands;
pub mod permission;
pub mod rpc;
pub mod servers;
pub mod sink;
pub mod updates;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};
use tokio::sync::mpsc;

use crate::app::{Started, start_agent};
use crate::config::{Options, Rules};
use crate::repl::commands::Command;
use nanohermes_config::Mode;
use nanohermes_core::agent::Agent;
use nanohermes_core::events::RunEvents as _;
use nanohermes_core::interrupt::Interrupt;
use nanohermes_core::policy::approval::Approvals;
use nanohermes_core::toolbox::ToolBox as _;
use nanohermes_core::transcript::Transcript;
use nanohermes_hub::Hub;
use nanohermes_session::{self as session, Keeper, SessionArgs};
use permission::EditorPrompter;
use rpc::{Incoming, METHOD_NOT_FOUND, Peer, RESOURCE_NOT_FOUND, RpcError};
use sink::AcpUi;

/// The ACP version spoken (the stable one).
pub const PROTOCOL_VERSION: u64 = 1;

/// Serves ACP on stdin and stdout until the editor closes stdin.
pub async fn main(options: &Options) -> anyhow::Result<ExitCode> {
    let (out, mut lines) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = lines.recv().await {
            let written = async {
                stdout.write_all(line.as_bytes()).await?;
                stdout.write_all(b"\n").await?;
                stdout.flush().await
            };
            if written.await.is_err() {
                break;
            }
        }
    });
    let server = Server::new(Peer::new(out), options.clone());
    let mut input = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = input.next_line().await? {
        if !line.trim().is_empty() {
            server.receive(&line);
        }
    }
    server.peer.close();
    server.shutdown().await;
    drop(server);
    let _ = writer.await;
    Ok(ExitCode::SUCCESS)
}

/// What `session/cancel` reaches while a prompt holds the session.
struct Control {
    interrupt: Interrupt,
    cancelled: Arc<AtomicBool>,
    /// A mode set while a prompt ran: put in place when it ends.
    next_mode: Mutex<Option<Mode>>,
}

/// One open session.
struct Open {
    control: Control,
    state: tokio::sync::Mutex<State>,
}

/// What a prompt works with.
struct State {
    agent: Agent<Hub>,
    ui: Keeper<AcpUi>,
    rules: Rules,
}

/// The agent side of the connection; clones share it.
#[derive(Clone)]
struct Server {
    peer: Peer,
    options: Options,
    sessions: Arc<Mutex<HashMap<String, Arc<Open>>>>,
}

impl Server {
    fn new(peer: Peer, options: Options) -> Server {
        Server {
            peer,
            options,
            sessions: Arc::default(),
        }
    }

    /// Handles one line: a request runs on its own task (a prompt runs
    /// while cancels and permission answers keep coming), a notification
    /// and a response at once.
    fn receive(&self, line: &str) {
        match rpc::classify(line) {
            Incoming::Request { id, method, params } => {
                let server = self.clone();
                let params_id = params["sessionId"].as_str().map(str::to_owned);
                tokio::spawn(async move {
                    let result = server.call(&method, params).await;
                    let opened = match (&result, method.as_str()) {
                        (Ok(result), "session/new") => result["sessionId"].as_str(),
                        (Ok(_), "session/load") => params_id.as_deref(),
                        _ => None,
                    }
                    .map(str::to_owned);
                    server.peer.respond(id, result);
                    // After the answer, so the editor knows the session.
                    if let Some(session) = opened {
                        server.peer.notify(
                            "session/update",
                            updates::notification(&session, commands::available()),
                        );
                    }
                });
            }
            Incoming::Notification { method, params } => {
                if method == "session/cancel" {
                    self.cancel(&params);
                } else {
                    tracing::debug!("acp: ignored notification {method}");
                }
            }
            Incoming::Response { id, outcome } => self.peer.settle(&id, outcome),
            Incoming::Invalid(id, error) => self.peer.respond(id, Err(error)),
        }
    }

    async fn call(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        match method {
            "initialize" => Ok(initialize(&params)),
            "session/new" => self.new_session(params, None).await,
            "session/load" => {
                let id = str_param(&params, "sessionId")?.to_owned();
                self.new_session(params, Some(id)).await
            }
            "session/prompt" => self.prompt(params).await,
            "session/set_mode" => self.set_mode(&params).await,
            other => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("method not found: {other}"),
            )),
        }
    }

    fn session(&self, params: &Value) -> Result<Arc<Open>, RpcError> {
        let id = str_param(params, "sessionId")?;
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(id)
            .cloned()
            .ok_or_else(|| RpcError::new(RESOURCE_NOT_FOUND, format!("no open session {id}")))
    }

    /// `session/new`, or `session/load` of `resume` (its history replayed
    /// before the answer).
    async fn new_session(&self, params: Value, resume: Option<String>) -> Result<Value, RpcError> {
        let loading = resume.is_some();
        let cwd = PathBuf::from(str_param(&params, "cwd")?);
        if !cwd.is_absolute() || !cwd.is_dir() {
            return Err(RpcError::invalid_params(format!(
                "cwd {} must be an absolute path to a directory",
                cwd.display()
            )));
        }
        let editor_servers = servers::from_acp(params.get("mcpServers").unwrap_or(&Value::Null))?;
        if let Some(id) = &resume
            && self
                .sessions
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains_key(id)
        {
            return Err(RpcError::invalid_params(format!(
                "session {id} is already open in this connection"
            )));
        }
        let options = Options {
            workspace: Some(cwd.clone()),
            ..self.options.clone()
        };
        let loaded = tokio::task::spawn_blocking(move || {
            let config = crate::app::load(&options, true)?.config;
            let args = SessionArgs {
                resume,
                ..SessionArgs::default()
            };
            let opened = session::open(&args, &config.workspace).map_err(anyhow::Error::msg)?;
            Ok::<_, anyhow::Error>((config, opened))
        })
        .await
        .map_err(|e| RpcError::internal(e.to_string()))?;
        let (mut config, opened) = loaded.map_err(|e| match e.to_string() {
            message if message.contains("no such session") => {
                RpcError::new(RESOURCE_NOT_FOUND, message)
            }
            _ => RpcError::internal(format!("{e:#}")),
        })?;
        if let Some(warning) = &opened.warning {
            tracing::warn!("{warning}");
        }
        for warning in servers::merge(&mut config.hub.servers, editor_servers) {
            tracing::warn!("{warning}");
        }
        let id = opened.file.id.clone();
        let workspace = config.workspace.clone();
        let rules = config.rules.clone();
        let step = sink::Step::default();
        let cancelled = Arc::new(AtomicBool::new(false));
        let allowed = permission::Allowed::default();
        let prompter = EditorPrompter::new(
            self.peer.clone(),
            &id,
            step.clone(),
            cancelled.clone(),
            allowed.clone(),
        );
        let approvals = Approvals::asking_async(Arc::new(prompter));
        let Started {
            agent, warnings, ..
        } = start_agent(config, &opened, approvals)
            .await
            .map_err(|e| RpcError::internal(format!("{e:#}")))?;
        for warning in &warnings {
            tracing::warn!("session {id}: {warning}");
        }
        let ui = AcpUi::new(self.peer.clone(), &id, workspace.clone(), step, allowed);
        // The history goes to the editor before the answer, as
        // `session/load` requires.
        if !opened.file.messages.is_empty() {
            for update in updates::replay(&opened.file.messages, &workspace) {
                ui.send(update);
            }
        }
        let mut ui = Keeper::new(ui, &opened);
        let surfaced = agent.tools().surfaced();
        ui.keep_surfaced(Box::new(move || surfaced.names()));
        let open = Arc::new(Open {
            control: Control {
                interrupt: agent.interrupt(),
                cancelled,
                next_mode: Mutex::new(None),
            },
            state: tokio::sync::Mutex::new(State {
                agent,
                ui,
                rules: rules.clone(),
            }),
        });
        self.sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id.clone(), open);
        if loading {
            Ok(json!({ "modes": modes(rules.mode) }))
        } else {
            Ok(json!({ "sessionId": id, "modes": modes(rules.mode) }))
        }
    }

    /// `session/prompt`: runs the prompt to its stop reason.
    async fn prompt(&self, params: Value) -> Result<Value, RpcError> {
        let open = self.session(&params)?;
        let task = updates::prompt_text(params.get("prompt").unwrap_or(&Value::Null))?;
        let Ok(mut state) = open.state.try_lock() else {
            return Err(RpcError::invalid_params(
                "this session is already running a prompt; cancel it or wait for its answer",
            ));
        };
        if let Some(command) = commands::slash(&task) {
            let reply = match command {
                Ok(command) => run_command(&mut state, command).await,
                Err(why) => why,
            };
            state
                .ui
                .inner()
                .send(updates::chunk("agent_message_chunk", &reply));
            return Ok(json!({ "stopReason": "end_turn" }));
        }
        let State { agent, ui, rules } = &mut *state;
        // A cancel that came between prompts does not stop this one.
        open.control.cancelled.store(false, Ordering::SeqCst);
        open.control.interrupt.take();
        let tools = agent.tools();
        let facts = tools
            .names()
            .into_iter()
            .filter_map(|name| Some((name.clone(), tools.facts(&name)?)))
            .collect();
        ui.inner().set_tools(facts, rules.policy());
        let before = agent.usage();
        let result = agent.run(&task, ui).await;
        let usage = updates::turn_usage(before, agent.usage());
        let cancelled = open.control.cancelled.swap(false, Ordering::SeqCst);
        open.control.interrupt.take();
        let next_mode = open
            .control
            .next_mode
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(mode) = next_mode {
            set_mode(&mut state, mode);
        }
        // A request that failed after a cancel is the cancel's doing.
        let summary = match result {
            Ok(summary) => summary,
            Err(_) if cancelled => return Ok(prompt_answer("cancelled", usage)),
            Err(e) => {
                return Err(RpcError::internal(format!(
                    "the model request failed: {e}; the conversation was kept"
                )));
            }
        };
        let reason =
            updates::stop_reason(summary.outcome, summary.finish_reason.as_deref(), cancelled);
        Ok(prompt_answer(reason, usage))
    }

    /// `session/cancel`: the prompt stops at its next step boundary (every
    /// call already started is answered) and answers `cancelled`.
    fn cancel(&self, params: &Value) {
        if let Ok(open) = self.session(params) {
            open.control.cancelled.store(true, Ordering::SeqCst);
            open.control.interrupt.request();
        }
    }

    /// `session/set_mode`: one of the five permission modes, from the
    /// next tool call on (from the next prompt when one is running).
    async fn set_mode(&self, params: &Value) -> Result<Value, RpcError> {
        let open = self.session(params)?;
        let name = str_param(params, "modeId")?;
        let mode = Mode::from_name(name).ok_or_else(|| {
            RpcError::invalid_params(format!("mode {name:?} is not one of {}", Mode::names()))
        })?;
        // A running prompt holds the state (its agent): the mode is then
        // put in place when that prompt ends, and the answer does not
        // wait for it.
        match open.state.try_lock() {
            Ok(mut state) => set_mode(&mut state, mode),
            Err(_) => {
                *open
                    .control
                    .next_mode
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(mode);
            }
        }
        Ok(json!({}))
    }

    /// Shuts every session's servers down (the editor is gone).
    async fn shutdown(&self) {
        let open: Vec<Arc<Open>> = self
            .sessions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain()
            .map(|(_, open)| open)
            .collect();
        for open in open {
            if let Ok(open) = Arc::try_unwrap(open) {
                let State { agent, .. } = open.state.into_inner();
                agent.into_tools().shutdown().await;
            }
        }
    }
}

/// Puts `mode`'s policy in place for the next tool call.
fn set_mode(state: &mut State, mode: Mode) {
    state.rules.mode = mode;
    let policy = state.rules.policy();
    state.agent.tools_mut().offer(policy.clone());
    state.agent.set_policy(policy);
}

/// Runs a slash command on a session; returns what to tell the user.
/// A command that changes the history writes the session.
async fn run_command(state: &mut State, command: Command) -> String {
    let State { agent, ui, rules } = state;
    match command {
        Command::Undo => match agent.edit_history(Transcript::undo_last_turn) {
            Some(removed) => {
                ui.checkpoint(agent.transcript());
                format!("undone: the last task and {removed} messages removed")
            }
            None => "nothing to undo".to_owned(),
        },
        Command::Compact => {
            let replaced = agent.compact().await;
            ui.checkpoint(agent.transcript());
            if replaced == 0 {
                "nothing to compact: the history is short".to_owned()
            } else {
                format!("compacted: {replaced} messages replaced by a summary")
            }
        }
        Command::Reset => {
            let removed = agent.edit_history(|history| history.truncate_from(1));
            ui.checkpoint(agent.transcript());
            format!("reset: {removed} messages removed, a fresh conversation")
        }
        Command::Usage => format!("usage: {}", agent.usage()),
        Command::Tools => crate::cli::offered(agent.tools(), &rules.policy())
            .into_iter()
            .map(|t| t.line())
            .collect::<Vec<_>>()
            .join("\n"),
        Command::Mode(mode) => {
            set_mode(state, mode);
            // The agent changed the mode, so the editor is told.
            state.ui.inner().send(json!({
                "sessionUpdate": "current_mode_update",
                "currentModeId": mode.name(),
            }));
            format!("mode: {}", mode.name())
        }
        Command::Help => commands::help(),
        Command::Exit => String::new(),
    }
}

/// A `session/prompt` answer: the stop reason, and the prompt's token
/// usage when it is known ([`updates::turn_usage`]).
fn prompt_answer(stop_reason: &str, usage: Option<Value>) -> Value {
    let mut answer = json!({ "stopReason": stop_reason });
    if let Some(usage) = usage {
        answer["usage"] = usage;
    }
    answer
}

fn str_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, RpcError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params(format!("missing string parameter {key:?}")))
}

/// The answer to `initialize`: version 1 whatever the editor asked (it
/// disconnects if it cannot speak it), and only what is implemented.
pub fn initialize(_params: &Value) -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": { "image": false, "audio": false, "embeddedContext": true },
            "mcpCapabilities": { "http": true, "sse": false },
        },
        "authMethods": [],
        "agentInfo": { "name": "nanohermes", "title": "NanoHermes", "version": env!("CARGO_PKG_VERSION") },
    })
}

/// The five permission modes as the session's modes.
pub fn modes(current: Mode) -> Value {
    let available: Vec<Value> = Mode::ALL
        .iter()
        .map(|mode| {
            let description = match mode {
                Mode::Default => "The shell and destructive tools ask first",
                Mode::AcceptEdits => "File edits run; the shell and other destructive tools ask",
                Mode::Plan => "Read-only: only tools that only read",
                Mode::Goal => "Unattended: nothing asks",
                Mode::Debug => "Read-only tools plus the shell, which asks",
            };
            json!({ "id": mode.name(), "name": mode.name(), "description": description })
        })
        .collect();
    json!({ "currentModeId": current.name(), "availableModes": available })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_states_version_1_and_only_what_is_implemented() {
        let answer = initialize(&json!({"protocolVersion": 7}));
        assert_eq!(answer["protocolVersion"], 1);
        assert_eq!(answer["agentCapabilities"]["loadSession"], true);
        assert_eq!(
            answer["agentCapabilities"]["promptCapabilities"],
            json!({"image": false, "audio": false, "embeddedContext": true})
        );
        assert_eq!(
            answer["agentCapabilities"]["mcpCapabilities"],
            json!({"http": true, "sse": false})
        );
    }

    #[test]
    fn the_five_modes_are_offered() {
        let modes = modes(Mode::AcceptEdits);
        assert_eq!(modes["currentModeId"], "accept-edits");
        let ids: Vec<&str> = modes["availableModes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["default", "accept-edits", "plan", "goal", "debug"]);
    }

    #[tokio::test]
    async fn bad_and_unknown_messages_are_answered_and_the_connection_goes_on() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let server = Server::new(Peer::new(tx), Options::default());
        let next = async |rx: &mut mpsc::UnboundedReceiver<String>| -> Value {
            serde_json::from_str(&rx.recv().await.unwrap()).unwrap()
        };
        server.receive("{oops");
        assert_eq!(next(&mut rx).await["error"]["code"], rpc::PARSE_ERROR);
        server.receive(r#"{"jsonrpc":"2.0","id":1,"method":"session/fly"}"#);
        let answer = next(&mut rx).await;
        assert_eq!(
            (answer["id"].clone(), answer["error"]["code"].clone()),
            (json!(1), json!(METHOD_NOT_FOUND))
        );
        server.receive(r#"{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}"#);
        assert_eq!(next(&mut rx).await["error"]["code"], RESOURCE_NOT_FOUND);
        server.receive(r#"{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"relative","mcpServers":[]}}"#);
        assert_eq!(next(&mut rx).await["error"]["code"], rpc::INVALID_PARAMS);
        // An unknown notification is ignored; the next request is answered.
        server.receive(r#"{"jsonrpc":"2.0","method":"session/wave","params":{}}"#);
        server.receive(
            r#"{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":1}}"#,
        );
        assert_eq!(next(&mut rx).await["result"]["protocolVersion"], 1);
    }
}
