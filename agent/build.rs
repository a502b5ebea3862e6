//! Links `nanohermes` as a position-dependent executable on Linux.
//!
//! Why: a position-independent binary of this size carries about 54 000
//! relative relocations, which the loader applies at every start, copying
//! the ~230 pages of `.data.rel.ro` they land in. Measured on the release
//! build, one binary linked both ways (`perf stat`, `/usr/bin/time`): 2.7 ms
//! of CPU, 300 page faults and 2.5 MB of peak RSS per run (ARCHITECTURE.md,
//! "Cross-cutting concerns: Performance"). What it gives
//! up is the randomised address of the executable's own image; shared
//! libraries, heap, stacks and mappings stay randomised.

// A build script talks to cargo on stdout.
#![allow(clippy::print_stdout)]

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
