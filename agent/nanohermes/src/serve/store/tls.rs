//! TLS to the PostgreSQL store, over rustls.
//!
//! The URL takes libpq's `sslmode` and `sslrootcert`. Whenever TLS is used
//! the server's certificate chain *and* host name are verified (libpq's
//! `verify-full`): against `sslrootcert` (a PEM file; only its
//! certificates) or the system's trust store (`sslrootcert=system`, or
//! none given). `sslmode` decides only whether TLS is used:
//!
//! - `disable`: never.
//! - `prefer`: when the server offers it; a certificate that fails the
//!   check fails the connection (it does not fall back to plain text).
//! - `require`, `verify-ca`, `verify-full`: always.
//! - unset: `disable` when every host (and every `hostaddr`) is loopback
//!   or a Unix socket (where TLS protects nothing, and Debian's own server
//!   offers a self-signed certificate no trust store knows), `require` for
//!   any other, so a store across a network is never reached in plain text
//!   by default.
//!
//! Over Unix sockets only, `sslmode` is ignored, as libpq does (PostgreSQL
//! has no TLS there). Only the URL form is taken, not libpq's `key=value`
//! form. Client certificates (`sslcert`, `sslkey`) and `sslcrl` are not
//! supported and are refused by name rather than ignored.

use std::future::Future;
use std::io;
use std::net::IpAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::ClientConfig;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::{Host, SslMode};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use tokio_postgres::{Config, Socket};

/// The URL's TLS settings, taken out of it before tokio-postgres parses the
/// rest (it knows no `sslrootcert` and no `verify-*` modes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// `sslmode` as written (`verify-ca` and `verify-full` read as
    /// `require`: every TLS connection is verified), if it was.
    mode: Option<SslMode>,
    /// `sslrootcert`: `None` for the system's trust store.
    roots: Option<PathBuf>,
}

/// Splits `url` into the URL tokio-postgres parses and its TLS settings.
/// Only the URL form is taken: tokio-postgres would also parse libpq's
/// `key=value` form, whose `sslmode` this split cannot see. Errors never
/// quote the URL: a mistyped one may hold a secret.
pub fn split_url(url: &str) -> Result<(String, TlsSettings), String> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err("--store: not a PostgreSQL URL (postgres://USER@HOST:PORT/DB)".to_owned());
    }
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, query),
        None => (url, ""),
    };
    let mut settings = TlsSettings {
        mode: None,
        roots: None,
    };
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let value = percent_decode(value)?;
        match key {
            "sslmode" => {
                settings.mode = Some(match value.as_str() {
                    "disable" => SslMode::Disable,
                    "prefer" => SslMode::Prefer,
                    "require" | "verify-ca" | "verify-full" => SslMode::Require,
                    other => {
                        return Err(format!(
                            "--store: sslmode={other} is not one of disable, prefer, require, verify-ca, verify-full"
                        ));
                    }
                });
            }
            "sslrootcert" => {
                settings.roots = (value != "system").then(|| PathBuf::from(value));
            }
            "sslcert" | "sslkey" | "sslpassword" => {
                return Err(format!(
                    "--store: {key} is not supported (client certificates): authenticate with a password from NANOHERMES_STORE_PASSWORD"
                ));
            }
            "sslcrl" => {
                return Err(
                    "--store: sslcrl is not supported (certificate revocation lists)".to_owned(),
                );
            }
            _ => rest.push(pair),
        }
    }
    let base = if rest.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    Ok((base, settings))
}

/// `%XX` escapes, as a URL's query writes a path with odd characters.
fn percent_decode(value: &str) -> Result<String, String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or("--store: a bad %-escape in the URL's query")?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| "--store: the URL's query is not UTF-8".to_owned())
}

/// How the store connects: in plain text, or over TLS with `config`.
#[derive(Clone)]
pub enum Tls {
    /// No TLS (`sslmode=disable`, or loopback by default).
    Off,
    /// TLS with verification; whether it is required is in the tokio-postgres
    /// [`Config`]'s `ssl_mode`.
    On(MakeRustls),
}

impl Tls {
    /// Applies `settings` to `config` (its `ssl_mode`) and builds the
    /// connector: loads `sslrootcert`, or the system's trust store.
    pub fn new(settings: &TlsSettings, config: &mut Config) -> Result<Tls, String> {
        // Where the connection goes is the `hostaddr` when one is given,
        // so a loopback host name over a remote address is not local.
        let local = config.get_hosts().iter().all(is_local)
            && config.get_hostaddrs().iter().all(IpAddr::is_loopback);
        // PostgreSQL has no TLS over a Unix socket; libpq ignores
        // `sslmode` there, and so does this.
        let sockets_only = !config.get_hosts().is_empty()
            && config
                .get_hosts()
                .iter()
                .all(|h| matches!(h, Host::Unix(_)))
            && config.get_hostaddrs().is_empty();
        let mode = match settings.mode {
            _ if sockets_only => SslMode::Disable,
            Some(mode) => mode,
            None if local => SslMode::Disable,
            None => SslMode::Require,
        };
        config.ssl_mode(mode);
        if mode == SslMode::Disable {
            return Ok(Tls::Off);
        }
        if config.get_hosts().len() < config.get_hostaddrs().len() {
            return Err(
                "--store: TLS checks the certificate against the host name: give a host for every hostaddr"
                    .to_owned(),
            );
        }
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("--store: TLS: {e}"))?;
        let client = match &settings.roots {
            Some(path) => {
                let mut roots = rustls::RootCertStore::empty();
                let shown = path.display();
                let certs = CertificateDer::pem_file_iter(path)
                    .map_err(|e| format!("--store: sslrootcert {shown}: {e}"))?;
                for cert in certs {
                    let cert = cert.map_err(|e| format!("--store: sslrootcert {shown}: {e}"))?;
                    roots
                        .add(cert)
                        .map_err(|e| format!("--store: sslrootcert {shown}: {e}"))?;
                }
                if roots.is_empty() {
                    return Err(format!(
                        "--store: sslrootcert {shown} holds no PEM certificate"
                    ));
                }
                builder.with_root_certificates(roots).with_no_client_auth()
            }
            None => {
                let verifier = rustls_platform_verifier::Verifier::new(provider)
                    .map_err(|e| format!("--store: the system's trust store: {e}"))?;
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(verifier))
                    .with_no_client_auth()
            }
        };
        Ok(Tls::On(MakeRustls {
            config: Arc::new(client),
        }))
    }

    /// How the start line describes it.
    pub fn describe(&self, config: &Config) -> &'static str {
        match (self, config.get_ssl_mode()) {
            (Tls::Off, _) => "no TLS",
            (Tls::On(_), SslMode::Prefer) => "TLS when offered, verified",
            (Tls::On(_), _) => "TLS, verified",
        }
    }
}

/// A host TLS would protect nothing on: a Unix socket, `localhost` or a
/// loopback address.
fn is_local(host: &Host) -> bool {
    match host {
        Host::Unix(_) => true,
        Host::Tcp(name) => {
            name == "localhost" || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
        }
    }
}

/// Whether `e` is the TLS check refusing the server (a certificate that
/// does not verify, or a server without TLS where it is required): a
/// setting to fix, not an outage to wait out.
pub fn is_refusal(e: &tokio_postgres::Error) -> bool {
    if e.to_string().contains("server does not support TLS") {
        return true;
    }
    let mut source = std::error::Error::source(e);
    // tokio-rustls hands rustls's error over inside an `io::Error`, whose
    // `source` skips it: look inside each `io::Error` of the chain.
    while let Some(err) = source {
        if let Some(inner) = err.downcast_ref::<io::Error>().and_then(|io| io.get_ref())
            && inner.is::<rustls::Error>()
        {
            return true;
        }
        source = err.source();
    }
    false
}

/// tokio-postgres's connector factory, one connector per host name.
#[derive(Clone)]
pub struct MakeRustls {
    config: Arc<ClientConfig>,
}

impl MakeTlsConnect<Socket> for MakeRustls {
    type Stream = RustlsStream;
    type TlsConnect = RustlsConnect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> io::Result<RustlsConnect> {
        let name = ServerName::try_from(domain.to_owned())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Ok(RustlsConnect {
            config: self.config.clone(),
            name,
        })
    }
}

/// One TLS handshake with one host.
pub struct RustlsConnect {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl TlsConnect<Socket> for RustlsConnect {
    type Stream = RustlsStream;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<RustlsStream>> + Send>>;

    fn connect(self, stream: Socket) -> Self::Future {
        Box::pin(async move {
            let stream = tokio_rustls::TlsConnector::from(self.config)
                .connect(self.name, stream)
                .await?;
            Ok(RustlsStream(Box::new(stream)))
        })
    }
}

/// The encrypted connection.
pub struct RustlsStream(Box<tokio_rustls::client::TlsStream<Socket>>);

impl TlsStream for RustlsStream {
    /// No channel binding: SCRAM-SHA-256 without `-PLUS`, as libpq's
    /// default `channel_binding=prefer` settles on without it.
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl AsyncRead for RustlsStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for RustlsStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut *self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_for(url: &str) -> Result<SslMode, String> {
        let (base, settings) = split_url(url)?;
        let mut config: Config = base.parse().map_err(|e| format!("{e}"))?;
        Tls::new(&settings, &mut config)?;
        Ok(config.get_ssl_mode())
    }

    #[test]
    fn a_store_across_a_network_requires_tls_by_default_and_loopback_does_not() {
        for (url, want) in [
            ("postgres://u@db.example.com/db", SslMode::Require),
            ("postgres://u@10.0.0.5:5432/db", SslMode::Require),
            ("postgres://u@127.0.0.1:5432/db", SslMode::Disable),
            ("postgres://u@localhost/db", SslMode::Disable),
            ("postgres://u@[::1]:5432/db", SslMode::Disable),
            ("postgres://u@%2Frun%2Fpostgresql/db", SslMode::Disable),
            // One remote host among loopback ones makes TLS required.
            ("postgres://u@127.0.0.1,db.example.com/db", SslMode::Require),
            (
                "postgres://u@db.example.com/db?sslmode=disable",
                SslMode::Disable,
            ),
            ("postgres://u@127.0.0.1/db?sslmode=prefer", SslMode::Prefer),
            (
                "postgres://u@127.0.0.1/db?sslmode=verify-full",
                SslMode::Require,
            ),
            (
                "postgres://u@127.0.0.1/db?sslmode=verify-ca",
                SslMode::Require,
            ),
            // The address connected to decides, not the name.
            (
                "postgres://u@localhost/db?hostaddr=10.0.0.5",
                SslMode::Require,
            ),
            (
                "postgres://u@localhost/db?hostaddr=127.0.0.1",
                SslMode::Disable,
            ),
            // No TLS over a Unix socket, whatever sslmode says.
            (
                "postgres://u@%2Frun%2Fpostgresql/db?sslmode=require",
                SslMode::Disable,
            ),
        ] {
            assert_eq!(mode_for(url), Ok(want), "{url}");
        }
    }

    #[test]
    fn tls_settings_leave_the_url_and_its_other_options_stay() {
        let (base, settings) = split_url(
            "postgres://u@h/db?connect_timeout=3&sslmode=require&sslrootcert=%2Fetc%2Fca%20x.pem",
        )
        .unwrap();
        assert_eq!(base, "postgres://u@h/db?connect_timeout=3");
        assert_eq!(settings.mode, Some(SslMode::Require));
        assert_eq!(settings.roots, Some(PathBuf::from("/etc/ca x.pem")));
        let (_, settings) = split_url("postgres://u@h/db?sslrootcert=system").unwrap();
        assert_eq!(settings.roots, None);
    }

    #[test]
    fn unknown_modes_client_certificates_and_bad_root_files_are_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        for (url, says) in [
            (
                "postgres://u@h/db?sslmode=allow",
                "sslmode=allow is not one of",
            ),
            (
                "postgres://u@h/db?sslcert=/c.pem",
                "sslcert is not supported",
            ),
            (
                "postgres://u@h/db?sslcrl=/crl.pem",
                "sslcrl is not supported",
            ),
            // libpq's key=value form would hide its sslmode from the split.
            (
                "host=db.example.com sslmode=disable",
                "not a PostgreSQL URL",
            ),
            ("host=localhost sslmode=require", "not a PostgreSQL URL"),
            (
                "postgres://u@/db?hostaddr=10.0.0.5&sslmode=require",
                "give a host for every hostaddr",
            ),
            (
                "postgres://u@h/db?sslmode=require&sslrootcert=%zz",
                "bad %-escape",
            ),
            (
                "postgres://u@h/db?sslrootcert=/nonexistent/ca.pem",
                "sslrootcert /nonexistent/ca.pem",
            ),
            (
                &format!("postgres://u@h/db?sslrootcert={}", empty.display()),
                "holds no PEM certificate",
            ),
        ] {
            let err = mode_for(url).unwrap_err();
            assert!(err.contains(says), "{url}: {err}");
        }
    }
}

/// How a failed TLS negotiation is classed, against a fake server that
/// answers PostgreSQL's SSLRequest: a setting to fix fails at once, a
/// dropped connection is an outage to wait out.
#[cfg(test)]
mod refusals {
    use super::super::pg::{Pg, PgError};
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    /// A server on loopback that reads the 8-byte SSLRequest, writes
    /// `answer` and closes; returns its port.
    async fn answering(answer: &'static [u8]) -> u16 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut request = [0u8; 8];
                if socket.read_exact(&mut request).await.is_ok() {
                    let _ = socket.write_all(answer).await;
                }
            }
        });
        port
    }

    async fn ping(answer: &'static [u8]) -> PgError {
        let port = answering(answer).await;
        let pg = Pg::new(&format!("postgres://u@127.0.0.1:{port}/db?sslmode=require")).unwrap();
        pg.ping().await.unwrap_err()
    }

    #[tokio::test]
    async fn a_server_without_tls_where_it_is_required_is_a_refusal() {
        assert!(matches!(ping(b"N").await, PgError::Failed(_)));
    }

    #[tokio::test]
    async fn a_handshake_rustls_rejects_is_a_refusal() {
        // Not a TLS record: rustls refuses the bytes.
        let e = ping(b"Sgarbage that is no TLS record at all\r\n").await;
        assert!(matches!(e, PgError::Failed(_)), "{e}");
    }

    #[tokio::test]
    async fn a_connection_dropped_mid_handshake_is_an_outage() {
        let e = ping(b"S").await;
        assert!(matches!(e, PgError::Down(_)), "{e}");
    }
}
