//! The standard rule library in `rules/` against its own test files, and
//! the runner's ability to catch a wrong expectation in them.

use std::path::{Path, PathBuf};

use engine::rule_test::{self, Failure, FileResult};
use engine::State;

/// Every rule other parts of rocemend (playbooks, docs, demos) rely on.
const STANDARD_RULES: [&str; 12] = [
    "pfc-storm",
    "symbol-errors",
    "link-flap",
    "xmit-wait-congestion",
    "cnp-storm",
    "ecmp-imbalance",
    "gpu-xid",
    "switch-pfc-storm",
    "switch-pfcwd-stormed",
    "switch-queue-congestion",
    "switch-port-flap",
    "switch-egress-congestion",
];

fn rules_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../rules");
    dir.canonicalize().unwrap_or(dir)
}

#[test]
fn every_standard_rule_has_tests_and_every_case_passes() {
    let report = rule_test::run_dir(&rules_dir()).expect("the rules directory is readable");
    assert!(report.passed(), "\n{report}");
    let mut names: Vec<&str> = report
        .files
        .iter()
        .filter_map(|f| match &f.result {
            FileResult::Ran(r) => Some(r.rule.as_str()),
            _ => None,
        })
        .collect();
    names.sort_unstable();
    let mut wanted = STANDARD_RULES.to_vec();
    wanted.sort_unstable();
    assert_eq!(names, wanted, "\n{report}");
    for file in &report.files {
        if let FileResult::Ran(r) = &file.result {
            assert!(
                r.cases.len() >= 4,
                "{} has only {} cases; see docs/rules.md for what to cover",
                r.rule,
                r.cases.len()
            );
        }
    }
}

#[test]
fn a_deliberately_wrong_expectation_fails_the_runner() {
    let tmp = tempfile::tempdir().unwrap();
    let rules = tmp.path().join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // The rule tests name the inventory beside them.
    std::fs::copy(root.join("rules/inventory.toml"), rules.join("inventory.toml")).unwrap();
    std::fs::copy(root.join("rules/pfc_storm.rhai"), rules.join("pfc_storm.rhai")).unwrap();

    let tests = std::fs::read_to_string(root.join("rules/pfc_storm.test.toml")).unwrap();
    let right = "at = \"1100ms\"\nstate = \"firing\"";
    assert_eq!(tests.matches(right).count(), 1, "the test file changed; pick another expectation to break");
    std::fs::write(rules.join("pfc_storm.test.toml"), tests.replace(right, "at = \"1100ms\"\nstate = \"pending\""))
        .unwrap();

    let report = rule_test::run_file(&rules.join("pfc_storm.rhai"), &rules.join("pfc_storm.test.toml")).unwrap();
    assert!(!report.passed());
    let failed: Vec<_> = report.failed().collect();
    assert_eq!(failed.len(), 1, "only the edited case fails:\n{report}");
    assert_eq!(failed[0].name, "storm confirmed over two samples fires within 300 ms");
    match &failed[0].failures[..] {
        [f @ Failure::State { at, expected: State::Pending, got: State::Firing, .. }] => {
            assert_eq!(*at, 1_100_000_000);
            let text = f.to_string();
            assert!(text.starts_with("at 1100ms: pfc-storm{"), "{text}");
            assert!(text.contains("expected pending, got firing"), "{text}");
            assert!(text.contains("paused_us_per_s=667333"), "the diff shows the windows: {text}");
        }
        other => panic!("expected one state failure, got {other:?}\n{report}"),
    }
}

/// One edit of a test file that must make it fail: which line, and what
/// to put there.
struct Mutant {
    line: usize,
    text: String,
}

/// Every `state`, `stale` of an expectation and every `kind` of an action,
/// each changed to something else.
fn mutants(tests: &str) -> Vec<Mutant> {
    let mut table = "";
    let mut out = Vec::new();
    for (line, text) in tests.lines().enumerate() {
        let t = text.trim();
        if t.starts_with("[[") {
            table = t;
            continue;
        }
        let changed = match (table, t.split_once(" = ")) {
            ("[[case.expect]]", Some(("state", v))) => {
                let other = if v == "\"inactive\"" { "\"firing\"" } else { "\"inactive\"" };
                Some(format!("state = {other}"))
            }
            ("[[case.expect]]", Some(("stale", v))) => Some(format!("stale = {}", v != "true")),
            ("[[case.action]]", Some(("kind", _))) => Some("kind = \"mutated.kind\"".to_string()),
            _ => None,
        };
        out.extend(changed.map(|text| Mutant { line, text }));
    }
    out
}

#[test]
fn every_expectation_of_the_standard_rules_can_fail() {
    let dir = rules_dir();
    let mut checked = 0;
    for rule in engine::rule::rule_files(&dir).unwrap() {
        let test = rule.with_extension("test.toml");
        let (rule_text, tests) = (std::fs::read_to_string(&rule).unwrap(), std::fs::read_to_string(&test).unwrap());
        let (rule_path, test_path) = (rule.display().to_string(), test.display().to_string());
        for m in mutants(&tests) {
            let mut lines: Vec<&str> = tests.lines().collect();
            lines[m.line] = &m.text;
            let mutated = lines.join("\n");
            let report = rule_test::run_sources(&rule_path, &rule_text, &test_path, &mutated).unwrap();
            assert!(
                !report.passed(),
                "{test_path}:{}: `{}` passes too: the expectation cannot fail",
                m.line + 1,
                m.text
            );
            checked += 1;
        }
    }
    assert!(checked >= 60, "only {checked} expectations found");
}

/// The fenced block right after `<!-- walk-through: {name} -->` in `text`.
fn walk_through_block<'a>(text: &'a str, name: &str) -> &'a str {
    let marker = format!("<!-- walk-through: {name} -->");
    let after = &text[text.find(&marker).unwrap_or_else(|| panic!("docs/rules.md lost the marker {marker}"))..];
    let open = after.find("```").expect("a fenced block follows the marker");
    let body = &after[open..];
    let start = body.find('\n').expect("the fence line ends") + 1;
    let end = body[start..].find("\n```").expect("the block is closed") + start;
    &body[start..end + 1]
}

#[test]
fn the_walk_through_in_docs_rules_md_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let guide = std::fs::read_to_string(root.join("docs/rules.md")).unwrap();
    let rule = walk_through_block(&guide, "rules/oos_burst.rhai");
    let tests = walk_through_block(&guide, "rules/oos_burst.test.toml");
    // Named as if in rules/, so the inventory path resolves as written.
    let test_path = root.join("rules/oos_burst.test.toml").display().to_string();
    let report = rule_test::run_sources("docs/rules.md (oos_burst.rhai)", rule, &test_path, tests).unwrap();
    assert!(report.passed(), "\n{report}");
    assert_eq!(report.rule, "oos-burst");
    assert_eq!(report.cases.len(), 3);
}
