//! The HTML report in headless Chromium: the page loads, its SVG timelines
//! are laid out (non-empty bounding boxes) with the decision marks, and a
//! screenshot is taken. Skipped when `chromium` is not installed.

use std::path::PathBuf;
use std::process::Command;

use crate::common;

use common::Browser;

#[test]
fn the_report_timeline_is_drawn_in_chromium() {
    let out = tempfile::tempdir().unwrap();
    let Some(browser) = Browser::find(out.path()) else { return };
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
    let dom = browser.dom(&url);
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
    browser.screenshot(&url, "1200,1600", &out.path().join("shot.png"));
}
