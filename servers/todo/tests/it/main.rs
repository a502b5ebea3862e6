//! Integration tests of the todo server: the tools over an in-process MCP
//! client, persistence with `--file`, and the real binary over stdio.

mod persistence;
mod schema;
mod stdio;
mod support;
mod tools;
