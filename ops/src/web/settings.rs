//! `[web]`, checked: what `run` would refuse is refused for `check` too.

use std::sync::Arc;

use tokio_rustls::rustls;

use crate::config::WebSection;
use crate::control::auth::{read_token, TokenError};
use crate::control::listen::{server_tls_config, TlsError};

/// Why the console cannot be served as configured.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebError {
    /// TLS or a token without `listen`.
    #[error("web.tls_cert, web.tls_key and web.token_file need web.listen: the console is off without it")]
    NoListen,
    /// The address cannot be resolved or bound.
    #[error("web.listen {addr}")]
    Listen {
        /// The address (quoted when it did not resolve).
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// A certificate without its key.
    #[error("web.tls_cert needs web.tls_key")]
    CertWithoutKey,
    /// A key without its certificate.
    #[error("web.tls_key needs web.tls_cert")]
    KeyWithoutCert,
    /// A token without TLS: it would travel in the clear.
    #[error(
        "web.token_file needs web.tls_cert and web.tls_key: the token that approves actions is sent only over TLS"
    )]
    TokenWithoutTls,
    /// The TLS files.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The token file.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// The listener failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// The console's listener, checked (TLS loaded, token read), not yet bound.
pub struct WebSettings {
    /// The address to bind.
    pub addr: String,
    /// TLS, when the console is served over HTTPS.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The token that allows approve and reject; only with TLS.
    pub token: Option<String>,
}

/// The console's settings, if `[web] listen` is set.
pub fn settings(web: &WebSection) -> Result<Option<WebSettings>, WebError> {
    let Some(addr) = &web.listen else {
        if web.tls_cert.is_some() || web.tls_key.is_some() || web.token_file.is_some() {
            return Err(WebError::NoListen);
        }
        return Ok(None);
    };
    std::net::ToSocketAddrs::to_socket_addrs(addr.as_str())
        .map_err(|source| WebError::Listen { addr: format!("{addr:?}"), source })?;
    let tls = match (&web.tls_cert, &web.tls_key) {
        (Some(cert), Some(key)) => {
            let mut config = server_tls_config(cert, key, "web")?;
            // A browser speaks HTTP/1.1 to this server; ALPN must not offer h2.
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Some(Arc::new(config))
        }
        (None, None) => None,
        (Some(_), None) => return Err(WebError::CertWithoutKey),
        (None, Some(_)) => return Err(WebError::KeyWithoutCert),
    };
    let token = match &web.token_file {
        Some(_) if tls.is_none() => return Err(WebError::TokenWithoutTls),
        Some(path) => Some(read_token(path)?),
        None => None,
    };
    Ok(Some(WebSettings { addr: addr.clone(), tls, token }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_without_tls_or_half_a_tls_pair_is_refused() {
        let web = |listen: Option<&str>, cert: bool, key: bool, token: bool| WebSection {
            listen: listen.map(String::from),
            tls_cert: cert.then(|| "web.crt".into()),
            tls_key: key.then(|| "web.key".into()),
            token_file: token.then(|| "token".into()),
        };
        assert!(settings(&web(None, false, false, false)).unwrap().is_none());
        let plain = settings(&web(Some("127.0.0.1:0"), false, false, false)).unwrap().unwrap();
        assert!(plain.tls.is_none() && plain.token.is_none());
        let e = |w| crate::report::chain(&settings(&w).err().unwrap());
        assert!(e(web(Some("127.0.0.1:0"), false, false, true)).contains("sent only over TLS"));
        assert!(e(web(Some("127.0.0.1:0"), true, false, false)).contains("web.tls_cert needs web.tls_key"));
        assert!(e(web(None, false, false, true)).contains("need web.listen"));
        assert!(e(web(Some("no port"), false, false, false)).contains("web.listen"));
    }
}
