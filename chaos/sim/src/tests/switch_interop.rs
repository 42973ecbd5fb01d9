//! pygnmi against the simulated switch: runs `tests/interop/gnmi_interop.py`
//! with the Python in `$ROCEMEND_PYTHON` (or `python3`). Skips, saying why,
//! when Python or its `pygnmi` module is missing; `.ci/run` installs them.

use std::path::PathBuf;
use std::time::Duration;

use sim::switch::{spawn, Model, Options};

fn python() -> String {
    std::env::var("ROCEMEND_PYTHON").unwrap_or_else(|_| "python3".into())
}

#[tokio::test]
async fn pygnmi_talks_to_the_simulated_switch() {
    let python = python();
    match std::process::Command::new(&python).args(["-c", "import pygnmi"]).output() {
        Err(e) => return test_peers::missing(format!("cannot run {python}: {e}")),
        Ok(out) if !out.status.success() => {
            return test_peers::missing(format!("{python} has no pygnmi module (pip install pygnmi)"));
        }
        Ok(_) => {}
    }
    let options = Options { credentials: Some(("admin".into(), "interop".into())), ..Options::default() };
    let sw = spawn("interop", ([127, 0, 0, 1], 0).into(), Model::new(8), options).await.unwrap();
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop/gnmi_interop.py");
    let run = tokio::process::Command::new(&python)
        .arg(&script)
        .args(["--address", &sw.addr.to_string(), "--username", "admin", "--password", "interop"])
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(90), run).await.expect("the interop script hung").unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    println!("{stdout}");
    eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the interop script failed:\n{stdout}");
    assert!(stdout.contains("interop: all checks passed"));
    // The script's Set reached the model.
    assert_eq!(sw.model.config_entry("WRED_PROFILE", "AZURE_LOSSLESS").unwrap()["green_min_threshold"], "524288");
    sw.stop().await.unwrap();
}
