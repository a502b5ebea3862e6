//! What a finished hook said, read the way Claude Code reads it: the exit
//! code first, then a JSON object on stdout.

use serde_json::Value;

use super::process::Finished;

/// What one hook's run means for the event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Go on; `context` is text the hook asked to give the model.
    Proceed {
        /// `hookSpecificOutput.additionalContext` (or a top-level
        /// `additionalContext`), when the hook printed one.
        context: Option<String>,
        /// The plain standard output (exit 0, not JSON).
        stdout: String,
    },
    /// The hook said no (exit 2, or a JSON block decision): `reason` is
    /// for the model (or the user, for a prompt).
    Block(String),
    /// The hook failed: another non-zero exit, a timeout, or `sh` would not
    /// start. The event decides whether that blocks.
    Failed(String),
}

/// Reads `finished`, the run of `command` with `timeout_secs`.
pub fn read(finished: Finished, command: &str, timeout_secs: u64) -> Verdict {
    match finished {
        Finished::Exited {
            code: Some(0),
            stdout,
            ..
        } => from_stdout(stdout),
        Finished::Exited {
            code: Some(2),
            stdout,
            stderr,
        } => Verdict::Block(output_or(&stderr, &stdout, || {
            format!("`{command}` exited with status 2")
        })),
        Finished::Exited {
            code,
            stdout,
            stderr,
        } => {
            let status = code.map_or_else(|| "a signal".to_owned(), |c| format!("status {c}"));
            Verdict::Failed(output_or(&stderr, &stdout, || {
                format!("`{command}` exited with {status}")
            }))
        }
        Finished::TimedOut => Verdict::Failed(format!(
            "`{command}` did not finish within its {timeout_secs} s timeout and was stopped"
        )),
        Finished::NotStarted(e) => Verdict::Failed(format!("`{command}` could not start: {e}")),
    }
}

fn from_stdout(stdout: String) -> Verdict {
    let json = match serde_json::from_str::<Value>(stdout.trim()) {
        Ok(Value::Object(map)) => Value::Object(map),
        _ => {
            return Verdict::Proceed {
                context: None,
                stdout,
            };
        }
    };
    let text = |v: &Value| {
        v.as_str()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let specific = &json["hookSpecificOutput"];
    if json["decision"] == "block" {
        return Verdict::Block(
            text(&json["reason"]).unwrap_or_else(|| "the hook gave no reason".to_owned()),
        );
    }
    if specific["permissionDecision"] == "deny" {
        return Verdict::Block(
            text(&specific["permissionDecisionReason"])
                .unwrap_or_else(|| "the hook gave no reason".to_owned()),
        );
    }
    Verdict::Proceed {
        context: text(&specific["additionalContext"]).or_else(|| text(&json["additionalContext"])),
        stdout: String::new(),
    }
}

/// The hook's own words (stderr, else stdout), else `fallback`.
fn output_or(stderr: &str, stdout: &str, fallback: impl FnOnce() -> String) -> String {
    [stderr, stdout]
        .into_iter()
        .map(str::trim)
        .find(|s| !s.is_empty())
        .map_or_else(fallback, |s| mcp_tools::clamp::clamp(s, 4000))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exited(code: i32, stdout: &str, stderr: &str) -> Finished {
        Finished::Exited {
            code: Some(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn exit_codes_and_json_decisions() {
        let v = |f| read(f, "guard", 5);
        assert_eq!(
            v(exited(2, "", "no writes here\n")),
            Verdict::Block("no writes here".into())
        );
        assert_eq!(
            v(exited(2, "", "")),
            Verdict::Block("`guard` exited with status 2".into())
        );
        assert_eq!(
            v(exited(1, "out", "")),
            Verdict::Failed("out".into()),
            "stdout when stderr is empty"
        );
        assert_eq!(
            v(exited(
                0,
                r#"{"decision":"block","reason":"use git mv"}"#,
                ""
            )),
            Verdict::Block("use git mv".into())
        );
        assert_eq!(
            v(exited(
                0,
                r#"{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"nope"}}"#,
                ""
            )),
            Verdict::Block("nope".into())
        );
        assert_eq!(
            v(exited(
                0,
                r#"{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"run the tests"}}"#,
                ""
            )),
            Verdict::Proceed {
                context: Some("run the tests".into()),
                stdout: String::new()
            }
        );
        assert_eq!(
            v(exited(0, "plain words", "")),
            Verdict::Proceed {
                context: None,
                stdout: "plain words".into()
            }
        );
        assert_eq!(
            v(Finished::TimedOut),
            Verdict::Failed("`guard` did not finish within its 5 s timeout and was stopped".into())
        );
    }
}
