//! The loopback redirect listener (RFC 8252 §7.3): a one-shot HTTP server
//! on `127.0.0.1`, on the configured port or one the kernel picks, that
//! waits for the authorization server to send the browser back to
//! `/callback?code=…&state=…` and hands that URL over. Any other request
//! gets a 404 and the wait goes on.

use std::time::Duration;

use anyhow::{Context as _, bail};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpListener;

/// The path the authorization server redirects to.
pub const CALLBACK_PATH: &str = "/callback";

/// How long a login waits for the browser [5 minutes].
pub const WAIT: Duration = Duration::from_secs(300);

/// A bound listener and the redirect URI that reaches it.
pub struct Listener {
    listener: TcpListener,
    redirect_uri: String,
}

impl Listener {
    /// Binds `127.0.0.1:port` (0: any free port).
    pub async fn bind(port: u16) -> anyhow::Result<Listener> {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .with_context(|| {
                format!("cannot listen on 127.0.0.1:{port} for the OAuth redirect; free the port or set another oauth_callback_port")
            })?;
        let port = listener.local_addr()?.port();
        Ok(Listener {
            listener,
            redirect_uri: format!("http://127.0.0.1:{port}{CALLBACK_PATH}"),
        })
    }

    /// `http://127.0.0.1:PORT/callback`.
    pub fn redirect_uri(&self) -> &str {
        &self.redirect_uri
    }

    /// Waits for the redirect and returns its full URL (code, state, iss,
    /// or the authorization server's `error`).
    pub async fn callback(self) -> anyhow::Result<String> {
        tokio::time::timeout(WAIT, self.accept())
            .await
            .map_err(|_| anyhow::anyhow!("no authorization arrived within {} s; run the login again and open the URL it prints", WAIT.as_secs()))?
    }

    async fn accept(&self) -> anyhow::Result<String> {
        loop {
            let (stream, _) = self.listener.accept().await?;
            let mut stream = BufReader::new(stream);
            let mut line = String::new();
            // A client that sends nothing useful is skipped, not fatal.
            if stream.read_line(&mut line).await.is_err() {
                continue;
            }
            let target = line.split_whitespace().nth(1).unwrap_or("").to_owned();
            // Drain the headers so the client sees a clean answer.
            loop {
                let mut header = String::new();
                match stream.read_line(&mut header).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) if header.trim().is_empty() => break,
                    Ok(_) => {}
                }
            }
            let is_callback = target.split('?').next() == Some(CALLBACK_PATH);
            let (status, body) = if is_callback {
                (
                    "200 OK",
                    "NanoHermes received the authorization; you can close this window.\n",
                )
            } else {
                ("404 Not Found", "not found\n")
            };
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let mut stream = stream.into_inner();
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
            if is_callback {
                let url = format!(
                    "{}{}",
                    self.redirect_uri.trim_end_matches(CALLBACK_PATH),
                    target
                );
                if let Some(error) = query_value(&url, "error") {
                    let detail = query_value(&url, "error_description").unwrap_or_default();
                    bail!("the authorization server refused: {error} {detail}");
                }
                return Ok(url);
            }
        }
    }
}

fn query_value(url: &str, key: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    url.query_pairs()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_callback_url_comes_back_and_other_paths_are_404() {
        let listener = Listener::bind(0).await.unwrap();
        let uri = listener.redirect_uri().to_owned();
        let waiting = tokio::spawn(listener.callback());
        let base = uri.trim_end_matches(CALLBACK_PATH).to_owned();
        let other = reqwest::get(format!("{base}/favicon.ico")).await.unwrap();
        assert_eq!(other.status(), 404);
        let ok = reqwest::get(format!("{uri}?code=c1&state=s1"))
            .await
            .unwrap();
        assert_eq!(ok.status(), 200);
        let url = waiting.await.unwrap().unwrap();
        assert_eq!(url, format!("{uri}?code=c1&state=s1"));
    }

    #[tokio::test]
    async fn an_error_redirect_is_an_error() {
        let listener = Listener::bind(0).await.unwrap();
        let uri = listener.redirect_uri().to_owned();
        let waiting = tokio::spawn(listener.callback());
        reqwest::get(format!("{uri}?error=access_denied&state=s"))
            .await
            .unwrap();
        let error = waiting.await.unwrap().unwrap_err().to_string();
        assert!(error.contains("access_denied"), "{error}");
    }
}
