//! The todo list itself: items, validation and rendering. Pure data, no IO.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Most items one list may hold.
pub const MAX_ITEMS: usize = 100;
/// Longest `content` of one item, in characters.
pub const MAX_CONTENT_CHARS: usize = 500;

/// The state of one todo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
// No doc comments on the variants: schemars then emits a plain `enum`, a
// third of the bytes of a `oneOf` of documented consts, and the names say it.
#[allow(missing_docs)]
pub enum Status {
    Pending,
    InProgress,
    Completed,
}

/// One todo item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
// No description in the schema: `todos` already says what an item is, and
// every request carries the schema.
#[schemars(description = "")]
pub struct Todo {
    /// A short imperative.
    pub content: String,
    /// Exactly one in_progress while working.
    pub status: Status,
}

/// Checks a whole list and returns it with each content trimmed, or says
/// which item is wrong and how to fix it.
pub fn validate(todos: Vec<Todo>) -> Result<Vec<Todo>, String> {
    if todos.len() > MAX_ITEMS {
        return Err(format!(
            "{} todos given, over the limit of {MAX_ITEMS}: merge small steps into larger ones",
            todos.len()
        ));
    }
    let mut in_progress = Vec::new();
    let mut checked = Vec::with_capacity(todos.len());
    for (index, todo) in todos.into_iter().enumerate() {
        let number = index + 1;
        let content = todo.content.trim();
        if content.is_empty() {
            return Err(format!(
                "todo {number} has empty content: give every todo a short description"
            ));
        }
        let chars = content.chars().count();
        if chars > MAX_CONTENT_CHARS {
            return Err(format!(
                "todo {number} is {chars} characters long, over the limit of {MAX_CONTENT_CHARS}: keep each todo to one short sentence"
            ));
        }
        if todo.status == Status::InProgress {
            in_progress.push(number.to_string());
        }
        checked.push(Todo {
            content: content.to_string(),
            status: todo.status,
        });
    }
    if in_progress.len() > 1 {
        return Err(format!(
            "{} todos are in_progress (numbers {}): at most one may be in_progress; mark the others pending or completed",
            in_progress.len(),
            in_progress.join(", ")
        ));
    }
    Ok(checked)
}

/// Renders the list as the model reads it: a count line, then one line per
/// item marked `[x]` completed, `[>]` in progress, `[ ]` pending.
pub fn render(todos: &[Todo]) -> String {
    if todos.is_empty() {
        return "Todo list is empty\n".to_string();
    }
    let count = |status| todos.iter().filter(|t| t.status == status).count();
    let mut out = format!(
        "Todos: {} completed, {} in progress, {} pending ({} total)\n",
        count(Status::Completed),
        count(Status::InProgress),
        count(Status::Pending),
        todos.len()
    );
    for todo in todos {
        let mark = match todo.status {
            Status::Completed => "[x]",
            Status::InProgress => "[>]",
            Status::Pending => "[ ]",
        };
        let one_line = todo
            .content
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let _ = writeln!(out, "{mark} {one_line}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn todo(content: &str, status: Status) -> Todo {
        Todo {
            content: content.to_string(),
            status,
        }
    }

    #[test]
    fn a_list_renders_with_marks_and_counts() {
        let list = vec![
            todo("Write the parser", Status::Completed),
            todo("Test\nthe parser", Status::InProgress),
            todo("Update the docs", Status::Pending),
        ];
        assert_eq!(
            render(&validate(list).unwrap()),
            "Todos: 1 completed, 1 in progress, 1 pending (3 total)\n\
             [x] Write the parser\n[>] Test the parser\n[ ] Update the docs\n"
        );
        assert_eq!(render(&[]), "Todo list is empty\n");
    }

    #[test]
    fn two_items_in_progress_are_refused() {
        let list = vec![
            todo("a", Status::InProgress),
            todo("b", Status::Pending),
            todo("c", Status::InProgress),
        ];
        assert_eq!(
            validate(list).unwrap_err(),
            "2 todos are in_progress (numbers 1, 3): at most one may be in_progress; mark the others pending or completed"
        );
    }

    #[test]
    fn empty_content_is_refused_with_its_number() {
        let list = vec![todo("a", Status::Pending), todo("  \n", Status::Pending)];
        assert_eq!(
            validate(list).unwrap_err(),
            "todo 2 has empty content: give every todo a short description"
        );
    }

    #[test]
    fn oversized_lists_and_items_are_refused() {
        let many = vec![todo("a", Status::Pending); MAX_ITEMS + 1];
        assert!(validate(many).unwrap_err().starts_with("101 todos given"));
        let long = vec![todo(&"x".repeat(MAX_CONTENT_CHARS + 1), Status::Pending)];
        assert!(
            validate(long)
                .unwrap_err()
                .starts_with("todo 1 is 501 characters long")
        );
    }

    #[test]
    fn content_is_trimmed() {
        let list = validate(vec![todo("  a  ", Status::Pending)]).unwrap();
        assert_eq!(list[0].content, "a");
    }
}
