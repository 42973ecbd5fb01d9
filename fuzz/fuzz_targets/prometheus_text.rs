//! The Prometheus text exposition parser on arbitrary text: it never
//! panics, refuses a scrape naming a line of it, and keeps within its
//! bounds (samples per scrape, labels per sample); names are metric names.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sensors::prometheus::parse::{parse, MAX_SAMPLES};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    match parse(&text) {
        Ok(samples) => {
            assert!(samples.len() <= MAX_SAMPLES);
            for s in &samples {
                let first = s.name.chars().next().expect("a sample without a name");
                assert!(first.is_ascii_alphabetic() || first == '_' || first == ':', "{:?}", s.name);
                assert!(s.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'), "{:?}", s.name);
                assert!(s.labels.len() <= 64, "{} labels", s.labels.len());
                for (name, _) in &s.labels {
                    assert!(!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()), "label {name:?}");
                }
                // Whether a sample counts up depends only on its family and name.
                let _ = s.is_cumulative();
            }
        }
        Err(e) => {
            assert!(e.line >= 1 && e.line <= text.lines().count(), "{e} outside 1..={}", text.lines().count());
        }
    }
});
