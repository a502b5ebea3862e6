//! The prompt: a rustyline editor on a thread of its own, so the runtime
//! keeps serving the servers and the signal watcher while the user types.

use rustyline::error::ReadlineError;

/// What one read at the prompt gave.
#[derive(Debug)]
pub enum Read {
    /// A line (without its line end).
    Line(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D, or the end of input.
    End,
    /// The terminal failed: what to tell the user.
    Failed(String),
}

/// The line editor's thread and the way to it.
pub struct Input {
    prompts: std::sync::mpsc::Sender<String>,
    lines: tokio::sync::mpsc::UnboundedReceiver<Read>,
}

impl Input {
    /// Starts the editor's thread (it ends when the `Input` is dropped).
    pub fn start() -> Input {
        let (prompts, wanted) = std::sync::mpsc::channel::<String>();
        let (send, lines) = tokio::sync::mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let mut editor = match rustyline::DefaultEditor::new() {
                Ok(editor) => editor,
                Err(e) => {
                    let _ = send.send(Read::Failed(format!("cannot open the line editor: {e}")));
                    return;
                }
            };
            for prompt in wanted {
                let read = loop {
                    match editor.readline(&prompt) {
                        Ok(line) => {
                            if !line.trim().is_empty() {
                                let _ = editor.add_history_entry(line.as_str());
                            }
                            break Read::Line(line);
                        }
                        Err(ReadlineError::Interrupted) => break Read::Interrupted,
                        Err(ReadlineError::Eof) => break Read::End,
                        // A resize is not an answer: ask again.
                        Err(ReadlineError::Signal(_)) => continue,
                        Err(e) => break Read::Failed(format!("cannot read the prompt: {e}")),
                    }
                };
                if send.send(read).is_err() {
                    return;
                }
            }
        });
        Input { prompts, lines }
    }

    /// Shows `prompt` and waits for the user.
    pub async fn read(&mut self, prompt: &str) -> Read {
        if self.prompts.send(prompt.to_owned()).is_err() {
            return self.lines.recv().await.unwrap_or(Read::End);
        }
        self.lines.recv().await.unwrap_or(Read::End)
    }
}
