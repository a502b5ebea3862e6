//! grep vs rg benchmark (being written).

fn main() {}
