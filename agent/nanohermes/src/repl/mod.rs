//! `nanohermes` with no command: the interactive mode.
//!
//! One [`Agent`] for the whole session: each line at the prompt is one
//! [`Agent::run`] over the same history, kept in a session file like
//! `run`'s ([`session::open`], [`Keeper`]), so `--continue` and `--resume`
//! work here too. Lines that start with `/` are commands ([`commands`]).
//!
//! Ctrl-C: during a task it raises the interrupt flag (the loop stops at
//! its next step boundary, the history stays valid); a second one during
//! the same task quits at once. At the prompt the line editor reads it
//! (the terminal is raw there): twice in a row exits.

pub(crate) mod commands;
mod input;
mod ui;

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::cli::EXIT_INTERRUPTED;
use crate::config::{Config, Rules};
use nanohermes_core::agent::{Agent, Outcome};
use nanohermes_core::events::RunEvents;
use nanohermes_core::interrupt::Interrupt;
use nanohermes_core::policy::approval::Approvals;
use nanohermes_core::transcript::Transcript;
use nanohermes_hub::Hub;
use nanohermes_session::{self as session, Keeper, SessionArgs};

use commands::{Command, Line};
use input::{Input, Read};
use ui::{ReplUi, Style};

/// The prompt.
const PROMPT: &str = "> ";

/// The interactive session: start the servers, read lines until `/exit`,
/// Ctrl-D or Ctrl-C twice, shut the servers down.
pub async fn main(config: Config, session: &SessionArgs) -> anyhow::Result<ExitCode> {
    let opened = session::open(session, &config.workspace).map_err(anyhow::Error::msg)?;
    let mut ui = Keeper::new(ReplUi::new(Style::detect()), &opened);
    if let Some(warning) = &opened.warning {
        ui.notice(warning);
    }
    let rules = config.rules.clone();
    // Questions are asked with the spinner stopped (it would draw over
    // them); without a terminal nobody is asked, as in `run`.
    let tty = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let approvals = if tty {
        Approvals::asking(Arc::new(ui.inner().prompter()))
    } else {
        Approvals::denying()
    };
    let started = crate::app::start_agent(config, &opened, approvals).await?;
    let surfaced = started.agent.tools().surfaced();
    ui.keep_surfaced(Box::new(move || surfaced.names()));
    for warning in &started.warnings {
        ui.notice(warning);
    }
    let agent = started.agent;
    let busy = Arc::new(AtomicBool::new(false));
    watch_ctrl_c(agent.interrupt(), busy.clone());
    if opened.resumed() {
        ui.notice(&format!(
            "continuing session {} ({} messages)",
            opened.file.id,
            opened.file.messages.len()
        ));
    }
    ui.notice("type a task, /help for the commands, /exit to leave");

    let mut repl = Repl {
        agent,
        rules,
        busy,
        ui,
    };
    let mut input = Input::start();
    let mut interrupted_once = false;
    loop {
        let line = match input.read(PROMPT).await {
            Read::Line(line) => line,
            Read::Interrupted if interrupted_once => break,
            Read::Interrupted => {
                interrupted_once = true;
                repl.ui.notice("press Ctrl-C again to exit (or type /exit)");
                continue;
            }
            Read::End => break,
            Read::Failed(why) => {
                repl.ui.notice(&why);
                break;
            }
        };
        interrupted_once = false;
        match commands::parse(&line) {
            Line::Empty => {}
            Line::Task(task) => repl.task(&task).await,
            Line::Unknown(why) => repl.ui.notice(&why),
            Line::Command(Command::Exit) => break,
            Line::Command(command) => repl.command(command).await,
        }
    }
    drop(input);
    let Repl { agent, mut ui, .. } = repl;
    ui.notice(&format!("usage: {}", agent.usage()));
    // Left before its first task, the session has no file: no hint.
    if let Some(hint) = opened.resume_hint() {
        ui.notice(&hint);
    }
    agent.into_tools().shutdown().await;
    Ok(ExitCode::SUCCESS)
}

/// During a task: the first Ctrl-C raises `interrupt`, a second one quits.
/// At the prompt the terminal is raw, so a SIGINT there came from `kill`:
/// it is ignored.
fn watch_ctrl_c(interrupt: Interrupt, busy: Arc<AtomicBool>) {
    let Ok(mut signals) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
    else {
        return;
    };
    tokio::spawn(async move {
        while signals.recv().await.is_some() {
            if !busy.load(Ordering::SeqCst) {
                continue;
            }
            if interrupt.is_requested() {
                mcp_tools::spawn::kill_all_spawned();
                std::process::exit(i32::from(EXIT_INTERRUPTED));
            }
            interrupt.request();
            use std::io::Write as _;
            let _ = writeln!(
                std::io::stderr(),
                "\nnanohermes: interrupt requested; stopping at the next step boundary (Ctrl-C again to quit now)"
            );
        }
    });
}

/// The session between lines.
struct Repl {
    agent: Agent<Hub>,
    rules: Rules,
    busy: Arc<AtomicBool>,
    ui: Keeper<ReplUi>,
}

impl Repl {
    /// One task: one run over the kept history.
    async fn task(&mut self, task: &str) {
        self.busy.store(true, Ordering::SeqCst);
        self.ui.inner().wait();
        let result = self.agent.run(task, &mut self.ui).await;
        self.busy.store(false, Ordering::SeqCst);
        // A Ctrl-C after the last step boundary is spent with the task.
        self.agent.interrupt().take();
        self.ui.inner().finish_line();
        match result {
            Ok(summary) if summary.outcome == Outcome::Interrupted => {
                self.ui.notice("interrupted — the conversation was kept");
            }
            Ok(_) => {}
            Err(error) => self.ui.notice(&format!(
                "the model request failed: {error}; the conversation was kept: try again, or /undo"
            )),
        }
    }

    async fn command(&mut self, command: Command) {
        match command {
            Command::Undo => match self.agent.edit_history(Transcript::undo_last_turn) {
                Some(removed) => {
                    self.save();
                    self.ui.notice(&format!(
                        "undone: the last task and {removed} messages removed"
                    ));
                }
                None => self.ui.notice("nothing to undo"),
            },
            Command::Compact => {
                let replaced = self.agent.compact().await;
                self.save();
                if replaced == 0 {
                    self.ui.notice("nothing to compact: the history is short");
                } else {
                    self.ui.notice(&format!(
                        "compacted: {replaced} messages replaced by a summary"
                    ));
                }
            }
            Command::Reset => {
                // Only the system message stays.
                let removed = self.agent.edit_history(|history| history.truncate_from(1));
                self.save();
                self.ui.notice(&format!(
                    "reset: {removed} messages removed, a fresh conversation"
                ));
            }
            Command::Usage => {
                let line = format!("usage: {}", self.agent.usage());
                self.ui.inner().say(&line);
            }
            Command::Tools => {
                let policy = self.rules.policy();
                let lines: Vec<String> = crate::cli::offered(self.agent.tools(), &policy)
                    .into_iter()
                    .map(|t| t.line())
                    .collect();
                self.ui.inner().say(&lines.join("\n"));
            }
            Command::Mode(mode) => {
                self.rules.mode = mode;
                let policy = self.rules.policy();
                self.agent.tools_mut().offer(policy.clone());
                self.agent.set_policy(policy);
                self.ui.notice(&format!("mode: {}", mode.name()));
            }
            Command::Help => self.ui.inner().say(commands::HELP),
            Command::Exit => {}
        }
    }

    /// Writes the session after a command changed the history.
    fn save(&mut self) {
        self.ui.checkpoint(self.agent.transcript());
    }
}
