//! What the streamable HTTP transport lets in. This module is the one place
//! the rule lives; rmcp's own Host check is switched off in
//! [`crate::serve`] so there is no second, different copy of it.
//!
//! At startup ([`Policy::from_args`]):
//! - [`bind`]: `--http` binds loopback (127/8, `::1`) unless
//!   `--allow-remote`, and `--allow-remote` needs `--auth-token-env VAR`;
//! - [`auth`]: the bearer token is read from that variable, never argv.
//!
//! On every request ([`Policy::check`]), in this order:
//! 1. `Host` ([`guard`]): a loopback host (`localhost`, 127/8, `[::1]`, any
//!    port), an `--allow-host` value, or (with `--allow-remote`) the bind
//!    address; else **403**;
//! 2. `Origin` ([`guard`]): absent, a loopback origin
//!    (`http(s)://localhost|127.x.y.z|[::1]`, any port) or an
//!    `--allow-origin` value; else **403** (MCP transport spec: "If the
//!    Origin header is present and invalid, servers MUST respond with HTTP
//!    403 Forbidden"; rmcp answers a bad Host with 403 too);
//! 3. with a token configured, `Authorization: Bearer TOKEN`, compared in
//!    constant time; else **401** with `WWW-Authenticate: Bearer`.
//!
//! Host and Origin come first so a page that rebinds a name learns nothing,
//! not even whether a token is needed.
//!
//! Behind those checks, [`session`] answers a session DELETE with 200 (or
//! 404 for a session the server does not have), as the SDKs expect.

pub mod auth;
pub mod bind;
pub mod guard;
pub mod session;

use std::ffi::OsString;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use auth::BearerToken;
use guard::{Authority, Guard, HostName, Origin};

/// The checks one HTTP server applies, fixed at startup.
#[derive(Debug, Clone)]
pub struct Policy {
    guard: Guard,
    token: Option<BearerToken>,
}

/// The HTTP flags of [`crate::ServeArgs`], borrowed.
#[derive(Debug, Clone, Copy)]
pub struct Flags<'a> {
    /// `--http ADDR`.
    pub addr: SocketAddr,
    /// `--allow-remote`.
    pub allow_remote: bool,
    /// `--auth-token-env VAR`.
    pub auth_token_env: Option<&'a str>,
    /// Every `--allow-host HOST`.
    pub allow_host: &'a [String],
    /// Every `--allow-origin ORIGIN`.
    pub allow_origin: &'a [String],
}

impl Policy {
    /// Checks the flags and builds the policy; `env` looks a variable up
    /// (`std::env::var_os` outside tests). The error is one line naming
    /// the flag at fault and what to do.
    pub fn from_args(
        flags: Flags<'_>,
        env: impl Fn(&str) -> Option<OsString>,
    ) -> Result<Self, String> {
        bind::check(flags.addr, flags.allow_remote)?;
        if flags.allow_remote && flags.auth_token_env.is_none() {
            return Err(format!(
                "--allow-remote needs --auth-token-env VAR: other machines may reach \
                 {}, so every request must carry a bearer token read from the \
                 environment variable VAR",
                flags.addr
            ));
        }
        let token = match flags.auth_token_env {
            Some(var) => Some(BearerToken::from_env_value(var, env(var))?),
            None => None,
        };
        let mut hosts = flags
            .allow_host
            .iter()
            .map(|value| {
                Authority::parse(value).ok_or_else(|| {
                    format!(
                        "--allow-host {value}: not a host; write a name or an IP, with an \
                         optional :port (mybox.lan, 10.0.0.7:8931, [fd00::1])"
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let ip = flags.addr.ip();
        if flags.allow_remote && !ip.is_unspecified() {
            // Clients that dial the bind address by IP name it as the Host.
            hosts.push(Authority {
                host: HostName::Ip(ip),
                port: None,
            });
        }
        let origins = flags
            .allow_origin
            .iter()
            .map(|value| {
                Origin::parse(value).ok_or_else(|| {
                    format!(
                        "--allow-origin {value}: not an origin; write scheme://host[:port] \
                         with scheme http or https (https://app.example:8443), or null"
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            guard: Guard::new(hosts, origins),
            token,
        })
    }

    /// Whether requests must carry a bearer token.
    pub fn requires_token(&self) -> bool {
        self.token.is_some()
    }

    /// Checks one request: Host, then Origin, then the token. The error
    /// says what to answer instead of serving it.
    pub fn check(&self, uri: &Uri, headers: &HeaderMap) -> Result<(), Rejection> {
        // Without a Host header (HTTP/2, absolute-form targets) the
        // request target's authority is what the client named.
        let host = match single(headers, &header::HOST) {
            Ok(None) => Ok(uri.authority().map(|a| a.as_str())),
            other => other,
        };
        host.and_then(|host| self.guard.check_host(host))
            .and_then(|()| single(headers, &header::ORIGIN))
            .and_then(|origin| self.guard.check_origin(origin))
            .map_err(|guard::Refusal(why)| Rejection {
                status: StatusCode::FORBIDDEN,
                why,
                challenge: None,
            })?;
        let Some(token) = &self.token else {
            return Ok(());
        };
        let mut values = headers.get_all(header::AUTHORIZATION).iter();
        let challenge = match (values.next(), values.next()) {
            (Some(value), None) if token.admits(value.as_bytes()) => return Ok(()),
            (None, _) => "Bearer",
            _ => "Bearer error=\"invalid_token\"",
        };
        Err(Rejection {
            status: StatusCode::UNAUTHORIZED,
            why: "this server needs Authorization: Bearer TOKEN with the token it was \
                  started with"
                .into(),
            challenge: Some(challenge),
        })
    }

    /// `router` with every request checked first.
    pub fn layer(self, router: axum::Router) -> axum::Router {
        router.layer(axum::middleware::from_fn_with_state(
            Arc::new(self),
            enforce,
        ))
    }
}

/// At most one value of `name`, as text. Two values, or bytes that are not
/// text, are refused: the check must see exactly what the server acts on.
fn single<'h>(
    headers: &'h HeaderMap,
    name: &HeaderName,
) -> Result<Option<&'h str>, guard::Refusal> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(guard::Refusal(format!(
            "the request has more than one {name} header"
        )));
    }
    value
        .to_str()
        .map(Some)
        .map_err(|_| guard::Refusal(format!("the {name} header is not text")))
}

/// A refused request: 403 (Host, Origin) or 401 (token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The status to answer with.
    pub status: StatusCode,
    /// Why, for the response body and the server's log.
    pub why: String,
    /// The `WWW-Authenticate` value of a 401.
    pub challenge: Option<&'static str>,
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        let mut response = (self.status, format!("{}\n", self.why)).into_response();
        if let Some(challenge) = self.challenge {
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(challenge),
            );
        }
        response
    }
}

async fn enforce(State(policy): State<Arc<Policy>>, request: Request, next: Next) -> Response {
    match policy.check(request.uri(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(rejection) => {
            tracing::warn!(
                status = rejection.status.as_u16(),
                method = %request.method(),
                path = request.uri().path(),
                "refused an HTTP request: {}",
                rejection.why,
            );
            rejection.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(addr: &str) -> Flags<'static> {
        Flags {
            addr: addr.parse().unwrap(),
            allow_remote: false,
            auth_token_env: None,
            allow_host: &[],
            allow_origin: &[],
        }
    }

    fn no_env(_: &str) -> Option<OsString> {
        None
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    fn status(policy: &Policy, pairs: &[(&str, &str)]) -> u16 {
        match policy.check(&Uri::from_static("/mcp"), &headers(pairs)) {
            Ok(()) => 200,
            Err(rejection) => rejection.status.as_u16(),
        }
    }

    #[test]
    fn allow_remote_needs_a_token_variable_that_is_set_and_not_empty() {
        let remote = Flags {
            allow_remote: true,
            ..flags("0.0.0.0:8931")
        };
        let err = Policy::from_args(remote, no_env).unwrap_err();
        assert!(
            err.starts_with("--allow-remote needs --auth-token-env VAR"),
            "{err}"
        );
        let with_var = Flags {
            auth_token_env: Some("NH_TOKEN"),
            ..remote
        };
        let err = Policy::from_args(with_var, no_env).unwrap_err();
        assert!(err.contains("NH_TOKEN is not set"), "{err}");
        let err = Policy::from_args(with_var, |_| Some("".into())).unwrap_err();
        assert!(err.contains("NH_TOKEN is empty"), "{err}");
        let policy = Policy::from_args(with_var, |_| Some("t0k".into())).unwrap();
        assert!(policy.requires_token());
    }

    #[test]
    fn bad_allow_lists_are_startup_errors() {
        let err = Policy::from_args(
            Flags {
                allow_host: &["a@b".into()],
                ..flags("127.0.0.1:0")
            },
            no_env,
        )
        .unwrap_err();
        assert!(err.starts_with("--allow-host a@b: not a host"), "{err}");
        let err = Policy::from_args(
            Flags {
                allow_origin: &["app.example".into()],
                ..flags("127.0.0.1:0")
            },
            no_env,
        )
        .unwrap_err();
        assert!(
            err.starts_with("--allow-origin app.example: not an origin"),
            "{err}"
        );
    }

    #[test]
    fn the_checks_run_host_then_origin_then_token() {
        let policy = Policy::from_args(
            Flags {
                auth_token_env: Some("T"),
                ..flags("127.0.0.1:0")
            },
            |_| Some("tok".into()),
        )
        .unwrap();
        let good_host = ("host", "127.0.0.1:1");
        let bad_origin = ("origin", "http://evil.example");
        let good_token = ("authorization", "Bearer tok");
        assert_eq!(status(&policy, &[good_host, good_token]), 200);
        assert_eq!(
            status(&policy, &[("host", "evil.example"), bad_origin]),
            403
        );
        assert_eq!(status(&policy, &[good_host, bad_origin]), 403);
        assert_eq!(
            status(&policy, &[("host", "evil.example"), good_token]),
            403
        );
        assert_eq!(status(&policy, &[good_host]), 401);
        assert_eq!(
            status(&policy, &[good_host, ("authorization", "Bearer tox")]),
            401
        );
        assert_eq!(
            status(&policy, &[good_host, good_token, good_token]),
            401,
            "two Authorization headers"
        );
        assert_eq!(
            status(&policy, &[good_host, ("host", "evil.example"), good_token]),
            403,
            "two Host headers"
        );
    }

    #[test]
    fn a_401_carries_a_bearer_challenge() {
        let policy = Policy::from_args(
            Flags {
                auth_token_env: Some("T"),
                ..flags("127.0.0.1:0")
            },
            |_| Some("tok".into()),
        )
        .unwrap();
        let uri = Uri::from_static("/mcp");
        let missing = policy
            .check(&uri, &headers(&[("host", "localhost")]))
            .unwrap_err();
        assert_eq!(missing.challenge, Some("Bearer"));
        let wrong = policy
            .check(
                &uri,
                &headers(&[("host", "localhost"), ("authorization", "Bearer x")]),
            )
            .unwrap_err();
        let response = wrong.into_response();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            response.headers()[header::WWW_AUTHENTICATE],
            "Bearer error=\"invalid_token\""
        );
    }

    #[test]
    fn a_missing_host_header_falls_back_to_the_request_target_authority() {
        let policy = Policy::from_args(flags("127.0.0.1:0"), no_env).unwrap();
        let none = HeaderMap::new();
        assert!(policy.check(&Uri::from_static("/mcp"), &none).is_err());
        assert!(
            policy
                .check(&Uri::from_static("http://localhost:1/mcp"), &none)
                .is_ok()
        );
        assert!(
            policy
                .check(&Uri::from_static("http://evil.example/mcp"), &none)
                .is_err()
        );
    }

    #[test]
    fn with_allow_remote_the_bind_address_is_an_allowed_host() {
        let policy = Policy::from_args(
            Flags {
                allow_remote: true,
                auth_token_env: Some("T"),
                allow_host: &["mybox.lan".into()],
                ..flags("10.1.2.3:8931")
            },
            |_| Some("tok".into()),
        )
        .unwrap();
        let token = ("authorization", "Bearer tok");
        assert_eq!(status(&policy, &[("host", "10.1.2.3:8931"), token]), 200);
        assert_eq!(status(&policy, &[("host", "mybox.lan:8931"), token]), 200);
        assert_eq!(status(&policy, &[("host", "localhost:8931"), token]), 200);
        assert_eq!(status(&policy, &[("host", "10.1.2.4:8931"), token]), 403);
    }
}
