//! Guidance files: AGENTS.md (or a fallback name) from the user's home and
//! from every directory from the filesystem root down to the workspace,
//! NANOHERMES.md at the workspace root, and the skills.
//!
//! Rules:
//! - **Order**: `$NANOHERMES_HOME/AGENTS.md`, then each directory from `/`
//!   down to the workspace (outermost first, so a closer file refines a
//!   farther one), then `WORKSPACE/NANOHERMES.md`.
//! - **Fallback names**: in a directory without AGENTS.md, the first of
//!   `project_doc_fallback_filenames` (default `CLAUDE.md`) found there is
//!   read, so a Claude Code project works unchanged.
//! - **Once each**: files are deduplicated by canonical path, so an
//!   AGENTS.md reached through a symlink (or a home inside the workspace's
//!   ancestry) is read once.
//! - **Bounded**: each file is read up to [`MAX_FILE_BYTES`]; the whole text
//!   is capped at [`MAX_GUIDANCE_CHARS`] characters and then ends with
//!   [`TRUNCATED`] (the innermost files are the ones cut, as in Codex).
//! - **Confined** ([`read_confined`]): a file is read only when its real
//!   path (symlinks resolved) stays under its own tree — the workspace for
//!   the workspace's files and skills, `$NANOHERMES_HOME` for the user's,
//!   the directory it was found in for an ancestor's AGENTS.md — and it is
//!   a regular file, opened with `O_NONBLOCK` and checked again with
//!   `fstat` (same inode as resolved), so a symlink to `/proc/self/environ`
//!   or a credentials file, a FIFO, a socket or a device is never read and
//!   never blocks the run.
//! - **Never fatal**: a file that exists but cannot or may not be read is
//!   skipped with one warning naming it and why; an empty one is skipped
//!   silently.
//! - **Trust**: guidance is read whether or not the project is trusted, as
//!   Codex and Claude Code read AGENTS.md/CLAUDE.md. It is text the model
//!   reads, not a program: it starts nothing and changes no setting (that
//!   is what trust guards: `.mcp.json` servers, hooks, project config), and
//!   every tool call it might inspire still passes the permission gates.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::Read as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use super::skills::{self, Skill};

/// The layered guidance file.
pub const AGENTS_MD: &str = "AGENTS.md";
/// The workspace's own NanoHermes notes.
pub const NANOHERMES_MD: &str = "NANOHERMES.md";
/// Read where a directory has no AGENTS.md, unless configured otherwise.
pub const DEFAULT_FALLBACK_FILENAMES: &[&str] = &["CLAUDE.md"];
/// The cap on all guidance text together, in characters.
pub const MAX_GUIDANCE_CHARS: usize = 20_000;
/// The most bytes read from one guidance or skill file.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
/// What ends guidance cut at [`MAX_GUIDANCE_CHARS`].
pub const TRUNCATED: &str = "[project guidance truncated]";

/// Where guidance is looked for besides the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuidanceSources {
    /// `$NANOHERMES_HOME` (default `~/.nanohermes`): its AGENTS.md comes
    /// first, its `skills/` are listed.
    pub home: Option<PathBuf>,
    /// Names read in a directory that has no AGENTS.md, first found wins
    /// (`project_doc_fallback_filenames`).
    pub fallback_filenames: Vec<String>,
}

impl Default for GuidanceSources {
    fn default() -> GuidanceSources {
        GuidanceSources {
            home: None,
            fallback_filenames: DEFAULT_FALLBACK_FILENAMES
                .iter()
                .map(|n| n.to_string())
                .collect(),
        }
    }
}

/// One guidance file as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Doc {
    /// Where it was found (not canonicalised, as the user knows it).
    pub path: PathBuf,
    /// Its text (at most [`MAX_FILE_BYTES`], lossily decoded).
    pub text: String,
}

/// Everything [`load`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Guidance {
    /// The guidance files, in prompt order.
    pub docs: Vec<Doc>,
    /// The skills, sorted by name.
    pub skills: Vec<Skill>,
    /// One line per file that could not be read or used, for the user.
    pub warnings: Vec<String>,
}

/// Reads the guidance for `workspace` (canonical) from `sources`.
pub fn load(workspace: &Path, sources: &GuidanceSources) -> Guidance {
    let mut guidance = Guidance::default();
    let mut seen = HashSet::new();
    // Each candidate with the tree its real path must stay under. A home
    // that does not resolve has no files to read.
    let home = sources.home.as_ref().and_then(|h| h.canonicalize().ok());
    let mut candidates: Vec<(PathBuf, PathBuf)> = Vec::new();
    if let (Some(home), Some(real)) = (&sources.home, &home) {
        candidates.push((home.join(AGENTS_MD), real.clone()));
    }
    let mut dirs: Vec<&Path> = workspace.ancestors().collect();
    dirs.reverse();
    for dir in dirs {
        let names = std::iter::once(AGENTS_MD).chain(
            sources
                .fallback_filenames
                .iter()
                .map(String::as_str)
                .filter(|n| *n != AGENTS_MD),
        );
        if let Some(found) = names.map(|n| dir.join(n)).find(|p| p.exists()) {
            candidates.push((found, dir.to_path_buf()));
        }
    }
    candidates.push((workspace.join(NANOHERMES_MD), workspace.to_path_buf()));

    for (path, root) in candidates {
        // `exists` follows symlinks: a dangling one is no file.
        if !path.exists() {
            continue;
        }
        let canonical = path.canonicalize().unwrap_or_else(|_| path.clone());
        if seen.contains(&canonical) {
            continue;
        }
        match read_confined(&path, &root) {
            Ok(text) if text.trim().is_empty() => {}
            Ok(text) => {
                seen.insert(canonical);
                guidance.docs.push(Doc { path, text });
            }
            Err(e) => guidance.warnings.push(skipped(&path, &e)),
        }
    }

    let mut skill_dirs = Vec::new();
    if let (Some(home), Some(real)) = (&sources.home, &home) {
        skill_dirs.push((home.join(skills::SKILLS_DIR), real.clone()));
    }
    skill_dirs.push((
        workspace.join(".nanohermes").join(skills::SKILLS_DIR),
        workspace.to_path_buf(),
    ));
    let (found, warnings) = skills::discover(&skill_dirs);
    guidance.skills = found;
    guidance.warnings.extend(warnings);
    guidance
}

impl Guidance {
    /// Appends the guidance section and the skill list to `prompt`;
    /// nothing when there is neither.
    pub fn render_into(&self, prompt: &mut String) {
        if !self.docs.is_empty() {
            prompt.push_str(
                "\n# Project guidance\n\
                 The user's and the project's instruction files, outermost first; a later file \
                 refines an earlier one. Follow them unless the user's request says otherwise.\n",
            );
            let mut body = String::new();
            for doc in &self.docs {
                let _ = write!(
                    body,
                    "\n## {}\n{}\n",
                    doc.path.display(),
                    doc.text.trim_end()
                );
            }
            prompt.push_str(&cap(&body, MAX_GUIDANCE_CHARS));
        }
        skills::render_list(&self.skills, prompt);
    }
}

/// `text` cut to `max` characters, ending with [`TRUNCATED`] when cut.
fn cap(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((end, _)) => format!("{}\n{TRUNCATED}\n", &text[..end]),
    }
}

/// Reads at most [`MAX_FILE_BYTES`] of `path` as text (invalid UTF-8
/// replaced, a character cut at the cap dropped), only when `path`
/// resolves to a regular file under `root` (canonical).
///
/// The real path is checked before anything is opened, so a symlink to
/// `/proc/self/environ`, a credentials file or a device is never opened;
/// the open is non-blocking (a FIFO swapped in after the check cannot hang
/// the run) and `fstat` must show the same regular file that was checked,
/// so a swap between the check and the open is refused too.
pub(crate) fn read_confined(path: &Path, root: &Path) -> std::io::Result<String> {
    let real = path.canonicalize()?;
    if !real.starts_with(root) {
        return Err(std::io::Error::other(format!(
            "it leads to {}, outside {}",
            real.display(),
            root.display()
        )));
    }
    let checked = std::fs::metadata(&real)?;
    if !checked.is_file() {
        return Err(std::io::Error::other(format!(
            "it is not a regular file but a {}",
            mcp_tools::regular::kind(&checked)
        )));
    }
    let (file, opened) = mcp_tools::regular::open_regular(&real)?;
    if (opened.dev(), opened.ino()) != (checked.dev(), checked.ino()) {
        return Err(std::io::Error::other("it was replaced while being opened"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES).read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(if bytes.len() as u64 == MAX_FILE_BYTES {
        text.trim_end_matches('\u{FFFD}').to_string()
    } else {
        text.into_owned()
    })
}

/// The warning for a guidance file that could not be read.
pub(crate) fn skipped(path: &Path, e: &std::io::Error) -> String {
    format!("skipped {}: {e}; fix or remove it", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_keeps_short_text_and_cuts_long_text_on_a_character() {
        assert_eq!(cap("abc", 3), "abc");
        assert_eq!(cap("日本語です", 2), format!("日本\n{TRUNCATED}\n"));
    }
}
