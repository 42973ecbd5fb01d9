//! Why a sensor's settings were refused: [`SensorConfigError`], returned by every
//! sensor config's `build`.
//!
//! Every message starts with `configuration: `, as the engine's
//! [`SensorError::Config`](engine::SensorError::Config) did before the
//! sensors had their own error: the daemon's reports and the tests that
//! read them keep their text.

use std::path::PathBuf;

use gnmi_proto::PathError;

/// A sensor's settings were refused when it was built; each variant names
/// the setting (as the config spells it, e.g. `interval_ms`,
/// `target "leaf01": ca`) and what was wrong with it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SensorConfigError {
    /// A setting that must name or list something is empty.
    #[error("configuration: {setting} is empty{}", consequence_of(.consequence))]
    Empty {
        /// The setting.
        setting: String,
        /// What an empty value would mean, when it is not plain.
        consequence: Option<&'static str>,
    },
    /// A number is outside the range the setting accepts.
    #[error("configuration: {setting} {value} {reason}")]
    OutOfRange {
        /// The setting.
        setting: String,
        /// The value as given.
        value: String,
        /// The bound it breaks, e.g. `is below the minimum of 10 ms`.
        reason: String,
    },
    /// A count that must be at least 1 is 0.
    #[error("configuration: {setting} must be at least 1")]
    Zero {
        /// The setting.
        setting: String,
    },
    /// More entries than one sensor runs.
    #[error("configuration: {count} {setting}; at most {max}")]
    TooMany {
        /// The list setting.
        setting: &'static str,
        /// How many are given.
        count: usize,
        /// The most accepted.
        max: usize,
    },
    /// A text value is not one the setting accepts.
    #[error("configuration: {setting} {value:?} {reason}")]
    Invalid {
        /// The setting.
        setting: String,
        /// The value as given.
        value: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A name that must be unique in a list appears twice.
    #[error("configuration: {setting}: {name:?} is listed twice")]
    Duplicate {
        /// The list setting.
        setting: String,
        /// The name.
        name: String,
    },
    /// Settings that go together are not given together.
    #[error("configuration: {setting}: {reason}")]
    Conflict {
        /// Where they are (a target).
        setting: String,
        /// Which settings go together.
        reason: &'static str,
    },
    /// A regex does not compile.
    #[error("configuration: {setting}: {pattern:?} is not a regex: {source}")]
    Regex {
        /// The setting.
        setting: String,
        /// The pattern as given.
        pattern: String,
        /// The compiler's error.
        source: regex::Error,
    },
    /// A gNMI path does not parse.
    #[error("configuration: {setting}: {source}")]
    Path {
        /// The setting.
        setting: String,
        /// Why it does not parse.
        source: PathError,
    },
    /// A scrape target's URL is not one a scrape can use.
    #[error("configuration: {setting}: {source}")]
    Url {
        /// The setting.
        setting: String,
        /// Why not.
        source: TargetUrlError,
    },
    /// A switch named from the inventory cannot be reached by name.
    #[error("configuration: {setting}: {source}")]
    Switch {
        /// Where it is named (a target).
        setting: String,
        /// Why.
        source: engine::topology::AccessError,
    },
    /// A credentials file is refused (unreadable, readable by others,
    /// malformed). The password is never part of the error.
    #[error("configuration: {setting}: {source}")]
    Credentials {
        /// The setting.
        setting: String,
        /// Why.
        source: gnmi_proto::credentials::CredentialsError,
    },
    /// A switch's TLS settings cannot be used: a PEM file cannot be read,
    /// or a client certificate comes without its key.
    #[error("configuration: {setting}: {source}")]
    Tls {
        /// Where they are (`target "leaf01": tls`).
        setting: String,
        /// Why.
        source: gnmi_proto::TlsFileError,
    },
    /// A setting of an earlier spelling: refused, with what replaced it.
    #[error("configuration: {setting}: `{old}` is no longer read; {hint}")]
    Respelled {
        /// Where it is (a target).
        setting: String,
        /// The old key.
        old: &'static str,
        /// How to write it now.
        hint: String,
    },
    /// A file a setting names cannot be read.
    #[error("configuration: {setting} {}: {source}", path.display())]
    Read {
        /// The setting.
        setting: String,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl SensorConfigError {
    /// Checks the settings every polling sensor (`rdma_sysfs`, `ethtool`)
    /// has: `interval_ms` at least `min_interval_ms`, `rescan_every` at
    /// least 1.
    pub(crate) fn check_polling(
        interval_ms: u64,
        min_interval_ms: u64,
        rescan_every: u32,
    ) -> Result<(), SensorConfigError> {
        if interval_ms < min_interval_ms {
            return Err(SensorConfigError::OutOfRange {
                setting: "interval_ms".into(),
                value: interval_ms.to_string(),
                reason: format!("is below the minimum of {min_interval_ms} ms"),
            });
        }
        if rescan_every == 0 {
            return Err(SensorConfigError::Zero { setting: "rescan_every".into() });
        }
        Ok(())
    }

    /// A duration outside the range `setting` accepts, shown as humantime
    /// writes it (`50ms`, `1m 30s`).
    pub(crate) fn duration_out_of_range(
        setting: &str,
        value: std::time::Duration,
        reason: String,
    ) -> SensorConfigError {
        SensorConfigError::OutOfRange {
            setting: setting.to_string(),
            value: humantime::format_duration(value).to_string(),
            reason,
        }
    }
}

/// `: <consequence>`, or nothing.
fn consequence_of(consequence: &Option<&'static str>) -> String {
    consequence.map(|c| format!(": {c}")).unwrap_or_default()
}

/// Why a target URL cannot be scraped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TargetUrlError {
    /// Not `http://`: a scrape has no TLS settings yet.
    #[error("{url:?}: only http:// URLs are supported")]
    NotHttp {
        /// The URL as given.
        url: String,
    },
    /// Not a URL the HTTP client can use.
    #[error(transparent)]
    Malformed(#[from] net::http::UrlError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_keep_the_configuration_prefix() {
        let e = SensorConfigError::Empty { setting: "include".into(), consequence: Some("no link would be watched") };
        assert_eq!(e.to_string(), "configuration: include is empty: no link would be watched");
        assert_eq!(
            SensorConfigError::Empty { setting: "root".into(), consequence: None }.to_string(),
            "configuration: root is empty"
        );
        let e = SensorConfigError::TooMany { setting: "targets", count: 65, max: 64 };
        assert_eq!(e.to_string(), "configuration: 65 targets; at most 64");
    }
}
