//! The user's yes / no / always for a call the policy asks about
//! ([`super::Verdict::Ask`]).
//!
//! On a terminal (stdin and stderr) the user is asked, one question at a
//! time even when calls run concurrently; "always" is remembered for the
//! tool until the process ends. Without a terminal nobody can answer, so
//! the call is denied with [`UNANSWERED`]; a user's no is [`DENIED`]. Both
//! tell the model to stop instead of retrying, and both are `ERROR:`
//! results, like the policy's refusals: a denied call is shown as failed
//! (the tool line, `is_error` in the JSON formats), never as `ok`.

use std::collections::HashSet;
use std::io::{BufRead, IsTerminal, Write};
use std::sync::{Arc, Mutex};

/// The result the model reads when the user answers no.
pub const DENIED: &str =
    "ERROR: Command denied by the user. Do not retry it; ask what to do instead.";

/// The result the model reads when the call needs a yes and nobody can
/// give one (no terminal): the run counts these and says how to allow
/// them ([`is_unanswered`]).
pub const UNANSWERED: &str = "ERROR: Command denied: it needs the user's approval and nobody can answer here (no terminal, or a host that cannot be asked). Do not retry it; say what you wanted to run instead.";

/// Whether `result` is the denial of a call nobody could approve.
pub fn is_unanswered(result: &str) -> bool {
    result == UNANSWERED
}

/// How much of a call's arguments the question shows.
const SHOWN_ARGUMENTS: usize = 400;

/// The user's answer to one question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Run this call.
    Yes,
    /// Do not run it.
    No,
    /// Run it and every later call to the same tool in this run.
    Always,
}

impl Answer {
    /// `y`/`yes`, `a`/`always`; anything else (an empty line, end of
    /// input) is no.
    pub fn parse(line: &str) -> Answer {
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Answer::Yes,
            "a" | "always" => Answer::Always,
            _ => Answer::No,
        }
    }
}

/// Something that can put a question to the user and wait for the answer.
pub trait Prompter: Send + Sync {
    /// Asks `question` and blocks until answered.
    fn ask(&self, question: &str) -> Answer;
}

/// Something that asks without holding a thread while it waits: an MCP
/// host answering `elicitation/create`, or an input-required round trip.
pub trait AsyncPrompter: Send + Sync {
    /// Asks about the call to `tool` with `arguments` (the model's raw
    /// text, unclamped); the prompter words the question for its host.
    fn ask(&self, tool: &str, arguments: &str) -> futures::future::BoxFuture<'static, Answer>;
}

/// Who answers: a blocking prompter runs on the blocking pool.
#[derive(Clone)]
enum Asker {
    Blocking(Arc<dyn Prompter>),
    Async(Arc<dyn AsyncPrompter>),
}

/// Asks on stderr and reads the answer from stdin.
#[derive(Debug, Default)]
pub struct TerminalPrompter;

impl Prompter for TerminalPrompter {
    fn ask(&self, question: &str) -> Answer {
        let mut stderr = std::io::stderr().lock();
        // A failed write still reads the answer: the terminal may show it.
        let _ = write!(stderr, "\n{question} ");
        let _ = stderr.flush();
        drop(stderr);
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(_) => Answer::parse(&line),
            Err(_) => Answer::No,
        }
    }
}

/// The approvals of one run: who answers, and what was answered "always".
pub struct Approvals {
    prompter: Option<Asker>,
    always: Mutex<HashSet<String>>,
    /// Held while a question is open, so concurrent calls ask in turn.
    asking: tokio::sync::Mutex<()>,
}

impl Default for Approvals {
    /// [`Approvals::denying`].
    fn default() -> Self {
        Approvals::denying()
    }
}

impl std::fmt::Debug for Approvals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Approvals")
            .field("interactive", &self.prompter.is_some())
            .finish_non_exhaustive()
    }
}

impl Approvals {
    /// Nobody to ask: every call that needs a yes is denied.
    pub fn denying() -> Approvals {
        Approvals {
            prompter: None,
            always: Mutex::default(),
            asking: tokio::sync::Mutex::new(()),
        }
    }

    /// Questions go to `prompter`.
    pub fn asking(prompter: Arc<dyn Prompter>) -> Approvals {
        Approvals {
            prompter: Some(Asker::Blocking(prompter)),
            ..Approvals::denying()
        }
    }

    /// Questions go to `prompter`, awaited.
    pub fn asking_async(prompter: Arc<dyn AsyncPrompter>) -> Approvals {
        Approvals {
            prompter: Some(Asker::Async(prompter)),
            ..Approvals::denying()
        }
    }

    /// [`TerminalPrompter`] when stdin and stderr are terminals, else
    /// [`Approvals::denying`].
    pub fn terminal() -> Approvals {
        if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
            Approvals::asking(Arc::new(TerminalPrompter))
        } else {
            Approvals::denying()
        }
    }

    /// The result of a call [`Approvals::approve`] refused: [`UNANSWERED`]
    /// when nobody could be asked, else [`DENIED`].
    pub fn denial(&self) -> &'static str {
        if self.prompter.is_some() {
            DENIED
        } else {
            UNANSWERED
        }
    }

    /// Whether the call to `name` with `arguments` (the model's raw text)
    /// may run: asks unless "always" was answered for `name` before.
    pub async fn approve(&self, name: &str, arguments: &str) -> bool {
        let Some(prompter) = self.prompter.clone() else {
            return false;
        };
        let _turn = self.asking.lock().await;
        if self.remembered(name) {
            return true;
        }
        let question = format!(
            "nanohermes wants to run `{name}` {}\nAllow? [y]es / [n]o / [a]lways for {name}:",
            mcp_tools::clamp::clamp(arguments, SHOWN_ARGUMENTS)
        );
        let answer = match prompter {
            Asker::Blocking(prompter) => {
                tokio::task::spawn_blocking(move || prompter.ask(&question))
                    .await
                    .unwrap_or(Answer::No)
            }
            Asker::Async(prompter) => prompter.ask(name, arguments).await,
        };
        match answer {
            Answer::Yes => true,
            Answer::No => false,
            Answer::Always => {
                self.always
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(name.to_owned());
                true
            }
        }
    }

    /// Whether anyone can be asked (a terminal, an MCP host).
    pub fn can_ask(&self) -> bool {
        self.prompter.is_some()
    }

    /// Asks `question` about this one call to `name`, whatever was answered
    /// before: an earlier "always" for `name` does not answer it, and an
    /// "always" now counts as yes for this call only, never remembered.
    /// For what no mode approves by itself ([`super::protected`]).
    pub async fn approve_once(&self, name: &str, question: String) -> bool {
        let Some(prompter) = self.prompter.clone() else {
            return false;
        };
        let _turn = self.asking.lock().await;
        let answer = match prompter {
            Asker::Blocking(prompter) => {
                tokio::task::spawn_blocking(move || prompter.ask(&question))
                    .await
                    .unwrap_or(Answer::No)
            }
            Asker::Async(prompter) => prompter.ask(name, &question).await,
        };
        matches!(answer, Answer::Yes | Answer::Always)
    }

    fn remembered(&self, name: &str) -> bool {
        self.always
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers from a list, and counts the questions.
    struct Scripted(Mutex<Vec<Answer>>);

    impl Prompter for Scripted {
        fn ask(&self, _question: &str) -> Answer {
            self.0.lock().unwrap().remove(0)
        }
    }

    #[tokio::test]
    async fn always_is_remembered_per_tool_and_no_prompter_denies() {
        let scripted = Arc::new(Scripted(Mutex::new(vec![
            Answer::No,
            Answer::Always,
            Answer::Yes,
        ])));
        let approvals = Approvals::asking(scripted.clone());
        assert!(!approvals.approve("run_command", "{}").await);
        assert!(approvals.approve("run_command", "{}").await);
        // Remembered: not asked again (the list would run dry).
        assert!(approvals.approve("run_command", "{}").await);
        assert!(approvals.approve("write_file", "{}").await);
        assert!(scripted.0.lock().unwrap().is_empty());

        assert_eq!(approvals.denial(), DENIED);

        assert!(!Approvals::denying().approve("run_command", "{}").await);
        assert_eq!(Approvals::denying().denial(), UNANSWERED);
        assert!(is_unanswered(Approvals::denying().denial()));
        assert!(DENIED.starts_with("ERROR: ") && UNANSWERED.starts_with("ERROR: "));
    }

    #[tokio::test]
    async fn approve_once_ignores_and_never_records_always() {
        let scripted = Arc::new(Scripted(Mutex::new(vec![
            Answer::Always,
            Answer::Always,
            Answer::No,
            Answer::Yes,
        ])));
        let approvals = Approvals::asking(scripted.clone());
        assert!(approvals.approve("write_file", "{}").await);
        // Remembered for ordinary calls, but a once-question is still asked.
        assert!(approvals.approve_once("write_file", "q".into()).await);
        assert!(!approvals.approve_once("write_file", "q".into()).await);
        assert!(approvals.approve_once("edit_file", "q".into()).await);
        // That "always" was not remembered for edit_file.
        assert!(!approvals.remembered("edit_file"));
        assert!(scripted.0.lock().unwrap().is_empty());
        assert!(!Approvals::denying().can_ask());
        assert!(
            !Approvals::denying()
                .approve_once("write_file", "q".into())
                .await
        );
    }

    #[test]
    fn answers_parse_leniently_and_default_to_no() {
        assert_eq!(Answer::parse("y\n"), Answer::Yes);
        assert_eq!(Answer::parse(" YES "), Answer::Yes);
        assert_eq!(Answer::parse("a"), Answer::Always);
        assert_eq!(Answer::parse("always"), Answer::Always);
        assert_eq!(Answer::parse(""), Answer::No);
        assert_eq!(Answer::parse("sure"), Answer::No);
    }
}
