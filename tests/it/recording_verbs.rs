//! `rocemend recording import | export | stats`: JSON lines in, the
//! daemon's compressed format out, and back, event for event.

use std::process::Command;

use engine::recording::{Event, Reader};

use crate::common::{bin, repo};

fn events(bytes: &[u8]) -> Vec<Event> {
    let mut reader = Reader::new(bytes, "test");
    let mut out = Vec::new();
    while let Some(e) = reader.next_event().unwrap() {
        out.push(e);
    }
    out
}

fn rocemend(args: &[&str]) -> String {
    let out = Command::new(bin()).args(args).output().unwrap();
    assert!(out.status.success(), "rocemend {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn an_import_exports_back_to_the_same_events_in_a_thirtieth_of_the_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let demo = repo("chaos/sim/data/demo.jsonl");
    let rec = dir.path().join("demo.rec");
    rocemend(&["recording", "import", demo.to_str().unwrap(), "--out", rec.to_str().unwrap()]);
    let exported = rocemend(&["recording", "export", rec.to_str().unwrap()]);
    let original = std::fs::read(&demo).unwrap();
    let (want, got) = (events(&original), events(exported.as_bytes()));
    let samples = |e: &[Event]| e.iter().filter(|e| matches!(e, Event::Sample { .. })).count();
    assert_eq!(samples(&got), samples(&want));
    // Within each tick the blocks hand samples out by series; the multiset of events is the same.
    let key = |e: &Event| format!("{e:?}");
    let (mut want, mut got): (Vec<_>, Vec<_>) = (want.iter().map(key).collect(), got.iter().map(key).collect());
    want.sort();
    got.sort();
    assert_eq!(got, want);
    let stats = rocemend(&["recording", "stats", rec.to_str().unwrap()]);
    assert!(stats.contains("samples 11362\n") && stats.contains("series declared 160\n"), "{stats}");
    let size = std::fs::metadata(&rec).unwrap().len();
    assert!(size * 20 < original.len() as u64, "{size} bytes against {} of JSON lines", original.len());
}

#[test]
fn an_unreadable_recording_exits_2_naming_it() {
    let out = Command::new(bin()).args(["recording", "export", "/nonexistent/rec"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the recording /nonexistent/rec"));
}
