//! `[web]`, checked: what `run` would refuse is refused for `check` too.

use std::sync::Arc;

use anyhow::Context;
use tokio_rustls::rustls;

use crate::config::WebSection;
use crate::control::auth::read_token;
use crate::control::listen::server_tls_config;

/// The console's listener, checked (TLS loaded, token read), not yet bound.
pub struct WebPlan {
    /// The address to bind.
    pub addr: String,
    /// TLS, when the console is served over HTTPS.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// The token that allows approve and reject; only with TLS.
    pub token: Option<String>,
}

/// The console's plan, if `[web] listen` is set.
pub fn web_plan(web: &WebSection) -> anyhow::Result<Option<WebPlan>> {
    let Some(addr) = &web.listen else {
        if web.tls_cert.is_some() || web.tls_key.is_some() || web.token_file.is_some() {
            anyhow::bail!(
                "web.tls_cert, web.tls_key and web.token_file need web.listen: the console is off without it"
            );
        }
        return Ok(None);
    };
    std::net::ToSocketAddrs::to_socket_addrs(addr.as_str()).with_context(|| format!("web.listen {addr:?}"))?;
    let tls = match (&web.tls_cert, &web.tls_key) {
        (Some(cert), Some(key)) => {
            let mut config = server_tls_config(cert, key, "web")?;
            // A browser speaks HTTP/1.1 to this server; ALPN must not offer h2.
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Some(Arc::new(config))
        }
        (None, None) => None,
        (Some(_), None) => anyhow::bail!("web.tls_cert needs web.tls_key"),
        (None, Some(_)) => anyhow::bail!("web.tls_key needs web.tls_cert"),
    };
    let token = match &web.token_file {
        Some(_) if tls.is_none() => anyhow::bail!(
            "web.token_file needs web.tls_cert and web.tls_key: the token that approves actions is sent only over TLS"
        ),
        Some(path) => Some(read_token(path)?),
        None => None,
    };
    Ok(Some(WebPlan { addr: addr.clone(), tls, token }))
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
        assert!(web_plan(&web(None, false, false, false)).unwrap().is_none());
        let plain = web_plan(&web(Some("127.0.0.1:0"), false, false, false)).unwrap().unwrap();
        assert!(plain.tls.is_none() && plain.token.is_none());
        let e = |w| format!("{:#}", web_plan(&w).err().unwrap());
        assert!(e(web(Some("127.0.0.1:0"), false, false, true)).contains("sent only over TLS"));
        assert!(e(web(Some("127.0.0.1:0"), true, false, false)).contains("web.tls_cert needs web.tls_key"));
        assert!(e(web(None, false, false, true)).contains("need web.listen"));
        assert!(e(web(Some("no port"), false, false, false)).contains("web.listen"));
    }
}
