//! `proxy`: what the sandbox's network allowlist costs a command. The
//! same Python client (urllib, a new connection per request, as most
//! package managers' first requests are) runs twice against one loopback
//! HTTP server: unsandboxed and direct, then in the real sandbox with
//! `sandbox_network = "allowlist"`, through the relay in its network
//! namespace and the proxy. Figures: the median time of one small GET,
//! and the throughput of a 64 MB download, each the median of the runs.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use mcp_tools::net::proxy::Resolving;
use mcp_tools::net::{Allowlist, DomainList, Resolve};
use mcp_tools::spawn::{self, Confined, EnvPolicy, Sandbox, SandboxPolicy};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::stats::{Number, Table, median, show};

/// Requests per client run.
const REQUESTS: usize = 200;
/// The download's size.
const BIG: usize = 64 << 20;

/// The client: REQUESTS small GETs (median seconds), then the download
/// (bytes per second). Proxies come from the environment, as urllib's
/// default opener takes them.
const CLIENT: &str = r#"
import sys, time, urllib.request
small, big, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
opener = urllib.request.build_opener()
opener.open(small).read()
times = []
for _ in range(n):
    t = time.perf_counter()
    opener.open(small).read()
    times.append(time.perf_counter() - t)
times.sort()
t = time.perf_counter()
r = opener.open(big)
total = 0
while True:
    b = r.read(1 << 20)
    if not b:
        break
    total += len(b)
print(times[len(times) // 2], total / (time.perf_counter() - t))
"#;

/// The one name the sandboxed client uses, at 127.0.0.1.
#[derive(Debug)]
struct BenchResolver;

impl Resolve for BenchResolver {
    fn resolve<'a>(&'a self, host: &'a str) -> Resolving<'a> {
        Box::pin(async move {
            let names = HashMap::from([("bench.test", IpAddr::V4(Ipv4Addr::LOCALHOST))]);
            names
                .get(host)
                .map(|ip| vec![*ip])
                .ok_or_else(|| std::io::Error::other("unknown name"))
        })
    }
}

/// A loopback server: `/big` is BIG bytes, anything else two.
async fn server() -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 2048];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let big = head.starts_with(b"GET /big");
                let len = if big { BIG } else { 2 };
                let header = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
                );
                if stream.write_all(header.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = vec![b'x'; 1 << 20];
                let mut left = len;
                while left > 0 {
                    let n = left.min(chunk.len());
                    if stream.write_all(&chunk[..n]).await.is_err() {
                        return;
                    }
                    left -= n;
                }
            });
        }
    });
    Ok(address)
}

/// One client run: (median GET, bytes per second).
async fn client(
    mut command: spawn::SpawnCommand,
    small: &str,
    big: &str,
) -> anyhow::Result<(Duration, f64)> {
    command
        .arg("-c")
        .arg(CLIENT)
        .arg(small)
        .arg(big)
        .arg(REQUESTS.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (child, _tree) = command.spawn()?;
    let out = child.wait_with_output().await?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut words = text.split_whitespace();
    match (
        words.next().and_then(|w| w.parse::<f64>().ok()),
        words.next().and_then(|w| w.parse::<f64>().ok()),
    ) {
        (Some(get), Some(rate)) => Ok((Duration::from_secs_f64(get), rate)),
        _ => anyhow::bail!(
            "the client failed: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

fn rate(mut rates: Vec<f64>) -> String {
    rates.sort_by(f64::total_cmp);
    format!("{:.0} MB/s", rates[rates.len() / 2] / f64::from(1u32 << 20))
}

/// The section.
pub async fn figures(runs: usize, table: &mut Table) -> anyhow::Result<()> {
    let address = server().await?;
    let port = address.port();
    let workspace = tempfile::tempdir()?;
    let policy = SandboxPolicy {
        allowlist: Some(Allowlist {
            domains: DomainList::parse(&["bench.test"]).map_err(anyhow::Error::msg)?,
            allow_private_network: true,
        }),
        ..SandboxPolicy::default()
    };
    let sandbox = Sandbox::new(policy, workspace.path()).with_resolver(Arc::new(BenchResolver));
    let runs = runs.clamp(1, 5);
    let (mut direct, mut proxied) = ((Vec::new(), Vec::new()), (Vec::new(), Vec::new()));
    for _ in 0..runs {
        let mut plain = spawn::command("python3", &EnvPolicy::ScrubSecrets);
        for name in ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"] {
            plain.env_remove(name);
        }
        let (get, bytes) = client(
            plain,
            &format!("http://{address}/small"),
            &format!("http://{address}/big"),
        )
        .await?;
        direct.0.push(get);
        direct.1.push(bytes);
        let mut confined = spawn::command("python3", &EnvPolicy::ScrubSecrets);
        confined.current_dir(workspace.path());
        match sandbox.confine(&mut confined) {
            Ok(Confined::Fully) => {}
            Ok(Confined::Partly(why)) | Err(why) => anyhow::bail!("the sandbox: {why}"),
        }
        let (get, bytes) = client(
            confined,
            &format!("http://bench.test:{port}/small"),
            &format!("http://bench.test:{port}/big"),
        )
        .await?;
        proxied.0.push(get);
        proxied.1.push(bytes);
    }
    let (direct_get, proxied_get) = (median(direct.0), median(proxied.0));
    table.measure(
        "HTTP GET on loopback, new connection, direct (python urllib)",
        Number::Time(direct_get),
        String::new(),
        "",
    );
    table.measure(
        "the same GET through the allowlist (relay + proxy)",
        Number::Time(proxied_get),
        format!("+{} added", show(proxied_get.saturating_sub(direct_get))),
        "",
    );
    table.row(
        "64 MB loopback download, direct",
        rate(direct.1),
        String::new(),
        "",
    );
    table.row(
        "64 MB loopback download through the allowlist",
        rate(proxied.1),
        String::new(),
        "",
    );
    Ok(())
}
