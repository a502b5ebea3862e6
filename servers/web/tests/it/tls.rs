//! A minimal https server on 127.0.0.1 for the redirect tests, with a
//! certificate for `127.0.0.1` signed by a test CA (`tls/ca.der`, valid
//! until 2125; its key was thrown away after signing). A client trusts it
//! through `FetchConfig::extra_root_certificates`.
//!
//! It speaks just enough HTTP/1.1: `/page` answers text, `/to?TARGET`
//! answers 302 to TARGET, and the connection closes after each response.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// The CA that signed the server's certificate, DER.
pub const CA: &[u8] = include_bytes!("tls/ca.der");
const LEAF: &[u8] = include_bytes!("tls/leaf.der");
const LEAF_KEY: &[u8] = include_bytes!("tls/leaf.key.der");

/// Starts the https server and returns its address.
pub async fn serve() -> SocketAddr {
    let provider = Arc::new(tokio_rustls::rustls::crypto::aws_lc_rs::default_provider());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(LEAF_KEY.to_vec()));
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![CertificateDer::from(LEAF.to_vec())], key)
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                if let Ok(stream) = acceptor.accept(socket).await {
                    let _ = answer(stream).await;
                }
            });
        }
    });
    addr
}

async fn answer<S>(mut stream: S) -> std::io::Result<()>
where
    S: AsyncReadExt + AsyncWriteExt + Unpin,
{
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        request.extend_from_slice(&buf[..n]);
    }
    let request = String::from_utf8_lossy(&request);
    let target = request.split(' ').nth(1).unwrap_or("/");
    let response = match target.split_once('?') {
        Some(("/to", location)) => format!(
            "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
        _ if target == "/page" => "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 12\r\nConnection: close\r\n\r\nsecure page\n".to_string(),
        _ => "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string(),
    };
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}
