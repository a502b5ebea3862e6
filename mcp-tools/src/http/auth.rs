//! Bearer-token authentication (RFC 6750): the token comes from an
//! environment variable named by `--auth-token-env`, never from the command
//! line (argv is visible to every user through `ps`), and is compared in
//! constant time.

use std::ffi::OsString;

use subtle::ConstantTimeEq;

/// The token every request must present as `Authorization: Bearer TOKEN`.
#[derive(Clone)]
pub struct BearerToken(Vec<u8>);

// Never print the token, not even in a debug dump of the policy.
impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

impl BearerToken {
    /// Reads the token from the variable `var` in `value` (what
    /// `std::env::var_os(var)` returned). A missing, empty or unsendable
    /// value is an error naming the variable.
    pub fn from_env_value(var: &str, value: Option<OsString>) -> Result<Self, String> {
        let Some(value) = value else {
            return Err(format!(
                "--auth-token-env {var}: the environment variable {var} is not set; \
                 export it with the token clients must send"
            ));
        };
        let Some(token) = value.to_str() else {
            return Err(format!(
                "--auth-token-env {var}: the value of {var} is not UTF-8"
            ));
        };
        if token.is_empty() {
            return Err(format!(
                "--auth-token-env {var}: the environment variable {var} is empty; \
                 set it to the token clients must send"
            ));
        }
        // A header value cannot carry anything else, so such a token could
        // never be presented.
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(format!(
                "--auth-token-env {var}: the token in {var} must be printable ASCII \
                 without spaces"
            ));
        }
        Ok(Self(token.as_bytes().to_vec()))
    }

    /// Whether an `Authorization` header value presents this token. The
    /// scheme is case-insensitive (RFC 7235). The comparison's time depends
    /// only on the expected token's length, not on where a guess differs
    /// nor on the guess's length.
    pub fn admits(&self, authorization: &[u8]) -> bool {
        let Some(presented) = strip_bearer(authorization) else {
            return false;
        };
        let expected = &self.0;
        let mut same = (presented.len() as u64).ct_eq(&(expected.len() as u64));
        for (i, byte) in expected.iter().enumerate() {
            let other = presented.get(i).copied().unwrap_or(0);
            same &= byte.ct_eq(&other);
        }
        same.into()
    }
}

fn strip_bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"bearer") || !rest.starts_with(b" ") {
        return None;
    }
    let start = rest.iter().position(|&b| b != b' ')?;
    Some(&rest[start..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(t: &str) -> BearerToken {
        BearerToken::from_env_value("T", Some(t.into())).unwrap()
    }

    #[test]
    fn only_the_exact_token_after_bearer_is_admitted() {
        let t = token("s3cret-Token_1");
        assert!(t.admits(b"Bearer s3cret-Token_1"));
        assert!(t.admits(b"bearer s3cret-Token_1"));
        assert!(t.admits(b"BEARER   s3cret-Token_1"));
        for wrong in [
            &b"Bearer s3cret-Token_2"[..],
            b"Bearer s3cret-Token_",
            b"Bearer s3cret-Token_1x",
            b"Bearer ",
            b"Bearer",
            b"Bearers3cret-Token_1",
            b"Basic s3cret-Token_1",
            b"s3cret-Token_1",
            b"",
            b"Bearer S3CRET-TOKEN_1",
        ] {
            assert!(
                !t.admits(wrong),
                "{:?} admitted",
                String::from_utf8_lossy(wrong)
            );
        }
    }

    #[test]
    fn a_missing_empty_or_unsendable_token_is_an_error_naming_the_variable() {
        let err = BearerToken::from_env_value("MCP_TOKEN", None).unwrap_err();
        assert!(err.contains("MCP_TOKEN is not set"), "{err}");
        let err = BearerToken::from_env_value("MCP_TOKEN", Some("".into())).unwrap_err();
        assert!(err.contains("MCP_TOKEN is empty"), "{err}");
        let err = BearerToken::from_env_value("MCP_TOKEN", Some("a b".into())).unwrap_err();
        assert!(err.contains("printable ASCII"), "{err}");
    }

    #[test]
    fn the_debug_form_hides_the_token() {
        assert_eq!(format!("{:?}", token("hunter2")), "BearerToken(..)");
    }
}
