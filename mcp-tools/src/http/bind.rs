//! The bind rule: `--http` listens on loopback only, unless the user said
//! `--allow-remote` (and then a bearer token is required, which
//! [`super::Policy::from_args`] checks).

use std::net::{IpAddr, SocketAddr};

/// Whether `ip` is a loopback address: 127.0.0.0/8, `::1`, or either
/// spelled as an IPv4-mapped IPv6 address (`::ffff:127.0.0.1`).
pub fn is_loopback(ip: IpAddr) -> bool {
    ip.to_canonical().is_loopback()
}

/// Checks the address `--http` names against the bind rule. The error is
/// one line that says what to do instead.
pub fn check(addr: SocketAddr, allow_remote: bool) -> Result<(), String> {
    if allow_remote || is_loopback(addr.ip()) {
        return Ok(());
    }
    let what = if addr.ip().is_unspecified() {
        "every interface"
    } else {
        "a non-loopback address"
    };
    Err(format!(
        "--http {addr} would listen on {what}; use 127.0.0.1:{port} or [::1]:{port}, \
         or add --allow-remote with --auth-token-env VAR to serve other machines",
        port = addr.port()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_binds_are_allowed_and_everything_else_needs_allow_remote() {
        for ok in [
            "127.0.0.1:0",
            "127.8.9.10:8931",
            "[::1]:0",
            "[::ffff:127.0.0.1]:1",
        ] {
            let addr: SocketAddr = ok.parse().unwrap();
            assert_eq!(check(addr, false), Ok(()), "{ok}");
        }
        for refused in [
            "0.0.0.0:0",
            "[::]:0",
            "192.168.1.5:80",
            "10.0.0.1:1",
            "[fe80::1]:1",
            "[::ffff:10.0.0.1]:1",
            "8.8.8.8:53",
        ] {
            let addr: SocketAddr = refused.parse().unwrap();
            let err = check(addr, false).unwrap_err();
            assert!(err.contains("--allow-remote"), "{refused}: {err}");
            assert_eq!(check(addr, true), Ok(()), "{refused}");
        }
    }

    #[test]
    fn the_unspecified_address_is_named_as_every_interface() {
        let err = check("0.0.0.0:8931".parse().unwrap(), false).unwrap_err();
        assert!(err.contains("every interface"), "{err}");
        assert!(err.contains("127.0.0.1:8931"), "{err}");
    }
}
