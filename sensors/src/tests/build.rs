//! [`sensors::build`]: a sensor by its kind, its name and its settings, and
//! the errors that name what was wrong.

use sensors::{build, KINDS};

fn table(text: &str) -> toml::Table {
    toml::from_str(text).unwrap()
}

#[test]
fn builds_a_replay_sensor_with_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.jsonl");
    std::fs::write(&path, "").unwrap();
    let sensor = build("replay", "incident-42", table(&format!("path = {:?}\nspeed = 10.0", path))).unwrap();
    assert_eq!(sensor.name(), "incident-42");
    std::fs::remove_file(&path).unwrap();
    let err = build("replay", "incident-42", table(&format!("path = {:?}", path))).err().unwrap().to_string();
    assert!(err.ends_with("rec.jsonl\" names no file"), "{err}");
}

#[test]
fn an_unknown_kind_lists_the_known_ones() {
    let err = build("sonar", "s1", toml::Table::new()).err().unwrap().to_string();
    assert_eq!(err, format!("sensor \"s1\": unknown kind \"sonar\" (known kinds: {})", KINDS.join(", ")));
    assert!(err.contains("replay"), "{err}");
}

#[test]
fn an_unknown_setting_is_named() {
    let err = build("replay", "r", table("path = \"rec.jsonl\"\nsped = 2.0")).err().unwrap().to_string();
    assert!(err.starts_with("sensor \"r\" (kind \"replay\"): unknown field `sped`"), "{err}");
}

#[test]
fn a_missing_path_is_named() {
    let err = build("replay", "r", table("speed = 2.0")).err().unwrap().to_string();
    assert!(err.contains("missing field `path`"), "{err}");
}

#[test]
fn a_negative_speed_is_refused() {
    let err = build("replay", "r", table("path = \"rec.jsonl\"\nspeed = -1.0")).err().unwrap().to_string();
    assert!(err.contains("speed -1 "), "{err}");
}
