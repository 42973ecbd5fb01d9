//! The recording reader on arbitrary bytes: it never panics, never holds
//! more than one bounded line, and every sample it yields refers to a series
//! declared before it in the same segment.

#![no_main]

use std::collections::HashSet;

use engine::recording::{Event, Reader, MAX_LINE, SEGMENT_START};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut reader = Reader::new(data, "fuzz.jsonl");
    let mut declared = HashSet::new();
    // Every line is at least one byte, and a sample of a block at least two bytes of its
    // body, which is at most 1 GiB: the reader ends within that many events.
    let bound = data.len() + 1 + (1 << 29);
    for _ in 0..=bound {
        match reader.next_event() {
            Ok(Some(Event::Series(id, spec))) => {
                assert!(spec.metric.len() <= MAX_LINE);
                declared.insert(id);
            }
            Ok(Some(Event::Sample { id, .. })) => assert!(declared.contains(&id), "sample of undeclared series {id}"),
            Ok(Some(Event::Note(note))) => {
                if note.kind == SEGMENT_START {
                    declared.clear();
                }
            }
            Ok(None) => return,
            // An error names its line and the reading goes on past it.
            Err(e) => assert!(e.line >= 1),
        }
    }
    panic!("the reader did not end");
});
