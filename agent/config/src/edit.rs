//! Writing `[mcp_servers.NAME]` into the user's config for `nanohermes mcp
//! add` and `remove`, keeping everything else in the file byte for byte
//! (comments, order, spacing).
//!
//! The edit is done on the text: a new table is appended; removing cuts the
//! lines of the `[mcp_servers.NAME]` table and its sub-tables
//! (`[mcp_servers.NAME.env]`). The result is then parsed and compared with
//! what was meant (the old config with just that server changed); any
//! other difference, e.g. a server written as an inline table or dotted
//! keys, refuses the edit and says what to change by hand. The file is
//! replaced atomically ([`mcp_tools::write_atomic`]).

use std::collections::BTreeMap;
use std::path::Path;

use super::diag::ConfigError;
use super::files;
use super::raw::{self, FileKind, RawConfig, RawServer};

/// A new user config is private to its owner: `env` may hold tokens.
pub const NEW_CONFIG_MODE: u32 = 0o600;

/// What `mcp add` writes: a stdio command or a URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewServer {
    /// `add NAME -- CMD ARGS…`.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// `--env K=V` pairs.
        env: BTreeMap<String, String>,
    },
    /// `add NAME --url URL`.
    Http {
        /// The endpoint.
        url: String,
        /// `--bearer-token-env-var VAR`.
        bearer_token_env_var: Option<String>,
    },
}

impl NewServer {
    /// The table as the config layer reads it.
    pub fn raw(&self) -> RawServer {
        match self {
            NewServer::Stdio { command, args, env } => RawServer {
                command: Some(command.clone()),
                args: (!args.is_empty()).then(|| args.clone()),
                env: (!env.is_empty()).then(|| env.clone()),
                ..RawServer::default()
            },
            NewServer::Http {
                url,
                bearer_token_env_var,
            } => RawServer {
                url: Some(url.clone()),
                bearer_token_env_var: bearer_token_env_var.clone(),
                ..RawServer::default()
            },
        }
    }

    /// The table's TOML text, header included.
    pub fn toml(&self, name: &str) -> String {
        let s = |v: &str| toml::Value::String(v.to_owned()).to_string();
        let mut out = format!("[mcp_servers.{}]\n", key(name));
        match self {
            NewServer::Stdio { command, args, env } => {
                out.push_str(&format!("command = {}\n", s(command)));
                if !args.is_empty() {
                    let list: Vec<String> = args.iter().map(|a| s(a)).collect();
                    out.push_str(&format!("args = [{}]\n", list.join(", ")));
                }
                if !env.is_empty() {
                    let pairs: Vec<String> = env
                        .iter()
                        .map(|(k, v)| format!("{} = {}", key(k), s(v)))
                        .collect();
                    out.push_str(&format!("env = {{ {} }}\n", pairs.join(", ")));
                }
            }
            NewServer::Http {
                url,
                bearer_token_env_var,
            } => {
                out.push_str(&format!("url = {}\n", s(url)));
                if let Some(var) = bearer_token_env_var {
                    out.push_str(&format!("bearer_token_env_var = {}\n", s(var)));
                }
            }
        }
        out
    }
}

/// Adds `[mcp_servers.NAME]` to the user's config at `path` (created when
/// missing). An existing entry of that name is an error unless `force`,
/// which replaces it.
pub fn add_server(
    path: &Path,
    name: &str,
    server: &NewServer,
    force: bool,
) -> Result<(), ConfigError> {
    let shown = path.display().to_string();
    let text = files::read_optional(path, &shown)?.unwrap_or_default();
    let before = raw::parse(&shown, &text, FileKind::User)?;
    super::servers::check_raw(name, &server.raw())
        .map_err(|(_, m)| ConfigError::at(&shown, None, m))?;
    let base = if before.mcp_servers.contains_key(name) {
        if !force {
            return Err(ConfigError::at(
                &shown,
                None,
                format!(
                    "server {name:?} already exists; pass --force to replace it, or `nanohermes mcp remove {name}` first"
                ),
            ));
        }
        cut_server(&text, name)
    } else {
        text.clone()
    };
    let sep = match base.is_empty() || base.ends_with("\n\n") {
        true => "",
        false if base.ends_with('\n') => "\n",
        false => "\n\n",
    };
    let updated = format!("{base}{sep}{}", server.toml(name));
    let mut meant = before;
    meant.mcp_servers.insert(name.to_owned(), server.raw());
    write_checked(path, &shown, &updated, &meant, name)
}

/// Removes `[mcp_servers.NAME]` (and its sub-tables) from the user's config
/// at `path`. Returns false when the file has no such entry.
pub fn remove_server(path: &Path, name: &str) -> Result<bool, ConfigError> {
    let shown = path.display().to_string();
    let Some(text) = files::read_optional(path, &shown)? else {
        return Ok(false);
    };
    let mut meant = raw::parse(&shown, &text, FileKind::User)?;
    if meant.mcp_servers.remove(name).is_none() {
        return Ok(false);
    }
    let updated = cut_server(&text, name);
    write_checked(path, &shown, &updated, &meant, name)?;
    Ok(true)
}

/// Writes `updated` when it parses to exactly `meant`; otherwise the text
/// edit touched more or less than the one server, and nothing is written.
fn write_checked(
    path: &Path,
    shown: &str,
    updated: &str,
    meant: &RawConfig,
    name: &str,
) -> Result<(), ConfigError> {
    let same = raw::parse(shown, updated, FileKind::User).is_ok_and(|got| got == *meant);
    if !same {
        return Err(ConfigError::at(
            shown,
            None,
            format!(
                "cannot edit [mcp_servers.{name}] automatically (it is written as an inline table or dotted keys); change it by hand"
            ),
        ));
    }
    write_config_file(path, shown, updated.as_bytes())
}

/// Writes one of the user's own files (`config.toml`, the trust record)
/// atomically, its directory made if missing; a new file is private
/// ([`NEW_CONFIG_MODE`]: `env` tables may hold tokens). `shown` names it in
/// errors.
pub(super) fn write_config_file(path: &Path, shown: &str, bytes: &[u8]) -> Result<(), ConfigError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| {
            ConfigError::at(shown, None, format!("cannot create {}: {e}", dir.display()))
        })?;
    }
    mcp_tools::write_atomic(path, bytes, NEW_CONFIG_MODE)
        .map_err(|e| ConfigError::at(shown, None, format!("cannot write the file: {e}")))
}

/// `text` without the lines of `[mcp_servers.NAME]` and its sub-tables. A
/// removed table's trailing blank and comment lines stay with whatever
/// follows (they usually describe the next table).
pub fn cut_server(text: &str, name: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let headers = header_lines(&lines);
    let mut keep = vec![true; lines.len()];
    for (i, &(start, ref path)) in headers.iter().enumerate() {
        let ours = path.len() >= 2 && path[0] == "mcp_servers" && path[1] == name;
        if !ours {
            continue;
        }
        let mut end = headers.get(i + 1).map_or(lines.len(), |(next, _)| *next);
        // Give the comments and blank lines just above the next header back to it.
        if end < lines.len() {
            while end > start + 1 && is_blank_or_comment(lines[end - 1]) {
                end -= 1;
            }
        }
        keep[start..end].iter_mut().for_each(|k| *k = false);
    }
    let mut out: String = lines
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(l, _)| *l)
        .collect();
    // One removed table must not leave a growing run of blank lines behind:
    // not where it was, and not at the end (add's separator goes with it).
    while out.contains("\n\n\n") {
        out = out.replace("\n\n\n", "\n\n");
    }
    if keep.last() == Some(&false) {
        out.truncate(out.trim_end_matches('\n').len());
        out.push('\n');
    }
    if out.trim().is_empty() {
        out.clear();
    }
    out
}

fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// The table headers of `lines`: line index and key path. Lines inside
/// multi-line strings are skipped.
fn header_lines(lines: &[&str]) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let mut in_string: Option<&str> = None;
    for (i, line) in lines.iter().enumerate() {
        if let Some(delim) = in_string {
            if line.matches(delim).count() % 2 == 1 {
                in_string = None;
            }
            continue;
        }
        for delim in ["\"\"\"", "'''"] {
            if line.matches(delim).count() % 2 == 1 {
                in_string = Some(delim);
            }
        }
        if in_string.is_some() {
            continue;
        }
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix('[') {
            let rest = rest.strip_prefix('[').unwrap_or(rest);
            if let Some(path) = parse_key_path(rest) {
                out.push((i, path));
            }
        }
    }
    out
}

/// Parses `a."b.c".d]…` up to the closing bracket: bare and quoted keys.
fn parse_key_path(text: &str) -> Option<Vec<String>> {
    let mut path = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
            chars.next();
        }
        let mut part = String::new();
        match chars.peek()? {
            '"' | '\'' => {
                let quote = chars.next()?;
                loop {
                    let c = chars.next()?;
                    if c == quote {
                        break;
                    }
                    if c == '\\' && quote == '"' {
                        part.push(chars.next()?);
                    } else {
                        part.push(c);
                    }
                }
            }
            _ => {
                while let Some(&c) = chars.peek() {
                    if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                        part.push(c);
                        chars.next();
                    } else {
                        break;
                    }
                }
                if part.is_empty() {
                    return None;
                }
            }
        }
        path.push(part);
        while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
            chars.next();
        }
        match chars.next()? {
            '.' => continue,
            ']' => return Some(path),
            _ => return None,
        }
    }
}

/// `name` as a TOML key: bare when it can be, else quoted.
fn key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        name.to_owned()
    } else {
        toml::Value::String(name.to_owned()).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(command: &str, args: &[&str]) -> NewServer {
        NewServer::Stdio {
            command: command.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            env: BTreeMap::new(),
        }
    }

    #[test]
    fn add_appends_a_table_and_keeps_the_rest_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let before = "# mine\nmodel = \"m\" # keep\n\n[mcp_servers.web]\nenabled = false\n";
        std::fs::write(&path, before).unwrap();
        let server = NewServer::Stdio {
            command: "/opt/my tools/srv".into(),
            args: vec!["--root".into(), "a \"b\"".into()],
            env: [("K".to_owned(), "v".to_owned())].into(),
        };
        add_server(&path, "docs", &server, false).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!(
                "{before}\n[mcp_servers.docs]\ncommand = \"/opt/my tools/srv\"\nargs = [\"--root\", 'a \"b\"']\nenv = {{ K = \"v\" }}\n"
            )
        );
    }

    #[test]
    fn add_refuses_an_existing_name_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        add_server(&path, "docs", &stdio("a", &[]), false).unwrap();
        let e = add_server(&path, "docs", &stdio("b", &[]), false).unwrap_err();
        assert!(e.message.contains("already exists; pass --force"), "{e}");
        add_server(&path, "docs", &stdio("b", &["x"]), true).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "[mcp_servers.docs]\ncommand = \"b\"\nargs = [\"x\"]\n"
        );
    }

    #[test]
    fn remove_cuts_the_table_and_its_subtables_but_not_the_next_comment() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let text = "model = \"m\"\n\n[mcp_servers.gh]\ncommand = \"gh\"\n\n[mcp_servers.gh.env]\nT = \"x\"\n\n# the docs server\n[mcp_servers.docs]\ncommand = \"d\"\n";
        std::fs::write(&path, text).unwrap();
        assert!(remove_server(&path, "gh").unwrap());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "model = \"m\"\n\n# the docs server\n[mcp_servers.docs]\ncommand = \"d\"\n"
        );
        assert!(!remove_server(&path, "gh").unwrap());
        // Added then removed: the file is as it was.
        let before = std::fs::read_to_string(&path).unwrap();
        add_server(&path, "x", &stdio("x", &[]), false).unwrap();
        assert!(remove_server(&path, "x").unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    }

    #[test]
    fn an_inline_entry_is_refused_and_the_file_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        let text = "[mcp_servers]\ngh = { command = \"gh\" }\n";
        std::fs::write(&path, text).unwrap();
        let e = remove_server(&path, "gh").unwrap_err();
        assert!(e.message.contains("change it by hand"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn headers_inside_multiline_strings_are_not_headers() {
        let text = "x = \"\"\"\n[mcp_servers.gh]\n\"\"\"\n[mcp_servers.\"gh\"]\ncommand = \"g\"\n";
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let headers = header_lines(&lines);
        assert_eq!(
            headers,
            [(3, vec!["mcp_servers".to_owned(), "gh".to_owned()])]
        );
    }
}
