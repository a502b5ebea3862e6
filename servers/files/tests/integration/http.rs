//! The real `nanohermes-files` binary over streamable HTTP, probed from
//! outside with raw HTTP/1.1 requests, so every header is exactly what the
//! test wrote: both protocol eras, the bind rule, the Host and Origin guard
//! and the bearer token (mcp-tools/src/http).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_nanohermes-files");
const TOKEN_VAR: &str = "NH_HTTP_TEST_TOKEN";
const TOKEN: &str = "c0rrect-h0rse_battery";

/// A running server; killed when dropped.
struct Server {
    child: Child,
    /// `127.0.0.1:PORT`, what a client dials.
    addr: String,
    _root: tempfile::TempDir,
}

impl Server {
    /// Starts the binary with `--root TMP` and `args`, the token variable
    /// set to [`TOKEN`], and reads the port from its first stderr line
    /// (`nanohermes-files: serving MCP at http://ADDR/mcp`). Then stderr is
    /// closed, as some hosts do: the warning logged for each refused
    /// request must not cost the answer.
    fn start(args: &[&str]) -> Self {
        let root = tempfile::tempdir().unwrap();
        let mut child = Command::new(BIN)
            .arg("--root")
            .arg(root.path())
            .args(args)
            .env(TOKEN_VAR, TOKEN)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut banner = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut banner)
            .unwrap();
        let port = banner
            .trim()
            .strip_suffix("/mcp")
            .and_then(|s| s.rsplit_once(':'))
            .map(|(_, port)| port.to_string())
            .unwrap_or_else(|| panic!("no address in {banner:?}"));
        Self {
            child,
            addr: format!("127.0.0.1:{port}"),
            _root: root,
        }
    }

    /// POSTs `body` to /mcp with exactly `headers` plus Content-Type,
    /// Accept, Content-Length and `Connection: close`.
    fn post(&self, headers: &[(&str, &str)], body: &Value) -> Reply {
        let body = body.to_string();
        let mut request = String::from("POST /mcp HTTP/1.1\r\n");
        for (name, value) in headers {
            request.push_str(&format!("{name}: {value}\r\n"));
        }
        request.push_str(&format!(
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ));
        exchange(&self.addr, &request)
    }

    /// The `Host` header a well-behaved local client sends.
    fn host(&self) -> (&str, &str) {
        ("Host", &self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Status, headers (names lowercased) and body of one response.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first JSON-RPC message in the body (plain JSON or one SSE event).
    fn json(&self) -> Value {
        let start = self.body.find('{').expect("a JSON body");
        let end = self.body.rfind('}').unwrap();
        serde_json::from_str(&self.body[start..=end]).unwrap()
    }
}

fn exchange(addr: &str, request: &str) -> Reply {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&raw);
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = head.lines().find_map(|l| {
                let (name, value) = l.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().unwrap())
            });
            let complete = match length {
                Some(length) => body.len() >= length,
                // An SSE stream stays open: stop at the first whole message.
                None => body.contains("\"jsonrpc\"") && body.contains("}\n"),
            };
            if complete {
                break;
            }
        }
        let n = stream.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    let mut lines = head.lines();
    let status = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Reply {
        status,
        headers,
        body: body.to_string(),
    }
}

fn initialize() -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw-http","version":"0"}}})
}

/// Runs the binary with `args` expecting a refusal at startup: exit code 2
/// and one line on stderr, which is returned.
fn refused_at_start(args: &[&str], env: &[(&str, &str)]) -> String {
    let root = tempfile::tempdir().unwrap();
    let mut command = Command::new(BIN);
    command
        .arg("--root")
        .arg(root.path())
        .args(args)
        .env_remove(TOKEN_VAR)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().unwrap();
    // A server that wrongly starts would never exit: give up (and fail)
    // after a generous wait instead of hanging the suite.
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} started a server instead of refusing");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
    stderr.trim().to_string()
}

/// The 2025-11-25 era: `initialize`, a session, then tools/list and a call.
#[test]
fn the_binary_serves_the_initialize_era_over_http() {
    let server = Server::start(&["--http", "127.0.0.1:0"]);
    let version = ("MCP-Protocol-Version", "2025-11-25");
    let init = server.post(&[server.host(), version], &initialize());
    assert_eq!(init.status, 200, "{init:?}");
    assert_eq!(
        init.json()["result"]["serverInfo"]["name"],
        "nanohermes-files"
    );
    let session = init
        .header("mcp-session-id")
        .expect("a session id")
        .to_string();
    let session = ("Mcp-Session-Id", session.as_str());
    server.post(
        &[server.host(), version, session],
        &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
    );
    let list = server.post(
        &[server.host(), version, session],
        &json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
    );
    assert_eq!(list.json()["result"]["tools"].as_array().unwrap().len(), 5);
    let call = server.post(
        &[server.host(), version, session],
        &json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_dir","arguments":{}}}),
    );
    assert_eq!(call.json()["result"]["isError"], false, "{call:?}");
}

/// The 2026-07-28 era: `server/discover`, then requests that carry their
/// version in `_meta`, no session.
#[test]
fn the_binary_serves_the_discover_era_over_http() {
    let server = Server::start(&["--http", "127.0.0.1:0"]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw-http", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let version = ("MCP-Protocol-Version", "2026-07-28");
    let discover = server.post(
        &[server.host(), version, ("Mcp-Method", "server/discover")],
        &json!({"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta": meta}}),
    );
    assert_eq!(discover.status, 200, "{discover:?}");
    let result = &discover.json()["result"];
    assert!(
        result["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28")),
        "{result}"
    );
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "nanohermes-files"
    );
    let list = server.post(
        &[server.host(), version, ("Mcp-Method", "tools/list")],
        &json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta": meta}}),
    );
    assert_eq!(list.status, 200, "{list:?}");
    assert_eq!(list.json()["result"]["tools"].as_array().unwrap().len(), 5);
}

#[test]
fn forged_host_headers_get_403() {
    let server = Server::start(&["--http", "127.0.0.1:0"]);
    let port = server.addr.rsplit_once(':').unwrap().1.to_string();
    for ok in [
        server.addr.clone(),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ] {
        let reply = server.post(&[("Host", &ok)], &initialize());
        assert_eq!(reply.status, 200, "Host {ok}: {reply:?}");
    }
    for forged in [
        "evil.example".to_string(),
        format!("evil.example:{port}"),
        "127.0.0.1.evil.example".to_string(),
        format!("localhost:1@evil:{port}"),
        "localhost:1@evil".to_string(),
        format!("localhost.:{port}"),
        format!("0.0.0.0:{port}"),
    ] {
        let reply = server.post(&[("Host", &forged)], &initialize());
        assert_eq!(reply.status, 403, "Host {forged}: {reply:?}");
        assert!(reply.body.contains("Host"), "{reply:?}");
    }
    let no_host = server.post(&[], &initialize());
    assert_eq!(no_host.status, 403, "{no_host:?}");
    let two = server.post(&[server.host(), ("Host", "evil.example")], &initialize());
    assert_eq!(two.status, 403, "two Host headers: {two:?}");
}

#[test]
fn forged_origins_get_403_and_absent_loopback_or_allowed_ones_pass() {
    let server = Server::start(&[
        "--http",
        "127.0.0.1:0",
        "--allow-origin",
        "https://app.example",
    ]);
    for forged in [
        "http://evil.example",
        "null",
        "http://localhost.evil.example",
        "http://127.0.0.1.evil.example:8080",
        "http://localhost@evil.example",
        "https://app.example:8443",
        "http://app.example",
    ] {
        let reply = server.post(&[server.host(), ("Origin", forged)], &initialize());
        assert_eq!(reply.status, 403, "Origin {forged}: {reply:?}");
        assert!(reply.body.contains("Origin"), "{reply:?}");
    }
    let absent = server.post(&[server.host()], &initialize());
    assert_eq!(absent.status, 200, "no Origin: {absent:?}");
    for ok in [
        "http://localhost:6274",
        "http://127.0.0.1",
        "https://[::1]:8443",
        "https://app.example",
        "https://app.example:443",
    ] {
        let reply = server.post(&[server.host(), ("Origin", ok)], &initialize());
        assert_eq!(reply.status, 200, "Origin {ok}: {reply:?}");
    }
}

#[test]
fn with_a_token_configured_requests_need_the_right_bearer_token() {
    let server = Server::start(&["--http", "127.0.0.1:0", "--auth-token-env", TOKEN_VAR]);
    let missing = server.post(&[server.host()], &initialize());
    assert_eq!(missing.status, 401, "{missing:?}");
    assert!(
        missing
            .header("www-authenticate")
            .unwrap()
            .starts_with("Bearer"),
        "{missing:?}"
    );
    let right = format!("Bearer {TOKEN}");
    for wrong in [
        format!("Bearer {TOKEN}x"),
        format!("Bearer {}", &TOKEN[1..]),
        "Bearer nope".to_string(),
        format!("Basic {TOKEN}"),
        TOKEN.to_string(),
    ] {
        let reply = server.post(&[server.host(), ("Authorization", &wrong)], &initialize());
        assert_eq!(reply.status, 401, "Authorization {wrong}: {reply:?}");
        assert!(
            reply
                .header("www-authenticate")
                .unwrap()
                .starts_with("Bearer"),
            "{reply:?}"
        );
    }
    let ok = server.post(&[server.host(), ("Authorization", &right)], &initialize());
    assert_eq!(ok.status, 200, "{ok:?}");
    // Host and Origin are checked first: the right token does not let a
    // forged Host in, and a forged Host learns nothing about the token.
    let forged = server.post(
        &[("Host", "evil.example"), ("Authorization", &right)],
        &initialize(),
    );
    assert_eq!(forged.status, 403, "{forged:?}");
    let forged = server.post(&[("Host", "evil.example")], &initialize());
    assert_eq!(forged.status, 403, "{forged:?}");
}

#[test]
fn non_loopback_binds_are_refused_at_start_without_allow_remote() {
    for addr in ["0.0.0.0:0", "[::]:0", "192.0.2.1:0"] {
        let err = refused_at_start(&["--http", addr], &[]);
        assert!(err.contains("--allow-remote"), "{addr}: {err}");
        assert!(err.starts_with("nanohermes-files: --http"), "{addr}: {err}");
    }
}

#[test]
fn allow_remote_is_refused_at_start_without_a_token() {
    let remote = ["--http", "0.0.0.0:0", "--allow-remote"];
    let err = refused_at_start(&remote, &[]);
    assert!(
        err.contains("--allow-remote needs --auth-token-env VAR"),
        "{err}"
    );
    let with_var = [&remote[..], &["--auth-token-env", TOKEN_VAR]].concat();
    let err = refused_at_start(&with_var, &[]);
    assert!(err.contains(&format!("{TOKEN_VAR} is not set")), "{err}");
    let err = refused_at_start(&with_var, &[(TOKEN_VAR, "")]);
    assert!(err.contains(&format!("{TOKEN_VAR} is empty")), "{err}");
    // The HTTP flags mean nothing without --http (clap's usage error, also
    // exit code 2).
    let root = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .arg("--root")
        .arg(root.path())
        .args(["--allow-remote", "--auth-token-env", TOKEN_VAR])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--http <ADDR>"), "{err}");
}

#[test]
fn allow_remote_with_a_token_serves_every_interface_and_checks_the_token() {
    let server = Server::start(&[
        "--http",
        "0.0.0.0:0",
        "--allow-remote",
        "--auth-token-env",
        TOKEN_VAR,
    ]);
    let right = format!("Bearer {TOKEN}");
    let ok = server.post(&[server.host(), ("Authorization", &right)], &initialize());
    assert_eq!(ok.status, 200, "{ok:?}");
    let missing = server.post(&[server.host()], &initialize());
    assert_eq!(missing.status, 401, "{missing:?}");
    let forged = server.post(
        &[("Host", "evil.example"), ("Authorization", &right)],
        &initialize(),
    );
    assert_eq!(forged.status, 403, "{forged:?}");
}

#[test]
fn a_port_in_use_is_a_startup_error() {
    let first = Server::start(&["--http", "127.0.0.1:0"]);
    let err = refused_at_start(&["--http", &first.addr], &[]);
    assert!(
        err.contains(&format!("cannot listen on {}", first.addr)),
        "{err}"
    );
}
