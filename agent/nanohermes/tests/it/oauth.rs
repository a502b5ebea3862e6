//! OAuth through the real binary against a real authorization server and
//! a protected MCP server on loopback (tests/support/oauth_server.rs,
//! which checks PKCE, the redirect URI, the client, the scope and every
//! token). The "user" of `nanohermes mcp login` is the test: it reads the
//! printed URL and opens it with an HTTP GET that follows the redirect to
//! the loopback listener.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, BufReader};

use crate::support::binary::{Run, output_of};
use crate::support::history::assert_requests_valid;
use crate::support::mock_model::{MockModel, call, text, tool_calls};
use crate::support::oauth_server::OAuthServer;

struct World {
    _root: tempfile::TempDir,
    home: PathBuf,
    workspace: PathBuf,
    server: OAuthServer,
}

impl World {
    async fn new() -> World {
        World::serving(OAuthServer::start().await)
    }

    fn serving(server: OAuthServer) -> World {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        let (home, workspace) = (base.join("home"), base.join("repo"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::write(
            home.join("config.toml"),
            format!("[mcp_servers.remote]\nurl = {:?}\n", server.mcp_url()),
        )
        .unwrap();
        World {
            _root: root,
            home,
            workspace,
            server,
        }
    }

    fn command(&self, args: &[&str], env: &[(&str, &str)]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_nanohermes"));
        command
            .arg("--workspace")
            .arg(&self.workspace)
            .args(args)
            .env("NANOHERMES_HOME", &self.home)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        for name in [
            "OPENAI_API_KEY",
            "OPENAI_BASE_URL",
            "NANOHERMES_MODEL",
            "NANOHERMES_LOG",
        ] {
            command.env_remove(name);
        }
        command.envs(env.iter().copied());
        command
    }

    async fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        output_of(&mut self.command(args, env)).await
    }

    /// `nanohermes mcp login remote`, with the test opening the URL it prints.
    async fn login(&self) -> Run {
        let mut child = self
            .command(&["mcp", "login", "remote"], &[])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut stderr = String::new();
        let url = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                stderr.push_str(&line);
                stderr.push('\n');
                if let Some(url) = line.trim().strip_prefix("http") {
                    return format!("http{url}");
                }
            }
            panic!("login printed no URL: {stderr}")
        })
        .await
        .expect("the URL was printed");
        // The browser: the authorization server approves and redirects to
        // the loopback listener, which answers 200.
        let page = reqwest::get(&url).await.unwrap();
        assert_eq!(page.status(), 200, "{url}");
        let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .unwrap()
            .unwrap();
        while let Ok(Some(line)) = lines.next_line().await {
            stderr.push_str(&line);
        }
        Run {
            code: output.status.code(),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr,
        }
    }

    fn credentials(&self) -> PathBuf {
        self.home.join("credentials.json")
    }

    fn stored(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.credentials()).unwrap()).unwrap()
    }
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn login_stores_private_tokens_the_hub_uses_and_no_session_holds_them() {
    use std::os::unix::fs::PermissionsExt as _;
    let w = World::new().await;

    let before = w.run(&["mcp", "list"], &[]).await;
    assert!(
        before.stdout.contains("run `nanohermes mcp login remote`"),
        "{before:#?}"
    );

    let login = w.login().await;
    assert_eq!(login.code, Some(0), "{login:#?}");
    assert!(login.stdout.contains("logged in to remote"), "{login:#?}");
    assert_eq!(w.server.refusals(), Vec::<String>::new());
    let mode = std::fs::metadata(w.credentials())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let entry = &w.stored()["servers"][w.server.mcp_url()];
    assert!(
        entry["token_response"]["access_token"].is_string(),
        "{entry}"
    );
    assert_eq!(entry["issuer"], json!(w.server.base));

    let listed = w.run(&["mcp", "list"], &[]).await;
    assert!(listed.stdout.contains("remote"), "{listed:#?}");
    assert!(
        !listed.stdout.contains("needs authorization"),
        "{listed:#?}"
    );

    // A real run: the model calls the protected server's tool.
    let mock = MockModel::start(vec![
        tool_calls(&[call("c1", "remote__todo_read", json!({}))]).into(),
        text(&["done"]).into(),
    ])
    .await;
    let url = mock.base_url();
    let env = [
        ("OPENAI_BASE_URL", url.as_str()),
        ("OPENAI_API_KEY", "test-key"),
        ("NANOHERMES_MODEL", "main-model"),
    ];
    let run = w.run(&["run", "read the todos"], &env).await;
    assert_eq!(run.code, Some(0), "{run:#?}");
    assert_requests_valid(&mock.requests());
    assert!(w.server.authorized_requests() > 0);

    let tokens = w.server.issued_tokens();
    assert!(!tokens.is_empty());
    for file in files_under(&w.home) {
        if file == w.credentials() {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        for token in &tokens {
            assert!(
                !text.contains(token.as_str()),
                "{} holds a token",
                file.display()
            );
        }
    }
    for token in &tokens {
        assert!(!run.stderr.contains(token.as_str()) && !run.stdout.contains(token.as_str()));
    }
}

#[tokio::test]
async fn an_expired_token_is_refreshed_and_the_new_one_stored() {
    let w = World::new().await;
    assert_eq!(w.login().await.code, Some(0));
    let mut stored = w.stored();
    let key = w.server.mcp_url();
    let old = stored["servers"][&key]["token_response"]["access_token"].clone();
    // Received an hour and more ago: expired (expires_in is 3600).
    stored["servers"][&key]["token_received_at"] = json!(1);
    std::fs::write(w.credentials(), stored.to_string()).unwrap();

    let call = w.run(&["mcp", "call", "remote", "todo_read"], &[]).await;

    assert_eq!(call.code, Some(0), "{call:#?}");
    assert_eq!(w.server.refreshes(), 1);
    let new = w.stored()["servers"][&key]["token_response"]["access_token"].clone();
    assert_ne!(new, old);
    assert_eq!(w.server.refusals(), Vec::<String>::new());
}

#[tokio::test]
async fn logout_removes_the_tokens_and_the_server_asks_for_a_login_again() {
    let w = World::new().await;
    assert_eq!(w.login().await.code, Some(0));
    assert_eq!(
        w.run(&["mcp", "call", "remote", "todo_read"], &[])
            .await
            .code,
        Some(0)
    );

    let out = w.run(&["mcp", "logout", "remote"], &[]).await;

    assert_eq!(out.code, Some(0), "{out:#?}");
    assert!(w.stored()["servers"].get(w.server.mcp_url()).is_none());
    let call = w.run(&["mcp", "call", "remote", "todo_read"], &[]).await;
    assert_eq!(call.code, Some(1), "{call:#?}");
    assert!(
        call.stderr.contains("run `nanohermes mcp login remote`"),
        "{call:#?}"
    );
}

/// A 2025-03-26 server: no protected-resource metadata, and the
/// authorization server's metadata at the root with an issuer that has a
/// path (`BASE/oauth`), which RFC 8414 would publish elsewhere. The login
/// registers, authorizes and stores tokens the hub then uses.
#[tokio::test]
async fn a_2025_03_26_server_with_root_metadata_only_is_logged_in_to() {
    let w = World::serving(OAuthServer::start_2025_03_26().await);
    let login = w.login().await;
    assert_eq!(login.code, Some(0), "{login:#?}");
    assert!(login.stdout.contains("logged in to remote"), "{login:#?}");
    assert_eq!(w.server.refusals(), Vec::<String>::new());
    let entry = &w.stored()["servers"][w.server.mcp_url()];
    assert!(
        entry["token_response"]["access_token"].is_string(),
        "{entry}"
    );
    assert_eq!(entry["issuer"], json!(w.server.issuer));

    let call = w
        .run(&["mcp", "call", "remote", "todo_read", "{}"], &[])
        .await;
    assert_eq!(call.code, Some(0), "{call:#?}");
    assert!(w.server.authorized_requests() > 0);
}
