//! Intent first, or nothing, on a disk that really fills: a daemon in
//! enforce mode escalating the PFC watchdogs of eight simulated SONiC
//! leaves (one storm per leaf, staggered) keeps its `state_dir` on a 16 MiB
//! tmpfs, which a file fills to the last byte mid-storm and frees 3 s later.
//!
//! What must hold, read from the switches' own history and the ledger
//! written once space is back:
//!
//! - every Set a leaf received has its record: as many escalations and
//!   restores sent as executed records of them (0 Sets without an intent);
//! - actions proposed while the disk was full were held (`held: ledger
//!   unwritable`), and the undos held meanwhile ran after: every port holds
//!   its original values when the storms end;
//! - the failure was said once at ERROR, instance state not once a sample,
//!   and `status` showed the ledger unwritable, then writable again.
//!
//! It mounts a tmpfs, so it needs root (CI runs it as root); elsewhere it
//! skips through `test_peers::missing`.

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::storms::{self, Leaf};
use common::Daemon;
use engine::dispatch::{Decision, Verdict, LEDGER_UNWRITABLE};
use engine::ledger::{Filter, Ledger, Retention};
use engine::Store;

/// Recorded time: a sample every 100 ms for 12 s, so the daemon runs on
/// well after the disk is freed.
const SAMPLES: u64 = 120;

/// NIC n storms from 0.3 + 0.2·n s for 0.8 s (as tests/it/crash_loop.rs).
fn storm(nic: usize) -> std::ops::Range<u64> {
    let start = 300 + 200 * nic as u64;
    start..start + 800
}

/// A tmpfs mounted for the test, unmounted when dropped.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .expect("mount runs");
        assert!(out.status.success(), "mount a tmpfs: {}", String::from_utf8_lossy(&out.stderr));
        Tmpfs(at.to_path_buf())
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Writes `path` until the filesystem refuses: the disk is full.
fn fill(path: &Path) -> u64 {
    let mut file = std::fs::File::create(path).expect("the filler is created");
    let chunk = vec![0xa5u8; 64 * 1024];
    let mut written = 0u64;
    loop {
        match file.write(&chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => written += n as u64,
        }
    }
    // Byte by byte, what is left of the last page.
    while let Ok(1) = file.write(&chunk[..1]) {
        written += 1;
    }
    written
}

fn ledger_writable(daemon: &Daemon) -> Option<bool> {
    daemon.status()["ledger"]["writable"].as_bool()
}

/// Every decision of the ledger in `state`, read once the daemon has exited.
fn ledger_of(state: &Path) -> Vec<Decision> {
    let store = Store::open(&state.join("state.sled")).expect("the state opens");
    let ledger = Ledger::open(&store, Retention::default()).expect("the ledger opens");
    ledger.list(&Filter::default()).expect("the ledger reads")
}

fn executed(decisions: &[Decision], leaf: &str, undo: bool) -> usize {
    decisions
        .iter()
        .filter(|d| d.proposal.action.target.get("switch") == Some(leaf))
        .filter(|d| d.undo_of.is_some() == undo && matches!(d.verdict, Verdict::Executed { .. }))
        .count()
}

#[test]
fn a_disk_that_fills_mid_storm_holds_every_action_without_its_intent_and_leaves_nothing_changed() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return test_peers::missing("root, to mount a tmpfs as the daemon's state_dir");
    }
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let leaves = storms::leaves(&rt);
    let originals: Vec<_> = leaves.iter().map(Leaf::now).collect();
    let dir = tempfile::tempdir().unwrap();
    storms::recording(&dir.path().join("storms.jsonl"), SAMPLES, storm);
    let config = storms::configure(dir.path(), &leaves, "storms.jsonl", "1s");
    let state = dir.path().join("state");
    let tmpfs = Tmpfs::mount(&state, "16m");
    let (socket, log) = (dir.path().join("control.sock"), dir.path().join("daemon.log"));

    let mut daemon = Daemon::start(&config, &socket, &log);
    daemon.wait_for("the first escalation", |_| (leaves[0].now() != originals[0]).then_some(()));
    let filler = state.join("filler");
    let filled = fill(&filler);
    daemon.wait_for("status to show the ledger unwritable", |d| (ledger_writable(d) == Some(false)).then_some(()));
    std::thread::sleep(Duration::from_secs(3));
    std::fs::remove_file(&filler).unwrap();
    daemon.wait_for("status to show the ledger writable again", |d| (ledger_writable(d) == Some(true)).then_some(()));
    assert!(daemon.wait_exit(storms::RUN_ENDS_WITHIN), "the run ends with its recording:\n{}", daemon.log());

    let log = daemon.log();
    let decisions = ledger_of(&state);
    drop(tmpfs);
    let held = decisions
        .iter()
        .filter(|d| matches!(&d.verdict, Verdict::Held { reason } if reason == LEDGER_UNWRITABLE))
        .count();
    let held_undos = decisions
        .iter()
        .filter(|d| {
            d.undo_of.is_some() && matches!(&d.verdict, Verdict::Held { reason } if reason == LEDGER_UNWRITABLE)
        })
        .count();
    let (mut escalations, mut restores) = (0, 0);
    for (leaf, original) in leaves.iter().zip(&originals) {
        assert_eq!(&leaf.now(), original, "{} was left changed:\n{log}", leaf.name);
        let history = storms::changes_of(leaf.history.lock().unwrap().clone(), original);
        let sent = history.iter().filter(|e| e != &original).count();
        let restored = history.len() - 1 - sent;
        assert_eq!(sent, executed(&decisions, &leaf.name, false), "{}: an escalation without its record", leaf.name);
        assert_eq!(
            restored,
            executed(&decisions, &leaf.name, true),
            "{}: a restore without its record: {history:?}\n{log}",
            leaf.name
        );
        escalations += sent;
        restores += restored;
    }
    println!(
        "disk full: {filled} bytes of filler; {escalations} escalations and {restores} restores sent, each with its \
         record; {held} decisions held (ledger unwritable), {held_undos} of them undos (run once space was back); every \
         port back to its original"
    );
    assert!(held > held_undos, "no action was held: the test tested nothing\n{log}");
    assert!(held_undos >= 1, "no undo was held: the test tested nothing\n{log}");
    assert_eq!(log.matches("The state database cannot be written").count(), 1, "said once:\n{log}");
    assert_eq!(log.matches("Could not persist instance state").count(), 0, "{log}");
    assert_eq!(log.matches("The state database can be written again").count(), 1, "{log}");
}

/// The daemon's recording on a disk that fills: what was written stays
/// readable (the frame the full disk cut short is cut off when writing
/// resumes), and writing resumes, in a new segment, once there is room.
#[test]
fn a_recording_on_a_full_disk_stays_readable_and_resumes_when_space_is_back() {
    use engine::recording::{Event, Reader, RecordingFile, Rotation, SEGMENT_START};
    use engine::{SampleKind, SeriesSpec, SeriesTable, Value};
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return test_peers::missing("root, to mount a tmpfs for the recording");
    }
    let dir = tempfile::tempdir().unwrap();
    let _fs = Tmpfs::mount(dir.path(), "2m");
    let path = dir.path().join("rec");
    let table = SeriesTable::default();
    let sensor = table.add_sensor("t", 10_000);
    let ids: Vec<_> = (0..2000)
        .map(|i| {
            let labels = engine::Labels::from_pairs([("port", format!("Ethernet{i}").as_str())]);
            table.register(sensor, &SeriesSpec { metric: "m".into(), labels, kind: SampleKind::Gauge }).unwrap()
        })
        .collect();
    // A file holding half the disk, removed once the recording has filled the rest.
    let filler = dir.path().join("filler");
    std::fs::write(&filler, vec![1u8; 1 << 20]).unwrap();
    let options = engine::recording::BlockOptions { span: engine::SECOND, ..Default::default() };
    let mut file = RecordingFile::open_with(&path, Rotation::default(), options, 0, "started").unwrap();
    // Random values compress to nothing less than themselves: the disk fills.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut random = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    let (mut failed, mut t) = (0, 0);
    while failed == 0 || t < 400 {
        t += 1;
        for id in &ids {
            failed += file.sample(&table, *id, t * engine::SECOND / 10, Value::Real(random())).is_err() as usize;
        }
        assert!(t < 10_000, "the 2 MiB disk never filled");
    }
    // Space is back; a second later the next writes go on, in a new segment.
    std::fs::remove_file(&filler).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let resumed_at = (t + 1) * engine::SECOND / 10;
    for k in 0..20 {
        for id in &ids[..10] {
            file.sample(&table, *id, resumed_at + k * engine::SECOND, Value::Real(1.0)).unwrap();
        }
    }
    file.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let mut reader = Reader::new(&bytes[..], "rec");
    let (mut starts, mut after) = (Vec::new(), 0);
    while let Some(event) = reader.next_event().expect("every frame whole") {
        match event {
            Event::Note(n) if n.kind == SEGMENT_START => starts.push(n.text),
            Event::Sample { t, .. } if t >= resumed_at => after += 1,
            _ => {}
        }
    }
    assert_eq!(starts.last().map(String::as_str), Some("resumed after a failed write"), "{starts:?}");
    assert_eq!(after, 200, "every sample after space came back");
}
