//! Whether a workspace's own config files are read.
//!
//! A cloned repository must not be able to start a program or loosen a
//! rule, so `WORKSPACE/.nanohermes/config.toml`, `WORKSPACE/.mcp.json` and
//! `.nanohermes/hooks.json` are read only when the user's own config says
//! `[projects."/abs/path"] trust_level = "trusted"` (Codex's key) for the
//! workspace or a directory above it, **and** each file still holds what
//! the user trusted ([`super::digests`]: a file created, changed or
//! removed since is skipped, as direnv blocks a changed `.envrc`). On a
//! terminal the CLI asks ([`should_ask`], [`ask`]) and [`record`]s the
//! answer, as Claude Code asks before starting a project's servers;
//! without one, `nanohermes trust` is how the user trusts the files as
//! they are.

use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};

use super::diag::{ConfigError, Located};
use super::raw::{self, FileKind, RawConfig, TrustLevel};

/// What the user's config says about a workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustStatus {
    /// Trusted through the entry for this directory (the workspace or an ancestor).
    Trusted(PathBuf),
    /// Marked untrusted through this entry: skipped without asking.
    Untrusted(PathBuf),
    /// Never decided.
    Unknown,
}

impl TrustStatus {
    /// Whether the project's files are read.
    pub fn is_trusted(&self) -> bool {
        matches!(self, TrustStatus::Trusted(_))
    }
}

/// The decision for `workspace` (canonical): the entry of the nearest
/// directory at or above it, so an untrusted subdirectory can opt out.
pub fn status(user: &RawConfig, workspace: &Path) -> TrustStatus {
    for dir in workspace.ancestors() {
        let Some(key) = dir.to_str() else { continue };
        if let Some(project) = user.projects.get(key) {
            return match project.trust_level {
                TrustLevel::Trusted => TrustStatus::Trusted(dir.to_owned()),
                TrustLevel::Untrusted => TrustStatus::Untrusted(dir.to_owned()),
            };
        }
    }
    TrustStatus::Unknown
}

/// The TOML that records `level` for `workspace`, as a table.
pub fn toml_entry(workspace: &Path, level: TrustLevel) -> String {
    format!(
        "[projects.{}]\ntrust_level = \"{}\"\n",
        quoted(workspace),
        level_name(level)
    )
}

/// How the user trusts `workspace`'s files as they are now.
fn how_to_trust(workspace: &Path) -> String {
    format!(
        "run `nanohermes trust --workspace {}` (or answer yes when asked on a terminal)",
        shell_quoted(workspace)
    )
}

/// The one line shown when a project's files are skipped because the
/// project is not trusted: which files, and how to trust it.
pub fn skipped_notice(workspace: &Path, skipped: &[String]) -> String {
    format!(
        "skipped {} because {} is not a trusted project; to trust it, {}",
        skipped.join(" and "),
        workspace.display(),
        how_to_trust(workspace),
    )
}

/// The one line shown when a trusted project's files changed since the
/// user trusted them (`changes` from [`super::digests::describe`]).
pub fn changed_notice(workspace: &Path, changes: &str) -> String {
    format!(
        "skipped {changes}: changed since you trusted {}; review the change, then to trust it {}",
        workspace.display(),
        how_to_trust(workspace),
    )
}

/// The question for a trusted project whose files changed.
pub fn changed_question(workspace: &Path, changes: &str) -> String {
    format!(
        "{}'s config changed since you trusted it: {changes}. These files can start programs and change permission rules. Trust the new content? [y/N] ",
        workspace.display()
    )
}

/// Whether the CLI should ask: on a terminal, for a project with config
/// files, when the user never decided.
pub fn should_ask(status: &TrustStatus, is_tty: bool, has_project_files: bool) -> bool {
    is_tty && has_project_files && *status == TrustStatus::Unknown
}

/// The question, naming what trusting allows.
pub fn question(workspace: &Path, files: &[String]) -> String {
    format!(
        "{} has its own config ({}), which can start programs and change permission rules. Trust this project? [y/N] ",
        workspace.display(),
        files.join(", ")
    )
}

/// Reads an answer: yes/y → `Some(true)`, no/n/empty → `Some(false)`,
/// anything else → `None` (ask again).
pub fn parse_answer(answer: &str) -> Option<bool> {
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(true),
        "" | "n" | "no" => Some(false),
        _ => None,
    }
}

/// Asks `question` on `output` until `input` gives a clear answer; the end
/// of input or three unclear answers mean no.
pub fn ask(input: &mut dyn BufRead, output: &mut dyn Write, question: &str) -> io::Result<bool> {
    for _ in 0..3 {
        output.write_all(question.as_bytes())?;
        output.flush()?;
        let mut line = String::new();
        if input.read_line(&mut line)? == 0 {
            return Ok(false);
        }
        if let Some(yes) = parse_answer(&line) {
            return Ok(yes);
        }
        output.write_all(b"please answer yes or no\n")?;
    }
    Ok(false)
}

/// Writes the decision for `workspace` into the user's config at `path`
/// (created when missing), keeping everything else in the file as it was:
/// an existing `trust_level` for the same path is changed in place, else a
/// table is appended. The file is replaced atomically.
pub fn record(path: &Path, workspace: &Path, level: TrustLevel) -> Result<(), ConfigError> {
    let shown = path.display().to_string();
    let text = super::files::read_optional(path, &shown)?.unwrap_or_default();
    let key = workspace.to_str().ok_or_else(|| {
        ConfigError::at(
            &shown,
            None,
            format!(
                "{} is not valid UTF-8 and cannot be a key; rename the directory",
                workspace.display()
            ),
        )
    })?;
    let doc = Located::parse(&shown, &text)?;
    let value = format!("\"{}\"", level_name(level));
    let updated = if let Some(span) = doc.value_span(&["projects", key, "trust_level"]) {
        format!("{}{value}{}", &text[..span.start], &text[span.end..])
    } else {
        let sep = match text.is_empty() || text.ends_with("\n\n") {
            true => "",
            false if text.ends_with('\n') => "\n",
            false => "\n\n",
        };
        format!("{text}{sep}{}", toml_entry(workspace, level))
    };
    // The edit must leave a file that still loads; otherwise say what to add by hand.
    if let Err(e) = raw::parse(&shown, &updated, FileKind::User) {
        return Err(ConfigError::at(
            &shown,
            None,
            format!(
                "cannot record the decision automatically ({e}); add this by hand:\n{}",
                toml_entry(workspace, level)
            ),
        ));
    }
    super::edit::write_config_file(path, &shown, updated.as_bytes())
}

fn level_name(level: TrustLevel) -> &'static str {
    match level {
        TrustLevel::Trusted => "trusted",
        TrustLevel::Untrusted => "untrusted",
    }
}

/// `path` as one shell word (single-quoted when it needs quoting).
fn shell_quoted(path: &Path) -> String {
    let text = path.display().to_string();
    shlex::try_quote(&text).map_or(text.clone(), |q| q.into_owned())
}

/// `path` as a TOML basic string (escapes quotes and backslashes).
fn quoted(path: &Path) -> String {
    toml::Value::String(path.display().to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> RawConfig {
        raw::parse("u", text, FileKind::User).unwrap()
    }

    #[test]
    fn the_nearest_entry_decides() {
        let cfg = user(
            "[projects.\"/src\"]\ntrust_level = \"trusted\"\n[projects.\"/src/vendor\"]\ntrust_level = \"untrusted\"\n",
        );
        assert_eq!(
            status(&cfg, Path::new("/src/app")),
            TrustStatus::Trusted("/src".into())
        );
        assert_eq!(
            status(&cfg, Path::new("/src/vendor/x")),
            TrustStatus::Untrusted("/src/vendor".into())
        );
        assert_eq!(status(&cfg, Path::new("/other")), TrustStatus::Unknown);
    }

    #[test]
    fn the_notices_are_one_line_with_a_command_that_trusts() {
        let notice = skipped_notice(Path::new("/w/my repo"), &["/w/my repo/.mcp.json".into()]);
        assert!(!notice.contains('\n'));
        assert!(
            notice.ends_with(
                "to trust it, run `nanohermes trust --workspace '/w/my repo'` (or answer yes when asked on a terminal)"
            ),
            "{notice}"
        );
        let changed = changed_notice(Path::new("/w"), "/w/.mcp.json (changed)");
        assert!(!changed.contains('\n'));
        assert!(
            changed.starts_with("skipped /w/.mcp.json (changed): changed since you trusted /w;"),
            "{changed}"
        );
    }

    #[test]
    fn ask_only_on_a_tty_for_an_undecided_project_with_files() {
        assert!(should_ask(&TrustStatus::Unknown, true, true));
        assert!(!should_ask(&TrustStatus::Unknown, false, true));
        assert!(!should_ask(&TrustStatus::Unknown, true, false));
        assert!(!should_ask(
            &TrustStatus::Untrusted("/w".into()),
            true,
            true
        ));
    }

    #[test]
    fn answers() {
        assert_eq!(parse_answer(" Yes\n"), Some(true));
        assert_eq!(parse_answer("n"), Some(false));
        assert_eq!(parse_answer("\n"), Some(false));
        assert_eq!(parse_answer("maybe"), None);
        let mut out = Vec::new();
        assert!(ask(&mut "maybe\ny\n".as_bytes(), &mut out, "Trust? ").unwrap());
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Trust? please answer yes or no\nTrust? "
        );
        assert!(!ask(&mut "".as_bytes(), &mut Vec::new(), "Trust? ").unwrap());
    }

    #[test]
    fn record_appends_then_edits_in_place_keeping_comments() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("home/config.toml");
        record(&path, Path::new("/w"), TrustLevel::Untrusted).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "[projects.\"/w\"]\ntrust_level = \"untrusted\"\n"
        );
        std::fs::write(&path, "# mine\nmodel = \"m\" # keep\n\n[projects.\"/w\"]\ntrust_level = \"untrusted\" # was no\n").unwrap();
        record(&path, Path::new("/w"), TrustLevel::Trusted).unwrap();
        record(&path, Path::new("/v"), TrustLevel::Trusted).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            text,
            "# mine\nmodel = \"m\" # keep\n\n[projects.\"/w\"]\ntrust_level = \"trusted\" # was no\n\n[projects.\"/v\"]\ntrust_level = \"trusted\"\n"
        );
        let cfg = user(&text);
        assert!(
            status(&cfg, Path::new("/w")).is_trusted()
                && status(&cfg, Path::new("/v")).is_trusted()
        );
    }

    #[test]
    fn record_refuses_to_break_an_inline_projects_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let before = "projects = { \"/v\" = { trust_level = \"trusted\" } }\n";
        std::fs::write(&path, before).unwrap();
        let e = record(&path, Path::new("/w"), TrustLevel::Trusted).unwrap_err();
        assert!(
            e.message.contains("add this by hand:\n[projects.\"/w\"]"),
            "{e}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    }
}
