//! Helpers the actuator tests share. Each test binary uses only some of
//! them, so the ones it does not use are not dead code.
#![allow(dead_code)]

pub mod kube;
pub mod netns;
pub mod slurm;
pub mod sonic_target;

/// Reads one HTTP request from `socket`: its head (without the blank line)
/// and its body, as long as its `Content-Length` says.
pub async fn read_request(socket: &mut tokio::net::TcpStream, what: &str) -> (String, String) {
    use tokio::io::AsyncReadExt;
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let n = socket.read(&mut buf).await.unwrap();
        raw.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&raw).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .map(|v| v.trim().parse::<usize>().unwrap())
                .unwrap_or(0);
            if raw.len() >= end + 4 + length {
                return (text[..end].to_string(), text[end + 4..end + 4 + length].to_string());
            }
        }
        assert!(n > 0, "{what}: the client closed early");
    }
}
