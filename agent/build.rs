//! Link options for the `nanohermes` binary on Linux.
//!
//! 1. Position-dependent (`-no-pie`). A position-independent binary of this
//!    size carries about 54 000 relative relocations, which the loader
//!    applies at every start, copying the ~230 pages of `.data.rel.ro` they
//!    land in. Measured on the release build, one binary linked both ways
//!    (`perf stat`, `/usr/bin/time`): 2.7 ms of CPU, 300 page faults and
//!    2.5 MB of peak RSS per run. What it gives up is the randomised address
//!    of the executable's own image; shared libraries, heap, stacks and
//!    mappings stay randomised.
//! 2. The functions a run executes laid out together, from
//!    `link/hot-symbols.txt` (`scripts/symbol-order` writes it). A run
//!    executes about 2.5 MB of a 22 MB `.text`; scattered, the kernel's
//!    64 KB fault-around made most of the section resident. Measured on the
//!    release build, the 4-step task: peak RSS 20.2 → 8.8 MB. Only in
//!    optimised builds (tests would pay the link time for nothing), and only
//!    where rustc links with its own lld (the x86_64 Linux default), the one
//!    linker here that takes `--symbol-ordering-file`. A name the build no
//!    longer has is skipped without a word; a stale file costs memory, never
//!    correctness. `NANOHERMES_SYMBOL_ORDER=off` turns it off.
//!
//! ARCHITECTURE.md, "Cross-cutting concerns: Performance", has the figures.

// A build script talks to cargo on stdout.
#![allow(clippy::print_stdout)]

use std::env::var;
use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=link/hot-symbols.txt");
    println!("cargo:rerun-if-env-changed=NANOHERMES_SYMBOL_ORDER");
    if var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    println!("cargo:rustc-link-arg-bins=-no-pie");
    let order =
        Path::new(&var("CARGO_MANIFEST_DIR").unwrap_or_default()).join("link/hot-symbols.txt");
    if links_with_rust_lld()
        && optimised()
        && order.exists()
        && var("NANOHERMES_SYMBOL_ORDER").as_deref() != Ok("off")
    {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}

/// Whether this profile inherits from `release` (cargo's `PROFILE`).
fn optimised() -> bool {
    var("PROFILE").as_deref() == Ok("release")
}

/// Whether the link is rustc's default for x86_64 Linux, its own lld: the
/// target is that one and nobody chose another linker (cargo's
/// `RUSTC_LINKER`, or a linker flag in the rustflags).
fn links_with_rust_lld() -> bool {
    let target = var("TARGET").unwrap_or_default();
    let flags = var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    target == "x86_64-unknown-linux-gnu" && var("RUSTC_LINKER").is_err() && !flags.contains("link")
}
