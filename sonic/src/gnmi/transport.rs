//! Naming a transport mismatch. A plaintext client against a TLS gNMI server (sonic-gnmi's
//! default) fails with whatever the HTTP/2 stack makes of a TLS alert ("operation was
//! canceled", "connection reset"), and a TLS client against a plaintext one with a TLS
//! decoding error; neither says what to change. After such a failure [`diagnose`] asks the
//! server itself: it sends the HTTP/2 client preface over plain TCP and looks at the first
//! bytes of the answer — a TLS record (`0x15`/`0x16`, version `0x03`) or an HTTP/2 frame.

use std::time::Duration;

use gnmi_proto::ClientError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long the look may take: a server that speaks answers the preface at once; a slow one
/// leaves the original error as it is.
const LOOK: Duration = Duration::from_secs(2);

/// The HTTP/2 client preface and an empty SETTINGS frame.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00";

/// What the server at an address speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Speaks {
    /// It answered the plaintext preface with a TLS record.
    Tls,
    /// It answered with an HTTP/2 frame: plaintext gRPC.
    Plaintext,
}

/// Asks the server at `address` (`host:port`, or a URI) what it speaks; `None` when it does not
/// answer within a couple of seconds or answers with neither.
pub async fn speaks(address: &str) -> Option<Speaks> {
    let authority = address.split_once("://").map_or(address, |(_, rest)| rest).trim_end_matches('/');
    let look = async {
        let mut stream = tokio::net::TcpStream::connect(authority).await.ok()?;
        stream.write_all(PREFACE).await.ok()?;
        let mut head = [0u8; 5];
        let mut got = 0;
        while got < head.len() {
            let n = stream.read(&mut head[got..]).await.ok()?;
            if n == 0 {
                break;
            }
            got += n;
        }
        classify(&head[..got])
    };
    tokio::time::timeout(LOOK, look).await.ok().flatten()
}

/// A TLS record starts with its content type (21 alert, 22 handshake) and version major 3; an
/// HTTP/2 frame with a 24-bit length and a type (4 SETTINGS, 7 GOAWAY) and a flags byte.
fn classify(head: &[u8]) -> Option<Speaks> {
    match head {
        [0x15 | 0x16, 0x03, ..] => Some(Speaks::Tls),
        [_, _, _, 0x04 | 0x07, _] => Some(Speaks::Plaintext),
        _ => None,
    }
}

/// After `error` from a call to `address` made with (`tls`) or without TLS: what to change,
/// when the server speaks the other; `None` for errors a mismatch cannot cause (the server
/// answered with a status of its own) or when it speaks what was used.
pub async fn diagnose(address: &str, tls: bool, error: &ClientError) -> Option<String> {
    let plausible = match error {
        ClientError::Connect { refused, .. } => !refused,
        ClientError::Status { status, .. } => {
            matches!(
                status.code(),
                tonic::Code::Unavailable | tonic::Code::Cancelled | tonic::Code::Unknown | tonic::Code::Internal
            ) && status.metadata().is_empty()
        }
        _ => false,
    };
    if !plausible {
        return None;
    }
    match (speaks(address).await?, tls) {
        (Speaks::Tls, false) => Some(format!(
            "the switch at {address} speaks TLS (gRPC over TLS, sonic-gnmi's default): configure tls for it \
             (ca_file = \"…\", and cert_file/key_file if it wants client certificates)"
        )),
        (Speaks::Plaintext, true) => Some(format!(
            "the switch at {address} speaks plaintext gRPC (sonic-gnmi started with --noTLS): remove tls for it"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_bytes_tell_tls_from_http2() {
        assert_eq!(classify(&[0x15, 0x03, 0x03, 0x00, 0x02]), Some(Speaks::Tls));
        assert_eq!(classify(&[0x16, 0x03, 0x01, 0x00, 0x2a]), Some(Speaks::Tls));
        assert_eq!(classify(&[0x00, 0x00, 0x06, 0x04, 0x00]), Some(Speaks::Plaintext));
        assert_eq!(classify(&[0x00, 0x00, 0x08, 0x07, 0x00]), Some(Speaks::Plaintext));
        assert_eq!(classify(b"HTTP/"), None);
        assert_eq!(classify(&[]), None);
    }
}
