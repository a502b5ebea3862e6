//! The slash commands of the interactive mode, parsed from one input line.

use nanohermes_config::Mode;

/// What one line at the prompt asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// Nothing (an empty or blank line).
    Empty,
    /// A task for the model.
    Task(String),
    /// A slash command.
    Command(Command),
    /// A line that starts with `/` but is not a command: what to tell the user.
    Unknown(String),
}

/// The slash commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Remove the last user turn and everything after it.
    Undo,
    /// Replace the older history by a summary now.
    Compact,
    /// Start the conversation over (the system message stays).
    Reset,
    /// The token usage so far.
    Usage,
    /// The tools the model sees.
    Tools,
    /// Switch the permission mode.
    Mode(Mode),
    /// The commands.
    Help,
    /// Leave.
    Exit,
}

/// The help text, one command a line.
pub const HELP: &str = "\
/undo          remove the last task and everything after it
/compact       replace the older history by a summary now
/reset         start the conversation over
/usage         the token usage so far
/tools         the tools the model sees
/mode MODE     switch the permission mode (default, accept-edits, plan, goal, debug)
/help          this list
/exit          leave (so do Ctrl-D, and Ctrl-C twice at an empty prompt)
Ctrl-C during a task stops it at the next step boundary.";

/// Parses one line. A line that starts with `//` is a task that starts with `/`.
pub fn parse(line: &str) -> Line {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return Line::Empty;
    }
    if let Some(task) = trimmed.strip_prefix("//") {
        return Line::Task(format!("/{task}"));
    }
    let Some(rest) = trimmed.strip_prefix('/') else {
        return Line::Task(trimmed.to_owned());
    };
    let mut words = rest.split_whitespace();
    let name = words.next().unwrap_or_default();
    let argument = words.next();
    let extra = words.next().is_some();
    let bare = |command: Command| {
        if argument.is_some() {
            Line::Unknown(format!(
                "/{name} takes no argument; /help lists the commands"
            ))
        } else {
            Line::Command(command)
        }
    };
    match name {
        "undo" => bare(Command::Undo),
        "compact" => bare(Command::Compact),
        "reset" | "clear" => bare(Command::Reset),
        "usage" => bare(Command::Usage),
        "tools" => bare(Command::Tools),
        "help" | "?" => bare(Command::Help),
        "exit" | "quit" => bare(Command::Exit),
        "mode" => match argument.and_then(Mode::from_name) {
            Some(mode) if !extra => Line::Command(Command::Mode(mode)),
            _ => Line::Unknown(format!("/mode takes one of: {}", Mode::names())),
        },
        _ => Line::Unknown(format!(
            "/{name} is not a command; /help lists them (start a task with // to send a leading /)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_tasks_commands_or_explained_mistakes() {
        assert_eq!(parse("  \n"), Line::Empty);
        assert_eq!(parse(" fix it \n"), Line::Task("fix it".into()));
        assert_eq!(parse("//etc is odd"), Line::Task("/etc is odd".into()));
        assert_eq!(parse("/undo"), Line::Command(Command::Undo));
        assert_eq!(parse(" /exit "), Line::Command(Command::Exit));
        assert_eq!(
            parse("/mode plan"),
            Line::Command(Command::Mode(Mode::Plan))
        );
        assert_eq!(
            parse("/mode acceptEdits"),
            Line::Command(Command::Mode(Mode::AcceptEdits))
        );
        for bad in ["/mode", "/mode nope", "/mode plan debug"] {
            let Line::Unknown(why) = parse(bad) else {
                panic!("{bad}")
            };
            assert!(why.starts_with("/mode takes one of: default"), "{why}");
        }
        let Line::Unknown(why) = parse("/usage now") else {
            panic!()
        };
        assert_eq!(why, "/usage takes no argument; /help lists the commands");
        let Line::Unknown(why) = parse("/etc/passwd") else {
            panic!()
        };
        assert!(why.starts_with("/etc/passwd is not a command"), "{why}");
    }
}
