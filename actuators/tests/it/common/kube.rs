//! A fake Kubernetes API server: it serves a script of exact requests
//! (method, path, content type, body, bearer token `s3cret`) and reports
//! every way the client's requests differed from it.

/// One request the fake API server expects, and its answer.
pub struct Exchange {
    pub method: &'static str,
    pub path: String,
    pub content_type: Option<&'static str>,
    pub body: Option<serde_json::Value>,
    pub status: u16,
    pub answer: serde_json::Value,
    /// Never answer: hold the connection until the client gives up (an API
    /// server that hangs).
    pub hang: bool,
}

pub fn exchange(method: &'static str, path: &str, status: u16, answer: serde_json::Value) -> Exchange {
    Exchange { method, path: path.into(), content_type: None, body: None, status, answer, hang: false }
}

pub fn with_body(mut e: Exchange, content_type: &'static str, body: serde_json::Value) -> Exchange {
    e.content_type = Some(content_type);
    e.body = Some(body);
    e
}

/// `e`, but never answered.
pub fn hanging(mut e: Exchange) -> Exchange {
    e.hang = true;
    e
}

/// Serves `script` in order, one connection per request, and returns every
/// way the requests differed from it.
pub async fn fake_api_server(listener: tokio::net::TcpListener, script: Vec<Exchange>) -> Vec<String> {
    use tokio::io::AsyncWriteExt;
    let mut problems = Vec::new();
    for (i, expected) in script.into_iter().enumerate() {
        let (mut socket, _) = listener.accept().await.unwrap();
        let (head, body) = super::read_request(&mut socket, &format!("request {i}")).await;
        let mut lines = head.lines();
        let request_line = lines.next().unwrap_or_default().to_string();
        let headers: Vec<(String, String)> =
            lines.filter_map(|l| l.split_once(": ").map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))).collect();
        let header = |name: &str| headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        let want_line = format!("{} {} HTTP/1.1", expected.method, expected.path);
        if request_line != want_line {
            problems.push(format!("request {i}: {request_line:?}, expected {want_line:?}"));
        }
        if header("authorization").as_deref() != Some("Bearer s3cret") {
            problems.push(format!("request {i}: authorization {:?}", header("authorization")));
        }
        if header("content-type").as_deref() != expected.content_type {
            problems.push(format!(
                "request {i}: content type {:?}, expected {:?}",
                header("content-type"),
                expected.content_type
            ));
        }
        let got: Option<serde_json::Value> = if body.is_empty() { None } else { serde_json::from_str(&body).ok() };
        if got != expected.body {
            problems.push(format!("request {i}: body {body}, expected {:?}", expected.body.map(|b| b.to_string())));
        }
        if expected.hang {
            // Until the client closes: a read of 0 bytes (or an error).
            use tokio::io::AsyncReadExt;
            let mut buf = [0u8; 64];
            while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
            continue;
        }
        let answer = expected.answer.to_string();
        let reply = format!(
            "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
            expected.status,
            answer.len()
        );
        socket.write_all(reply.as_bytes()).await.unwrap();
    }
    problems
}
