//! Integration tests of the git server, on real repositories in temp dirs.
//!
//! Modules by tool; `support` owns the setup (a repository with a local
//! identity, and an MCP client connected to the server in-process); `stdio`
//! spawns the real binary; `attacks` (the attack table) and `confinement`
//! drive the real binary against planted repositories.

mod attack_support;
mod attacks;
mod commit;
mod confinement;
mod diff;
mod errors;
mod log;
mod readonly;
mod sandbox;
mod schema;
mod status;
mod stdio;
mod support;
