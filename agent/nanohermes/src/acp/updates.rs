//! What the editor is shown: the loop's events and the stored history as
//! ACP `session/update` payloads (protocol version 1), and a prompt's
//! content blocks as the user message. Pure functions, so every mapping is
//! tested here without an editor.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::rpc::RpcError;
use nanohermes_core::toolbox::ToolFacts;
use nanohermes_core::usage::UsageLedger;

/// A `session/update` notification's params.
pub fn notification(session: &str, update: Value) -> Value {
    json!({ "sessionId": session, "update": update })
}

/// A streamed piece of text: `kind` is `agent_message_chunk`,
/// `agent_thought_chunk` or (replayed) `user_message_chunk`.
pub fn chunk(kind: &str, text: &str) -> Value {
    json!({ "sessionUpdate": kind, "content": { "type": "text", "text": text } })
}

/// The tool's name on its server: the hub's facts when known, else the
/// part after `SERVER__`.
pub fn raw_name<'a>(name: &'a str, facts: Option<&'a ToolFacts>) -> &'a str {
    match facts {
        Some(facts) if !facts.raw_name.is_empty() => &facts.raw_name,
        _ => name.rsplit("__").next().unwrap_or(name),
    }
}

/// Whether the call is one of the built-in files server's writes, whose
/// change is shown as a diff. Without facts (a replay, an unknown tool)
/// the bare names count.
fn is_builtin(name: &str, facts: Option<&ToolFacts>, server: &str) -> bool {
    match facts {
        Some(facts) => facts.builtin && facts.server == server,
        None => !name.contains("__"),
    }
}

/// ACP's tool kind (read, edit, delete, move, search, execute, fetch,
/// think, other): the built-ins by name, other servers' tools by the
/// words of their name, then by their read-only annotation.
pub fn tool_kind(name: &str, facts: Option<&ToolFacts>) -> &'static str {
    let raw = raw_name(name, facts);
    let builtin_kind = match raw {
        "read_file" | "list_dir" | "git_status" | "git_diff" | "git_log" | "task_output"
        | "memory_list" => Some("read"),
        "write_file" | "edit_file" | "apply_patch" | "git_commit" | "memory_save" => Some("edit"),
        "memory_forget" => Some("delete"),
        "grep" | "glob" | "tool_search" | "memory_search" => Some("search"),
        "run_command" | "task_start" | "task_kill" => Some("execute"),
        "web_fetch" => Some("fetch"),
        "todo_write" | "todo_read" => Some("think"),
        _ => None,
    };
    if let Some(kind) = builtin_kind.filter(|_| facts.is_none_or(|f| f.builtin)) {
        return kind;
    }
    let lower = raw.to_ascii_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if has(&["delete", "remove", "unlink", "rmdir"]) {
        "delete"
    } else if has(&["move", "rename"]) {
        "move"
    } else if has(&["search", "grep", "find", "glob", "query"]) {
        "search"
    } else if has(&["fetch", "http", "download", "url", "browse"]) {
        "fetch"
    } else if has(&["exec", "run", "command", "shell", "bash"]) {
        "execute"
    } else if has(&["write", "edit", "update", "create", "patch", "save", "set"]) {
        "edit"
    } else if has(&["think", "plan", "todo"]) {
        "think"
    } else if has(&["read", "get", "list", "show", "view", "cat"])
        || facts.is_some_and(|f| f.read_only)
    {
        "read"
    } else {
        "other"
    }
}

/// A call's arguments as JSON (`{}` when they are not one object).
pub fn arguments(text: &str) -> Value {
    match serde_json::from_str::<Value>(text) {
        Ok(value @ Value::Object(_)) => value,
        _ => json!({}),
    }
}

fn string_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// A short title: what the call does to what (`Read src/lib.rs`,
/// `Run cargo test`), else the tool and its first string argument.
pub fn tool_title(name: &str, facts: Option<&ToolFacts>, args: &Value) -> String {
    let raw = raw_name(name, facts);
    let path = string_arg(args, "path");
    let titled = match raw {
        "read_file" => path.map(|p| format!("Read {p}")),
        "write_file" => path.map(|p| format!("Write {p}")),
        "edit_file" => path.map(|p| format!("Edit {p}")),
        "list_dir" => Some(format!("List {}", path.unwrap_or("."))),
        "apply_patch" => Some("Apply patch".to_owned()),
        "run_command" | "task_start" => string_arg(args, "command").map(|c| format!("Run {c}")),
        "grep" | "glob" => string_arg(args, "pattern").map(|p| format!("Search {p}")),
        "web_fetch" => string_arg(args, "url").map(|u| format!("Fetch {u}")),
        "todo_write" => Some("Update the plan".to_owned()),
        _ => None,
    }
    .filter(|_| facts.is_none_or(|f| f.builtin));
    titled
        .unwrap_or_else(|| {
            let first = args
                .as_object()
                .and_then(|o| o.values().find_map(Value::as_str));
            match first {
                Some(value) => format!("{name} {value}"),
                None => name.to_owned(),
            }
        })
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(120)
        .collect()
}

/// `path` as the editor needs it: absolute, from the workspace.
pub fn absolute(workspace: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    if path.is_absolute() {
        path.to_owned()
    } else {
        workspace.join(path)
    }
}

/// Where the call works, for the editor to follow: the file (and line,
/// when the arguments give one) of the path-taking tools.
pub fn locations(args: &Value, workspace: &Path) -> Vec<Value> {
    let Some(path) = string_arg(args, "path") else {
        return Vec::new();
    };
    let mut location = json!({ "path": absolute(workspace, path) });
    if let Some(line) = args.get("offset").and_then(Value::as_u64) {
        location["line"] = json!(line);
    }
    vec![location]
}

/// The announcement of a call about to run.
pub fn tool_call(
    id: &str,
    name: &str,
    facts: Option<&ToolFacts>,
    raw_input: &str,
    workspace: &Path,
) -> Value {
    let args = arguments(raw_input);
    json!({
        "sessionUpdate": "tool_call",
        "toolCallId": id,
        "title": tool_title(name, facts, &args),
        "kind": tool_kind(name, facts),
        "status": "pending",
        "locations": locations(&args, workspace),
        "rawInput": args,
    })
}

/// A file a call is about to change: its text before (`None`: the file
/// does not exist yet).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEdit {
    /// The absolute path.
    pub path: PathBuf,
    /// The text before the call.
    pub old: Option<String>,
}

/// The file a built-in `write_file` or `edit_file` call changes, read
/// before it runs; `None` for every other call (and for a file that is
/// not text).
pub fn planned_edit(
    name: &str,
    facts: Option<&ToolFacts>,
    raw_input: &str,
    workspace: &Path,
) -> Option<FileEdit> {
    if !is_builtin(name, facts, "files")
        || !matches!(raw_name(name, facts), "write_file" | "edit_file")
    {
        return None;
    }
    let args = arguments(raw_input);
    let path = absolute(workspace, string_arg(&args, "path")?);
    let old = match std::fs::read(&path) {
        Ok(bytes) => Some(String::from_utf8(bytes).ok()?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(_) => return None,
    };
    Some(FileEdit { path, old })
}

/// The text a finished file write left: the file as it is now, else (it
/// cannot be read) what the arguments say it should be.
pub fn new_text(
    edit: &FileEdit,
    name: &str,
    facts: Option<&ToolFacts>,
    raw_input: &str,
) -> Option<String> {
    if let Ok(text) = std::fs::read_to_string(&edit.path) {
        return Some(text);
    }
    let args = arguments(raw_input);
    match raw_name(name, facts) {
        "write_file" => string_arg(&args, "content").map(str::to_owned),
        "edit_file" => {
            let old = edit.old.as_deref()?;
            let (from, to) = (
                string_arg(&args, "old_string")?,
                string_arg(&args, "new_string")?,
            );
            Some(
                if args.get("replace_all").and_then(Value::as_bool) == Some(true) {
                    old.replace(from, to)
                } else {
                    old.replacen(from, to, 1)
                },
            )
        }
        _ => None,
    }
}

/// A finished call: `failed` when its result is an `ERROR: …`, with a
/// diff for a file write (`edit` and the text it left), else the result
/// as text.
pub fn tool_call_done(id: &str, result: &str, edit: Option<(&FileEdit, String)>) -> Value {
    let failed = result.starts_with("ERROR: ");
    let mut content = Vec::new();
    if let (false, Some((edit, new))) = (failed, edit) {
        content.push(json!({
            "type": "diff",
            "path": edit.path,
            "oldText": edit.old,
            "newText": new,
        }));
    }
    content.push(json!({ "type": "content", "content": { "type": "text", "text": result } }));
    json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": id,
        "status": if failed { "failed" } else { "completed" },
        "content": content,
    })
}

/// A call that starts running now (it was announced `pending`).
pub fn tool_call_started(id: &str) -> Value {
    json!({ "sessionUpdate": "tool_call_update", "toolCallId": id, "status": "in_progress" })
}

/// The todo list a `todo_write` call set, as the editor's plan.
pub fn plan(raw_input: &str) -> Option<Value> {
    let args = arguments(raw_input);
    let todos = args.get("todos")?.as_array()?;
    let entries: Vec<Value> = todos
        .iter()
        .filter_map(|todo| {
            let content = string_arg(todo, "content")?.trim();
            let status = match string_arg(todo, "status")? {
                "completed" => "completed",
                "in_progress" => "in_progress",
                _ => "pending",
            };
            Some(json!({ "content": content, "priority": "medium", "status": status }))
        })
        .collect();
    Some(json!({ "sessionUpdate": "plan", "entries": entries }))
}

/// The stored history (without its system message) as the updates that
/// show it again: the user's messages, the reasoning, the answers, each
/// tool call and its result.
pub fn replay(messages: &[Value], workspace: &Path) -> Vec<Value> {
    let mut updates = Vec::new();
    let mut names = std::collections::HashMap::new();
    for message in messages {
        let text = message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match message.get("role").and_then(Value::as_str) {
            Some("user") if !text.is_empty() => updates.push(chunk("user_message_chunk", text)),
            Some("assistant") => {
                let thought = message
                    .get(nanohermes_llm::reasoning::KEY)
                    .and_then(|r| r.get("text"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !thought.is_empty() {
                    updates.push(chunk("agent_thought_chunk", thought));
                }
                if !text.is_empty() {
                    updates.push(chunk("agent_message_chunk", text));
                }
                for call in message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let id = call.get("id").and_then(Value::as_str).unwrap_or_default();
                    let function = call.get("function").cloned().unwrap_or_default();
                    let name = function
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let input = function
                        .get("arguments")
                        .and_then(Value::as_str)
                        .unwrap_or("{}");
                    names.insert(id.to_owned(), (name.to_owned(), input.to_owned()));
                    updates.push(tool_call(id, name, None, input, workspace));
                }
            }
            Some("tool") => {
                let id = message
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                updates.push(tool_call_done(id, text, None));
                if let Some((name, input)) = names.get(id)
                    && raw_name(name, None) == "todo_write"
                    && !text.starts_with("ERROR: ")
                    && let Some(plan) = plan(input)
                {
                    updates.push(plan);
                }
            }
            _ => {}
        }
    }
    updates
}

/// A prompt's content blocks as the user message: text as it is, a
/// resource link as a line naming it, an embedded text resource inside a
/// `<resource>` element. Images and audio are not accepted (not
/// advertised), and neither is an embedded binary resource.
pub fn prompt_text(blocks: &Value) -> Result<String, RpcError> {
    let Some(blocks) = blocks.as_array() else {
        return Err(RpcError::invalid_params(
            "prompt must be an array of content blocks",
        ));
    };
    let mut parts = Vec::new();
    for block in blocks {
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match kind {
            "text" => parts.push(string_arg(block, "text").unwrap_or_default().to_owned()),
            "resource_link" => {
                let uri = string_arg(block, "uri").unwrap_or_default();
                let name = string_arg(block, "name").unwrap_or(uri);
                let mut line = format!("[resource: {name}]({uri})");
                if let Some(description) = string_arg(block, "description") {
                    line.push_str(&format!(" — {description}"));
                }
                parts.push(line);
            }
            "resource" => {
                let resource = block.get("resource").cloned().unwrap_or_default();
                let uri = string_arg(&resource, "uri").unwrap_or_default();
                let Some(text) = string_arg(&resource, "text") else {
                    return Err(RpcError::invalid_params(format!(
                        "the embedded resource {uri} has no text; binary resources are not accepted"
                    )));
                };
                parts.push(format!("<resource uri=\"{uri}\">\n{text}\n</resource>"));
            }
            other => {
                return Err(RpcError::invalid_params(format!(
                    "prompt content of type {other:?} is not accepted (text, resource_link and resource are; see promptCapabilities)"
                )));
            }
        }
    }
    let text = parts.join("\n\n");
    if text.trim().is_empty() {
        return Err(RpcError::invalid_params("the prompt is empty"));
    }
    Ok(text)
}

/// A prompt's token usage as the `usage` of its `session/prompt` answer:
/// the requests between `before` and `after` (the agent's ledger when
/// the prompt began and ended). The field is ACP v1's unstable
/// `PromptResponse.usage` (the end-turn token usage draft); a client of
/// the stable schema, which does not forbid extra fields, ignores it.
/// Input counts every input token, cached or not, and output every output
/// token, reasoning included, so the total is their sum; the thought and
/// cache figures are parts of them, sent when a server reported any.
/// `None` when the prompt made no request or a request's server reported
/// no usage: an unknown count is not sent as a smaller one.
pub fn turn_usage(before: UsageLedger, after: UsageLedger) -> Option<Value> {
    let requests = after.requests.saturating_sub(before.requests);
    let unknown = after
        .requests_without_usage
        .saturating_sub(before.requests_without_usage);
    if requests == 0 || unknown > 0 {
        return None;
    }
    let delta = |after: u64, before: u64| after.saturating_sub(before);
    let input = delta(after.prompt_tokens, before.prompt_tokens);
    let output = delta(after.completion_tokens, before.completion_tokens);
    let mut usage = json!({
        "totalTokens": input + output,
        "inputTokens": input,
        "outputTokens": output,
    });
    for (key, tokens) in [
        (
            "thoughtTokens",
            delta(after.reasoning_tokens, before.reasoning_tokens),
        ),
        (
            "cachedReadTokens",
            delta(after.cached_tokens, before.cached_tokens),
        ),
        (
            "cachedWriteTokens",
            delta(after.cache_write_tokens, before.cache_write_tokens),
        ),
    ] {
        if tokens > 0 {
            usage[key] = json!(tokens);
        }
    }
    Some(usage)
}

/// ACP's stop reason for a finished run.
pub fn stop_reason(
    outcome: nanohermes_core::agent::Outcome,
    finish_reason: Option<&str>,
    cancelled: bool,
) -> &'static str {
    use nanohermes_core::agent::Outcome;
    if cancelled {
        return "cancelled";
    }
    match outcome {
        Outcome::Interrupted => "cancelled",
        Outcome::IterationLimit => "max_turn_requests",
        Outcome::Done => match finish_reason {
            Some("length") => "max_tokens",
            Some("refusal") => "refusal",
            _ => "end_turn",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nanohermes_core::agent::Outcome;

    fn builtin(server: &str, raw: &str) -> ToolFacts {
        ToolFacts {
            read_only: false,
            destructive: true,
            builtin: true,
            server: server.into(),
            raw_name: raw.into(),
        }
    }

    fn external(raw: &str, read_only: bool) -> ToolFacts {
        ToolFacts {
            read_only,
            destructive: !read_only,
            builtin: false,
            server: "gh".into(),
            raw_name: raw.into(),
        }
    }

    #[test]
    fn every_kind_comes_from_the_name_and_the_annotations() {
        let cases = [
            ("read_file", builtin("files", "read_file"), "read"),
            ("edit_file", builtin("files", "edit_file"), "edit"),
            (
                "memory_forget",
                builtin("memory", "memory_forget"),
                "delete",
            ),
            ("grep", builtin("grep", "grep"), "search"),
            ("run_command", builtin("shell", "run_command"), "execute"),
            ("web_fetch", builtin("web", "web_fetch"), "fetch"),
            ("todo_write", builtin("todo", "todo_write"), "think"),
            (
                "gh__delete_branch",
                external("delete_branch", false),
                "delete",
            ),
            ("gh__rename_file", external("rename_file", false), "move"),
            (
                "gh__search_issues",
                external("search_issues", true),
                "search",
            ),
            ("gh__fetch_url", external("fetch_url", true), "fetch"),
            (
                "gh__run_workflow",
                external("run_workflow", false),
                "execute",
            ),
            ("gh__create_issue", external("create_issue", false), "edit"),
            ("gh__issue", external("issue", true), "read"),
            ("gh__issue", external("issue", false), "other"),
            // Another server's tool named like a built-in is not one.
            ("gh__read_file", external("read_file", false), "read"),
            ("gh__web_fetch", external("web_fetch", false), "fetch"),
        ];
        for (name, facts, kind) in cases {
            assert_eq!(tool_kind(name, Some(&facts)), kind, "{name}");
        }
        assert_eq!(tool_kind("read_file", None), "read");
        assert_eq!(tool_kind("echo__echo", None), "other");
    }

    #[test]
    fn a_tool_call_has_a_title_kind_locations_and_its_raw_input() {
        let ws = Path::new("/w");
        let facts = builtin("files", "read_file");
        let update = tool_call(
            "c1",
            "read_file",
            Some(&facts),
            r#"{"path":"src/a.rs","offset":12}"#,
            ws,
        );
        assert_eq!(
            update,
            json!({
                "sessionUpdate": "tool_call",
                "toolCallId": "c1",
                "title": "Read src/a.rs",
                "kind": "read",
                "status": "pending",
                "locations": [{"path": "/w/src/a.rs", "line": 12}],
                "rawInput": {"path": "src/a.rs", "offset": 12},
            })
        );
        let shell = builtin("shell", "run_command");
        let run = tool_call(
            "c2",
            "run_command",
            Some(&shell),
            r#"{"command":"cargo test\nmore"}"#,
            ws,
        );
        assert_eq!(run["title"], "Run cargo test");
        assert_eq!(run["kind"], "execute");
        assert_eq!(run["locations"], json!([]));
        let other = tool_call(
            "c3",
            "gh__issue",
            Some(&external("issue", true)),
            "not json",
            ws,
        );
        assert_eq!(other["title"], "gh__issue");
        assert_eq!(other["rawInput"], json!({}));
    }

    #[test]
    fn a_file_write_is_shown_as_a_diff_of_the_file_before_and_after() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let files = builtin("files", "edit_file");
        let input = r#"{"path":"a.txt","old_string":"two","new_string":"three"}"#;
        let edit = planned_edit("edit_file", Some(&files), input, dir.path()).unwrap();
        assert_eq!(edit.old.as_deref(), Some("one\ntwo\n"));
        std::fs::write(dir.path().join("a.txt"), "one\nthree\n").unwrap();
        let new = new_text(&edit, "edit_file", Some(&files), input).unwrap();
        let done = tool_call_done("c1", "edited a.txt", Some((&edit, new)));
        assert_eq!(done["status"], "completed");
        assert_eq!(
            done["content"][0],
            json!({
                "type": "diff",
                "path": dir.path().join("a.txt"),
                "oldText": "one\ntwo\n",
                "newText": "one\nthree\n",
            })
        );
        assert_eq!(done["content"][1]["content"]["text"], "edited a.txt");
        // A new file has no old text; a failed write shows no diff.
        let write = builtin("files", "write_file");
        let created = planned_edit(
            "write_file",
            Some(&write),
            r#"{"path":"b.txt","content":"x"}"#,
            dir.path(),
        )
        .unwrap();
        assert_eq!(created.old, None);
        assert_eq!(
            new_text(
                &created,
                "write_file",
                Some(&write),
                r#"{"path":"b.txt","content":"x"}"#
            )
            .as_deref(),
            Some("x")
        );
        let failed = tool_call_done("c2", "ERROR: no such file", Some((&created, "x".into())));
        assert_eq!(failed["status"], "failed");
        assert_eq!(failed["content"].as_array().unwrap().len(), 1);
        // Reads and other servers' writes are not diffs.
        assert_eq!(
            planned_edit(
                "read_file",
                Some(&builtin("files", "read_file")),
                r#"{"path":"a.txt"}"#,
                dir.path()
            ),
            None
        );
        assert_eq!(
            planned_edit(
                "gh__write_file",
                Some(&external("write_file", false)),
                r#"{"path":"a.txt"}"#,
                dir.path()
            ),
            None
        );
    }

    #[test]
    fn the_todo_list_is_the_plan() {
        let input = r#"{"todos":[{"content":" read ","status":"completed"},{"content":"edit","status":"in_progress"},{"content":"test","status":"pending"}]}"#;
        assert_eq!(
            plan(input).unwrap(),
            json!({"sessionUpdate": "plan", "entries": [
                {"content": "read", "priority": "medium", "status": "completed"},
                {"content": "edit", "priority": "medium", "status": "in_progress"},
                {"content": "test", "priority": "medium", "status": "pending"},
            ]})
        );
        assert_eq!(plan("{}"), None);
    }

    #[test]
    fn chunks_carry_text_content() {
        assert_eq!(
            notification("s1", chunk("agent_thought_chunk", "hm")),
            json!({"sessionId": "s1", "update": {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}}})
        );
    }

    #[test]
    fn a_stored_history_replays_as_the_updates_it_was_shown_with() {
        let messages = vec![
            json!({"role": "user", "content": "fix it"}),
            json!({"role": "assistant", "content": null, "reasoning": {"wire": "chat", "endpoint": "e", "text": "look first", "items": []},
                   "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}},
                                  {"id": "c2", "type": "function", "function": {"name": "todo_write", "arguments": "{\"todos\":[{\"content\":\"x\",\"status\":\"pending\"}]}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": "1\tfn a() {}"}),
            json!({"role": "tool", "tool_call_id": "c2", "content": "1 todo"}),
            json!({"role": "assistant", "content": "done"}),
        ];
        let kinds: Vec<String> = replay(&messages, Path::new("/w"))
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_thought_chunk",
                "tool_call",
                "tool_call",
                "tool_call_update",
                "tool_call_update",
                "plan",
                "agent_message_chunk"
            ]
        );
    }

    #[test]
    fn prompt_blocks_become_the_user_message_and_unadvertised_ones_are_refused() {
        let text = prompt_text(&json!([
            {"type": "text", "text": "look at"},
            {"type": "resource_link", "uri": "file:///w/a.rs", "name": "a.rs"},
            {"type": "resource", "resource": {"uri": "file:///w/b.rs", "text": "fn b() {}"}},
        ]))
        .unwrap();
        assert_eq!(
            text,
            "look at\n\n[resource: a.rs](file:///w/a.rs)\n\n<resource uri=\"file:///w/b.rs\">\nfn b() {}\n</resource>"
        );
        for bad in [
            json!([{"type": "image", "data": "AA==", "mimeType": "image/png"}]),
            json!([{"type": "resource", "resource": {"uri": "x", "blob": "AA=="}}]),
            json!([]),
            json!("text"),
        ] {
            assert_eq!(
                prompt_text(&bad).unwrap_err().code,
                super::super::rpc::INVALID_PARAMS,
                "{bad}"
            );
        }
    }

    #[test]
    fn a_prompts_usage_is_the_ledgers_growth_and_unknown_usage_is_not_sent() {
        let before = UsageLedger {
            requests: 2,
            requests_without_usage: 0,
            prompt_tokens: 1_000,
            completion_tokens: 50,
            cached_tokens: 400,
            cache_write_tokens: 0,
            reasoning_tokens: 5,
        };
        let after = UsageLedger {
            requests: 4,
            prompt_tokens: 3_500,
            completion_tokens: 90,
            cached_tokens: 1_600,
            cache_write_tokens: 300,
            reasoning_tokens: 5,
            ..before
        };
        assert_eq!(
            turn_usage(before, after),
            Some(json!({
                "totalTokens": 2_540,
                "inputTokens": 2_500,
                "outputTokens": 40,
                "cachedReadTokens": 1_200,
                "cachedWriteTokens": 300,
            }))
        );
        // No request (a slash command, a cancel before the model), or one
        // whose server reported nothing: no usage rather than a low one.
        assert_eq!(turn_usage(after, after), None);
        let unreported = UsageLedger {
            requests: 5,
            requests_without_usage: 1,
            ..after
        };
        assert_eq!(turn_usage(after, unreported), None);
    }

    #[test]
    fn stop_reasons_follow_the_outcome_and_the_last_finish_reason() {
        assert_eq!(stop_reason(Outcome::Done, Some("stop"), false), "end_turn");
        assert_eq!(stop_reason(Outcome::Done, None, false), "end_turn");
        assert_eq!(
            stop_reason(Outcome::Done, Some("length"), false),
            "max_tokens"
        );
        assert_eq!(
            stop_reason(Outcome::Done, Some("refusal"), false),
            "refusal"
        );
        assert_eq!(
            stop_reason(Outcome::IterationLimit, None, false),
            "max_turn_requests"
        );
        assert_eq!(stop_reason(Outcome::Interrupted, None, false), "cancelled");
        // A cancel that came too late to interrupt still answers cancelled.
        assert_eq!(stop_reason(Outcome::Done, Some("stop"), true), "cancelled");
    }
}
