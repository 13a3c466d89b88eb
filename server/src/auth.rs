//! Bearer-token authentication: token generation and a constant-time check of the
//! `Authorization` header (or, for browsers' WebSockets, the `robota.bearer.<token>` subprotocol).

use axum::http::HeaderMap;
use rand::RngCore;
use robota_remote::wire::WS_BEARER_PREFIX;
use subtle::ConstantTimeEq;

/// The shortest token the server accepts from its configuration.
pub const MIN_TOKEN_LEN: usize = 16;

/// A fresh random token: 32 bytes as 64 hex digits (valid in a header and as a subprotocol).
pub fn generate_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks a configured token: long enough, and only characters a header and a WebSocket
/// subprotocol can carry.
pub fn validate_token(token: &str) -> Result<(), String> {
    if token.len() < MIN_TOKEN_LEN {
        return Err(format!(
            "the token must have at least {MIN_TOKEN_LEN} characters"
        ));
    }
    if !token
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~'))
    {
        return Err("the token may use only letters, digits and - _ . ~".into());
    }
    Ok(())
}

fn equal(given: &str, expected: &str) -> bool {
    given.as_bytes().ct_eq(expected.as_bytes()).into()
}

/// True when the headers carry the token: `Authorization: Bearer <token>`, or (for WebSocket
/// upgrades) a `Sec-WebSocket-Protocol` entry `robota.bearer.<token>`.
pub fn authorized(headers: &HeaderMap, expected: &str) -> bool {
    let bearer = headers
        .get_all(axum::http::header::AUTHORIZATION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.strip_prefix("Bearer "))
        .any(|given| equal(given.trim(), expected));
    if bearer {
        return true;
    }
    headers
        .get_all(axum::http::header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|p| p.trim().strip_prefix(WS_BEARER_PREFIX))
        .any(|given| equal(given, expected))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn only_the_exact_token_passes() {
        let token = generate_token();
        assert_eq!(token.len(), 64);
        assert!(validate_token(&token).is_ok());
        assert!(validate_token("short").is_err());
        assert!(validate_token("has space in it, which is bad").is_err());
        let mut headers = HeaderMap::new();
        assert!(!authorized(&headers, &token));
        if let Ok(v) = HeaderValue::from_str(&format!("Bearer {token}x")) {
            headers.insert(axum::http::header::AUTHORIZATION, v);
        }
        assert!(!authorized(&headers, &token));
        if let Ok(v) = HeaderValue::from_str(&format!("Bearer {token}")) {
            headers.insert(axum::http::header::AUTHORIZATION, v);
        }
        assert!(authorized(&headers, &token));
        let mut ws = HeaderMap::new();
        if let Ok(v) = HeaderValue::from_str(&format!("robota.v1, robota.bearer.{token}")) {
            ws.insert(axum::http::header::SEC_WEBSOCKET_PROTOCOL, v);
        }
        assert!(authorized(&ws, &token));
    }
}
