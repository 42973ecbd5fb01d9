//! The settings of a `webhook` actuator.

use std::collections::BTreeMap;
use std::time::Duration;

use engine::SECOND;
use serde::{Deserialize, Serialize};

use super::WebhookActuator;
use crate::declare::{declarations, KindSettings, Like};
use crate::http::Url;
use crate::ActuatorConfigError;

/// The longest timeout accepted: a notification that takes more than a
/// minute to deliver holds a dispatch slot for nothing.
const MAX_TIMEOUT: i64 = 60 * SECOND;

/// A `webhook` actuator's settings.
///
/// ```toml
/// format = "alertmanager"
/// url = "http://alertmanager.monitoring:9093"
/// timeout = "5s"
/// alert_lifetime = "24h"
/// generator_url = "https://rocemend.example/decisions"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    /// What to send: `"alertmanager"` (Alertmanager's v2 API) or `"json"`
    /// (the action as JSON, to any endpoint).
    pub format: Format,
    /// For `alertmanager`, the Alertmanager's base URL (`/api/v2/alerts` is
    /// appended); for `json`, the URL that receives the POST.
    pub url: String,
    /// How long one request may take, e.g. `"5s"`; at most a minute.
    #[serde(default = "default_timeout", with = "engine::config::duration")]
    pub timeout: Duration,
    /// For `alertmanager`: how long an alert stays firing if it is never
    /// resolved (its `endsAt`). Alertmanager expects alerts to be re-sent;
    /// rocemend sends one per action, so it sets an end far enough out that
    /// the alert outlives the incident, and resolves it by undo.
    #[serde(default = "default_lifetime", with = "engine::config::duration")]
    pub alert_lifetime: Duration,
    /// For `alertmanager`: the alerts' `generatorURL`, a link back to where
    /// they came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_url: Option<String>,
    /// Extra request headers, e.g. `{ Authorization = "Bearer …" }`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The actuator types whose kinds it counts as they declare them (see
    /// [`crate::declare`]).
    #[serde(default, skip_serializing_if = "Like::is_empty")]
    pub like: Like,
    /// How the safety policy counts each kind it reports, by kind (see
    /// [`crate::declare`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kinds: BTreeMap<String, KindSettings>,
}

/// The payloads a webhook can send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// `POST /api/v2/alerts` with one alert; undo resolves it.
    Alertmanager,
    /// `POST <url>` with `{"event", "actuator", "action", "at"}`.
    Json,
}

fn default_timeout() -> Duration {
    Duration::from_secs(5)
}

fn default_lifetime() -> Duration {
    Duration::from_secs(24 * 3600)
}

impl WebhookConfig {
    /// A config of `format` posting to `url`, with the defaults.
    pub fn new(format: Format, url: &str) -> WebhookConfig {
        WebhookConfig {
            format,
            url: url.to_string(),
            timeout: default_timeout(),
            alert_lifetime: default_lifetime(),
            generator_url: None,
            headers: BTreeMap::new(),
            like: Like::default(),
            kinds: BTreeMap::new(),
        }
    }

    /// The kinds it declares: it reports any, and undoes (resolves or
    /// reports the undo of) what it reported.
    pub fn declarations(&self) -> Result<Vec<engine::ActionKindDecl>, ActuatorConfigError> {
        declarations(&self.like, &self.kinds, true)
    }

    /// Validates the settings and builds the actuator `name`.
    pub fn build(&self, name: &str) -> Result<WebhookActuator, ActuatorConfigError> {
        let url = Url::parse(&self.url).map_err(|source| ActuatorConfigError::Url { setting: "url".into(), source })?;
        if url.https {
            return Err(ActuatorConfigError::Invalid {
                setting: "url".into(),
                value: self.url.clone(),
                reason: "is refused: https is not supported by this actuator yet; use http or a local proxy",
            });
        }
        let timeout = crate::error::bounded_duration("timeout", self.timeout, MAX_TIMEOUT)?;
        let lifetime = engine::config::duration::nanos(self.alert_lifetime);
        if lifetime <= 0 {
            return Err(ActuatorConfigError::OutOfRange {
                setting: "alert_lifetime".into(),
                value: engine::config::duration::show(self.alert_lifetime),
                expected: "above 0".into(),
            });
        }
        for (key, value) in &self.headers {
            let bad_name = key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
            if bad_name || value.chars().any(|c| c.is_control()) {
                return Err(ActuatorConfigError::Entry {
                    setting: "headers".into(),
                    key: key.clone(),
                    reason: "is not a header name, or its value holds a control character".into(),
                });
            }
        }
        Ok(WebhookActuator {
            name: name.to_string(),
            kinds: self.declarations()?,
            format: self.format,
            url,
            timeout,
            lifetime,
            generator_url: self.generator_url.clone(),
            headers: self.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            clock: std::sync::Arc::new(engine::time::wall_clock_now),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_round_trips_and_bad_settings_are_refused() {
        let text = "format = \"alertmanager\"\nurl = \"http://am:9093\"\ngenerator_url = \"https://r.example/d\"\n";
        let config: WebhookConfig = toml::from_str(text).unwrap();
        assert_eq!(config.timeout, Duration::from_secs(5));
        assert_eq!(toml::from_str::<WebhookConfig>(&toml::to_string(&config).unwrap()).unwrap(), config);
        assert!(config.build("x").is_ok());
        for (text, expected) in [
            ("format = \"slack\"\nurl = \"http://x\"", "unknown variant `slack`"),
            ("format = \"json\"\nurl = \"x\"", "url: URL \"x\" does not start with http://"),
            ("format = \"json\"\nurl = \"https://x\"", "https is not supported"),
            ("format = \"json\"\nurl = \"http://x\"\ntimeout = \"5m\"", "at most 60s"),
            ("format = \"json\"\nurl = \"http://x\"\nheaders = { \"a b\" = \"1\" }", "headers: \"a b\""),
            ("format = \"json\"\nurl = \"http://x\"\nretries = 3", "unknown field `retries`"),
        ] {
            let err = toml::from_str::<WebhookConfig>(text)
                .map_err(|e| e.to_string())
                .and_then(|c| c.build("x").map(|_| ()).map_err(|e| e.to_string()))
                .unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}
