//! The sandbox's network proxy: the one way out for a command run with
//! `sandbox_network = "allowlist"`.
//!
//! The command has a network namespace of its own (no route anywhere);
//! a relay inside it listens on `127.0.0.1:`[`PORT`] and carries each
//! connection to this proxy's Unix socket, in a private directory of the
//! process that spawned the command (`spawn/sandbox/relay.rs`). The proxy
//! speaks just enough HTTP/1.1:
//! - `CONNECT host:port` (HTTPS, and anything tunnelled): a tunnel to the
//!   host, bytes copied both ways (TLS stays end to end);
//! - an absolute-form request (`GET http://host/path HTTP/1.1`, plain
//!   HTTP): forwarded in origin form with `Connection: close` and the
//!   URL's own `Host`. This is hygiene, not a boundary: a tunnel to a
//!   listed host carries whatever bytes the command sends, on any port,
//!   so a shared front end can be asked for another site it serves
//!   through `CONNECT` (README, "Not guaranteed").
//! - anything else: `400`.
//!
//! Only hosts the [`DomainList`] allows are reached; the proxy resolves
//! them itself and connects only to public addresses
//! ([`super::address::not_public`]) unless the user allows private ones,
//! so a listed name that resolves to loopback or the metadata address is
//! refused too. A refusal is a `403` whose body names the host and the key
//! that would allow it, and the host is kept for the command's result
//! ([`Proxy::refused`]).

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixListener, UnixStream};

use super::address::not_public;
use super::domains::{DomainList, normalize};

/// The port the relay listens on inside a command's network namespace
/// (the namespace is the command's own, so no port is ever taken).
pub const PORT: u16 = 3128;

/// The largest request head read (request line and headers).
const MAX_HEAD: usize = 64 * 1024;

/// How long a request head and each connect may take.
const PATIENCE: Duration = Duration::from_secs(30);

/// What the proxy lets through: the user's domains, and whether their
/// names may resolve to non-public addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Allowlist {
    /// The domains commands may reach (`sandbox_allowed_domains`).
    pub domains: DomainList,
    /// Let listed names reach loopback, private, link-local … addresses
    /// (`--allow-private-network`).
    pub allow_private_network: bool,
}

/// A future of resolved addresses.
pub type Resolving<'a> = Pin<Box<dyn Future<Output = io::Result<Vec<IpAddr>>> + Send + 'a>>;

/// How the proxy turns a name into addresses. The system's resolver in
/// every build; tests and the benchmark give their own, which maps test
/// names to loopback (a Rust value: nothing a model, a project or the
/// environment can set).
pub trait Resolve: Send + Sync + fmt::Debug {
    /// The addresses of `host` (a name, never an IP literal).
    fn resolve<'a>(&'a self, host: &'a str) -> Resolving<'a>;
}

/// `getaddrinfo`, through tokio.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> Resolving<'a> {
        Box::pin(async move {
            Ok(tokio::net::lookup_host((host, 0))
                .await?
                .map(|a| a.ip())
                .collect())
        })
    }
}

/// A running proxy for one command: a Unix socket in a private directory,
/// served until this is dropped (the connections in flight end with it).
#[derive(Debug)]
pub struct Proxy {
    /// Held for its drop, which removes the socket with its directory.
    _dir: tempfile::TempDir,
    socket: PathBuf,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Debug)]
struct Shared {
    allowlist: Allowlist,
    resolver: Arc<dyn Resolve>,
    refused: Mutex<BTreeSet<String>>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Starts a proxy for `allowlist` on the current tokio runtime: the
    /// socket is `s` in a new directory only this user can enter. `Err`
    /// when there is no runtime or the socket cannot be made.
    pub fn start(allowlist: &Allowlist, resolver: Arc<dyn Resolve>) -> io::Result<Proxy> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|e| io::Error::other(format!("no async runtime to serve it on: {e}")))?;
        // Short: a Unix socket's path has at most 107 bytes.
        let dir = tempfile::Builder::new()
            .prefix("nanohermes-net-")
            .tempdir_in("/tmp")
            .or_else(|_| tempfile::Builder::new().prefix("nhnet-").tempdir())?;
        let socket = dir.path().join("s");
        let listener = {
            let _entered = runtime.enter();
            UnixListener::bind(&socket)?
        };
        let shared = Arc::new(Shared {
            allowlist: allowlist.clone(),
            resolver,
            refused: Mutex::default(),
        });
        let serving = shared.clone();
        let task = runtime.spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => {
                            let shared = serving.clone();
                            connections.spawn(async move {
                                if let Err(e) = serve(stream, &shared).await {
                                    tracing::debug!("sandbox proxy connection: {e}");
                                }
                            });
                        }
                        Err(e) => {
                            tracing::warn!("sandbox proxy: accept failed: {e}");
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    },
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        Ok(Proxy {
            _dir: dir,
            socket,
            shared,
            task,
        })
    }

    /// The Unix socket the relay connects to.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The hosts refused so far, each once, sorted.
    pub fn refused(&self) -> Vec<String> {
        self.shared
            .refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }
}

/// Why a request was not carried, answered as an HTTP status.
struct Answer {
    status: &'static str,
    body: String,
}

impl Answer {
    fn new(status: &'static str, why: &str) -> Answer {
        Answer {
            status,
            body: format!("nanohermes sandbox proxy: {why}\n"),
        }
    }

    fn bad(why: &str) -> Answer {
        Answer::new("400 Bad Request", why)
    }
}

/// Serves one connection from the relay: reads the head, decides, then
/// tunnels or forwards, or answers the refusal.
async fn serve(mut client: UnixStream, shared: &Shared) -> io::Result<()> {
    let (head, rest) = match tokio::time::timeout(PATIENCE, read_head(&mut client)).await {
        Ok(read) => read?,
        Err(_) => return Ok(()),
    };
    let request = match Request::parse(&head) {
        Ok(request) => request,
        Err(answer) => return answer_with(&mut client, answer).await,
    };
    let mut upstream = match connect(&request, shared).await {
        Ok(upstream) => upstream,
        Err(answer) => return answer_with(&mut client, answer).await,
    };
    if request.tunnel {
        client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await?;
    } else {
        upstream.write_all(request.forwarded().as_bytes()).await?;
    }
    upstream.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// Writes `answer` and closes.
async fn answer_with(client: &mut UnixStream, answer: Answer) -> io::Result<()> {
    let response = format!(
        "HTTP/1.1 {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
        answer.status,
        answer.body.len(),
        answer.body
    );
    client.write_all(response.as_bytes()).await?;
    client.shutdown().await
}

/// The request head (up to the blank line) and what came after it.
async fn read_head(client: &mut UnixStream) -> io::Result<(String, Vec<u8>)> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = find(&buf, b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            let head = String::from_utf8(buf)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "head is not UTF-8"))?;
            return Ok((head, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "request head too long",
            ));
        }
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A parsed request: where to, and for plain HTTP what to send there.
#[derive(Debug, PartialEq, Eq)]
struct Request {
    /// `CONNECT`: a tunnel.
    tunnel: bool,
    /// The host as the client named it (a name or an IP literal, IPv6
    /// without brackets).
    host: String,
    port: u16,
    /// Plain HTTP: the method, the origin-form target and the version.
    line: String,
    /// Plain HTTP: the headers to forward, in order.
    headers: Vec<String>,
}

impl Request {
    fn parse(head: &str) -> Result<Request, Answer> {
        let mut lines = head.split("\r\n").filter(|l| !l.is_empty());
        let first = lines.next().unwrap_or_default();
        let mut words = first.split(' ');
        let (Some(method), Some(target), Some(version), None) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            return Err(Answer::bad("malformed request line"));
        };
        if !version.starts_with("HTTP/1.") {
            return Err(Answer::bad("only HTTP/1.x is spoken"));
        }
        if method.eq_ignore_ascii_case("CONNECT") {
            let (host, port) = split_authority(target, None)
                .ok_or_else(|| Answer::bad("CONNECT needs host:port"))?;
            return Ok(Request {
                tunnel: true,
                host,
                port,
                line: String::new(),
                headers: Vec::new(),
            });
        }
        let Some(after) = target
            .get(..7)
            .filter(|s| s.eq_ignore_ascii_case("http://"))
            .map(|_| &target[7..])
        else {
            return Err(Answer::bad(
                "a proxy request needs an absolute http:// URL (https goes through CONNECT)",
            ));
        };
        let split = after.find(['/', '?', '#']).unwrap_or(after.len());
        let (authority, path) = after.split_at(split);
        let path = match path {
            "" => "/".to_owned(),
            p if p.starts_with('/') => p.to_owned(),
            p => format!("/{p}"),
        };
        let (host, port) = split_authority(authority, Some(80))
            .ok_or_else(|| Answer::bad("the URL has no valid host"))?;
        // The checked host is the one asked for: the client's `Host`
        // lines are replaced by the URL's authority.
        let mut headers = vec![format!("Host: {authority}")];
        for line in lines {
            let name = line.split(':').next().unwrap_or_default().trim();
            if [
                "host",
                "proxy-connection",
                "proxy-authorization",
                "connection",
                "keep-alive",
            ]
            .iter()
            .any(|h| name.eq_ignore_ascii_case(h))
            {
                continue;
            }
            headers.push(line.to_owned());
        }
        Ok(Request {
            tunnel: false,
            host,
            port,
            line: format!("{method} {path} {version}"),
            headers,
        })
    }

    /// The head sent to the origin server.
    fn forwarded(&self) -> String {
        let mut head = format!("{}\r\n", self.line);
        for header in &self.headers {
            head.push_str(header);
            head.push_str("\r\n");
        }
        head.push_str("Connection: close\r\n\r\n");
        head
    }
}

/// `host[:port]` or `[v6][:port]`; no user info.
fn split_authority(authority: &str, default_port: Option<u16>) -> Option<(String, u16)> {
    if authority.contains('@') || authority.is_empty() {
        return None;
    }
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => return None,
        };
        (v6, port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        Some(p) => p.parse().ok().filter(|p| *p != 0)?,
        None => default_port?,
    };
    let host = normalize(host);
    (!host.is_empty()).then_some((host, port))
}

/// Checks the host against the list, resolves it, keeps the public
/// addresses (all, with `allow_private_network`) and connects to the
/// first that answers.
async fn connect(request: &Request, shared: &Shared) -> Result<TcpStream, Answer> {
    let host = &request.host;
    let refuse = |why: String, key: &str| {
        shared
            .refused
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(host.clone());
        Answer {
            status: "403 Forbidden",
            body: format!(
                "nanohermes sandbox: {why}. Only the user can allow it ({key}); \
                 ask them rather than trying another way.\n"
            ),
        }
    };
    if !shared.allowlist.domains.allows(host) {
        return Err(refuse(
            format!("{host} is not in sandbox_allowed_domains, so commands cannot reach it"),
            &format!("sandbox_allowed_domains = [\"{host}\"] in ~/.nanohermes/config.toml"),
        ));
    }
    let addresses = match host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => match tokio::time::timeout(PATIENCE, shared.resolver.resolve(host)).await {
            Ok(Ok(found)) if !found.is_empty() => found,
            Ok(Ok(_)) => return Err(bad_gateway(format!("{host} has no address"))),
            Ok(Err(e)) => return Err(bad_gateway(format!("cannot resolve {host}: {e}"))),
            Err(_) => return Err(bad_gateway(format!("resolving {host} timed out"))),
        },
    };
    let mut kept = Vec::new();
    let mut first_refused = None;
    for ip in addresses {
        match not_public(ip) {
            Some(why) if !shared.allowlist.allow_private_network => {
                first_refused.get_or_insert(why);
            }
            _ => kept.push(SocketAddr::new(ip, request.port)),
        }
    }
    if kept.is_empty() {
        let why = first_refused.map_or_else(String::new, |n| n.apposition());
        return Err(refuse(
            format!("{host} resolves to {why}, and commands may reach only public addresses"),
            "nanohermes --allow-private-network",
        ));
    }
    let mut last = None;
    for address in kept {
        match tokio::time::timeout(PATIENCE, TcpStream::connect(address)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = Some(format!("{address}: {e}")),
            Err(_) => last = Some(format!("{address}: timed out")),
        }
    }
    Err(bad_gateway(format!(
        "cannot connect to {host}: {}",
        last.unwrap_or_default()
    )))
}

fn bad_gateway(why: String) -> Answer {
    Answer::new("502 Bad Gateway", &why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_into_host_port_and_origin_form() {
        let r = Request::parse("CONNECT Static.Crates.IO.:443 HTTP/1.1\r\nHost: x\r\n\r\n")
            .ok()
            .unwrap();
        assert!(r.tunnel);
        assert_eq!((r.host.as_str(), r.port), ("static.crates.io", 443));
        let r = Request::parse(
            "GET http://example.com:8080/a?b HTTP/1.1\r\nHost: unlisted.example\r\n\
             Proxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n",
        )
        .ok()
        .unwrap();
        assert_eq!((r.host.as_str(), r.port), ("example.com", 8080));
        assert_eq!(
            r.forwarded(),
            "GET /a?b HTTP/1.1\r\nHost: example.com:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let r = Request::parse("GET http://[::1]/ HTTP/1.0\r\n\r\n")
            .ok()
            .unwrap();
        assert_eq!((r.host.as_str(), r.port), ("::1", 80));
        assert!(r.forwarded().contains("Host: [::1]\r\n"));
        for bad in [
            "GET /relative HTTP/1.1\r\n\r\n",
            "CONNECT example.com HTTP/1.1\r\n\r\n",
            "CONNECT user@example.com:443 HTTP/1.1\r\n\r\n",
            "GET http://user@example.com/ HTTP/1.1\r\n\r\n",
            "GET http://example.com/ HTTP/2\r\n\r\n",
            "GET https://example.com/ HTTP/1.1\r\n\r\n",
        ] {
            assert!(Request::parse(bad).is_err(), "{bad}");
        }
    }
}
