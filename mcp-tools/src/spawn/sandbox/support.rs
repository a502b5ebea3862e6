//! What this system can enforce, probed once per process: the Landlock
//! ABI (by asking the kernel for rulesets that need each version, the way
//! the `landlock` crate wants it asked) and whether a child may enter a
//! user and mount namespace (the protected paths need one).

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
    /// Whether a child can enter a user and mount namespace, or why not.
    pub namespaces: Result<(), String>,
}

/// The probe's answer, once given ([`Support::probe`]).
static SUPPORT: OnceLock<Support> = OnceLock::new();

impl Support {
    /// This system's support, probed on the first call (the namespace
    /// probe starts one `true`, unless an earlier process with the same
    /// key found that it works, `probe_cache.rs`) and honouring
    /// [`SIMULATE_VAR`].
    pub fn probe() -> &'static Support {
        SUPPORT.get_or_init(|| {
            let simulate = std::env::var(SIMULATE_VAR).unwrap_or_default();
            let mut support = Support {
                landlock_abi: landlock_abi(),
                namespaces: Ok(()),
            };
            for word in simulate.split(',').map(str::trim) {
                if word == "no-landlock" {
                    support.landlock_abi = 0;
                } else if let Some(n) = word.strip_prefix("abi=").and_then(|n| n.parse().ok()) {
                    support.landlock_abi = support.landlock_abi.min(n);
                } else if word == "no-namespaces" {
                    support.namespaces = Err(format!("simulated by {SIMULATE_VAR}"));
                }
            }
            if support.namespaces.is_ok() {
                // The key is read once: the same entry is checked and kept.
                let entry = super::probe_cache::Entry::of_this_process();
                if !entry.as_ref().is_some_and(|e| e.holds_yes()) {
                    support.namespaces = super::child::probe_namespaces();
                    if let (Ok(()), Some(entry)) = (&support.namespaces, &entry) {
                        entry.keep_yes();
                    }
                }
            }
            support
        })
    }

    /// The probe's answer if it has been given, without waiting for it.
    pub fn probed() -> Option<&'static Support> {
        SUPPORT.get()
    }

    /// Starts [`probe`](Self::probe) on a thread of its own and returns at
    /// once: a program calls it first thing, so the probe's child runs
    /// while the program loads its config and starts its servers, and the
    /// first command (or start-up warning) finds the answer ready.
    pub fn probe_in_background() {
        let _ = std::thread::Builder::new()
            .name("nanohermes-sandbox-probe".into())
            .spawn(|| {
                Support::probe();
            });
    }

    /// A system with nothing: no Landlock, no namespaces.
    pub fn none() -> Support {
        Support {
            landlock_abi: 0,
            namespaces: Err("not probed".to_owned()),
        }
    }
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
