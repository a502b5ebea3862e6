//! The network allowlist (`sandbox_network = "allowlist"`) from a real
//! `sh` in the real sandbox: real `curl`, `git` and `pip` reach loopback
//! servers outside the workspace through the relay and the proxy, under
//! names a test resolver maps to loopback (a Rust value the test gives
//! the sandbox; no configuration can set one). Every other way out is
//! tried: an unlisted name, a listed name at a private address, direct
//! TCP, UDP, DNS, and a client told to ignore the proxy.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use mcp_tools::net::proxy::Resolving;
use mcp_tools::net::{Allowlist, DomainList, Resolve};
use mcp_tools::spawn::sandbox::Support;
use mcp_tools::spawn::{
    self, Confined, EnvPolicy, Sandbox, SandboxMode, SandboxPolicy, WhenUnavailable,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Test names, all at 127.0.0.1.
#[derive(Debug)]
struct TestResolver(HashMap<&'static str, IpAddr>);

impl Resolve for TestResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> Resolving<'a> {
        Box::pin(async move {
            self.0
                .get(host)
                .map(|ip| vec![*ip])
                .ok_or_else(|| std::io::Error::other(format!("{host}: unknown test name")))
        })
    }
}

fn resolver() -> Arc<dyn Resolve> {
    let loopback = IpAddr::V4(Ipv4Addr::LOCALHOST);
    Arc::new(TestResolver(HashMap::from([
        ("allowed.test", loopback),
        ("static.allowed.test", loopback),
        ("unlisted.test", loopback),
        ("pypi.test", loopback),
        ("git.test", loopback),
        ("secure.test", loopback),
        ("npm.test", loopback),
        ("cargo.test", loopback),
    ])))
}

static OWN_TEMP: std::sync::LazyLock<tempfile::TempDir> =
    std::sync::LazyLock::new(|| tempfile::tempdir().unwrap());

/// A workspace under the target directory.
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let base = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = base.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir(&root).unwrap();
    (base, root)
}

/// A directory outside the workspace and the temp directories commands
/// may write: under `$HOME`.
fn outside() -> tempfile::TempDir {
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap();
    tempfile::Builder::new()
        .prefix("nanohermes-net-")
        .tempdir_in(home)
        .unwrap()
}

fn sandbox(root: &Path, domains: &[&str], allow_private_network: bool) -> Sandbox {
    let policy = SandboxPolicy {
        mode: SandboxMode::WorkspaceWrite,
        network: false,
        allowlist: Some(Allowlist {
            domains: DomainList::parse(domains).unwrap(),
            allow_private_network,
        }),
        temp_dir: Some(OWN_TEMP.path().canonicalize().unwrap()),
        ..SandboxPolicy::default()
    };
    Sandbox::new(policy, root).with_resolver(resolver())
}

/// Runs `script` under `sandbox`: whether it exited 0, its output, and
/// the hosts the proxy refused to it.
async fn run(sandbox: &Sandbox, root: &Path, script: &str) -> (bool, String, Vec<String>) {
    let mut command = spawn::command("sh", &EnvPolicy::ScrubSecrets);
    command
        .arg("-c")
        .arg(script)
        .current_dir(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    assert_eq!(sandbox.confine(&mut command), Ok(Confined::Fully));
    let (mut child, tree) = command.spawn().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let (status, _, _) = tokio::time::timeout(Duration::from_secs(40), async {
        tokio::join!(
            child.wait(),
            stdout.read_to_end(&mut out),
            stderr.read_to_end(&mut err)
        )
    })
    .await
    .expect("the command finished");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out),
        String::from_utf8_lossy(&err)
    );
    (status.unwrap().success(), text, tree.refused_domains())
}

/// A loopback HTTP server outside the sandbox: answers every request
/// with `hello <Host header> <path>` and closes.
async fn http_server() -> SocketAddr {
    http_server_on("127.0.0.1:0").await
}

/// [`http_server`] bound to `bind`.
async fn http_server_on(bind: &str) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind(bind).await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") {
                    if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_string();
                let path = head.split(' ').nth(1).unwrap_or("").to_owned();
                let host = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Host: ").or(l.strip_prefix("host: ")))
                    .unwrap_or("")
                    .to_owned();
                let body = format!("hello {host} {path}\n");
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    address
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_name_is_reached_over_http_and_connect_and_an_unlisted_one_gets_403() {
    let (_base, root) = workspace();
    let server = http_server().await;
    let port = server.port();
    let sandbox = sandbox(&root, &["allowed.test", "*.allowed.test"], true);
    // Plain HTTP (absolute form), a tunnel (CONNECT, as HTTPS uses), and a
    // name below a `*.` entry.
    let script = format!(
        "curl -sS --max-time 20 http://allowed.test:{port}/plain && \
         curl -sS --max-time 20 --proxytunnel http://allowed.test:{port}/tunnel && \
         curl -sS --max-time 20 http://static.allowed.test:{port}/below"
    );
    let (ok, text, refused) = run(&sandbox, &root, &script).await;
    assert!(ok, "{text}");
    assert_eq!(
        text,
        format!(
            "hello allowed.test:{port} /plain\nhello allowed.test:{port} /tunnel\n\
             hello static.allowed.test:{port} /below\n"
        )
    );
    assert!(refused.is_empty(), "{refused:?}");

    // A Host header naming another site does not reach it: the listed
    // host is the one asked for.
    let script = format!(
        "curl -sS --max-time 20 -H 'Host: unlisted.test' http://allowed.test:{port}/fronted"
    );
    let (ok, text, _) = run(&sandbox, &root, &script).await;
    assert!(
        ok && text == format!("hello allowed.test:{port} /fronted\n"),
        "{text}"
    );

    for (what, flags) in [("http", ""), ("connect", "--proxytunnel")] {
        let script = format!(
            "curl -sS --max-time 20 {flags} -o /dev/stderr -w '%{{http_code}} %{{http_connect}}\\n' \
             http://unlisted.test:{port}/secret"
        );
        let (_, text, refused) = run(&sandbox, &root, &script).await;
        assert!(!text.contains("hello"), "{what}: {text}");
        assert!(text.contains("403"), "{what}: {text}");
        if what == "http" {
            assert!(
                text.contains("unlisted.test is not in sandbox_allowed_domains"),
                "{what}: {text}"
            );
        }
        assert_eq!(refused, ["unlisted.test"], "{what}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listed_name_at_a_private_address_is_refused() {
    let (_base, root) = workspace();
    let server = http_server().await;
    let port = server.port();
    // Listed, but resolving to loopback, and private addresses not allowed.
    let sandbox = sandbox(&root, &["allowed.test", "127.0.0.1"], false);
    // (A literal loopback address is in NO_PROXY: `--noproxy ''` makes
    // curl ask the proxy anyway.)
    for (what, url) in [
        ("name", format!("http://allowed.test:{port}/")),
        ("literal", format!("http://127.0.0.1:{port}/")),
    ] {
        for flags in ["", "--proxytunnel"] {
            let script = format!("curl -sS --max-time 20 --noproxy '' {flags} {url}");
            let (_, text, refused) = run(&sandbox, &root, &script).await;
            assert!(!text.contains("hello"), "{what} {flags}: {text}");
            assert_eq!(refused.len(), 1, "{what} {flags}: {text}");
        }
    }
    let script = format!("curl -sS --max-time 20 http://allowed.test:{port}/");
    let (_, text, _) = run(&sandbox, &root, &script).await;
    assert!(
        text.contains("allowed.test resolves to 127.0.0.1, a loopback address")
            && text.contains("--allow-private-network"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_but_the_proxy_leaves_the_namespace() {
    let (_base, root) = workspace();
    let server = http_server().await;
    let port = server.port();
    // The same server on every address of the host, reached by the host's
    // own non-loopback addresses (asked outside the sandbox: inside, the
    // namespace has only its loopback), and a listener on the relay's port.
    let wide_port = http_server_on("0.0.0.0:0").await.port();
    let relay_port = std::net::TcpListener::bind("0.0.0.0:3128").ok();
    let host_addresses: Vec<String> = std::process::Command::new("hostname")
        .arg("-I")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default()
        .split_whitespace()
        .filter(|a| {
            a.parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| !ip.is_loopback())
        })
        .map(str::to_owned)
        .collect();
    eprintln!("host addresses tried from the sandbox: {host_addresses:?}");
    let udp = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let sandbox = sandbox(&root, &["allowed.test"], true);
    let mut attempts = vec![
        // Direct TCP to the host's loopback server: this loopback is the
        // namespace's own.
        format!("curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:{port}/"),
        // A client that ignores the proxy cannot even resolve the name.
        format!("curl -sS --max-time 5 --noproxy '*' http://allowed.test:{port}/"),
        format!(
            "env -u http_proxy -u HTTP_PROXY -u ALL_PROXY -u all_proxy \
             curl -sS --max-time 5 http://1.1.1.1:{port}/"
        ),
        // DNS of its own.
        "getent hosts example.com".to_owned(),
        // TCP to the relay port elsewhere than the relay.
        "curl -sS --max-time 5 --noproxy '*' http://1.1.1.1:3128/".to_owned(),
        // A raw socket.
        "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 80), 5)'".to_owned(),
    ];
    for address in &host_addresses {
        // Without the namespace each of these reaches the host.
        attempts.push(format!(
            "curl -sS --max-time 5 --noproxy '*' http://{address}:{wide_port}/"
        ));
        attempts.push(format!(
            "python3 -c 'import socket; socket.create_connection((\"{address}\", {wide_port}), 5)'"
        ));
        if relay_port.is_some() {
            attempts.push(format!(
                "python3 -c 'import socket; socket.create_connection((\"{address}\", 3128), 5)'"
            ));
        }
    }
    for attempt in &attempts {
        let (ok, text, _) = run(&sandbox, &root, attempt).await;
        assert!(!ok && !text.contains("hello"), "{attempt}: {text}");
    }
    // UDP to the host's socket, by loopback and by every address it has.
    let targets = format!("127.0.0.1 {}", host_addresses.join(" "));
    let script = format!(
        "for a in {targets}; do python3 -c 'import socket,sys; \
         socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b\"escaped\", (sys.argv[1], {udp_port}))' $a \
         && echo sent $a; done; true"
    );
    let (_, text, _) = run(&sandbox, &root, &script).await;
    let mut buf = [0u8; 64];
    assert!(udp.recv_from(&mut buf).is_err(), "UDP got out: {text}");
    // And the proxy itself still works from the same namespace.
    let script = format!("curl -sS --max-time 20 http://allowed.test:{port}/ok");
    let (ok, text, _) = run(&sandbox, &root, &script).await;
    assert!(
        ok && text == format!("hello allowed.test:{port} /ok\n"),
        "{text}"
    );
}

/// `python3 -m http.server` over `dir` on a loopback port (with `--cgi`,
/// running `dir/cgi-bin/*`); killed on drop.
struct StaticServer {
    child: std::process::Child,
    port: u16,
}

impl StaticServer {
    fn start(dir: &Path) -> StaticServer {
        StaticServer::start_with(dir, &[])
    }

    fn start_with(dir: &Path, flags: &[&str]) -> StaticServer {
        let mut child = std::process::Command::new("python3")
            .args(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1"])
            .args(flags)
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "Serving HTTP on 127.0.0.1 port 40123 (http://127.0.0.1:40123/) ..."
        let port = line
            .split(" port ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        StaticServer { child, port }
    }
}

impl Drop for StaticServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sh(dir: &Path, script: &str) {
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "{script}");
}

/// A served directory outside the workspace and the sandbox's temp
/// directory, readable by anyone: python's CGI runs scripts as `nobody`
/// when it runs as root.
fn served_dir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::Builder::new()
        .prefix("nanohermes-served-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_clones_over_smart_http_through_the_proxy() {
    let (_base, root) = workspace();
    let served = served_dir();
    // git's own smart HTTP server (`git http-backend`, as CGI): the clone
    // POSTs its wants through the proxy.
    sh(
        served.path(),
        "git init -q src && cd src && echo hi > f && git add f && \
         git -c user.name=t -c user.email=t@t commit -qm one && cd .. && \
         git clone -q --bare src repo.git && mkdir cgi-bin && \
         printf '#!/bin/sh\\nexport GIT_PROJECT_ROOT=%s GIT_HTTP_EXPORT_ALL=1 HOME=/nonexistent \
         GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0=*\\nexec %s/git-http-backend\\n' \
         \"$PWD\" \"$(git --exec-path)\" > cgi-bin/git && chmod 755 cgi-bin/git && chmod -R a+rX .",
    );
    let server = StaticServer::start_with(served.path(), &["--cgi"]);
    let sandbox = sandbox(&root, &["git.test"], true);
    let script = format!(
        "GIT_TRACE_CURL=1 GIT_TRACE_CURL_NO_DATA=1 git clone -q \
         http://git.test:{}/cgi-bin/git/repo.git copy 2>trace && cat copy/f && \
         grep -c 'POST http://git.test:[0-9]*/cgi-bin/git/repo.git/git-upload-pack' trace",
        server.port
    );
    let (ok, text, refused) = run(&sandbox, &root, &script).await;
    assert!(ok && text == "hi\n1\n", "{text}");
    assert!(refused.is_empty());
    // Without the name on the list, the clone fails with the proxy's 403.
    let sandbox = self::sandbox(&root, &["pypi.test"], true);
    let script = format!(
        "git clone -q http://git.test:{}/cgi-bin/git/repo.git other",
        server.port
    );
    let (ok, text, refused) = run(&sandbox, &root, &script).await;
    assert!(!ok && text.contains("403"), "{text}");
    assert_eq!(refused, ["git.test"]);
}

/// A wheel pip accepts: a module, METADATA, WHEEL and RECORD.
fn write_wheel(path: &Path) {
    let script = format!(
        "import zipfile\n\
         z = zipfile.ZipFile({:?}, 'w')\n\
         z.writestr('leash/__init__.py', 'X = 1\\n')\n\
         z.writestr('leash-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\\nName: leash\\nVersion: 1.0\\n')\n\
         z.writestr('leash-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
         z.writestr('leash-1.0.dist-info/RECORD', '')\n\
         z.close()\n",
        path.display().to_string()
    );
    let status = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .status()
        .unwrap();
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_downloads_from_a_simple_index_through_the_proxy() {
    let (_base, root) = workspace();
    let served = outside();
    let project = served.path().join("simple/leash");
    std::fs::create_dir_all(&project).unwrap();
    write_wheel(&project.join("leash-1.0-py3-none-any.whl"));
    std::fs::write(
        project.join("index.html"),
        "<html><body><a href=\"leash-1.0-py3-none-any.whl\">leash-1.0-py3-none-any.whl</a></body></html>\n",
    )
    .unwrap();
    let server = StaticServer::start(served.path());
    let sandbox = sandbox(&root, &["pypi.test"], true);
    let script = format!(
        "python3 -m pip download --no-deps --disable-pip-version-check --no-cache-dir \
         --index-url http://pypi.test:{}/simple --trusted-host pypi.test -d dl leash && ls dl",
        server.port
    );
    let (ok, text, refused) = run(&sandbox, &root, &script).await;
    assert!(
        ok && text.ends_with("leash-1.0-py3-none-any.whl\n"),
        "{text}"
    );
    assert!(refused.is_empty());
}

/// `sandbox` with `sandbox_unavailable = "warn"`.
fn warn(sandbox_of: Sandbox, root: &Path, support: Option<Support>) -> Sandbox {
    let policy = SandboxPolicy {
        when_unavailable: WhenUnavailable::Warn,
        ..sandbox_of.policy().clone()
    };
    match support {
        Some(support) => Sandbox::with_support(policy, root, support),
        None => Sandbox::new(policy, root),
    }
    .with_resolver(resolver())
}

/// This system's Landlock, without namespaces.
fn no_namespaces() -> Support {
    Support {
        namespaces: Err("simulated".to_owned()),
        ..Support::known()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_namespace_the_allowlist_refuses_or_runs_offline_never_open() {
    let (_base, root) = workspace();
    let server = http_server().await;
    let listed = sandbox(&root, &["allowed.test", "127.0.0.1"], true);
    let refusing = Sandbox::with_support(listed.policy().clone(), &root, no_namespaces());
    let mut command = spawn::command("true", &EnvPolicy::ScrubSecrets);
    let refusal = refusing.confine(&mut command).unwrap_err();
    assert!(
        refusal.contains("the command was not run") && refusal.contains("the network allowlist"),
        "{refusal}"
    );

    let warning = warn(listed, &root, Some(no_namespaces()));
    let mut command = spawn::command("sh", &EnvPolicy::ScrubSecrets);
    let script = format!("curl -sS --max-time 5 --noproxy '*' http://{server}/");
    command
        .arg("-c")
        .arg(&script)
        .current_dir(&root)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let Ok(Confined::Partly(text)) = warning.confine(&mut command) else {
        panic!("not a warning");
    };
    assert!(text.contains("without it they run with"), "{text}");
    let (child, _tree) = command.spawn().unwrap();
    let out = child.wait_with_output().await.unwrap();
    let output = String::from_utf8_lossy(&out.stdout);
    // Landlock (ABI 4) refuses TCP; an older kernel cannot, and says so.
    if Support::known().landlock_abi >= 4 {
        assert!(
            !out.status.success() && !output.contains("hello"),
            "{output}"
        );
    } else {
        assert!(text.contains("cannot refuse TCP either"), "{text}");
    }
}

#[test]
fn without_a_runtime_for_its_proxy_a_command_is_refused_or_runs_offline() {
    let (_base, root) = workspace();
    let listed = sandbox(&root, &["allowed.test"], true);
    // No tokio runtime here: the proxy cannot be served.
    let mut command = spawn::command("true", &EnvPolicy::ScrubSecrets);
    let refusal = listed.confine(&mut command).unwrap_err();
    assert!(
        refusal.contains("its proxy cannot be started") && refusal.contains("no async runtime"),
        "{refusal}"
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let warning = warn(listed, &root, None);
    let mut command = spawn::command("sh", &EnvPolicy::ScrubSecrets);
    command
        .arg("-c")
        .arg("curl -sS --max-time 5 http://allowed.test/ || echo offline; env | grep -c 127.0.0.1:3128 || true")
        .current_dir(&root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let Ok(Confined::Partly(text)) = warning.confine(&mut command) else {
        panic!("not a warning");
    };
    assert!(text.contains("its proxy cannot be started"), "{text}");
    let out = runtime.block_on(async {
        let (child, _tree) = command.spawn().unwrap();
        child.wait_with_output().await.unwrap()
    });
    // No proxy variables were set, and nothing was reached.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "offline\n0\n");
}

/// `openssl s_server -www` for `name` with a fresh self-signed
/// certificate in `dir`, on a free loopback port; killed on drop.
struct TlsServer {
    child: std::process::Child,
    port: u16,
}

impl TlsServer {
    fn start(dir: &Path, name: &str) -> TlsServer {
        sh(
            dir,
            &format!(
                "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -keyout key.pem -out cert.pem \
                 -subj /CN={name} -addext subjectAltName=DNS:{name} 2>/dev/null"
            ),
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new("openssl")
            .args([
                "s_server", "-quiet", "-www", "-cert", "cert.pem", "-key", "key.pem",
            ])
            .args(["-accept", &format!("127.0.0.1:{port}")])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "s_server did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        TlsServer { child, port }
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_goes_through_connect_with_tls_end_to_end() {
    let (_base, root) = workspace();
    let served = outside();
    let server = TlsServer::start(served.path(), "secure.test");
    let cert = served.path().join("cert.pem");
    let sandbox = sandbox(&root, &["secure.test"], true);
    // The certificate is checked for the listed name: the tunnel carries
    // TLS untouched.
    let script = format!(
        "curl -sS --max-time 20 --cacert '{}' -o page https://secure.test:{}/ && head -c 200 page",
        cert.display(),
        server.port
    );
    let (ok, text, refused) = run(&sandbox, &root, &script).await;
    assert!(ok && text.contains("s_server"), "{text}");
    assert!(refused.is_empty());
    let unlisted = self::sandbox(&root, &["other.test"], true);
    let (ok, text, refused) = run(&unlisted, &root, &script).await;
    assert!(!ok && !text.contains("s_server"), "{text}");
    assert_eq!(refused, ["secure.test"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn npm_installs_from_a_registry_through_the_proxy() {
    let (_base, root) = workspace();
    let served = outside();
    sh(
        served.path(),
        "mkdir package && echo 'module.exports = \"leashed\";' > package/index.js && \
         echo '{\"name\":\"leash\",\"version\":\"1.0.0\",\"main\":\"index.js\"}' > package/package.json && \
         tar -czf leash-1.0.0.tgz package",
    );
    let server = StaticServer::start(served.path());
    let integrity = std::process::Command::new("sh")
        .arg("-c")
        .arg("printf sha512-; openssl dgst -sha512 -binary leash-1.0.0.tgz | base64 -w0; echo; sha1sum leash-1.0.0.tgz | cut -d' ' -f1")
        .current_dir(served.path())
        .output()
        .unwrap();
    let sums = String::from_utf8(integrity.stdout).unwrap();
    let mut sums = sums.lines();
    let (integrity, shasum) = (sums.next().unwrap(), sums.next().unwrap());
    let metadata = npm_document(server.port, integrity, shasum);
    std::fs::write(served.path().join("leash"), metadata).unwrap();
    let sandbox = sandbox(&root, &["npm.test"], true);
    let script = format!(
        "npm install --no-audit --no-fund --no-update-notifier --cache \"$PWD/.npm-cache\" \
         --registry http://npm.test:{}/ leash >/dev/null 2>npm.err || cat npm.err; \
         node -e 'console.log(require(\"leash\"))'",
        server.port
    );
    let (ok, text, refused) = run(&sandbox, &root, &script).await;
    assert!(ok && text == "leashed\n", "{text}");
    assert!(refused.is_empty());
}

/// The registry's document for `leash` 1.0.0, its tarball on `port`.
fn npm_document(port: u16, integrity: &str, shasum: &str) -> String {
    format!(
        "{{\"name\":\"leash\",\"dist-tags\":{{\"latest\":\"1.0.0\"}},\"versions\":{{\"1.0.0\":\
         {{\"name\":\"leash\",\"version\":\"1.0.0\",\"main\":\"index.js\",\"dist\":\
         {{\"tarball\":\"http://npm.test:{port}/leash-1.0.0.tgz\",\"shasum\":\"{shasum}\",\
         \"integrity\":\"{integrity}\"}}}}}}}}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cargo_fetches_from_a_sparse_registry_through_the_proxy() {
    let (_base, root) = workspace();
    let served = outside();
    // A sparse index with one crate, and the crate.
    sh(
        served.path(),
        "mkdir -p leash-1.0.0/src index/le/as dl/leash && \
         printf '[package]\\nname = \"leash\"\\nversion = \"1.0.0\"\\nedition = \"2021\"\\n' > leash-1.0.0/Cargo.toml && \
         echo 'pub const LEASH: &str = \"leashed\";' > leash-1.0.0/src/lib.rs && \
         tar -czf dl/leash/1.0.0.crate leash-1.0.0",
    );
    let server = StaticServer::start(served.path());
    let port = server.port;
    let sum = std::process::Command::new("sha256sum")
        .arg(served.path().join("dl/leash/1.0.0.crate"))
        .output()
        .unwrap();
    let sum = String::from_utf8(sum.stdout).unwrap();
    let sum = sum.split(' ').next().unwrap();
    std::fs::write(
        served.path().join("index/config.json"),
        format!("{{\"dl\": \"http://cargo.test:{port}/dl/{{crate}}/{{version}}.crate\"}}"),
    )
    .unwrap();
    std::fs::write(
        served.path().join("index/le/as/leash"),
        format!(
            "{{\"name\":\"leash\",\"vers\":\"1.0.0\",\"deps\":[],\"cksum\":\"{sum}\",\
             \"features\":{{}},\"yanked\":false}}\n"
        ),
    )
    .unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "pub use leash::LEASH;\n").unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[workspace]\n\n[package]\nname = \"user\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\nleash = { version = \"1\", registry = \"loop\" }\n",
    )
    .unwrap();
    let sandbox = sandbox(&root, &["cargo.test"], true);
    let script = format!(
        "CARGO_HOME=\"$PWD/.cargo-home\" CARGO_REGISTRIES_LOOP_INDEX=sparse+http://cargo.test:{port}/index/ \
         cargo fetch -q 2>&1 && ls .cargo-home/registry/cache/*/"
    );
    let (ok, text, refused) = run(&sandbox, &root, &script).await;
    assert!(ok && text == "leash-1.0.0.crate\n", "{text}");
    assert!(refused.is_empty());
}
