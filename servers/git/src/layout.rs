//! Where the repository around the workspace root keeps its work tree and
//! git directories, and whether git may act on it at all.
//!
//! Git finds its repository by walking up from the root, and a repository
//! can say its work tree or its configuration lie elsewhere: a shipped
//! `.git` with `core.worktree=/` makes every readable file part of the
//! work tree (`git_diff` would print any of them), and a planted
//! `.git/commondir` makes git take config, hooks and objects from a
//! directory the workspace does not hold. So, before any tool runs:
//! - a git directory inside the root must have the root as its work tree,
//!   and its common directory inside the root too;
//! - a git directory outside the root (the root is a package of a larger
//!   repository, a linked worktree, a submodule) is fine when its work tree
//!   contains the root.
//!
//! Everything else is refused with a [`GitError::Refused`] that says what
//! points where.

use std::path::{Path, PathBuf};

use crate::runner::GitError;

/// The `git rev-parse` flags whose answers [`Layout::parse`] reads, in
/// this order (one line each).
pub const REV_PARSE_ARGS: &[&str] = &[
    "rev-parse",
    "--absolute-git-dir",
    "--git-common-dir",
    "--show-object-format",
    "--is-inside-work-tree",
    "--show-toplevel",
    "--show-prefix",
];

/// A repository git may act on for this root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The git directory (`.git`, or where a `.git` file points).
    pub git_dir: PathBuf,
    /// Where config, objects and refs live (`commondir`), usually `git_dir`.
    pub common_dir: PathBuf,
    /// The top of the work tree: the root or a directory containing it.
    pub top: PathBuf,
    /// The root relative to `top`, ending in `/`; empty at the top.
    pub prefix: String,
    /// `sha1` or `sha256`.
    pub object_format: String,
}

impl Layout {
    /// Reads the output of [`REV_PARSE_ARGS`] run in `root` (canonical)
    /// and checks it. `code` is git's exit code: it fails after printing
    /// `false` when there is no work tree (a bare repository).
    pub fn parse(root: &Path, code: i32, stdout: &str, stderr: &str) -> Result<Layout, GitError> {
        let lines: Vec<&str> = stdout.lines().collect();
        let line = |i: usize| lines.get(i).copied().unwrap_or("");
        let absolute = |text: &str| -> PathBuf {
            let path = root.join(text);
            path.canonicalize().unwrap_or(path)
        };
        if line(3) == "false" {
            return Err(GitError::Refused(format!(
                "the workspace root {} is not in a work tree: git found the repository {} but no \
                 work tree for it here (a bare repository, or the root lies inside a .git \
                 directory); start in a checked-out work tree",
                root.display(),
                absolute(line(0)).display()
            )));
        }
        if code != 0 || lines.len() < 5 {
            return Err(GitError::Failed {
                command: REV_PARSE_ARGS.join(" "),
                code,
                output: format!("{}{}", stderr.trim(), stdout.trim()),
            });
        }
        let layout = Layout {
            git_dir: absolute(line(0)),
            common_dir: absolute(line(1)),
            object_format: line(2).to_owned(),
            top: absolute(line(4)),
            prefix: line(5).to_owned(),
        };
        layout.check(root)?;
        Ok(layout)
    }

    /// The rules of the module doc.
    fn check(&self, root: &Path) -> Result<(), GitError> {
        let shown = |p: &Path| p.display().to_string();
        if self.git_dir.starts_with(root) {
            if self.top != root {
                return Err(GitError::Refused(format!(
                    "refused: the git directory {} lies inside the workspace but its work tree is \
                     {}, not the workspace root {} (core.worktree, or a .git file, points it \
                     elsewhere); git tools act only on a repository whose work tree is the root. \
                     If that setting is not yours, remove it (`git config --unset core.worktree`)",
                    shown(&self.git_dir),
                    shown(&self.top),
                    root.display()
                )));
            }
            if !self.common_dir.starts_with(root) {
                return Err(GitError::Refused(format!(
                    "refused: the git directory {} lies inside the workspace but takes its \
                     config, hooks and objects from {}, outside it (a `commondir` file); git \
                     tools do not use a repository configured from outside the workspace. If \
                     you did not put it there, delete {}",
                    shown(&self.git_dir),
                    shown(&self.common_dir),
                    shown(&self.git_dir.join("commondir"))
                )));
            }
        } else if !root.starts_with(&self.top) {
            return Err(GitError::Refused(format!(
                "refused: the repository {} (outside the workspace) has its work tree at {}, \
                 which does not contain the workspace root {}; git tools act only on the \
                 repository the root is checked out from",
                shown(&self.git_dir),
                shown(&self.top),
                root.display()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(root: &Path, out: &str) -> Result<Layout, String> {
        Layout::parse(root, 0, out, "").map_err(|e| e.to_string())
    }

    #[test]
    fn a_repository_at_the_root_or_above_it_is_accepted() {
        let root = Path::new("/w/repo");
        let at = parsed(root, "/w/repo/.git\n.git\nsha1\ntrue\n/w/repo\n\n").unwrap();
        assert_eq!(at.common_dir, Path::new("/w/repo/.git"));
        assert_eq!(at.prefix, "");
        let package = parsed(
            Path::new("/w/mono/pkg"),
            "/w/mono/.git\n/w/mono/.git\nsha1\ntrue\n/w/mono\npkg/\n",
        )
        .unwrap();
        assert_eq!(package.prefix, "pkg/");
        parsed(
            root,
            "/w/main/.git/worktrees/repo\n/w/main/.git\nsha1\ntrue\n/w/repo\n\n",
        )
        .unwrap();
    }

    #[test]
    fn a_work_tree_or_common_dir_pointing_out_is_refused() {
        let root = Path::new("/w/repo");
        let err = parsed(root, "/w/repo/.git\n/w/repo/.git\nsha1\ntrue\n/\nw/repo/\n").unwrap_err();
        assert!(
            err.contains("its work tree is /, not the workspace root"),
            "{err}"
        );
        let err = parsed(
            root,
            "/w/repo/.git\n/home/u/other.git\nsha1\ntrue\n/w/repo\n\n",
        )
        .unwrap_err();
        assert!(
            err.contains("takes its config, hooks and objects from /home/u/other.git"),
            "{err}"
        );
        let err = parsed(
            root,
            "/w/other/.git\n/w/other/.git\nsha1\ntrue\n/w/other\n\n",
        )
        .unwrap_err();
        assert!(err.contains("does not contain the workspace root"), "{err}");
    }

    #[test]
    fn a_bare_repository_is_not_a_work_tree() {
        let err = Layout::parse(Path::new("/w/b"), 128, "/w/b\n.\nsha1\nfalse\n", "fatal: …")
            .unwrap_err()
            .to_string();
        assert!(err.contains("is not in a work tree"), "{err}");
    }
}
