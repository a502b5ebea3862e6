//! Skills: `SKILLS_DIR/NAME/SKILL.md` files with `name` and `description`
//! front matter (the shape Claude Code and Codex use), from
//! `$NANOHERMES_HOME/skills` and `WORKSPACE/.nanohermes/skills`.
//!
//! The system prompt lists each skill by name and description only (each
//! description cut to [`MAX_DESCRIPTION_CHARS`], at most [`MAX_LISTED`]
//! skills), so an unused skill costs one line per request; the `skill`
//! tool returns the whole file when the model asks for it.
//!
//! Front matter is the lines between a first line `---` and the next
//! `---`; only `name:` and `description:` are read (a value may be quoted),
//! so no YAML library is needed. A missing `name` is the directory's name;
//! a skill without a description, or whose name is not 1 to 64 letters,
//! digits, `-`, `_` or `.`, is skipped with a warning. A project skill
//! replaces a home skill of the same name.
//!
//! A SKILL.md is read like a guidance file ([`read_confined`]): only a
//! regular file whose real path stays under its tree (the workspace for a
//! project skill, `$NANOHERMES_HOME` for the user's), never blocking.

use std::path::PathBuf;

use super::guidance::{read_confined, skipped};

/// The folder of skills inside `$NANOHERMES_HOME` and `.nanohermes`.
pub const SKILLS_DIR: &str = "skills";
/// The file that makes a folder a skill.
pub const SKILL_MD: &str = "SKILL.md";
/// Each description in the prompt's list is cut to this many characters.
pub const MAX_DESCRIPTION_CHARS: usize = 300;
/// At most this many skills are listed (and offered by the tool).
pub const MAX_LISTED: usize = 64;

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name, the `skill` tool's argument.
    pub name: String,
    /// What it is for, from the front matter.
    pub description: String,
    /// Its SKILL.md.
    pub path: PathBuf,
    /// The whole file, front matter included.
    pub text: String,
}

/// Every skill in `dirs` (later dirs replace earlier ones' skills of the
/// same name), sorted by name, at most [`MAX_LISTED`]; and the warnings.
/// Each dir comes with the canonical tree its files must stay under.
pub fn discover(dirs: &[(PathBuf, PathBuf)]) -> (Vec<Skill>, Vec<String>) {
    let mut skills: Vec<Skill> = Vec::new();
    let mut warnings = Vec::new();
    for (dir, root) in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut folders: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.join(SKILL_MD).exists())
            .collect();
        folders.sort();
        for folder in folders {
            let path = folder.join(SKILL_MD);
            let text = match read_confined(&path, root) {
                Ok(text) => text,
                Err(e) => {
                    warnings.push(skipped(&path, &e));
                    continue;
                }
            };
            let fallback = folder
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            match parse(&text, &fallback) {
                Ok((name, description)) => {
                    skills.retain(|s| s.name != name);
                    skills.push(Skill {
                        name,
                        description,
                        path,
                        text,
                    });
                }
                Err(problem) => {
                    warnings.push(format!("skill {} is skipped: {problem}", path.display()))
                }
            }
        }
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    if skills.len() > MAX_LISTED {
        warnings.push(format!(
            "{} skills found; only the first {MAX_LISTED} by name are offered",
            skills.len()
        ));
        skills.truncate(MAX_LISTED);
    }
    (skills, warnings)
}

/// The `name` (or `fallback`) and `description` of a SKILL.md.
fn parse(text: &str, fallback: &str) -> Result<(String, String), String> {
    let mut lines = text.lines();
    let mut name = None;
    let mut description = None;
    if lines.next().map(str::trim_end) == Some("---") {
        for line in lines {
            if line.trim_end() == "---" {
                break;
            }
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = unquote(value.trim());
            match key.trim() {
                "name" => name = Some(value),
                "description" => description = Some(value),
                _ => {}
            }
        }
    }
    let name = name
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| fallback.to_string());
    if !is_valid_name(&name) {
        return Err(format!(
            "its name {name:?} must be 1 to 64 letters, digits, `-`, `_` or `.`"
        ));
    }
    match description.filter(|d| !d.is_empty()) {
        Some(description) => Ok((name, description)),
        None => Err(
            "it has no `description:` in its front matter (between `---` lines at the top)"
                .to_string(),
        ),
    }
}

fn unquote(value: &str) -> String {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner.to_string();
        }
    }
    value.to_string()
}

fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Appends the skill list to `prompt`; nothing when there are no skills.
pub fn render_list(skills: &[Skill], prompt: &mut String) {
    if skills.is_empty() {
        return;
    }
    prompt.push_str(
        "\n# Skills\n\
         Instructions for particular tasks. When a task matches a skill's description, \
         load it first with the skill tool ({\"name\": NAME}) and follow it.\n",
    );
    for skill in skills {
        let description: String = skill
            .description
            .chars()
            .take(MAX_DESCRIPTION_CHARS)
            .collect();
        let more = if description.len() < skill.description.len() {
            "…"
        } else {
            ""
        };
        prompt.push_str(&format!("- {}: {description}{more}\n", skill.name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_gives_name_and_description_quoted_or_not() {
        let text = "---\nname: \"release\"\ndescription: Cut a release: tag, notes\nlicense: MIT\n---\n# Body\n";
        assert_eq!(
            parse(text, "dir"),
            Ok(("release".into(), "Cut a release: tag, notes".into()))
        );
        assert_eq!(
            parse("---\ndescription: 'x'\n---\n", "from-dir"),
            Ok(("from-dir".into(), "x".into()))
        );
    }

    #[test]
    fn a_skill_without_description_or_with_a_bad_name_is_refused() {
        let e = parse("# no front matter\ndescription: too late\n", "s").unwrap_err();
        assert!(e.contains("no `description:`"), "{e}");
        let e = parse("---\nname: a b\ndescription: d\n---\n", "s").unwrap_err();
        assert!(e.contains("\"a b\""), "{e}");
    }

    #[test]
    fn the_list_cuts_long_descriptions() {
        let skill = Skill {
            name: "long".into(),
            description: "x".repeat(MAX_DESCRIPTION_CHARS + 50),
            path: PathBuf::from("/s/SKILL.md"),
            text: String::new(),
        };
        let mut prompt = String::new();
        render_list(&[skill], &mut prompt);
        let line = prompt.lines().last().unwrap();
        assert_eq!(
            line,
            format!("- long: {}…", "x".repeat(MAX_DESCRIPTION_CHARS))
        );
    }

    #[test]
    fn a_project_skill_replaces_a_home_skill_of_the_same_name() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        for (root, description) in [(home.path(), "home one"), (project.path(), "project one")] {
            std::fs::create_dir_all(root.join("deploy")).unwrap();
            std::fs::write(
                root.join("deploy/SKILL.md"),
                format!("---\nname: deploy\ndescription: {description}\n---\n"),
            )
            .unwrap();
        }
        let dirs: Vec<(PathBuf, PathBuf)> = [home.path(), project.path()]
            .iter()
            .map(|d| (d.to_path_buf(), d.canonicalize().unwrap()))
            .collect();
        let (skills, warnings) = discover(&dirs);
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(skills.len(), 1);
        assert_eq!(skills[0].description, "project one");
        assert!(skills[0].path.starts_with(project.path()));
    }
}
