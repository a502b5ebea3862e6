//! Workspace confinement: every path a tool touches is resolved here first.
//!
//! A path from the model is resolved against the root (or taken as given when
//! absolute) one component at a time, following symlinks in the existing
//! part as it goes, so `..` after a link pops the link's real directory. The
//! part that does not exist yet cannot contain symlinks, so it is only checked
//! for `..`. The result must lie inside the canonical root.
//!
//! Nothing outside the root is ever stat'ed: a step that leaves the root is
//! refused before it touches the disk, so the error for a path outside is the
//! same whether or not something exists there (no existence oracle).
//!
//! A check by name is not enough against a tree that changes meanwhile (a
//! command swapping a directory for a symlink while a write runs), so a
//! writer opens the checked path again beneath the root's descriptor with
//! [`Workspace::open_dir`] / [`Workspace::open_file`] ([`crate::beneath`]:
//! no symlink followed, no step out), and writes inside the opened directory.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};

/// Longest path accepted, in bytes (Linux `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;

/// Most symlinks followed while resolving one path (Linux `MAXSYMLINKS`).
const MAX_SYMLINKS: usize = 40;

/// The root a tool server is confined to.
#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    /// The root directory as opened at start (`O_PATH`): what every
    /// confined open is relative to, whatever its path names later.
    root_fd: Arc<OwnedFd>,
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

/// Refuses what no path can be: empty, with a NUL byte, or too long.
fn check(path: &str) -> Result<(), PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if path.contains('\0') {
        return Err(PathError::NulByte(path.replace('\0', "\\0")));
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(PathError::TooLong(path.len()));
    }
    Ok(())
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
        let root_fd = rustix::fs::open(
            &root,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self {
            root,
            root_fd: Arc::new(root_fd),
        })
    }

    /// `resolved` (a path [`Workspace::resolve`] or
    /// [`Workspace::resolve_entry`] returned) relative to the root.
    fn relative<'p>(&self, resolved: &'p Path) -> io::Result<&'p Path> {
        resolved.strip_prefix(&self.root).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not inside the workspace root", resolved.display()),
            )
        })
    }

    /// Opens the directory `resolved` (a resolved path inside the root)
    /// beneath the root's descriptor, following no symlink, creating the
    /// missing directories when `create`. The descriptor is readable, for
    /// `*at` calls and [`crate::write_atomic_in`].
    pub fn open_dir(&self, resolved: &Path, create: bool) -> io::Result<OwnedFd> {
        let rel = self.relative(resolved)?;
        crate::beneath::open_dir_beneath(self.root_fd.as_fd(), rel, create)
    }

    /// Opens the parent directory of `resolved` as [`Workspace::open_dir`]
    /// does, and gives the last name with it: where a writer creates,
    /// replaces, links or removes that entry.
    pub fn open_parent(
        &self,
        resolved: &Path,
        create: bool,
    ) -> io::Result<(OwnedFd, std::ffi::OsString)> {
        let rel = self.relative(resolved)?;
        let Some(name) = rel.file_name() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the workspace root itself is not a file".to_string(),
            ));
        };
        let parent = rel.parent().unwrap_or(Path::new(""));
        let dir = crate::beneath::open_dir_beneath(self.root_fd.as_fd(), parent, create)?;
        Ok((dir, name.to_owned()))
    }

    /// Opens the file `resolved` beneath the root's descriptor with
    /// `flags`, following no symlink.
    pub fn open_file(&self, resolved: &Path, flags: OFlags) -> io::Result<std::fs::File> {
        let rel = self.relative(resolved)?;
        crate::beneath::open_beneath(self.root_fd.as_fd(), rel, flags, Mode::empty())
            .map(std::fs::File::from)
    }

    /// The canonical root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves `path` (relative to the root, or absolute inside it) to a
    /// canonical path inside the root. The file itself need not exist, so a
    /// tool can create it; its parent directories need not exist either.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, PathError> {
        check(path)?;
        self.resolve_path(Path::new(path))
    }

    /// Resolves `path` to the directory entry it names, without following a
    /// symlink in the last component: the parent is resolved as by
    /// [`Workspace::resolve`] (and must lie inside the root), then the last
    /// name is appended as given. A link that lives inside the root can so
    /// be deleted or renamed wherever it points; reading or writing through
    /// it must still go through [`Workspace::resolve`].
    pub fn resolve_entry(&self, path: &str) -> Result<PathBuf, PathError> {
        check(path)?;
        let p = Path::new(path);
        match (p.components().next_back(), p.parent()) {
            (Some(Component::Normal(name)), Some(parent)) => {
                let parent = if parent.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    parent
                };
                let dir = self
                    .resolve_path(parent)
                    .map_err(|e| self.reshow(e, path))?;
                Ok(dir.join(name))
            }
            // `.`, `..` or `/` at the end: there is no last name to keep.
            _ => self.resolve_path(p),
        }
    }

    /// Puts the path as the model gave it into an error about its parent.
    fn reshow(&self, e: PathError, path: &str) -> PathError {
        match e {
            PathError::Escapes(..) => self.escapes(path),
            PathError::DanglingSymlink(_) => PathError::DanglingSymlink(path.to_string()),
            PathError::Io(_, why) => PathError::Io(path.to_string(), why),
            other => other,
        }
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
        let mut links = 0usize;
        let (resolved, _missing) = self.walk(self.root.clone(), path, &shown, &mut links)?;
        if resolved.starts_with(&self.root) {
            Ok(resolved)
        } else {
            // The path ends at the root's parent or above.
            Err(self.escapes(&shown))
        }
    }

    /// Walks `path` from `start` component by component and returns where it
    /// ends, with how many trailing components do not exist.
    ///
    /// `resolved` stays canonical: an existing component that is a symlink
    /// is followed at once (by this same walk over its target), so a later
    /// `..` pops a real directory, never the link's name. Only paths inside
    /// the root are ever looked at on disk. Above the root the walk is
    /// lexical and may only go back down along the root's own path (whose
    /// directories exist and are canonical); any other step out is refused
    /// at once, before anything outside is stat'ed, so the answer never
    /// depends on what exists outside.
    fn walk(
        &self,
        start: PathBuf,
        path: &Path,
        shown: &str,
        links: &mut usize,
    ) -> Result<(PathBuf, usize), PathError> {
        let mut resolved = start;
        // How many trailing components of `resolved` do not exist.
        let mut missing = 0usize;
        for component in path.components() {
            match component {
                Component::Prefix(_) => return Err(self.escapes(shown)),
                Component::RootDir => {
                    resolved = PathBuf::from("/");
                    missing = 0;
                }
                Component::CurDir => {}
                Component::ParentDir => {
                    // Canonical (or missing, hence link-free) components
                    // make `..` a plain pop.
                    resolved.pop();
                    missing = missing.saturating_sub(1);
                }
                Component::Normal(name) => {
                    resolved.push(name);
                    if missing > 0 {
                        // Below a missing directory nothing is a symlink.
                        missing += 1;
                    } else if resolved.starts_with(&self.root) {
                        match resolved.symlink_metadata() {
                            Ok(meta) if meta.file_type().is_symlink() => {
                                resolved = self.follow(&resolved, shown, links)?;
                            }
                            Ok(_) => {}
                            Err(e) if e.kind() == io::ErrorKind::NotFound => missing = 1,
                            Err(e) => return Err(PathError::Io(shown.to_string(), e.to_string())),
                        }
                    } else if !self.root.starts_with(&resolved) {
                        return Err(self.escapes(shown));
                    }
                }
            }
        }
        Ok((resolved, missing))
    }

    /// Where the symlink `link` (inside the root) leads, by walking its
    /// target from the link's directory.
    fn follow(&self, link: &Path, shown: &str, links: &mut usize) -> Result<PathBuf, PathError> {
        *links += 1;
        if *links > MAX_SYMLINKS {
            return Err(PathError::Io(
                shown.to_string(),
                format!("more than {MAX_SYMLINKS} symlinks on the way (a symlink loop?)"),
            ));
        }
        let target = std::fs::read_link(link)
            .map_err(|e| PathError::Io(shown.to_string(), e.to_string()))?;
        // `link` is canonical up to its own name, so its parent is a real
        // directory inside the root (or the root itself).
        let base = link.parent().unwrap_or(&self.root).to_path_buf();
        let (resolved, missing) = self.walk(base, &target, shown, links)?;
        if missing > 0 {
            return Err(PathError::DanglingSymlink(shown.to_string()));
        }
        Ok(resolved)
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

    /// A root inside a scratch dir whose `outside/` sibling the tests fill.
    fn ws_with_outside() -> (tempfile::TempDir, Workspace, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("root")).unwrap();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        let ws = Workspace::new(dir.path().join("root")).unwrap();
        let outside = std::fs::canonicalize(dir.path().join("outside")).unwrap();
        (dir, ws, outside)
    }

    #[test]
    fn errors_for_outside_paths_do_not_depend_on_what_exists_there() {
        use std::os::unix::fs::symlink;
        let (_d, ws, outside) = ws_with_outside();
        let out = outside.display().to_string();
        // Links inside the root, pointing at outside names that the table
        // below creates or not.
        symlink(outside.join("t"), ws.root().join("abs_link")).unwrap();
        symlink("../outside/t", ws.root().join("rel_link")).unwrap();
        // (path, how to make the outside thing exist)
        type Make = fn(&Path);
        let file: Make = |p| std::fs::write(p, "x").unwrap();
        let dir: Make = |p| std::fs::create_dir(p).unwrap();
        let dangling: Make = |p| symlink("/nonexistent-target", p).unwrap();
        let looping: Make = |p| symlink(p.file_name().unwrap(), p).unwrap();
        let table: Vec<(String, Make)> = vec![
            (format!("{out}/t"), file),
            (format!("{out}/t/x"), file),
            (format!("{out}/t/x"), dir),
            (format!("{out}/t/x"), dangling),
            (format!("{out}/t/x"), looping),
            ("../outside/t".into(), file),
            ("../outside/t/x".into(), dangling),
            ("../outside/t/x".into(), looping),
            ("../outside/t/../x".into(), dir),
            ("../outside/t/../x".into(), dangling),
            ("missing/../../outside/t".into(), file),
            ("missing/../../outside/t/x".into(), dangling),
            ("abs_link".into(), file),
            ("abs_link/x".into(), dir),
            ("rel_link".into(), dangling),
            ("rel_link".into(), looping),
        ];
        for (path, make) in table {
            let absent = ws.resolve(&path).unwrap_err().to_string();
            make(&outside.join("t"));
            let present = ws.resolve(&path).unwrap_err().to_string();
            assert_eq!(
                absent, present,
                "{path}: the error tells what exists outside"
            );
            assert!(
                absent.starts_with("path escapes the workspace root"),
                "{absent}"
            );
            // Reset outside/ for the next row.
            std::fs::remove_dir_all(&outside).unwrap();
            std::fs::create_dir(&outside).unwrap();
        }
    }

    #[test]
    fn existing_and_missing_outside_targets_give_the_same_error() {
        let (_d, ws, outside) = ws_with_outside();
        std::fs::write(outside.join("exists"), "x").unwrap();
        std::fs::create_dir(outside.join("dir")).unwrap();
        let out = outside.display().to_string();
        let pairs = [
            (
                "/etc/passwd".to_string(),
                "/etc/nonexistent-nanohermes".to_string(),
            ),
            (
                "/etc/passwd/x".into(),
                "/etc/nonexistent-nanohermes/x".into(),
            ),
            ("../outside/exists".into(), "../outside/missing".into()),
            ("../outside/exists/x".into(), "../outside/missing/x".into()),
            (
                "../outside/dir/../x".into(),
                "../outside/missing/../x".into(),
            ),
            (
                "missing/../../etc/passwd".into(),
                "missing/../../nonexistent".into(),
            ),
            (format!("{out}/exists"), format!("{out}/missing")),
            (format!("//{out}/dir/x"), format!("//{out}/nodir/x")),
        ];
        for (existing, missing) in pairs {
            let a = ws.resolve(&existing).unwrap_err().to_string();
            let b = ws.resolve(&missing).unwrap_err().to_string();
            assert_eq!(
                a.replace(&existing, "PATH"),
                b.replace(&missing, "PATH"),
                "{existing} vs {missing}"
            );
            assert!(a.starts_with("path escapes the workspace root"), "{a}");
        }
    }

    #[test]
    fn paths_that_come_back_inside_along_the_root_are_accepted() {
        let (_d, ws, _outside) = ws_with_outside();
        std::fs::create_dir(ws.root().join("real")).unwrap();
        std::os::unix::fs::symlink("../root/real", ws.root().join("alias")).unwrap();
        std::os::unix::fs::symlink("/", ws.root().join("slash")).unwrap();
        let abs = ws.root().join("real").display().to_string();
        assert_eq!(
            ws.resolve("../root/real/f").unwrap(),
            ws.root().join("real/f")
        );
        assert_eq!(ws.resolve("alias/f").unwrap(), ws.root().join("real/f"));
        assert_eq!(
            ws.resolve(&format!("slash{abs}/f")).unwrap(),
            ws.root().join("real/f")
        );
        assert_eq!(ws.resolve("alias/../f").unwrap(), ws.root().join("f"));
    }

    #[test]
    fn dangling_links_and_loops_inside_the_root_are_named() {
        let (dir, ws) = ws();
        std::os::unix::fs::symlink("missing.txt", dir.path().join("dangling")).unwrap();
        std::os::unix::fs::symlink("l2", dir.path().join("l1")).unwrap();
        std::os::unix::fs::symlink("l1", dir.path().join("l2")).unwrap();
        assert!(matches!(
            ws.resolve("dangling"),
            Err(PathError::DanglingSymlink(_))
        ));
        let err = ws.resolve("l1/x").unwrap_err().to_string();
        assert!(err.contains("symlink loop"), "{err}");
    }

    #[test]
    fn resolve_entry_keeps_a_final_symlink_but_confines_its_parent() {
        use std::os::unix::fs::symlink;
        let (_d, ws, outside) = ws_with_outside();
        symlink(outside.join("secret"), ws.root().join("out_link")).unwrap();
        symlink(&outside, ws.root().join("out_dir")).unwrap();
        std::fs::create_dir(ws.root().join("sub")).unwrap();
        symlink("sub", ws.root().join("sub_alias")).unwrap();
        assert_eq!(
            ws.resolve_entry("out_link").unwrap(),
            ws.root().join("out_link")
        );
        assert_eq!(
            ws.resolve_entry("sub_alias/x").unwrap(),
            ws.root().join("sub/x")
        );
        assert!(matches!(
            ws.resolve("out_link"),
            Err(PathError::Escapes(..))
        ));
        for path in ["out_dir/secret", "../outside/secret", "/etc/passwd", ".."] {
            let err = ws.resolve_entry(path).unwrap_err();
            assert_eq!(err, ws.escapes(path), "{path}");
        }
        assert_eq!(ws.resolve_entry(""), Err(PathError::Empty));
    }

    #[test]
    fn display_is_relative_to_the_root() {
        let (_d, ws) = ws();
        assert_eq!(ws.display(&ws.root().join("a/b")), "a/b");
        assert_eq!(ws.display(ws.root()), ".");
    }
}
