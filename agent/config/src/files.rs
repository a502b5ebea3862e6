//! Where the config files are, and reading them.

use std::io;
use std::path::{Path, PathBuf};

use super::diag::ConfigError;

/// The file name of both config files.
pub const CONFIG_FILE: &str = "config.toml";
/// The project's own directory inside a workspace.
pub const PROJECT_DIR: &str = ".nanohermes";
/// The `mcpServers` file other hosts share.
pub const MCP_JSON: &str = ".mcp.json";
/// The hooks file Claude Code plugins, Codex and goose share.
pub const HOOKS_JSON: &str = "hooks.json";

/// `NANOHERMES_HOME/config.toml`.
pub fn user_config(nanohermes_home: &Path) -> PathBuf {
    nanohermes_home.join(CONFIG_FILE)
}

/// `WORKSPACE/.nanohermes/config.toml`.
pub fn project_config(workspace: &Path) -> PathBuf {
    workspace.join(PROJECT_DIR).join(CONFIG_FILE)
}

/// `WORKSPACE/.nanohermes/hooks.json`.
pub fn hooks_json(workspace: &Path) -> PathBuf {
    workspace.join(PROJECT_DIR).join(HOOKS_JSON)
}

/// `WORKSPACE/.mcp.json`.
pub fn mcp_json(workspace: &Path) -> PathBuf {
    workspace.join(MCP_JSON)
}

/// The most bytes a config file may hold: a bigger one is refused, not cut.
pub const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// The workspace's files that can start programs or change rules, whether
/// they exist or not, skipping `user_config` itself (a workspace that is
/// the home directory holds the user's own file). Trust is bound to what
/// these hold ([`super::digests`]).
pub fn project_candidates(workspace: &Path, user_config: Option<&Path>) -> Vec<PathBuf> {
    let same = |p: &Path| {
        user_config.is_some_and(|u| match (p.canonicalize(), u.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        })
    };
    [
        project_config(workspace),
        mcp_json(workspace),
        hooks_json(workspace),
    ]
    .into_iter()
    .filter(|p| !same(p))
    .collect()
}

/// The workspace's config files that exist (see [`project_candidates`]).
pub fn project_files(workspace: &Path, user_config: Option<&Path>) -> Vec<PathBuf> {
    project_candidates(workspace, user_config)
        .into_iter()
        .filter(|p| p.exists())
        .collect()
}

/// Reads `path` as a regular file; `None` when it does not exist. The open
/// is non-blocking and `fstat` must show a regular file, so a FIFO or a
/// device planted under a config file's name is an error, never a hang;
/// more than [`MAX_CONFIG_BYTES`] is an error too.
pub fn read_regular(path: &Path) -> io::Result<Option<Vec<u8>>> {
    use std::io::Read as _;
    let (file, meta) = match mcp_tools::regular::open_regular(path) {
        Ok(opened) => opened,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(io::Error::other(format!(
            "it is {} bytes, over the {MAX_CONFIG_BYTES}-byte limit",
            meta.len()
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// Reads `path`; `None` when it does not exist. `shown` names it in errors.
pub fn read_optional(path: &Path, shown: &str) -> Result<Option<String>, ConfigError> {
    let at = |m: String| ConfigError::at(shown, None, m);
    match read_regular(path) {
        Ok(None) => Ok(None),
        Ok(Some(bytes)) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| at("the file is not valid UTF-8; save it as UTF-8".into())),
        Err(e) => Err(at(format!(
            "cannot read the file: {e}; fix its permissions or remove it"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_users_own_file_is_not_a_project_file() {
        let home = tempfile::tempdir().unwrap();
        let nh = home.path().join(PROJECT_DIR);
        std::fs::create_dir(&nh).unwrap();
        std::fs::write(nh.join(CONFIG_FILE), "").unwrap();
        std::fs::write(home.path().join(MCP_JSON), "{}").unwrap();
        let user = user_config(&nh);
        assert_eq!(
            project_files(home.path(), Some(&user)),
            [mcp_json(home.path())]
        );
        assert_eq!(project_files(home.path(), None).len(), 2);
    }

    #[test]
    fn a_missing_file_is_none_and_a_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_optional(&dir.path().join("no"), "no").unwrap(), None);
        let e = read_optional(dir.path(), "d").unwrap_err();
        assert!(e.to_string().starts_with("d: cannot read the file"), "{e}");
    }
}
