//! The interactive mode's slash commands in an editor: announced with
//! `available_commands_update`, typed as a one-line prompt, parsed by the
//! interactive mode's own parser and answered as the agent's message
//! (the model is not asked). `/exit` has no meaning there and is left out.

use serde_json::{Value, json};

use crate::repl::commands::{Command, Line, parse};

/// The commands an editor offers, with their hints.
const COMMANDS: &[(&str, &str, Option<&str>)] = &[
    ("undo", "Remove the last task and everything after it", None),
    (
        "compact",
        "Replace the older history by a summary now",
        None,
    ),
    ("reset", "Start the conversation over", None),
    ("usage", "The token usage so far", None),
    ("tools", "The tools the model sees", None),
    (
        "mode",
        "Switch the permission mode",
        Some("default, accept-edits, plan, goal or debug"),
    ),
    ("help", "These commands", None),
];

/// The `available_commands_update` of every session.
pub fn available() -> Value {
    let commands: Vec<Value> = COMMANDS
        .iter()
        .map(|(name, description, hint)| {
            let mut command = json!({ "name": name, "description": description });
            if let Some(hint) = hint {
                command["input"] = json!({ "hint": hint });
            }
            command
        })
        .collect();
    json!({ "sessionUpdate": "available_commands_update", "availableCommands": commands })
}

/// What the editor lists for `/help`.
pub fn help() -> String {
    COMMANDS
        .iter()
        .map(|(name, description, hint)| match hint {
            Some(hint) => format!("/{name} MODE — {description} ({hint})"),
            None => format!("/{name} — {description}"),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a prompt is: a command to run, a mistake to explain, or a task
/// (`None`). Only a one-line prompt can be a command; `//` sends a task
/// that starts with `/`.
pub fn slash(prompt: &str) -> Option<Result<Command, String>> {
    if prompt.trim().contains('\n') {
        return None;
    }
    match parse(prompt) {
        Line::Command(Command::Exit) => Some(Err(
            "/exit does nothing in an editor: close the agent's thread instead".to_owned(),
        )),
        Line::Command(command) => Some(Ok(command)),
        Line::Unknown(why) => Some(Err(why)),
        Line::Task(_) | Line::Empty => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nanohermes_config::Mode;

    #[test]
    fn one_line_slash_prompts_are_commands_and_the_rest_are_tasks() {
        assert_eq!(slash("/undo"), Some(Ok(Command::Undo)));
        assert_eq!(slash(" /mode plan "), Some(Ok(Command::Mode(Mode::Plan))));
        assert!(matches!(slash("/fly"), Some(Err(why)) if why.contains("not a command")));
        assert!(matches!(slash("/exit"), Some(Err(_))));
        assert_eq!(slash("fix it"), None);
        assert_eq!(slash("//etc is odd"), None);
        assert_eq!(slash("/undo\nand more"), None);
    }

    #[test]
    fn every_offered_command_parses_and_none_is_exit() {
        let update = available();
        assert_eq!(update["sessionUpdate"], "available_commands_update");
        for command in update["availableCommands"].as_array().unwrap() {
            let name = command["name"].as_str().unwrap();
            let line = if name == "mode" {
                format!("/{name} goal")
            } else {
                format!("/{name}")
            };
            assert!(matches!(slash(&line), Some(Ok(_))), "{line}");
        }
        assert!(help().contains("/mode MODE"));
    }
}
