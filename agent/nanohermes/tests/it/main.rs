//! The agent's integration tests: one binary, one module per area. Every
//! test runs against the scripted model in `tests/support/mock_model.rs`
//! and real MCP servers (the files server in-process, the fixture server as
//! a child process); every request the mock records is checked against the
//! history invariant.

#[path = "../support/mod.rs"]
mod support;

/// `nanohermes acp` driven by the official ACP TypeScript SDK's client (ignored unless
/// `scripts/acp-client` installed it): prompts, permissions, diffs, cancel, load, editor servers.
mod acp;
/// The loop through the library API: streaming, tool calls, gates, exits.
mod agent_loop;
/// The `nanohermes` binary: end-to-end runs, exit codes, error lines.
mod cli;
/// Compaction: the cut over random histories, a long run past a small threshold, the
/// context-length error that compacts and retries once.
mod compaction;
/// The config layer on real files: layering, trust, pasted Codex/Claude configs, error texts, --mcp.
mod config;
/// No process outlives the agent: escapes of a task after a SIGKILL of the real binary.
mod containment;
/// Deferred tools: the budget edge, pinning, tool_search finding and surfacing, calls by name,
/// the policy, late servers, resume and what the user sees.
mod deferred;
/// Project guidance: AGENTS.md layering, symlinks, CLAUDE.md fallback, the cap, skills and the skill tool.
mod guidance;
/// The history checker of the test support: it must catch what it claims to.
mod history_checker;
/// Hooks on real `sh` processes: PreToolUse vetoes (exit code, JSON, timeout), PostToolUse notes,
/// matchers, prompt, session and stop events.
mod hooks;
/// A hostile model server against the real binary: huge bodies and arguments, a trickled
/// stream, bounded memory; a base URL without /v1 and HTML error pages.
mod hostile_model;
/// The config wiring and `nanohermes mcp` through the real binary: trust, --mcp quoting,
/// add/list/get/call/remove, no process left.
mod mcp_cli;
/// The model client: retries, fallback, non-streaming, text on retry.
mod model_client;
/// Model output that must never poison the history: bad or cut-off
/// arguments, streams cut short, missing and repeated call ids.
mod model_output;
/// OAuth for an HTTP server against a real local authorization server: `mcp login`,
/// the 0600 token file, refresh after expiry, logout, no token in sessions.
mod oauth;
/// `run --output-format json|stream-json` through the binary: every line parses, event order,
/// a tool call round trip, the result subtypes and exit codes.
mod output;
/// The permission gate: modes over annotated external servers, allow/deny in other agents'
/// spellings, approval on a pseudo-terminal and the denial without one.
mod permissions;
/// `nanohermes mcp probe` and the hub's elicitation in both eras (legacy and MRTR), over stdio
/// and HTTP fixtures.
mod probe;
/// Protected paths through `nanohermes run --mode goal`: refused without anyone to ask, asked
/// call by call on a terminal, git-quoted patch paths.
mod protected;
/// Model providers through the binary: a table's URL, query, headers and key; the missing-key
/// error; a project may not choose or define one; no child sees its secrets; subagents follow.
mod providers;
/// llama.cpp's `llama-server` (scripts/llama-server) under the real binary, one task per model
/// wire from a Codex-style provider config; ignored unless NANOHERMES_LLAMA_SERVER/MODEL are set.
mod real_server;
/// Reasoning through the binary on each wire: kept in the session, replayed to its provider, dropped elsewhere.
mod reasoning;
/// Long-term memory: the recalled block leading each turn's user message, distillation that skips known
/// memories, failures as notices.
mod recall;
/// A server whose tool list changes mid-run: declared at the next step, removed tools answered.
mod refresh;
/// The interactive mode on a pseudo-terminal: one history across tasks, /undo, /usage, /exit,
/// Ctrl-C during a slow tool and twice at the prompt.
mod repl;
/// `serve --store postgres://…` replicas with real parts (ignored unless `scripts/replicas-env`
/// started PostgreSQL): any replica answers, takeover after SIGKILL, a restarted database,
/// 20 tasks behind nginx, one task per workspace; and `Agent::continue_run`.
mod replicas;
/// The first request's byte budget with every built-in declared.
mod request_budget;
/// The sandbox's namespace probe through the binary: the start-up warning, the probe's
/// child, the yes kept between runs, protected git hooks.
mod sandbox_probe;
/// `nanohermes serve` mounted by an rmcp client: run_task, progress, cancellation, sessions,
/// tasks, approvals in both eras, HTTP, and one NanoHermes using another.
mod serve;
/// `serve` under pressure: a task's mode only narrows, a hung workspace stalls no other root,
/// SIGTERM ends the server within a bound.
mod serve_bounds;
/// Session files through the real loop: appended per step, written again after compaction,
/// /undo and /reset, cut at any byte, version 1 converted, damage set aside.
mod sessions;
/// The stream as servers send it: line ends, cut streams, error frames,
/// deltas without index.
mod stream;
/// Subagents: run_task servers from the config and --agent, agent_list, the depth guard.
mod subagents;
/// The three wires (chat, responses, messages) against the strict scripted model: reasoning
/// replayed verbatim and dropped across wires, cut-off calls, interrupts, the cache share, and
/// each strict rule refusing a broken request.
mod wires;
