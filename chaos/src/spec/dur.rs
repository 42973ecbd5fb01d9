//! A duration as written in a scenario or game file: `"300ms"`, `"1.5s"`,
//! `"2m"`, read by `humantime`, with where it was written.
//!
//! A duration that does not read is not refused by serde: serde cannot
//! say which key it was under, and the plans check a file's keys in an
//! order of their own (the first mistake is the one reported). The plan
//! reports it, naming the key: `recover_within: invalid duration "soon"`.

use std::ops::Range;
use std::time::Duration;

use engine::Nanos;
use serde::{Deserialize, Deserializer};
use toml::Spanned;

/// A duration as written, where, and what it is.
#[derive(Debug, Clone, PartialEq)]
pub struct Dur {
    text: String,
    span: Range<usize>,
    value: Result<Duration, humantime::DurationError>,
}

/// Why a written duration is not one the plans can use.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DurError {
    /// Not a duration at all.
    #[error("invalid duration {text:?}: {reason}")]
    Invalid {
        /// As written.
        text: String,
        /// humantime's words.
        reason: humantime::DurationError,
    },
    /// More nanoseconds than the engine's clock holds.
    #[error("invalid duration {text:?}: too large")]
    TooLarge {
        /// As written.
        text: String,
    },
}

impl Dur {
    /// `text` read as a duration, as if written at `span` (`0..0`: a
    /// default, written nowhere).
    pub fn new(span: Range<usize>, text: &str) -> Dur {
        Dur { text: text.to_string(), value: humantime::parse_duration(text), span }
    }

    /// Where it was written.
    pub fn span(&self) -> Range<usize> {
        self.span.clone()
    }

    /// As written: what a daemon's config is given when the game writes
    /// one.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// In nanoseconds, the engine's and the simulator's unit.
    pub fn nanos(&self) -> Result<Nanos, DurError> {
        let d = self.value.clone().map_err(|reason| DurError::Invalid { text: self.text.clone(), reason })?;
        Nanos::try_from(d.as_nanos()).map_err(|_| DurError::TooLarge { text: self.text.clone() })
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        let written = Spanned::<String>::deserialize(d)?;
        Ok(Dur::new(written.span(), written.get_ref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_the_library_writes_them() {
        for (text, ns) in [("0", 0), ("300ms", 300_000_000), ("1.5s", 1_500_000_000), ("2.2s", 2_200_000_000)] {
            assert_eq!(Dur::new(0..0, text).nanos(), Ok(ns), "{text}");
        }
        assert_eq!(Dur::new(0..0, "10m").nanos(), Ok(600_000_000_000));
        assert!(Dur::new(0..0, "soon").nanos().unwrap_err().to_string().starts_with("invalid duration \"soon\""));
        assert!(matches!(Dur::new(0..0, "1000000y").nanos(), Err(DurError::TooLarge { .. })));
    }
}
