//! Server-Sent Events: the control API's `Watch` stream — the one
//! `rocemend watch` reads — as `text/event-stream`, one event per daemon
//! event, with a comment every [`KEEPALIVE`] so that proxies and the
//! browser keep an idle stream open.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Frame;
use tokio_stream::{Stream, StreamExt};

use crate::control::pb::Event;

/// How often an idle stream says it is alive.
pub const KEEPALIVE: Duration = Duration::from_secs(15);

/// One event as SSE: its kind as the event name, its JSON as the data.
/// JSON has no raw newline, so one `data:` line holds it.
pub fn frame(event: &Event) -> Bytes {
    let data = if event.json.is_empty() { "{}" } else { event.json.as_str() };
    let data = data.replace(['\r', '\n'], " ");
    let text = serde_json::to_string(&event.text).unwrap_or_default();
    Bytes::from(format!(
        "event: {}\ndata: {{\"at_ns\":{},\"text\":{text},\"event\":{data}}}\n\n",
        event.kind, event.at_ns
    ))
}

/// The body of an SSE response: `events` framed, interleaved with
/// keep-alive comments. It ends when `events` ends (the daemon stops), and
/// stops reading them when the browser goes away.
pub fn body<S>(events: S) -> impl Stream<Item = Result<Frame<Bytes>, Infallible>> + Send
where
    S: Stream<Item = Result<Event, tonic::Status>> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(async move {
        tokio::pin!(events);
        // `retry`: how soon the browser reconnects after the daemon restarts.
        if tx.send(Bytes::from_static(b": rocemend events\nretry: 2000\n\n")).await.is_err() {
            return;
        }
        let mut keepalive = tokio::time::interval_at(tokio::time::Instant::now() + KEEPALIVE, KEEPALIVE);
        loop {
            let out = tokio::select! {
                event = events.next() => match event {
                    Some(Ok(e)) => frame(&e),
                    _ => return,
                },
                _ = keepalive.tick() => Bytes::from_static(b": keep-alive\n\n"),
                _ = tx.closed() => return,
            };
            if tx.send(out).await.is_err() {
                return;
            }
        }
    });
    tokio_stream::wrappers::ReceiverStream::new(rx).map(|b| Ok(Frame::data(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_one_sse_event_named_by_its_kind_with_its_json() {
        let e = Event { at_ns: 7, kind: "decision".into(), text: "a \"line\"".into(), json: "{\"id\":\"d1\"}".into() };
        let text = String::from_utf8(frame(&e).to_vec()).unwrap();
        assert_eq!(
            text,
            "event: decision\ndata: {\"at_ns\":7,\"text\":\"a \\\"line\\\"\",\"event\":{\"id\":\"d1\"}}\n\n"
        );
        let data: serde_json::Value =
            serde_json::from_str(text.lines().nth(1).unwrap().strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(data["event"]["id"], "d1");
    }
}
