//! `nanohermes-shell` (being written).

fn main() {}
