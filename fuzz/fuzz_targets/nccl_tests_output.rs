//! The nccl-tests output parser on arbitrary lines: it never panics, and
//! what it yields is finite (a gauge of NaN or ∞ would read as a bandwidth
//! collapse or a miracle); a collective it names is a `[a-z_]+` word.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sensors::nccl_tests::{Parsed, Parser};

fn collective_ok(c: &str) -> bool {
    !c.is_empty() && c.chars().all(|c| c.is_ascii_lowercase() || c == '_')
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parser = Parser::new();
    for line in text.lines() {
        match parser.line(line) {
            Some(Parsed::Row(row)) => {
                for p in [row.out_of_place, row.in_place].into_iter().flatten() {
                    assert!(p.time_us.is_finite() && p.algbw_gbps.is_finite() && p.busbw_gbps.is_finite(), "{row:?}");
                }
                assert!(row.out_of_place.is_some() || row.in_place.is_some(), "a row without results: {row:?}");
                if let Some(c) = &row.collective {
                    assert!(collective_ok(c), "collective {c:?}");
                }
            }
            Some(Parsed::AvgBusBw(bw)) => assert!(bw.is_finite(), "average {bw}"),
            None => {}
        }
        if let Some(c) = parser.collective() {
            assert!(collective_ok(c), "collective {c:?}");
        }
    }
});
