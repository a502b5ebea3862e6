//! One bounded HTTP GET: scheme check, the network guard on every hop,
//! redirect limit, timeouts, a size cap read incrementally, and the content
//! type decided before the body is read.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use reqwest::redirect::{Attempt, Policy};
use reqwest::{StatusCode, Url};

use crate::guard::{AllowedHost, NetworkGuard, Refusal};

/// Limits every fetch obeys. The defaults suit a model reading web pages.
#[derive(Debug, Clone)]
pub struct FetchConfig {
    /// Whole request, from connecting to the last body byte.
    pub timeout: Duration,
    /// Establishing the TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// Redirects followed before giving up.
    pub max_redirects: usize,
    /// Body bytes read when the caller gives no `max_bytes`.
    pub default_max_bytes: usize,
    /// Largest `max_bytes` a caller may ask for.
    pub max_max_bytes: usize,
    /// Reach loopback, private, link-local and other non-public addresses
    /// too (the user's `--allow-private-network`). Off by default.
    pub allow_private_network: bool,
    /// Non-public hosts the user lets through one by one (`--allow-fetch-host`).
    pub allowed_hosts: Vec<AllowedHost>,
    /// With a list, only its domains are fetched (`web_allowed_domains`;
    /// the matcher the sandbox's allowlist uses).
    pub allowed_domains: Option<mcp_tools::net::DomainList>,
    /// DER-encoded CA certificates trusted besides the system's (a company
    /// CA; the tests' own CA for their https server).
    pub extra_root_certificates: Vec<Vec<u8>>,
}

impl Default for FetchConfig {
    /// 30 s total, 10 s to connect, 5 redirects, 2 MB by default, 10 MB at
    /// most, public addresses only.
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            max_redirects: 5,
            default_max_bytes: 2_000_000,
            max_max_bytes: 10_000_000,
            allow_private_network: false,
            allowed_hosts: Vec::new(),
            allowed_domains: None,
            extra_root_certificates: Vec::new(),
        }
    }
}

/// What follows a refusal: for an address, that only public ones are
/// reached and who can change it; an unlisted host's reason says it all.
fn hint(reason: &Refusal) -> &'static str {
    match reason {
        Refusal::NotListed { .. } => "",
        _ => {
            "; web_fetch reaches only public addresses \
             (the user can allow private networks with --allow-private-network)"
        }
    }
}

/// A fetched page.
#[derive(Debug, Clone)]
pub struct Page {
    /// Where the last redirect led.
    pub url: Url,
    /// The final status (2xx or 3xx without a location).
    pub status: StatusCode,
    /// The `Content-Type` header, or a note that there was none.
    pub content_type: String,
    /// The body as readable text (HTML converted).
    pub text: String,
    /// Body bytes read.
    pub bytes_read: usize,
    /// True when the body went on past the size cap and was cut there.
    pub truncated: bool,
}

/// Why a fetch failed. Each message says what the model can do next.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The URL did not parse.
    #[error("`{url}` is not a valid URL ({reason}); give an absolute http:// or https:// URL")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// The parser's complaint.
        reason: String,
    },
    /// The scheme is not http or https.
    #[error("only http and https URLs can be fetched, not `{0}:` URLs")]
    Scheme(String),
    /// `max_bytes` was zero.
    #[error("max_bytes must be at least 1")]
    ZeroMaxBytes,
    /// The whole request took too long.
    #[error("timed out after {secs} s fetching {url}; the server is slow or not answering", secs = .timeout.as_secs_f64())]
    Timeout {
        /// The URL requested.
        url: String,
        /// The limit that was hit.
        timeout: Duration,
    },
    /// The server redirected too often.
    #[error(
        "gave up after {max} redirects fetching {url}; fetch the final address directly if you know it"
    )]
    TooManyRedirects {
        /// The URL requested.
        url: String,
        /// The redirect limit.
        max: usize,
    },
    /// A redirect pointed to a scheme other than http or https.
    #[error("{url} redirected to `{target}`, which is not an http or https URL")]
    RedirectScheme {
        /// The URL requested.
        url: String,
        /// The redirect target.
        target: String,
    },
    /// The URL, a redirect, or the address a name resolved to is not public.
    #[error("refused {what}: {reason}{}", hint(reason))]
    Refused {
        /// The URL refused (`http://10.0.0.1/`), the redirect target with
        /// where it came from, or `a redirect from URL` when the resolver
        /// refused a name a redirect led to.
        what: String,
        /// What was refused and why.
        reason: Refusal,
    },
    /// An https page redirected to plain http.
    #[error(
        "refused: {url} redirected to {target}, from https down to plain http; \
         web_fetch does not follow a redirect that drops TLS"
    )]
    Downgrade {
        /// The URL requested.
        url: String,
        /// The http redirect target.
        target: String,
    },
    /// Connecting failed.
    #[error("could not connect to {url}: {reason}")]
    Connect {
        /// The URL requested.
        url: String,
        /// The cause.
        reason: String,
    },
    /// The server answered with an HTTP error status.
    #[error("HTTP {status} from {url}{}", excerpt(.body))]
    Status {
        /// The URL that answered.
        url: String,
        /// The status, e.g. `404 Not Found`.
        status: StatusCode,
        /// The start of the error page, as text.
        body: String,
    },
    /// The body is not text.
    #[error(
        "refused: {url} is `{content_type}`, not text; web_fetch returns HTML, text, JSON and XML only"
    )]
    NotText {
        /// The URL that answered.
        url: String,
        /// The content type it declared (or what was sniffed).
        content_type: String,
    },
    /// The HTTP client could not be built (the TLS backend did not start).
    #[error("cannot start the HTTP client: {reason}; web_fetch is unavailable in this session")]
    Client {
        /// The cause, with its sources.
        reason: String,
    },
    /// Any other transport failure.
    #[error("fetching {url} failed: {reason}")]
    Other {
        /// The URL requested.
        url: String,
        /// The cause, with its sources.
        reason: String,
    },
}

fn excerpt(body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        String::new()
    } else {
        format!(
            "; the page says:\n{}",
            mcp_tools::clamp(body, ERROR_EXCERPT_BYTES)
        )
    }
}

/// Bytes of an error page quoted in a [`FetchError::Status`].
pub const ERROR_EXCERPT_BYTES: usize = 1_000;

/// Width html2text wraps converted HTML at.
pub const TEXT_WIDTH: usize = 100;

/// An HTTP client with the limits of one [`FetchConfig`]. The client
/// itself is built on the first fetch: building it loads the system's root
/// certificates (every file in /etc/ssl/certs, a few ms), which a server
/// that never fetches, or not yet, should not wait for at start.
#[derive(Debug, Clone)]
pub struct Fetcher {
    client: Arc<OnceLock<reqwest::Client>>,
    /// [`FetchConfig::extra_root_certificates`], parsed at construction.
    roots: Vec<reqwest::Certificate>,
    config: FetchConfig,
    guard: NetworkGuard,
}

#[derive(Debug, thiserror::Error)]
enum RedirectRefused {
    #[error("too many redirects")]
    TooMany,
    #[error("redirect to a non-http scheme")]
    Scheme(String),
    #[error("redirect from https to http")]
    Downgrade(String),
    #[error("redirect to a non-public address")]
    Address(String, Refusal),
}

impl Fetcher {
    /// A fetcher with `config`'s limits; the client is built on the first
    /// fetch. With the rustls backend this never fails: an extra root
    /// certificate that does not parse fails that first fetch
    /// ([`FetchError::Client`]), as a TLS backend that cannot start would.
    pub fn new(config: FetchConfig) -> Result<Self, reqwest::Error> {
        let roots = config
            .extra_root_certificates
            .iter()
            .map(|der| reqwest::Certificate::from_der(der))
            .collect::<Result<_, _>>()?;
        let guard = NetworkGuard::new(config.allow_private_network, config.allowed_hosts.clone())
            .with_domains(config.allowed_domains.clone());
        Ok(Self {
            client: Arc::new(OnceLock::new()),
            roots,
            config,
            guard,
        })
    }

    /// Whether the HTTP client has been built (by a first fetch).
    pub fn client_is_built(&self) -> bool {
        self.client.get().is_some()
    }

    /// The client, built on first use off the async thread.
    async fn client(&self) -> Result<&reqwest::Client, FetchError> {
        if let Some(client) = self.client.get() {
            return Ok(client);
        }
        let (config, guard, roots) = (self.config.clone(), self.guard.clone(), self.roots.clone());
        let built =
            mcp_tools::blocking(move || build_client(&config, guard, roots).map_err(|e| chain(&e)))
                .await
                .map_err(|reason| FetchError::Client { reason })?;
        // Two first fetches at once may both build; one client is kept.
        Ok(self.client.get_or_init(|| built))
    }
}

/// The HTTP client of `config`: its redirect policy, `guard` as resolver
/// and on every hop, `roots` trusted besides the system's certificates.
fn build_client(
    config: &FetchConfig,
    guard: NetworkGuard,
    roots: Vec<reqwest::Certificate>,
) -> Result<reqwest::Client, reqwest::Error> {
    let max = config.max_redirects;
    let hop_guard = guard.clone();
    let policy = Policy::custom(move |attempt: Attempt<'_>| {
        let target = attempt.url();
        let from_https = attempt
            .previous()
            .last()
            .is_some_and(|u| u.scheme() == "https");
        if !matches!(target.scheme(), "http" | "https") {
            let target = target.to_string();
            attempt.error(RedirectRefused::Scheme(target))
        } else if from_https && target.scheme() == "http" {
            let target = target.to_string();
            attempt.error(RedirectRefused::Downgrade(target))
        } else if attempt.previous().len() > max {
            attempt.error(RedirectRefused::TooMany)
        } else if let Err(refusal) = hop_guard.check_url(target) {
            // Literal addresses never reach the resolver: judge them here.
            let target = target.to_string();
            attempt.error(RedirectRefused::Address(target, refusal))
        } else {
            attempt.follow()
        }
    });
    let mut builder = reqwest::Client::builder();
    for root in roots {
        builder = builder.add_root_certificate(root);
    }
    builder
        .user_agent(concat!("nanohermes-web/", env!("CARGO_PKG_VERSION")))
        .redirect(policy)
        // A proxy would connect to the target for us, past the resolver.
        .no_proxy()
        .dns_resolver(guard.resolver())
        .timeout(config.timeout)
        .connect_timeout(config.connect_timeout)
        .build()
}

impl Fetcher {
    /// The limits in force.
    pub fn config(&self) -> &FetchConfig {
        &self.config
    }

    /// GETs `url` and returns its body as text, reading at most `max_bytes`
    /// (default and ceiling from the config) of it.
    pub async fn fetch(&self, url: &str, max_bytes: Option<usize>) -> Result<Page, FetchError> {
        let parsed = Url::parse(url.trim()).map_err(|e| FetchError::BadUrl {
            url: url.to_string(),
            reason: e.to_string(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(FetchError::Scheme(parsed.scheme().to_string()));
        }
        let cap = match max_bytes {
            Some(0) => return Err(FetchError::ZeroMaxBytes),
            Some(n) => n.min(self.config.max_max_bytes),
            None => self.config.default_max_bytes,
        };
        self.guard
            .check_url(&parsed)
            .map_err(|reason| FetchError::Refused {
                what: parsed.to_string(),
                reason,
            })?;
        let mut response = self
            .client()
            .await?
            .get(parsed.clone())
            .header(reqwest::header::ACCEPT, ACCEPT)
            .send()
            .await
            .map_err(|e| self.transport_error(&parsed, e))?;
        let final_url = response.url().clone();
        let status = response.status();
        let declared = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        if status.is_redirection() {
            // reqwest hands back, unfollowed, a redirect whose target is not
            // http(s); say where it pointed.
            if let Some(target) = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
            {
                return Err(FetchError::RedirectScheme {
                    url: parsed.to_string(),
                    target: target.to_string(),
                });
            }
        }
        let declared_kind = declared.as_deref().map(classify);
        if status.is_success() && declared_kind == Some(Err(())) {
            return Err(FetchError::NotText {
                url: final_url.to_string(),
                content_type: declared.unwrap_or_default(),
            });
        }
        let error_cap = if status.is_success() {
            cap
        } else {
            ERROR_EXCERPT_BYTES * 4
        };
        let mut body: Vec<u8> = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.transport_error(&parsed, e))?
        {
            let room = error_cap - body.len();
            if chunk.len() >= room {
                body.extend_from_slice(&chunk[..room]);
                // Anything more than exactly the cap means the body went on.
                truncated = chunk.len() > room || response.chunk().await.ok().flatten().is_some();
                break;
            }
            body.extend_from_slice(&chunk);
        }
        drop(response);
        let kind = match declared_kind {
            Some(Ok(kind)) => kind,
            Some(Err(())) => Body::Text,
            None => sniff(&body).ok_or_else(|| FetchError::NotText {
                url: final_url.to_string(),
                content_type: "binary data without a Content-Type".to_string(),
            })?,
        };
        let text = match kind {
            Body::Html => html2text::from_read(body.as_slice(), TEXT_WIDTH)
                .unwrap_or_else(|_| String::from_utf8_lossy(&body).into_owned()),
            Body::Text => String::from_utf8_lossy(&body).into_owned(),
        };
        if !status.is_success() {
            return Err(FetchError::Status {
                url: final_url.to_string(),
                status,
                body: text,
            });
        }
        Ok(Page {
            url: final_url,
            status,
            content_type: declared.unwrap_or_else(|| "none given".to_string()),
            text,
            bytes_read: body.len(),
            truncated,
        })
    }

    fn transport_error(&self, url: &Url, error: reqwest::Error) -> FetchError {
        let url = url.to_string();
        if error.is_redirect() {
            let mut source = std::error::Error::source(&error);
            while let Some(cause) = source {
                if let Some(refused) = cause.downcast_ref::<RedirectRefused>() {
                    return match refused {
                        RedirectRefused::TooMany => FetchError::TooManyRedirects {
                            url,
                            max: self.config.max_redirects,
                        },
                        RedirectRefused::Scheme(target) => FetchError::RedirectScheme {
                            url,
                            target: target.clone(),
                        },
                        RedirectRefused::Downgrade(target) => FetchError::Downgrade {
                            url,
                            target: target.clone(),
                        },
                        RedirectRefused::Address(target, reason) => FetchError::Refused {
                            what: format!("{target} (redirected from {url})"),
                            reason: reason.clone(),
                        },
                    };
                }
                source = cause.source();
            }
        }
        let mut source = std::error::Error::source(&error);
        while let Some(cause) = source {
            if let Some(reason) = cause.downcast_ref::<Refusal>() {
                // The resolver refused a name: the one asked for, or one a
                // redirect led to.
                let after_redirect = match reason {
                    Refusal::Resolved { name, .. } => url_host_differs(url_of(&url), name),
                    _ => false,
                };
                let what = if after_redirect {
                    format!("a redirect from {url}")
                } else {
                    url
                };
                return FetchError::Refused {
                    what,
                    reason: reason.clone(),
                };
            }
            source = cause.source();
        }
        if error.is_timeout() {
            return FetchError::Timeout {
                url,
                timeout: self.config.timeout,
            };
        }
        let reason = chain(&error);
        if error.is_connect() {
            FetchError::Connect { url, reason }
        } else {
            FetchError::Other { url, reason }
        }
    }
}

fn url_of(text: &str) -> Option<Url> {
    Url::parse(text).ok()
}

fn url_host_differs(url: Option<Url>, name: &str) -> bool {
    url.and_then(|u| u.host_str().map(|h| !h.eq_ignore_ascii_case(name)))
        .unwrap_or(false)
}

const ACCEPT: &str = "text/html, application/xhtml+xml, text/*;q=0.9, application/json;q=0.9, application/xml;q=0.8, */*;q=0.1";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Body {
    Html,
    Text,
}

/// What a declared content type is: HTML, text, or refused (`Err`).
fn classify(content_type: &str) -> Result<Body, ()> {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "" => Ok(Body::Text),
        "text/html" | "application/xhtml+xml" => Ok(Body::Html),
        "application/json"
        | "application/xml"
        | "application/javascript"
        | "application/ecmascript"
        | "application/x-javascript"
        | "application/yaml"
        | "application/x-yaml"
        | "application/toml"
        | "application/x-ndjson"
        | "application/sql"
        | "application/graphql"
        | "application/x-sh" => Ok(Body::Text),
        m if m.starts_with("text/") || m.ends_with("+json") || m.ends_with("+xml") => {
            Ok(Body::Text)
        }
        _ => Err(()),
    }
}

/// Guesses the kind of an untyped body: `None` when it looks binary.
fn sniff(body: &[u8]) -> Option<Body> {
    let head = &body[..body.len().min(1024)];
    if head.contains(&0) {
        return None;
    }
    let start = String::from_utf8_lossy(head)
        .trim_start()
        .to_ascii_lowercase();
    if start.starts_with("<!doctype html") || start.starts_with("<html") {
        Some(Body::Html)
    } else {
        Some(Body::Text)
    }
}

fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_like_types_are_accepted_and_others_refused() {
        assert_eq!(classify("text/html; charset=utf-8"), Ok(Body::Html));
        assert_eq!(classify("Application/XHTML+XML"), Ok(Body::Html));
        assert_eq!(classify("text/plain"), Ok(Body::Text));
        assert_eq!(classify("application/json"), Ok(Body::Text));
        assert_eq!(classify("application/rss+xml"), Ok(Body::Text));
        assert_eq!(classify("application/vnd.api+json"), Ok(Body::Text));
        assert_eq!(classify("image/png"), Err(()));
        assert_eq!(classify("application/octet-stream"), Err(()));
        assert_eq!(classify("application/pdf"), Err(()));
    }

    #[test]
    fn untyped_bodies_are_sniffed() {
        assert_eq!(sniff(b"  <!DOCTYPE html><p>x"), Some(Body::Html));
        assert_eq!(sniff(b"plain words"), Some(Body::Text));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\n\0\0"), None);
    }
}
