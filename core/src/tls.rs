//! The TLS crypto provider of robota's HTTPS clients: ring, the one crypto library linked.
//!
//! reqwest 0.13 (the MCP and OTLP clients) is built without a provider of its own, so that the
//! library does not carry aws-lc beside the ring that reqwest 0.12, the AWS and Google credential
//! chains already use. Such a client takes the process's default rustls provider; this module
//! installs ring as that default when the process has none yet. An application that installed
//! its own provider first keeps it.

use std::sync::Once;

/// Makes sure the process has a default rustls crypto provider (ring unless one is installed);
/// call before building a reqwest 0.13 client.
pub(crate) fn ensure_crypto_provider() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // An `Err` means another thread installed one meanwhile: that one is used.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}
