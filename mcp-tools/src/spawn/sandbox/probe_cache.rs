//! The namespace probe's yes, remembered until the system changes.
//!
//! The probe starts a child (this binary again, then `true`) that enters
//! a user and mount namespace: about 3 ms of CPU on the 2-core machine the
//! benchmarks run on, beside a program that is starting up, in every
//! process that may spawn commands (the agent, and each shell or git
//! server started as a child process). Its answer depends only on what the
//! [`key`] names — the boot, the user, the binary, the namespaces and
//! security context this process runs in, the sysctls that gate user
//! namespaces — so a yes is written under that key and read by the next
//! process with the same key instead of probing again.
//!
//! Only a yes is kept. A kept yes that has gone stale (or was forged: the
//! fallback directory is under the temp directory, which sandboxed
//! commands may write) fails closed: the sandboxed child's own namespace
//! step fails and the command does not run. A no would weaken the sandbox
//! (`sandbox_unavailable = "warn"` runs commands without the protected
//! paths), so a no is probed again in every process.
//!
//! Where: `$XDG_RUNTIME_DIR/nanohermes` (per user, emptied at boot), else
//! `nanohermes-UID` in the temp directory; used only when it is a
//! directory this user owns that no one else may enter.
//! [`CACHE_VAR`] names another directory, or `off`.

use std::hash::{Hash as _, Hasher as _};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};

/// Overrides the cache's directory; `off` turns the cache off.
pub const CACHE_VAR: &str = "NANOHERMES_PROBE_CACHE";

/// The first line of every key: a change of what keys hold changes it.
const KEY_VERSION: &str = "nanohermes namespace probe v1";

/// This process's entry: the file its key names, and the key.
pub(super) struct Entry {
    path: PathBuf,
    key: String,
}

impl Entry {
    /// This process's entry; `None` when the cache is off, its directory
    /// is not private, or the key cannot be told.
    pub(super) fn of_this_process() -> Option<Entry> {
        let dir = directory()?;
        let key = key()?;
        let mut hasher = std::hash::DefaultHasher::new();
        key.hash(&mut hasher);
        let path = dir.join(format!("ns-probe-{:016x}", hasher.finish()));
        Some(Entry { path, key })
    }

    /// Whether a yes was kept under this key.
    pub(super) fn holds_yes(&self) -> bool {
        std::fs::read(&self.path).is_ok_and(|kept| kept == self.key.as_bytes())
    }

    /// Keeps a yes under this key; a failure only means the next process
    /// probes again. Losing it to a power cut costs one probe, so no fsync.
    pub(super) fn keep_yes(&self) {
        let written = crate::atomic::write_atomic_with(
            &self.path,
            self.key.as_bytes(),
            0o600,
            crate::atomic::Durability::ProcessDeath,
        );
        if let Err(e) = written {
            tracing::debug!(
                "cannot keep the namespace probe's answer in {:?}: {e}",
                self.path
            );
        }
    }
}

/// The cache's directory, made if missing; `None` when it is off or not
/// private to this user.
fn directory() -> Option<PathBuf> {
    let dir = match std::env::var_os(CACHE_VAR) {
        Some(value) if value == "off" => return None,
        Some(value) if !value.is_empty() => PathBuf::from(value),
        _ => match std::env::var_os("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
            Some(runtime) => PathBuf::from(runtime).join("nanohermes"),
            None => std::env::temp_dir().join(format!("nanohermes-{}", nix::unistd::getuid())),
        },
    };
    // Made private; an existing one is used only if it already is.
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&dir);
    is_private(&dir).then_some(dir)
}

/// A real directory (not a symlink), owned by this user, closed to others.
fn is_private(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|meta| {
        meta.is_dir() && meta.uid() == nix::unistd::getuid().as_raw() && meta.mode() & 0o077 == 0
    })
}

/// Everything the probe's answer depends on, one line each; `None` when
/// the boot cannot be told (no `/proc`): nothing is kept then.
pub(super) fn key() -> Option<String> {
    let read = |path: &str| std::fs::read_to_string(path).map(|s| s.trim().to_owned());
    let boot = read("/proc/sys/kernel/random/boot_id").ok()?;
    let mut key = format!("{KEY_VERSION}\nboot {boot}\n");
    key.push_str(&format!(
        "ids {} {}\n",
        nix::unistd::getuid(),
        nix::unistd::getgid()
    ));
    // AppArmor profiles attach by path; a rebuilt binary may differ.
    let exe = std::fs::read_link("/proc/self/exe").ok()?;
    let exe_meta = std::fs::metadata(&exe).ok()?;
    key.push_str(&format!(
        "exe {} {} {} {}\n",
        exe.display(),
        exe_meta.dev(),
        exe_meta.ino(),
        exe_meta.mtime_nsec() + exe_meta.mtime() * 1_000_000_000
    ));
    // A container, or a namespace nested too deep, answers differently.
    for ns in ["user", "mnt"] {
        let link = std::fs::read_link(format!("/proc/self/ns/{ns}")).ok()?;
        key.push_str(&format!("ns {}\n", link.display()));
    }
    // A seccomp filter or no_new_privs can refuse unshare.
    let status = read("/proc/self/status").ok()?;
    for line in status.lines().filter(|line| {
        line.starts_with("NoNewPrivs:") || line.starts_with("Seccomp") || line.starts_with("Cap")
    }) {
        key.push_str(&line.split_whitespace().collect::<Vec<_>>().join(" "));
        key.push('\n');
    }
    let label = read("/proc/self/attr/current").unwrap_or_else(|_| "-".to_owned());
    key.push_str(&format!("lsm {label}\n"));
    for sysctl in [
        "/proc/sys/user/max_user_namespaces",
        "/proc/sys/user/max_mnt_namespaces",
        "/proc/sys/kernel/unprivileged_userns_clone",
        "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    ] {
        let value = read(sysctl).unwrap_or_else(|_| "-".to_owned());
        key.push_str(&format!("{sysctl} {value}\n"));
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_names_the_boot_the_binary_and_the_namespaces() {
        let key = key().expect("this system has /proc");
        for part in [
            "\nboot ",
            "\nexe /",
            "\nns user:[",
            "\nns mnt:[",
            "\nSeccomp: ",
        ] {
            assert!(key.contains(part), "{part:?} missing from {key}");
        }
        assert_eq!(key, super::key().unwrap(), "the key is stable");
    }

    #[test]
    fn a_directory_others_may_enter_is_not_used() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(is_private(dir.path()));
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(!is_private(dir.path()));
        let link = dir.path().join("link");
        let private = tempfile::tempdir().unwrap();
        std::fs::set_permissions(private.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(is_private(private.path()));
        std::os::unix::fs::symlink(private.path(), &link).unwrap();
        assert!(!is_private(&link), "a symlink is not followed");
    }
}
