//! Local HTTP servers for the tests: an axum app with one route per case,
//! and a listener that accepts connections and never answers.

use std::net::SocketAddr;

use axum::Router;
use axum::body::Body;
use axum::extract::Path;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

/// The HTML page the conversion test reads.
pub const PAGE: &str = "<!DOCTYPE html><html><head><title>Test page</title>\
<style>body { color: red }</style><script>var hidden = 1;</script></head>\
<body><h1>Hello web</h1><p>First <b>bold</b> paragraph with a <a href=\"/next\">link</a>.</p>\
<ul><li>one</li><li>two</li></ul></body></html>";

/// Size of the `/big` body.
pub const BIG: usize = 3_000_000;

fn typed(content_type: &'static str, body: impl Into<Body>) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body.into()).into_response()
}

async fn redirect_chain(Path(n): Path<u32>) -> Response {
    if n == 0 {
        typed("text/plain", "arrived")
    } else {
        Redirect::to(&format!("/redirect/{}", n - 1)).into_response()
    }
}

/// `/to?TARGET` answers 302 with `Location: TARGET`, the query as it came.
async fn redirect_to_query(uri: Uri) -> Response {
    let target = uri.query().unwrap_or("/").to_string();
    (StatusCode::FOUND, [(header::LOCATION, target)]).into_response()
}

/// Starts the app on 127.0.0.1 and returns its address.
pub async fn serve() -> SocketAddr {
    let app = Router::new()
        .route(
            "/page",
            get(|| async { typed("text/html; charset=utf-8", PAGE) }),
        )
        .route(
            "/plain",
            get(|| async { typed("text/plain", "just text\nline two") }),
        )
        .route(
            "/data.json",
            get(|| async { typed("application/json", r#"{"answer": 42}"#) }),
        )
        .route(
            "/feed.xml",
            get(|| async { typed("application/rss+xml", "<rss><title>feed</title></rss>") }),
        )
        .route(
            "/untyped",
            get(|| async { Response::new(Body::from("no type here")) }),
        )
        .route(
            "/image.png",
            get(|| async { typed("image/png", &b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"[..]) }),
        )
        .route(
            "/untyped-binary",
            get(|| async { Response::new(Body::from(&b"\x00\x01\x02binary"[..])) }),
        )
        .route(
            "/big",
            get(|| async { typed("text/plain", "a".repeat(BIG)) }),
        )
        .route(
            "/endless",
            get(|| async {
                let chunk = bytes_chunk();
                let stream =
                    futures::stream::repeat_with(move || Ok::<_, std::io::Error>(chunk.clone()));
                typed("text/plain", Body::from_stream(stream))
            }),
        )
        .route("/redirect/{n}", get(redirect_chain))
        .route("/to", get(redirect_to_query))
        .route(
            "/to-file",
            get(|| async { Redirect::to("file:///etc/passwd") }),
        )
        .route(
            "/missing",
            get(|| async {
                (
                    StatusCode::NOT_FOUND,
                    typed("text/html", "<h1>Not here</h1><p>try /page</p>"),
                )
            }),
        )
        .route(
            "/broken",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "database down") }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    addr
}

fn bytes_chunk() -> axum::body::Bytes {
    axum::body::Bytes::from(vec![b'z'; 64 * 1024])
}

/// A listener that accepts connections and never writes a byte.
pub async fn silent() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    addr
}
