//! Workspace confinement: every path a tool touches is resolved here first.
//!
//! A path from the model is resolved against the root (or taken as given when
//! absolute), then the deepest ancestor that exists is canonicalised, so
//! symlinks anywhere in the existing part are followed before the check. The
//! part that does not exist yet cannot contain symlinks, so it is only checked
//! for `..`. The result must lie inside the canonical root.
//!
//! What this does not cover: a symlink swapped in between the check and the
//! use (a TOCTOU race by another process in the workspace). Tool servers run
//! for one user in that user's own tree, so that race is out of scope.

use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Longest path accepted, in bytes (Linux `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;

/// The root a tool server is confined to.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

/// Why a path was refused. The `Display` text is written for the model: it
/// names the path and says what to do instead.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    /// The path is empty.
    #[error("path is empty: give a path relative to the workspace root")]
    Empty,
    /// The path contains a NUL byte, which no file name can hold.
    #[error("path contains a NUL byte: {0:?}")]
    NulByte(String),
    /// The path is longer than the system allows.
    #[error("path is {0} bytes long, over the limit of {MAX_PATH_BYTES}")]
    TooLong(usize),
    /// The path leads outside the root (through `..`, an absolute path or a symlink).
    #[error("path escapes the workspace root: {0} (only paths inside {1} are allowed)")]
    Escapes(String, String),
    /// A symlink on the way points at nothing, so where it leads cannot be checked.
    #[error("path goes through a dangling symlink: {0}")]
    DanglingSymlink(String),
    /// The file system refused to tell where the path leads.
    #[error("cannot resolve path {0}: {1}")]
    Io(String, String),
}

impl Workspace {
    /// Opens a workspace at `root`, which must be an existing directory.
    pub fn new(root: impl AsRef<Path>) -> io::Result<Self> {
        let root = std::fs::canonicalize(root.as_ref())?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("workspace root is not a directory: {}", root.display()),
            ));
        }
        Ok(Self { root })
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `path` (relative to the root, or absolute inside it) to a
    /// canonical path inside the root. The file itself need not exist, so a
    /// tool can create it; its parent directories need not exist either.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, PathError> {
        if path.is_empty() {
            return Err(PathError::Empty);
        }
        if path.contains('\0') {
            return Err(PathError::NulByte(path.replace('\0', "\\0")));
        }
        if path.len() > MAX_PATH_BYTES {
            return Err(PathError::TooLong(path.len()));
        }
        self.resolve_path(Path::new(path))
    }

    /// Like [`Workspace::resolve`], for a path that is already an `OsStr`
    /// (a directory entry, possibly not UTF-8).
    pub fn resolve_os(&self, path: &OsStr) -> Result<PathBuf, PathError> {
        use std::os::unix::ffi::OsStrExt;
        if path.is_empty() {
            return Err(PathError::Empty);
        }
        if path.as_bytes().contains(&0) {
            return Err(PathError::NulByte(path.to_string_lossy().into_owned()));
        }
        if path.len() > MAX_PATH_BYTES {
            return Err(PathError::TooLong(path.len()));
        }
        self.resolve_path(Path::new(path))
    }

    fn resolve_path(&self, path: &Path) -> Result<PathBuf, PathError> {
        let shown = path.display().to_string();
        // Walk component by component, keeping `resolved` canonical: an
        // existing component that is a symlink is followed at once, so a later
        // `..` pops a real directory, never the link's name.
        let mut resolved = self.root.clone();
        // How many trailing components of `resolved` do not exist.
        let mut missing = 0usize;
        for component in path.components() {
            match component {
                Component::Prefix(_) => return Err(self.escapes(&shown)),
                Component::RootDir => resolved = PathBuf::from("/"),
                Component::CurDir => {}
                Component::ParentDir => {
                    resolved.pop();
                    missing = missing.saturating_sub(1);
                }
                Component::Normal(name) => {
                    resolved.push(name);
                    if missing > 0 {
                        // Below a missing directory nothing is a symlink.
                        missing += 1;
                        continue;
                    }
                    match resolved.symlink_metadata() {
                        Ok(meta) if meta.file_type().is_symlink() => {
                            resolved = match std::fs::canonicalize(&resolved) {
                                Ok(target) => target,
                                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                                    return Err(PathError::DanglingSymlink(shown));
                                }
                                Err(e) => return Err(PathError::Io(shown, e.to_string())),
                            };
                        }
                        Ok(_) => {}
                        Err(e) if e.kind() == io::ErrorKind::NotFound => missing = 1,
                        Err(e) => return Err(PathError::Io(shown, e.to_string())),
                    }
                }
            }
        }
        if resolved.starts_with(&self.root) {
            Ok(resolved)
        } else {
            Err(self.escapes(&shown))
        }
    }

    fn escapes(&self, shown: &str) -> PathError {
        PathError::Escapes(shown.to_string(), self.root.display().to_string())
    }

    /// The path relative to the root, for messages (`.` for the root itself).
    pub fn display(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path()).unwrap();
        (dir, ws)
    }

    #[test]
    fn relative_paths_resolve_inside_the_root() {
        let (_d, ws) = ws();
        std::fs::create_dir(ws.root().join("src")).unwrap();
        assert_eq!(ws.resolve("src").unwrap(), ws.root().join("src"));
        assert_eq!(
            ws.resolve("src/new.rs").unwrap(),
            ws.root().join("src/new.rs")
        );
        assert_eq!(
            ws.resolve("a/b/c.txt").unwrap(),
            ws.root().join("a/b/c.txt")
        );
        assert_eq!(ws.resolve(".").unwrap(), ws.root());
        assert_eq!(ws.resolve("src/../x").unwrap(), ws.root().join("x"));
    }

    #[test]
    fn absolute_paths_inside_the_root_are_accepted() {
        let (_d, ws) = ws();
        let abs = ws.root().join("f.txt");
        assert_eq!(ws.resolve(abs.to_str().unwrap()).unwrap(), abs);
    }

    #[test]
    fn escapes_are_refused_with_a_message_naming_the_path() {
        let (_d, ws) = ws();
        let err = ws.resolve("../x").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("path escapes the workspace root: ../x")
        );
        assert!(matches!(
            ws.resolve("/etc/passwd"),
            Err(PathError::Escapes(..))
        ));
        assert!(matches!(
            ws.resolve("nope/../../x"),
            Err(PathError::Escapes(..))
        ));
    }

    #[test]
    fn a_missing_directory_does_not_hide_a_later_symlink() {
        let (dir, ws) = ws();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        assert!(matches!(
            ws.resolve("nope/../link/x"),
            Err(PathError::Escapes(..))
        ));
        assert!(matches!(
            ws.resolve("a/b/../../link/x"),
            Err(PathError::Escapes(..))
        ));
    }

    #[test]
    fn display_is_relative_to_the_root() {
        let (_d, ws) = ws();
        assert_eq!(ws.display(&ws.root().join("a/b")), "a/b");
        assert_eq!(ws.display(ws.root()), ".");
    }
}
