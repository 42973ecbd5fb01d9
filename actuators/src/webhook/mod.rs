//! The `webhook` actuator: tells people or other systems what rocemend
//! does. It changes nothing in the fabric; the playbook marks it
//! `destructive = false` so it skips the blast-radius limits.
//!
//! Two formats:
//!
//! - `alertmanager`: `POST <url>/api/v2/alerts` with one alert whose labels
//!   are the action's target plus `alertname` (the action's `rule`
//!   parameter, else its kind), whose annotations are its parameters plus a
//!   `summary`, with `startsAt` now and `endsAt` now + `alert_lifetime`. The
//!   undo resolves it: the same labels with `endsAt` now. Verify looks the
//!   alert up in `GET /api/v2/alerts`.
//! - `json`: `POST <url>` with `{"event": "execute" | "undo", "actuator",
//!   "action": {kind, target, params}, "at"}`; verify is unknown.
//!
//! Every request has the configured timeout; a non-2xx answer fails with
//! the status and the start of the body.
//!
//! - [`config`]: [`WebhookConfig`], the user's settings;
//! - [`WebhookActuator`]: the actuator. Its clock is a parameter
//!   ([`WebhookActuator::with_clock`]), so tests get fixed timestamps.

pub mod config;

pub use config::{Format, WebhookConfig};

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use engine::time::Nanos;
use engine::{Action, ActionKindDecl, Actuator, ActuatorError, Outcome, RequestPlan, Verification};
use serde_json::{json, Map, Value};

use crate::http::{rfc3339, Client, HttpError, Request, Response, Url, MAX_RESPONSE};

/// A clock: nanoseconds since the epoch.
pub type Clock = Arc<dyn Fn() -> Nanos + Send + Sync>;

/// Posts notifications, built from a [`WebhookConfig`].
pub struct WebhookActuator {
    name: String,
    kinds: Vec<ActionKindDecl>,
    format: Format,
    url: Url,
    timeout: Duration,
    lifetime: Nanos,
    generator_url: Option<String>,
    headers: Vec<(String, String)>,
    clock: Clock,
}

impl std::fmt::Debug for WebhookActuator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Headers may hold a token: only their names are shown.
        let headers: Vec<&str> = self.headers.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("WebhookActuator")
            .field("name", &self.name)
            .field("format", &self.format)
            .field("url", &self.url.to_string())
            .field("headers", &headers)
            .finish_non_exhaustive()
    }
}

/// Which event a payload reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Execute,
    Undo,
}

impl WebhookActuator {
    /// The same actuator reading time from `clock`.
    pub fn with_clock(mut self, clock: Clock) -> WebhookActuator {
        self.clock = clock;
        self
    }

    fn post_url(&self) -> Url {
        match self.format {
            Format::Alertmanager => self.url.join("/api/v2/alerts"),
            Format::Json => self.url.clone(),
        }
    }

    /// The alert's labels: the target, plus `alertname`.
    fn labels(action: &Action) -> Map<String, Value> {
        let mut labels: Map<String, Value> =
            action.target.0.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))).collect();
        let name = action.params.get("rule").unwrap_or(&action.kind);
        labels.insert("alertname".into(), Value::from(name.as_str()));
        labels
    }

    /// The body sent for `event` at `now`.
    fn body(&self, action: &Action, event: Event, now: Nanos) -> Value {
        match self.format {
            Format::Alertmanager => {
                let mut annotations: Map<String, Value> =
                    action.params.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))).collect();
                annotations.insert("summary".into(), Value::from(format!("rocemend: {action}")));
                let mut alert = Map::new();
                alert.insert("labels".into(), Value::Object(Self::labels(action)));
                alert.insert("annotations".into(), Value::Object(annotations));
                match event {
                    Event::Execute => {
                        alert.insert("startsAt".into(), Value::from(rfc3339(now)));
                        alert.insert("endsAt".into(), Value::from(rfc3339(now.saturating_add(self.lifetime))));
                    }
                    // No startsAt: Alertmanager keeps the one it has.
                    Event::Undo => {
                        alert.insert("endsAt".into(), Value::from(rfc3339(now)));
                    }
                }
                if let Some(generator) = &self.generator_url {
                    alert.insert("generatorURL".into(), Value::from(generator.as_str()));
                }
                Value::Array(vec![Value::Object(alert)])
            }
            Format::Json => json!({
                "event": match event { Event::Execute => "execute", Event::Undo => "undo" },
                "actuator": self.name,
                "action": action,
                "at": rfc3339(now),
            }),
        }
    }

    /// The request text for a plan or an outcome: method, URL and body.
    fn describe(url: &Url, body: &str) -> String {
        format!("POST {url} {body}")
    }

    async fn send(&self, method: &str, url: &Url, body: &[u8]) -> Result<Response, ActuatorError> {
        let mut headers: Vec<(&str, String)> = vec![("Accept", "application/json".into())];
        if !body.is_empty() {
            headers.push(("Content-Type", "application/json".into()));
        }
        headers.extend(self.headers.iter().map(|(k, v)| (k.as_str(), v.clone())));
        let request = Request { method, url, headers, body };
        match Client::plain(MAX_RESPONSE).send(&request, self.timeout).await {
            Ok(response) if response.ok() => Ok(response),
            Ok(response) => Err(ActuatorError::Failed(format!(
                "{method} {url} answered {}: {}",
                response.status,
                response.snippet()
            ))),
            Err(HttpError::Timeout(_)) => {
                Err(ActuatorError::Timeout(u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX)))
            }
            Err(e) => Err(ActuatorError::Failed(format!("{method} {url}: {e}"))),
        }
    }

    fn plan(&self, action: &Action, event: Event) -> (Url, String) {
        let url = self.post_url();
        let body = self.body(action, event, (self.clock)()).to_string();
        (url, body)
    }

    async fn post(&self, action: &Action, event: Event) -> Result<Outcome, ActuatorError> {
        let (url, body) = self.plan(action, event);
        tracing::info!(message = "Posting webhook.", actuator = %self.name, url = %url, action = %action);
        let response = self.send("POST", &url, body.as_bytes()).await?;
        let what = match (self.format, event) {
            (Format::Alertmanager, Event::Execute) => "raised the alert",
            (Format::Alertmanager, Event::Undo) => "resolved the alert",
            (Format::Json, _) => "posted",
        };
        Ok(Outcome {
            summary: format!("{what} at {url} (status {})", response.status),
            requests: vec![Self::describe(&url, &body)],
            prior: None,
        })
    }
}

/// Whether `alert` (from `GET /api/v2/alerts`) has exactly `labels`.
fn same_labels(alert: &Value, labels: &Map<String, Value>) -> bool {
    alert.get("labels").and_then(Value::as_object) == Some(labels)
}

#[async_trait]
impl Actuator for WebhookActuator {
    fn name(&self) -> &str {
        &self.name
    }

    fn kinds(&self) -> &[ActionKindDecl] {
        &self.kinds
    }

    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        let (url, body) = self.plan(action, Event::Execute);
        Ok(RequestPlan { actuator: self.name.clone(), requests: vec![Self::describe(&url, &body)] })
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        self.post(action, Event::Execute).await
    }

    async fn verify(&self, action: &Action, _applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        if self.format != Format::Alertmanager {
            return Ok(Verification::Unknown);
        }
        let url = self.url.join("/api/v2/alerts");
        let response = self.send("GET", &url, b"").await?;
        let alerts: Vec<Value> = serde_json::from_slice(&response.body)
            .map_err(|e| ActuatorError::Failed(format!("GET {url}: the answer is not a JSON array of alerts: {e}")))?;
        let labels = Self::labels(action);
        let active = alerts.iter().filter(|a| same_labels(a, &labels)).any(|a| {
            a.pointer("/status/state").and_then(Value::as_str).is_some_and(|s| matches!(s, "active" | "suppressed"))
                && a.get("endsAt").and_then(Value::as_str).is_some_and(|end| end > rfc3339((self.clock)()).as_str())
        });
        Ok(if active { Verification::InEffect } else { Verification::NotInEffect })
    }

    async fn dry_run_undo(&self, action: &Action, _applied: &Outcome) -> Result<RequestPlan, ActuatorError> {
        let (url, body) = self.plan(action, Event::Undo);
        Ok(RequestPlan { actuator: self.name.clone(), requests: vec![Self::describe(&url, &body)] })
    }

    async fn undo(&self, action: &Action, _applied: &Outcome) -> Result<Outcome, ActuatorError> {
        self.post(action, Event::Undo).await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use engine::Labels;

    use super::*;

    fn action() -> Action {
        Action {
            kind: "node.cordon".into(),
            target: Labels::from_pairs([("node", "gpu-07")]),
            params: BTreeMap::from([("rule".into(), "gpu_xid".into()), ("reason".into(), "xid".into())]),
        }
    }

    fn fixed(format: Format) -> WebhookActuator {
        let mut config = WebhookConfig::new(format, "http://am:9093");
        config.alert_lifetime = Duration::from_secs(3600);
        config.build("notify").unwrap().with_clock(Arc::new(|| 1_796_230_105_123_000_000))
    }

    #[tokio::test]
    async fn the_alert_carries_the_target_the_rule_and_its_times() {
        let plan = fixed(Format::Alertmanager).dry_run(&action()).await.unwrap();
        assert_eq!(
            plan.requests,
            [
                r#"POST http://am:9093/api/v2/alerts [{"annotations":{"reason":"xid","rule":"gpu_xid","summary":"rocemend: node.cordon {node=\"gpu-07\"} (reason=xid, rule=gpu_xid)"},"endsAt":"2026-12-02T17:48:25.123Z","labels":{"alertname":"gpu_xid","node":"gpu-07"},"startsAt":"2026-12-02T16:48:25.123Z"}]"#
            ]
        );
        let applied = Outcome { summary: String::new(), requests: plan.requests, prior: None };
        let undo = fixed(Format::Alertmanager).dry_run_undo(&action(), &applied).await.unwrap();
        assert!(
            undo.requests[0]
                .contains(r#""endsAt":"2026-12-02T16:48:25.123Z","labels":{"alertname":"gpu_xid","node":"gpu-07"}}]"#),
            "{}",
            undo.requests[0]
        );
        assert!(!undo.requests[0].contains("startsAt"), "{}", undo.requests[0]);
    }

    #[tokio::test]
    async fn the_json_payload_is_the_action() {
        let plan = fixed(Format::Json).dry_run(&action()).await.unwrap();
        assert_eq!(
            plan.requests,
            [
                r#"POST http://am:9093/ {"action":{"kind":"node.cordon","params":{"reason":"xid","rule":"gpu_xid"},"target":{"node":"gpu-07"}},"actuator":"notify","at":"2026-12-02T16:48:25.123Z","event":"execute"}"#
            ]
        );
    }

    #[tokio::test]
    async fn an_unreachable_endpoint_fails_naming_it() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let hook = WebhookConfig::new(Format::Json, &format!("http://127.0.0.1:{port}/hook")).build("n").unwrap();
        let err = hook.execute(&action()).await.unwrap_err();
        let ActuatorError::Failed(message) = &err else { panic!("{err:?}") };
        assert!(
            message.starts_with(&format!("POST http://127.0.0.1:{port}/hook: connecting to 127.0.0.1:{port}: ")),
            "{message}"
        );
    }
}
