//! The Landlock ruleset of one command, built in the parent before the
//! fork: which write rights are handled (denied unless a rule grants
//! them), the hierarchies that get them, and the network and IPC scopes.
//! Reads and execution are never restricted.

use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, NetPort, PathBeneath,
    PathFd, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr, Scope,
};

/// The ABI filesystem confinement needs: 3 adds `truncate`, without which
/// a command could still empty any file it can read.
pub(super) const FS_ABI: u8 = 3;
/// The ABI that restricts TCP connect and bind.
pub(super) const NET_ABI: u8 = 4;
/// The ABI that scopes signals and abstract unix sockets.
pub(super) const SCOPE_ABI: u8 = 6;

/// Devices every program may write, whatever the mode.
pub(super) const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
];

/// The ruleset: every write right of ABI 3 handled, granted beneath each
/// existing path of `writable` (files get the rights a file can have);
/// TCP connect and bind handled (so denied) unless `network`, except a
/// connect to `relay_port` (the allowlist's relay, inside the command's
/// own network namespace); signals and abstract sockets scoped from ABI 6.
/// Missing paths are skipped.
pub(super) fn ruleset(
    abi: u8,
    writable: &[PathBuf],
    network: bool,
    relay_port: Option<u16>,
) -> Result<RulesetCreated, String> {
    let handled = AccessFs::from_write(ABI::V3);
    let file_rights = handled & AccessFs::from_file(ABI::V3);
    let fail =
        |e: &dyn std::fmt::Display| format!("cannot build the sandbox's Landlock rules: {e}");
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(handled)
        .map_err(|e| fail(&e))?;
    if !network && abi >= NET_ABI {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(ABI::V4))
            .map_err(|e| fail(&e))?;
    }
    if abi >= SCOPE_ABI {
        ruleset = ruleset
            .scope(Scope::from_all(ABI::V6))
            .map_err(|e| fail(&e))?;
    }
    let mut created = ruleset.create().map_err(|e| fail(&e))?;
    if let Some(port) = relay_port.filter(|_| !network && abi >= NET_ABI) {
        created = created
            .add_rule(NetPort::new(port, AccessNet::ConnectTcp))
            .map_err(|e| fail(&e))?;
    }
    for path in writable {
        let Ok(meta) = std::fs::metadata(path) else {
            continue;
        };
        let Ok(fd) = PathFd::new(path) else {
            continue;
        };
        let rights: BitFlags<AccessFs> = if meta.is_dir() { handled } else { file_rights };
        created = created
            .add_rule(PathBeneath::new(fd, rights))
            .map_err(|e| fail(&format!("{}: {e}", path.display())))?;
    }
    Ok(created)
}
