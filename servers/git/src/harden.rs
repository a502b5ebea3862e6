//! The environment every git command runs in: configuration overrides
//! through `GIT_CONFIG_COUNT` / `GIT_CONFIG_KEY_n` / `GIT_CONFIG_VALUE_n`,
//! and for the read-only tools everything the repository could use to
//! start a program switched off.
//!
//! Why the environment and not `-c NAME=VALUE`: git splits a `-c` option
//! at its first `=`, so `-c filter.a=b.clean=` sets `filter.a` to
//! `b.clean=` and leaves the filter driver named `a=b` running. The
//! `GIT_CONFIG_KEY_n` / `GIT_CONFIG_VALUE_n` pairs are taken as given, and
//! they are the command-line scope, which overrides every file.
//!
//! For the read-only tools ([`read_only_env`], [`READ_ONLY_CONFIG`],
//! [`filter_overrides`]):
//! - no system or global configuration (`GIT_CONFIG_NOSYSTEM`,
//!   `GIT_CONFIG_GLOBAL=/dev/null`), except the user's `safe.directory`
//!   and `core.excludesFile`, carried over ([`carried_user_config`]);
//! - no network: `GIT_NO_LAZY_FETCH=1` (a promisor remote would fetch a
//!   missing blob through `core.sshCommand`) and `protocol.allow=never`;
//! - no index or ref writes (`GIT_OPTIONAL_LOCKS=0`), no prompt, no pager;
//! - no program the configuration names: `core.fsmonitor=false`,
//!   `core.hooksPath=/dev/null`, `diff.external` emptied (and
//!   `--no-ext-diff --no-textconv` on the command line, `runner`),
//!   `log.showSignature=false`, and every filter driver defined in any
//!   configuration source (includes too) emptied and made optional;
//! - attributes off where git can (2.40 and later): `GIT_ATTR_SOURCE` is
//!   the empty tree, so no `.gitattributes` of the work tree or the index
//!   is read; `GIT_ATTR_NOSYSTEM=1` and `core.attributesFile=/dev/null`.
//!   `$GIT_DIR/info/attributes` is still read whatever the source (checked
//!   on git 2.47): a driver it names does nothing, since every defined
//!   filter is emptied and diff drivers are off;
//! - submodules are never entered (`submodule.recurse=false`,
//!   `diff.ignoreSubmodules=all`, `--ignore-submodules=all` in `runner`):
//!   git would start a `git status` inside each, with that repository's
//!   own filters and fsmonitor.

/// Overrides of every git command: stable text to parse.
pub const COMMON_CONFIG: &[(&str, &str)] = &[("color.ui", "never"), ("core.quotepath", "false")];

/// Overrides of the read-only tools: nothing starts a program, nothing
/// goes on the network, nothing enters a submodule.
pub const READ_ONLY_CONFIG: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.attributesFile", "/dev/null"),
    ("core.pager", "cat"),
    ("diff.external", ""),
    ("log.showSignature", "false"),
    ("protocol.allow", "never"),
    ("submodule.recurse", "false"),
    ("diff.ignoreSubmodules", "all"),
    ("status.submoduleSummary", "false"),
    ("safe.bareRepository", "explicit"),
];

/// Environment of the read-only tools besides the config overrides (and
/// `GIT_CONFIG_NOSYSTEM=1`, `GIT_CONFIG_GLOBAL=/dev/null`, set by `runner`
/// for every command but the one reading the user's own settings).
pub fn read_only_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("GIT_ATTR_NOSYSTEM", "1"),
        ("GIT_NO_LAZY_FETCH", "1"),
        ("GIT_OPTIONAL_LOCKS", "0"),
    ]
}

/// Variables removed from the read-only tools' environment: programs git
/// would start from them, and configuration sources of the host's own.
pub const READ_ONLY_REMOVED_ENV: &[&str] = &[
    "GIT_EXTERNAL_DIFF",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_PROXY_COMMAND",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_CONFIG_SYSTEM",
    "GIT_ATTR_SOURCE",
];

/// Whether an inherited variable is a configuration layer of the host's
/// (`GIT_CONFIG_PARAMETERS`, `GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_n`,
/// `GIT_CONFIG_VALUE_n`): removed, so that only this module's overrides
/// are the command-line scope.
pub fn is_inherited_config_var(name: &str) -> bool {
    name == "GIT_CONFIG_PARAMETERS"
        || name == "GIT_CONFIG_COUNT"
        || name.starts_with("GIT_CONFIG_KEY_")
        || name.starts_with("GIT_CONFIG_VALUE_")
}

/// The `GIT_CONFIG_COUNT` environment for `overrides`, in order (a later
/// one wins over an earlier one with the same name).
pub fn config_env(overrides: &[(String, String)]) -> Vec<(String, String)> {
    let mut env = vec![("GIT_CONFIG_COUNT".to_owned(), overrides.len().to_string())];
    for (i, (key, value)) in overrides.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}"), key.clone()));
        env.push((format!("GIT_CONFIG_VALUE_{i}"), value.clone()));
    }
    env
}

/// The names of the configuration entries in `git config -z --list`
/// output (`NAME\nVALUE\0` records; a name alone when it has no value).
fn names(list: &str) -> impl Iterator<Item = &str> {
    list.split('\0')
        .filter(|r| !r.is_empty())
        .map(|r| r.split_once('\n').map_or(r, |(name, _)| name))
}

/// Overrides emptying every filter driver `git config -z --list` shows:
/// `clean`, `smudge` and `process` set to nothing (git then runs no
/// program for it) and `required` false (so a file that names it is not an
/// error). The driver name is kept exactly, `=` and dots included.
pub fn filter_overrides(list: &str) -> Vec<(String, String)> {
    let mut drivers: Vec<&str> = names(list)
        .filter_map(|name| {
            let rest = name.strip_prefix("filter.")?;
            let (driver, _key) = rest.rsplit_once('.')?;
            Some(driver)
        })
        .collect();
    drivers.sort_unstable();
    drivers.dedup();
    let mut overrides = Vec::new();
    for driver in drivers {
        for (key, value) in [
            ("clean", ""),
            ("smudge", ""),
            ("process", ""),
            ("required", "false"),
        ] {
            overrides.push((format!("filter.{driver}.{key}"), value.to_owned()));
        }
    }
    overrides
}

/// The user's own settings the read-only tools keep although they run
/// without the system and global files: `safe.directory` (without it a
/// repository owned by another user is refused) and `core.excludesFile`
/// (the user's global ignore list). Read from
/// `git config --show-scope -z --get-regexp …` output (`SCOPE\0NAME\nVALUE\0`),
/// system and global scope only: the repository's own are not the user's.
pub fn carried_user_config(output: &str) -> Vec<(String, String)> {
    let mut fields = output.split('\0');
    let mut carried = Vec::new();
    while let (Some(scope), Some(entry)) = (fields.next(), fields.next()) {
        if scope != "system" && scope != "global" {
            continue;
        }
        if let Some((name, value)) = entry.split_once('\n') {
            carried.push((name.to_owned(), value.to_owned()));
        }
    }
    carried
}

/// The `--get-regexp` pattern of [`carried_user_config`].
pub const CARRIED_USER_CONFIG: &str = r"^(safe\.directory|core\.excludesfile)$";

/// Whether `git version` output names a git that reads `GIT_ATTR_SOURCE`
/// (2.40 and later; older ones ignore it, and keep only the filter
/// overrides).
pub fn reads_attr_source(version: &str) -> bool {
    let Some(number) = version.trim().strip_prefix("git version ") else {
        return false;
    };
    let mut parts = number.split('.').map(|p| {
        p.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse::<u32>()
            .unwrap_or(0)
    });
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (2, 40)
}

/// The empty tree of a repository's object format (`git rev-parse
/// --show-object-format`): the attribute source that has no attributes.
pub fn empty_tree(object_format: &str) -> Option<&'static str> {
    match object_format {
        "sha1" => Some("4b825dc642cb6eb9a060e54bf8d69288fbee4904"),
        "sha256" => Some("6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_filter_driver_is_emptied_with_its_name_kept_whole() {
        let list = "core.bare\nfalse\0filter.a=b.clean\n/x/evil\0filter.lfs.process\ngit-lfs\0\
                    filter.lfs.required\ntrue\0filter.dots.in.name.smudge\ny\0filter.novalue\0";
        let overrides = filter_overrides(list);
        let keys: Vec<&str> = overrides.iter().map(|(k, _)| k.as_str()).collect();
        assert!(keys.contains(&"filter.a=b.clean"), "{keys:?}");
        assert!(keys.contains(&"filter.a=b.process"), "{keys:?}");
        assert!(keys.contains(&"filter.dots.in.name.smudge"), "{keys:?}");
        assert!(keys.contains(&"filter.lfs.required"), "{keys:?}");
        assert_eq!(overrides.len(), 12, "{keys:?}");
        assert!(
            overrides
                .iter()
                .all(|(k, v)| v.is_empty() || (k.ends_with(".required") && v == "false"))
        );
    }

    #[test]
    fn overrides_become_numbered_variables() {
        let env = config_env(&[("filter.a=b.clean".into(), String::new())]);
        assert_eq!(
            env,
            [
                ("GIT_CONFIG_COUNT".to_owned(), "1".to_owned()),
                ("GIT_CONFIG_KEY_0".to_owned(), "filter.a=b.clean".to_owned()),
                ("GIT_CONFIG_VALUE_0".to_owned(), String::new()),
            ]
        );
    }

    #[test]
    fn only_the_users_own_scopes_are_carried() {
        let out = "global\0safe.directory\n*\0local\0safe.directory\n/evil\0system\0core.excludesfile\n~/.ignore\0";
        assert_eq!(
            carried_user_config(out),
            [
                ("safe.directory".to_owned(), "*".to_owned()),
                ("core.excludesfile".to_owned(), "~/.ignore".to_owned())
            ]
        );
    }

    #[test]
    fn attribute_sources_start_at_git_2_40() {
        assert!(reads_attr_source("git version 2.47.3\n"));
        assert!(reads_attr_source("git version 2.40.0.windows.1"));
        assert!(reads_attr_source("git version 3.0.0"));
        assert!(!reads_attr_source("git version 2.39.5"));
        assert!(!reads_attr_source("something else"));
    }
}
