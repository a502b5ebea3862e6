//! The SSRF table: `web_fetch` refuses internal addresses in every spelling,
//! behind DNS names and behind redirects, and lets them through only by the
//! user's exceptions. Every case goes through the real tool.

use nanohermes_web::{AllowedHost, FetchConfig, NetworkGuard, Refusal};
use reqwest::dns::Resolve;

use super::client::{Client, allowing, client, client_for, client_with, get};
use super::{local, tls};

const HINT: &str = "; web_fetch reaches only public addresses \
                    (the user can allow private networks with --allow-private-network)";

fn refused(what: &str, reason: &str) -> String {
    format!("refused {what}: {reason}{HINT}")
}

async fn client_of(config: FetchConfig) -> Client {
    client_with(config, mcp_tools::DEFAULT_MAX_OUTPUT).await
}

#[tokio::test]
async fn every_non_public_address_class_is_refused_as_a_literal() {
    let c = client().await;
    for (url, reason) in [
        ("http://127.0.0.1/", "127.0.0.1 is a loopback address"),
        (
            "http://127.8.9.10:8080/x",
            "127.8.9.10 is a loopback address",
        ),
        ("http://[::1]/", "::1 is a loopback address"),
        (
            "http://10.0.0.1/",
            "10.0.0.1 is a private address (RFC 1918)",
        ),
        (
            "http://172.16.5.4/",
            "172.16.5.4 is a private address (RFC 1918)",
        ),
        (
            "https://192.168.1.1/",
            "192.168.1.1 is a private address (RFC 1918)",
        ),
        (
            "http://100.64.0.1/",
            "100.64.0.1 is a carrier-grade NAT address (100.64.0.0/10)",
        ),
        (
            "http://169.254.10.20/",
            "169.254.10.20 is a link-local address",
        ),
        (
            "http://169.254.169.254/latest/meta-data/",
            "169.254.169.254 is the cloud metadata address (link-local)",
        ),
        (
            "http://[fe80::1]/",
            "fe80::1 is a link-local address (fe80::/10)",
        ),
        (
            "http://[fc00::1]/",
            "fc00::1 is a unique-local address (fc00::/7)",
        ),
        (
            "http://[fd12:3456::1]/",
            "fd12:3456::1 is a unique-local address (fc00::/7)",
        ),
        (
            "http://[::ffff:a9fe:a9fe]/",
            "::ffff:169.254.169.254 is an IPv4-mapped form of 169.254.169.254, \
             the cloud metadata address (link-local)",
        ),
        (
            "http://[64:ff9b::a00:1]/",
            "64:ff9b::a00:1 is a NAT64 form of 10.0.0.1, a private address (RFC 1918)",
        ),
        (
            "http://[2002:c0a8:101::1]/",
            "2002:c0a8:101::1 is a 6to4 form of 192.168.1.1, a private address (RFC 1918)",
        ),
        ("http://0.0.0.0/", "0.0.0.0 is the unspecified address"),
        ("http://[::]/", ":: is the unspecified address"),
        (
            "http://0.1.2.3/",
            "0.1.2.3 is a \"this network\" address (0.0.0.0/8)",
        ),
        ("http://224.0.0.251/", "224.0.0.251 is a multicast address"),
        ("http://[ff02::1]/", "ff02::1 is a multicast address"),
        (
            "http://255.255.255.255/",
            "255.255.255.255 is the broadcast address",
        ),
        (
            "http://240.1.2.3/",
            "240.1.2.3 is a reserved address (240.0.0.0/4)",
        ),
        (
            "http://198.18.0.1/",
            "198.18.0.1 is a benchmarking address (198.18.0.0/15)",
        ),
        (
            "http://192.0.2.1/",
            "192.0.2.1 is a documentation address (TEST-NET-1)",
        ),
        (
            "http://[2001:db8::1]/",
            "2001:db8::1 is a documentation address (2001:db8::/32)",
        ),
    ] {
        let (err, text) = get(&c, url).await;
        assert!(err, "{url}: {text}");
        assert_eq!(text, refused(url, reason), "{url}");
    }
}

#[tokio::test]
async fn every_spelling_of_loopback_is_refused_and_an_exception_reaches_each() {
    let addr = local::serve().await;
    let port = addr.port();
    let spellings = [
        format!("http://2130706433:{port}/page"),
        format!("http://0177.0.0.1:{port}/page"),
        format!("http://0x7f.0.0.1:{port}/page"),
        format!("http://0x7f000001:{port}/page"),
        format!("http://017700000001:{port}/page"),
        format!("http://127.1:{port}/page"),
        format!("http://127.0.1:{port}/page"),
        format!("http://127.0.0.1.:{port}/page"),
        format!("http://%31%32%37.0.0.1:{port}/page"),
        format!("http://[::ffff:127.0.0.1]:{port}/page"),
        format!("http://[::ffff:7f00:1]:{port}/page"),
    ];
    let closed = client().await;
    let open = client_for(addr).await;
    for url in &spellings {
        let (err, text) = get(&closed, url.clone()).await;
        assert!(err, "{url}: {text}");
        let normal = if url.contains('[') {
            refused(
                &format!("http://[::ffff:7f00:1]:{port}/page"),
                "::ffff:127.0.0.1 is an IPv4-mapped form of 127.0.0.1, a loopback address",
            )
        } else {
            refused(
                &format!("http://127.0.0.1:{port}/page"),
                "127.0.0.1 is a loopback address",
            )
        };
        assert_eq!(text, normal, "{url}");
        // The same spelling does reach the server once it is allowed, so
        // the refusal above is the guard's doing.
        let (err, text) = get(&open, url.clone()).await;
        assert!(!err && text.contains("Hello web"), "{url}: {text}");
    }
    let (err, text) = get(&closed, format!("http://[::1]:{port}/page")).await;
    assert!(err);
    assert_eq!(
        text,
        refused(
            &format!("http://[::1]:{port}/page"),
            "::1 is a loopback address"
        )
    );
}

#[tokio::test]
async fn a_name_that_resolves_to_loopback_is_refused() {
    let addr = local::serve().await;
    let url = format!("http://localhost:{}/page", addr.port());
    let (err, text) = get(&client().await, url.clone()).await;
    assert!(err, "{text}");
    let start = format!("refused {url}: localhost resolves to ");
    assert!(text.starts_with(&start), "{text}");
    assert!(text.contains(", a loopback address"), "{text}");
    assert!(text.ends_with(HINT), "{text}");
    // Allowed by name (and port), the same URL is fetched.
    let config = FetchConfig {
        allowed_hosts: vec![format!("localhost:{}", addr.port()).parse().unwrap()],
        ..FetchConfig::default()
    };
    let (err, text) = get(&client_of(config).await, url).await;
    assert!(!err && text.contains("Hello web"), "{text}");
}

#[tokio::test]
async fn a_name_allowed_on_one_port_is_refused_on_another() {
    let addr = local::serve().await;
    let config = FetchConfig {
        allowed_hosts: vec!["localhost:1".parse().unwrap()],
        ..FetchConfig::default()
    };
    let url = format!("http://localhost:{}/page", addr.port());
    let (err, text) = get(&client_of(config).await, url.clone()).await;
    assert!(err);
    assert_eq!(
        text,
        refused(
            &url,
            &format!(
                "localhost is allowed to reach private addresses only on port 1 \
                 (--allow-fetch-host localhost:1), not on port {}",
                addr.port()
            )
        )
    );
}

#[tokio::test]
async fn the_resolver_refuses_loopback_answers_and_keeps_allowed_ones() {
    let resolver = NetworkGuard::default().resolver();
    let error = match resolver.resolve("localhost".parse().unwrap()).await {
        Ok(addrs) => panic!("resolved to {:?}", addrs.collect::<Vec<_>>()),
        Err(error) => error,
    };
    let refusal = error.downcast_ref::<Refusal>().unwrap();
    let Refusal::Resolved { name, first, .. } = refusal else {
        panic!("{refusal:?}")
    };
    assert_eq!(name, "localhost");
    assert!(first.address.is_loopback(), "{first:?}");
    let allowed: AllowedHost = "localhost".parse().unwrap();
    let resolver = NetworkGuard::new(false, vec![allowed]).resolver();
    let addrs: Vec<_> = resolver
        .resolve("localhost".parse().unwrap())
        .await
        .unwrap()
        .collect();
    assert!(addrs.iter().any(|a| a.ip().is_loopback()), "{addrs:?}");
}

#[tokio::test]
async fn a_redirect_from_an_allowed_server_to_an_internal_address_is_refused() {
    let allowed = local::serve().await;
    let other = local::serve().await;
    let port = other.port();
    let c = client_for(allowed).await;
    for (target, what, reason) in [
        (
            format!("http://{other}/page"),
            format!("http://{other}/page"),
            "127.0.0.1 is a loopback address",
        ),
        (
            format!("http://2130706433:{port}/page"),
            format!("http://127.0.0.1:{port}/page"),
            "127.0.0.1 is a loopback address",
        ),
        (
            format!("http://[::ffff:127.0.0.1]:{port}/page"),
            format!("http://[::ffff:7f00:1]:{port}/page"),
            "::ffff:127.0.0.1 is an IPv4-mapped form of 127.0.0.1, a loopback address",
        ),
        (
            "http://169.254.169.254/latest/meta-data/".to_string(),
            "http://169.254.169.254/latest/meta-data/".to_string(),
            "169.254.169.254 is the cloud metadata address (link-local)",
        ),
        (
            "http://10.1.1.1/".to_string(),
            "http://10.1.1.1/".to_string(),
            "10.1.1.1 is a private address (RFC 1918)",
        ),
    ] {
        let url = format!("http://{allowed}/to?{target}");
        let (err, text) = get(&c, url.clone()).await;
        assert!(err, "{target}: {text}");
        assert_eq!(
            text,
            refused(&format!("{what} (redirected from {url})"), reason),
            "{target}"
        );
    }
    // A name behind a redirect is judged by the resolver.
    let url = format!("http://{allowed}/to?http://localhost:{port}/page");
    let (err, text) = get(&c, url.clone()).await;
    assert!(err, "{text}");
    assert!(
        text.starts_with(&format!(
            "refused a redirect from {url}: localhost resolves to "
        )),
        "{text}"
    );
    assert!(text.ends_with(HINT), "{text}");
    // With both servers allowed, the same redirect is followed.
    let both = client_of(allowing(&[allowed, other])).await;
    let (err, text) = get(&both, format!("http://{allowed}/to?http://{other}/page")).await;
    assert!(!err && text.contains("Hello web"), "{text}");
}

fn trusting_tls(servers: &[std::net::SocketAddr]) -> FetchConfig {
    FetchConfig {
        extra_root_certificates: vec![tls::CA.to_vec()],
        ..allowing(servers)
    }
}

#[tokio::test]
async fn a_redirect_from_https_to_http_is_refused() {
    let secure = tls::serve().await;
    let plain = local::serve().await;
    let c = client_of(trusting_tls(&[secure, plain])).await;
    // https to https is followed (and the test CA is trusted)...
    let (err, text) = get(&c, format!("https://{secure}/to?https://{secure}/page")).await;
    assert!(!err, "{text}");
    assert!(text.ends_with("\n\nsecure page\n"), "{text}");
    // ...http to https too...
    let (err, text) = get(&c, format!("http://{plain}/to?https://{secure}/page")).await;
    assert!(!err && text.ends_with("secure page\n"), "{text}");
    // ...but https down to http is not, though the target is allowed.
    let url = format!("https://{secure}/to?http://{plain}/page");
    let (err, text) = get(&c, url.clone()).await;
    assert!(err, "{text}");
    assert_eq!(
        text,
        format!(
            "refused: {url} redirected to http://{plain}/page, from https down to plain http; \
             web_fetch does not follow a redirect that drops TLS"
        )
    );
}

#[tokio::test]
async fn allow_private_network_lets_loopback_through() {
    let first = local::serve().await;
    let second = local::serve().await;
    let config = FetchConfig {
        allow_private_network: true,
        ..FetchConfig::default()
    };
    let c = client_of(config).await;
    for url in [
        format!("http://{first}/page"),
        format!("http://localhost:{}/page", first.port()),
        format!("http://2130706433:{}/page", first.port()),
        format!("http://{first}/to?http://{second}/page"),
        format!("http://{first}/to?http://localhost:{}/page", second.port()),
    ] {
        let (err, text) = get(&c, url.clone()).await;
        assert!(!err && text.contains("Hello web"), "{url}: {text}");
    }
}

#[tokio::test]
async fn an_exception_for_one_port_leaves_the_rest_of_loopback_refused() {
    let allowed = local::serve().await;
    let other = local::serve().await;
    let c = client_for(allowed).await;
    let (err, _) = get(&c, format!("http://{allowed}/page")).await;
    assert!(!err);
    let url = format!("http://{other}/page");
    let (err, text) = get(&c, url.clone()).await;
    assert!(err);
    assert_eq!(text, refused(&url, "127.0.0.1 is a loopback address"));
}

#[tokio::test]
async fn an_ipv6_zone_id_is_a_malformed_url() {
    let (err, text) = get(&client().await, "http://[fe80::1%25eth0]/").await;
    assert!(err);
    assert!(
        text.starts_with("`http://[fe80::1%25eth0]/` is not a valid URL"),
        "{text}"
    );
}

#[tokio::test]
async fn the_default_config_allows_no_private_network() {
    let config = FetchConfig::default();
    assert!(!config.allow_private_network);
    assert!(config.allowed_hosts.is_empty());
}

#[tokio::test]
async fn with_web_allowed_domains_an_unlisted_host_is_refused_even_by_redirect() {
    let server = local::serve().await;
    let port = server.port();
    let config = FetchConfig {
        allow_private_network: true,
        allowed_domains: Some(mcp_tools::net::DomainList::parse(&["localhost"]).unwrap()),
        ..FetchConfig::default()
    };
    let c = client_of(config).await;
    let (err, text) = get(&c, format!("http://localhost:{port}/page")).await;
    assert!(!err && text.contains("Hello web"), "{text}");
    // The same server by address is not the listed name.
    let url = format!("http://127.0.0.1:{port}/page");
    let (err, text) = get(&c, url.clone()).await;
    assert!(err, "{text}");
    assert_eq!(
        text,
        format!(
            "refused {url}: 127.0.0.1 is not in web_allowed_domains, so web_fetch cannot reach \
             it; only the user can add it (web_allowed_domains in ~/.nanohermes/config.toml): \
             ask them rather than trying another way"
        )
    );
    // Nor may a redirect from a listed host lead off the list.
    let url = format!("http://localhost:{port}/to?http://127.0.0.1:{port}/page");
    let (err, text) = get(&c, url).await;
    assert!(
        err && text.contains("127.0.0.1 is not in web_allowed_domains"),
        "{text}"
    );
}
