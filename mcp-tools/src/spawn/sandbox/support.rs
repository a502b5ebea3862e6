//! What this system can enforce: the Landlock ABI (asked of the kernel
//! once per process, by creating rulesets that need each version, the way
//! the `landlock` crate wants it asked; no child) and whether a child may
//! enter user, mount, PID and network namespaces (the protected paths and
//! containment need them).
//!
//! The namespaces are learned from the first sandboxed command, not
//! probed at start: its child enters them before it execs, so it *is* the
//! test. If that step fails, the command never started; the answer "no"
//! is kept for the process ([`learn_namespaces`]) and the spawn either
//! refuses or runs it again with Landlock only, as `sandbox_unavailable`
//! says (`SpawnCommand::spawn`). Until a command has tried, the
//! namespaces are assumed to work. [`Support::probe`] asks explicitly, with
//! a forked `true`, for reports that cannot wait for a command
//! (`nanohermes mcp list`).

use std::sync::OnceLock;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, Scope,
};

/// Makes this process believe its kernel lacks parts of the sandbox, for
/// tests: `no-landlock`, `abi=N` (at most ABI N), `no-namespaces`,
/// comma-separated.
pub const SIMULATE_VAR: &str = "NANOHERMES_SANDBOX_SIMULATE";

/// What the running system supports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Support {
    /// The highest Landlock ABI that works (0: none), up to 6 (the last
    /// one the sandbox uses: IPC scoping).
    pub landlock_abi: u8,
    /// Whether a child can enter user, mount, PID and network namespaces,
    /// or why not.
    pub namespaces: Result<(), String>,
}

/// The Landlock ABI, asked once ([`landlock_abi`], then [`SIMULATE_VAR`]).
static LANDLOCK: OnceLock<u8> = OnceLock::new();

/// Whether namespaces work, once a command (or [`Support::probe`]) found out.
static NAMESPACES: OnceLock<Result<(), String>> = OnceLock::new();

impl Support {
    /// What this system is known to support now, without starting
    /// anything: the Landlock ABI, and the namespaces as the first
    /// sandboxed command found them (assumed to work until one has tried).
    pub fn known() -> Support {
        Support {
            landlock_abi: landlock(),
            namespaces: learned().cloned().unwrap_or(Ok(())),
        }
    }

    /// This system's support, with the namespaces found out now if no
    /// command has yet (a forked child enters them and execs `true`).
    pub fn probe() -> Support {
        if learned().is_none() {
            learn_namespaces(super::child::probe_namespaces());
        }
        Support::known()
    }

    /// A system with nothing: no Landlock, no namespaces.
    pub fn none() -> Support {
        Support {
            landlock_abi: 0,
            namespaces: Err("not probed".to_owned()),
        }
    }
}

/// Whether the namespaces' answer is known (a command tried them, or the
/// probe ran, or they are simulated away).
pub(super) fn namespaces_learned() -> bool {
    learned().is_some()
}

/// Keeps `result` as the process's answer about namespaces, unless one
/// was kept first; returns the kept one.
pub(super) fn learn_namespaces(result: Result<(), String>) -> &'static Result<(), String> {
    let _ = learned();
    NAMESPACES.get_or_init(|| result)
}

/// The kept answer; `no-namespaces` in [`SIMULATE_VAR`] keeps a no first.
fn learned() -> Option<&'static Result<(), String>> {
    static SIMULATED: OnceLock<()> = OnceLock::new();
    SIMULATED.get_or_init(|| {
        if simulated().iter().any(|w| w == "no-namespaces") {
            let _ = NAMESPACES.set(Err(format!("simulated by {SIMULATE_VAR}")));
        }
    });
    NAMESPACES.get()
}

/// The words of [`SIMULATE_VAR`].
fn simulated() -> Vec<String> {
    std::env::var(SIMULATE_VAR)
        .unwrap_or_default()
        .split(',')
        .map(|w| w.trim().to_owned())
        .collect()
}

fn landlock() -> u8 {
    *LANDLOCK.get_or_init(|| {
        let mut abi = landlock_abi();
        for word in simulated() {
            if word == "no-landlock" {
                abi = 0;
            } else if let Some(n) = word.strip_prefix("abi=").and_then(|n| n.parse().ok()) {
                abi = abi.min(n);
            }
        }
        abi
    })
}

/// The highest ABI in 1..=6 whose rights the kernel accepts, else 0.
fn landlock_abi() -> u8 {
    let fs = |access| {
        Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(access)
            .and_then(|r| r.create())
            .is_ok()
    };
    let net = || {
        Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessNet::from_all(ABI::V4))
            .and_then(|r| r.create())
            .is_ok()
    };
    let scope = || {
        Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .scope(Scope::from_all(ABI::V6))
            .and_then(|r| r.create())
            .is_ok()
    };
    let levels: [&dyn Fn() -> bool; 6] = [
        &|| fs(AccessFs::from_all(ABI::V1)),
        &|| fs(AccessFs::Refer.into()),
        &|| fs(AccessFs::Truncate.into()),
        &net,
        &|| fs(AccessFs::IoctlDev.into()),
        &scope,
    ];
    let mut abi = 0;
    for (n, works) in levels.iter().enumerate() {
        if !works() {
            break;
        }
        abi = n as u8 + 1;
    }
    abi
}
