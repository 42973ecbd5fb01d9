//! The HTML report in headless Chromium: the page loads, its SVG timelines
//! are laid out (non-empty bounding boxes) with the decision marks, and a
//! screenshot is taken. Skipped when `chromium` is not installed.

use std::path::PathBuf;
use std::process::Command;

mod common;

use common::chromium;

#[test]
fn the_report_timeline_is_drawn_in_chromium() {
    let Some(browser) = chromium() else {
        eprintln!("skipped: chromium is not installed");
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let scenario = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("chaos/scenarios/pfc_storm.toml");
    let status = Command::new(env!("CARGO_BIN_EXE_rocemend"))
        .args(["chaos", "run", "--quiet", "--runs", "2", "--out"])
        .arg(out.path())
        .arg(&scenario)
        .status()
        .unwrap();
    assert!(status.success());
    let page = out.path().join("pfc_storm.html");
    let url = format!("file://{}", page.display());
    let profile = out.path().join("profile");
    let common = |cmd: &mut Command| {
        cmd.args(["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=5000"])
            .arg(format!("--user-data-dir={}", profile.display()));
    };
    let mut dump = Command::new(&browser);
    common(&mut dump);
    let dom = dump.arg("--dump-dom").arg(&url).output().unwrap();
    assert!(dom.status.success(), "{}", String::from_utf8_lossy(&dom.stderr));
    let dom = String::from_utf8_lossy(&dom.stdout);
    // Set by the page's script after layout: timelines with a non-empty box.
    assert!(dom.contains(r#"data-timelines="2""#), "both runs' timelines laid out: {}", &dom[..dom.len().min(400)]);
    let marks: usize = dom
        .split(r#"data-marks=""#)
        .nth(1)
        .and_then(|r| r.split('"').next())
        .and_then(|n| n.parse().ok())
        .expect("data-marks");
    // Per run: the escalation, its undo, detected, mitigated, recovered.
    assert!(marks >= 2 * 5, "{marks} marks");
    assert!(dom.contains(r#"class="mark executed" data-label="pfcwd.escalate"#));
    assert!(dom.contains(r#"class="span fault""#) && dom.contains(r#"class="span firing""#));
    let shot = out.path().join("shot.png");
    let mut screenshot = Command::new(&browser);
    common(&mut screenshot);
    let result = screenshot
        .arg(format!("--screenshot={}", shot.display()))
        .arg("--window-size=1200,1600")
        .arg(&url)
        .output()
        .unwrap();
    assert!(result.status.success(), "{}", String::from_utf8_lossy(&result.stderr));
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 10_000, "a page with timelines is not a blank {}-byte image", png.len());
}
