//! `WORKSPACE/.nanohermes/hooks.json`: the hooks file Claude Code plugins,
//! Codex and goose share, `{"hooks": {"PreToolUse": [{"matcher": "…",
//! "hooks": [{"type": "command", "command": "…", "timeout": 30}]}]}}`,
//! read unchanged. Events NanoHermes does not know and hook types other
//! than `command` are skipped with a warning, so a file copied from
//! another agent's documentation keeps working.

use std::collections::BTreeMap;

use serde_json::Value;

use super::diag::ConfigError;
use super::raw::{HookCommand, HookEvent, HookGroup, HookKind};

/// What a hooks.json yields.
#[derive(Debug, Default)]
pub struct HooksJson {
    /// The hooks by event, in file order.
    pub hooks: BTreeMap<HookEvent, Vec<HookGroup>>,
    /// One line per skipped event or hook.
    pub warnings: Vec<String>,
}

/// Parses `text`; `file` names it in errors and warnings.
pub fn parse(file: &str, text: &str) -> Result<HooksJson, ConfigError> {
    let fail = |message: String| ConfigError::at(file, None, message);
    let root: Value = serde_json::from_str(text)
        .map_err(|e| ConfigError::at(file, Some(e.line()), format!("not valid JSON: {e}")))?;
    let Some(events) = root.get("hooks").and_then(Value::as_object) else {
        return Err(fail(
            "has no \"hooks\" object; write {\"hooks\": {\"PreToolUse\": [...]}}".to_owned(),
        ));
    };
    let mut out = HooksJson::default();
    for (name, groups) in events {
        let Ok(event) = serde_json::from_value::<HookEvent>(Value::String(name.clone())) else {
            out.warnings.push(format!(
                "{file}: hooks.{name} is not an event NanoHermes runs; skipped"
            ));
            continue;
        };
        let Some(groups) = groups.as_array() else {
            return Err(fail(format!(
                "hooks.{name} must be a list of {{\"matcher\": …, \"hooks\": [...]}} groups"
            )));
        };
        for group in groups {
            let parsed = parse_group(file, name, group, &mut out.warnings).map_err(fail)?;
            out.hooks.entry(event).or_default().push(parsed);
        }
    }
    Ok(out)
}

fn parse_group(
    file: &str,
    event: &str,
    group: &Value,
    warnings: &mut Vec<String>,
) -> Result<HookGroup, String> {
    let matcher = match group.get("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) => Some(m.clone()),
        Some(_) => {
            return Err(format!(
                "hooks.{event}: a matcher must be a string (a regular expression)"
            ));
        }
    };
    let Some(list) = group.get("hooks").and_then(Value::as_array) else {
        return Err(format!(
            "hooks.{event}: each group needs a \"hooks\" list of commands"
        ));
    };
    let mut hooks = Vec::new();
    for hook in list {
        let kind = hook
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("command");
        if kind != "command" {
            warnings.push(format!(
                "{file}: a hooks.{event} hook of type {kind:?} is skipped; only \"command\" hooks run"
            ));
            continue;
        }
        let command = hook
            .get("command")
            .and_then(Value::as_str)
            .map(str::trim)
            .unwrap_or("");
        if command.is_empty() {
            return Err(format!(
                "hooks.{event} has a hook with an empty command; give the command to run"
            ));
        }
        let timeout = match hook.get("timeout") {
            None | Some(Value::Null) => None,
            Some(t) => Some(
                t.as_f64()
                    .filter(|t| *t > 0.0)
                    .ok_or_else(|| {
                        format!("hooks.{event}: timeout must be a positive number of seconds")
                    })?
                    .ceil() as u64,
            ),
        };
        hooks.push(HookCommand {
            kind: HookKind::Command,
            command: command.to_owned(),
            timeout,
        });
    }
    Ok(HookGroup { matcher, hooks })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_code_hooks_file_reads_unchanged() {
        let text = r#"{
          "description": "guard writes",
          "hooks": {
            "PreToolUse": [
              {"matcher": "Edit|Write|mcp__files__.*", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 30}]}
            ],
            "PostToolUse": [{"hooks": [{"type": "command", "command": "cargo fmt"}, {"type": "prompt", "prompt": "check"}]}],
            "PostToolUseFailure": [{"hooks": [{"type": "command", "command": "x"}]}]
          }
        }"#;
        let parsed = parse("h.json", text).unwrap();
        let pre = &parsed.hooks[&HookEvent::PreToolUse][0];
        assert_eq!(pre.matcher.as_deref(), Some("Edit|Write|mcp__files__.*"));
        assert_eq!(
            (pre.hooks[0].command.as_str(), pre.hooks[0].timeout),
            ("./guard.sh", Some(30))
        );
        let post = &parsed.hooks[&HookEvent::PostToolUse][0];
        assert_eq!((post.matcher.as_deref(), post.hooks.len()), (None, 1));
        assert_eq!(
            parsed.warnings,
            [
                "h.json: a hooks.PostToolUse hook of type \"prompt\" is skipped; only \"command\" hooks run",
                "h.json: hooks.PostToolUseFailure is not an event NanoHermes runs; skipped"
            ]
        );
    }

    #[test]
    fn bad_files_say_what_to_write() {
        let e = |t| parse("h.json", t).unwrap_err().to_string();
        assert!(e("{}").contains("has no \"hooks\" object"), "{}", e("{}"));
        assert!(
            e(r#"{"hooks":{"Stop":[{"hooks":[{"type":"command","command":" "}]}]}}"#)
                .contains("hooks.Stop has a hook with an empty command")
        );
        assert!(e("{\"hooks\": ").contains("not valid JSON"));
    }
}
