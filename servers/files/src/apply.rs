//! Applying a parsed patch to the workspace: plan every change in memory,
//! then write them, undoing the ones already written if a later one fails.
//!
//! Deleting or renaming acts on the directory entry the patch names: a
//! symlink is removed or moved as a link (its target untouched, wherever it
//! points), the way `git` and `mv` treat links. Its "content" in a patch is
//! its target path, as in a git diff of a link. Modifying a file follows
//! links, as reading and writing do, and so stays confined to the root.
//!
//! Every change is made through an [`Entry`]: inside its parent directory
//! opened beneath the root, never through a path (see [`crate::entry`]).
//! A patch that touches a protected path ([`crate::protected`]) is refused
//! whole unless the call is granted a protected write.

use std::path::{Path, PathBuf};

use mcp_tools::Workspace;

use crate::entry::Entry;
use crate::patch;
use crate::protected;
use crate::read::{open_for_read, read_text};

/// Writes `content` to the resolved `path` atomically, creating missing
/// parent directories; an existing file keeps its mode.
pub(crate) fn write_file(ws: &Workspace, path: &Path, content: &[u8]) -> std::io::Result<()> {
    Entry::open(ws, path, true)?.write(content)
}

/// The refusal for a resolved `path` that is protected, unless `granted`.
pub(crate) fn check_protected(
    ws: &Workspace,
    path: &Path,
    shown: &str,
    granted: bool,
) -> Result<(), String> {
    let rel = path.strip_prefix(ws.root()).unwrap_or(path);
    match protected::why_protected(rel) {
        Some(why) if !granted => Err(protected::refusal(shown, why)),
        _ => Ok(()),
    }
}

/// Applies the unified diff `text`, all or nothing; returns the summary.
/// `protected_write` is the user's approval of a write to a protected path.
pub(crate) fn apply_patch(
    ws: &Workspace,
    text: &str,
    protected_write: bool,
) -> Result<String, String> {
    let files = patch::parse(text)?;
    let plan = plan_patch(ws, &files)?;
    for change in &plan {
        check_protected(ws, &change.path, &change.shown, protected_write)?;
    }
    let mut done: Vec<&Change> = Vec::new();
    for change in &plan {
        if let Err(e) = change.commit(ws) {
            for undone in done.iter().rev() {
                undone.roll_back(ws);
            }
            return Err(format!(
                "writing {} failed ({e}); every file was left as it was",
                change.shown
            ));
        }
        done.push(change);
    }
    let summary: Vec<String> = plan.iter().map(Change::summary).collect();
    Ok(format!("applied patch:\n{}", summary.join("\n")))
}

fn resolve(ws: &Workspace, path: &str) -> Result<PathBuf, String> {
    ws.resolve(path).map_err(|e| e.to_string())
}

/// What a patch's old side names on disk.
enum Source {
    /// A file (links followed); its current text.
    File(PathBuf, String),
    /// A symlink, not followed; its target as text.
    Link(PathBuf, String),
}

impl Source {
    fn path(&self) -> &Path {
        match self {
            Self::File(p, _) | Self::Link(p, _) => p,
        }
    }

    fn text(&self) -> &str {
        match self {
            Self::File(_, t) | Self::Link(_, t) => t,
        }
    }
}

/// Finds the old side of a file patch: when the patch deletes or renames
/// (`on_entry`) and the name is a symlink, the link itself; otherwise the
/// file it resolves to, with pending changes earlier in the patch applied.
fn source(ws: &Workspace, plan: &[Change], src: &str, on_entry: bool) -> Result<Source, String> {
    if on_entry {
        let entry = ws.resolve_entry(src).map_err(|e| e.to_string())?;
        match plan.iter().rev().find(|c| c.path == entry) {
            Some(Change {
                after: After::Link(target),
                ..
            }) => return Ok(Source::Link(entry, link_text(target))),
            Some(_) => {}
            None => {
                let target = Entry::open(ws, &entry, false).and_then(|e| e.read_link());
                if let Ok(target) = target {
                    return Ok(Source::Link(entry, link_text(&target)));
                }
            }
        }
    }
    let path = resolve(ws, src)?;
    let text = match plan.iter().rev().find(|c| c.path == path) {
        Some(c) => match &c.after {
            After::Text(text) => text.clone(),
            After::Gone => return Err(format!("{src} is deleted earlier in the patch")),
            After::Link(_) => {
                return Err(format!(
                    "{src} becomes a symlink earlier in the patch; patch its target instead"
                ));
            }
        },
        None => read_text(open_for_read(ws, &path), &path, src)?,
    };
    Ok(Source::File(path, text))
}

fn link_text(target: &Path) -> String {
    target.to_string_lossy().into_owned()
}

fn plan_patch(ws: &Workspace, files: &[patch::FilePatch]) -> Result<Vec<Change>, String> {
    // Content as the patch goes along, so a file named twice sees its
    // own earlier hunks.
    let mut plan: Vec<Change> = Vec::new();
    for file in files {
        let old = file.old_path.as_deref();
        let new = file.new_path.as_deref();
        let shown = new.or(old).unwrap_or_default().to_string();
        let on_entry = new.is_none() || old != new;
        let current = match old {
            None => None,
            Some(src) => Some(source(ws, &plan, src, on_entry)?),
        };
        let mut lines = patch::Lines::from_text(current.as_ref().map_or("", Source::text));
        patch::apply_hunks(&mut lines, &file.hunks, &shown).map_err(|e| match &current {
            Some(Source::Link(_, target)) => format!(
                "{e}; {} is a symlink, and in a patch its content is its target path ({target}); to delete or rename the link, give no hunks",
                old.unwrap_or_default()
            ),
            _ => e,
        })?;
        let new_text = lines.to_text();
        match (old, new, current) {
            (None, Some(dst), _) => {
                let path = resolve(ws, dst)?;
                if path.exists()
                    && !plan
                        .iter()
                        .any(|c| c.path == path && c.after == After::Gone)
                {
                    return Err(format!(
                        "{dst} already exists; patch it with `--- a/{dst}` instead of `--- /dev/null`"
                    ));
                }
                plan.push(Change::new(ws, path, dst, After::Text(new_text), "A"));
            }
            (Some(src), None, Some(current)) => {
                if !new_text.is_empty() && !file.hunks.is_empty() {
                    return Err(format!(
                        "{src} is deleted but the patch does not remove all of its lines"
                    ));
                }
                plan.push(Change::new(
                    ws,
                    current.path().to_path_buf(),
                    src,
                    After::Gone,
                    "D",
                ));
            }
            (Some(src), Some(dst), Some(current)) if src != dst => {
                let after = match &current {
                    Source::File(..) => After::Text(new_text),
                    Source::Link(..) => {
                        let target = new_text.trim_end_matches('\n');
                        if target.is_empty() {
                            return Err(format!(
                                "the patch leaves the symlink {src} without a target"
                            ));
                        }
                        After::Link(PathBuf::from(target))
                    }
                };
                let dst_path = match after {
                    After::Link(_) => ws.resolve_entry(dst).map_err(|e| e.to_string())?,
                    _ => resolve(ws, dst)?,
                };
                if dst_path.symlink_metadata().is_ok() {
                    return Err(format!(
                        "cannot rename {src} to {dst}: {dst} already exists"
                    ));
                }
                plan.push(Change::new(ws, dst_path, dst, after, "A"));
                plan.push(Change::new(
                    ws,
                    current.path().to_path_buf(),
                    src,
                    After::Gone,
                    "D",
                ));
            }
            (Some(src), Some(_), Some(current)) => {
                let path = current.path().to_path_buf();
                plan.push(Change::new(ws, path, src, After::Text(new_text), "M"));
            }
            _ => {
                return Err("a file in the patch has neither an old nor a new path".into());
            }
        }
    }
    Ok(plan)
}

/// What a path holds after a change.
#[derive(Debug, PartialEq)]
enum After {
    /// A regular file with this text.
    Text(String),
    /// A symlink to this target.
    Link(PathBuf),
    /// Nothing.
    Gone,
}

/// What a path held before a change, to undo it.
enum Before {
    Missing,
    File(Vec<u8>),
    Link(PathBuf),
}

impl Before {
    fn capture(ws: &Workspace, path: &Path) -> Self {
        let Ok(entry) = Entry::open(ws, path, false) else {
            return Self::Missing;
        };
        match entry.kind() {
            Some(rustix::fs::FileType::Symlink) => {
                entry.read_link().map_or(Self::Missing, Self::Link)
            }
            // Only regular files are read: read_text has refused the rest.
            Some(rustix::fs::FileType::RegularFile) => {
                entry.read_bytes().map_or(Self::Missing, Self::File)
            }
            _ => Self::Missing,
        }
    }
}

/// One planned change of one path, with what it replaces so it can be undone.
struct Change {
    path: PathBuf,
    shown: String,
    after: After,
    before: Before,
    kind: &'static str,
}

impl Change {
    fn new(ws: &Workspace, path: PathBuf, shown: &str, after: After, kind: &'static str) -> Self {
        let before = Before::capture(ws, &path);
        Self {
            path,
            shown: shown.to_string(),
            after,
            before,
            kind,
        }
    }

    fn commit(&self, ws: &Workspace) -> std::io::Result<()> {
        match &self.after {
            After::Text(text) => write_file(ws, &self.path, text.as_bytes()),
            After::Link(target) => Entry::open(ws, &self.path, true)?.symlink(target),
            After::Gone => match Entry::open(ws, &self.path, false) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                other => other?.remove(),
            },
        }
    }

    fn roll_back(&self, ws: &Workspace) {
        let Ok(entry) = Entry::open(ws, &self.path, true) else {
            return;
        };
        let _ = match &self.before {
            // Renamed over whatever the change left there.
            Before::File(bytes) => entry.write(bytes),
            Before::Link(target) => {
                let _ = entry.remove();
                entry.symlink(target)
            }
            Before::Missing => entry.remove(),
        };
    }

    fn summary(&self) -> String {
        format!("{} {}", self.kind, self.shown)
    }
}
