//! Rule files that must not load: each error names the file, the line and
//! the column, and says what was expected.

use super::common;

use common::{load_errors, storm};
use engine::{rule, Helpers};

#[test]
fn a_syntax_error_names_file_line_and_column() {
    let source = "// Line 1: a comment.
fn fire(w) {
    w.paused >= = 500000.0
}
#{
    name: \"pfc-storm\",
    select: [\"ethtool_tx_prio_pause_duration_us\"],
    windows: #{ paused: rate(\"ethtool_tx_prio_pause_duration_us\", \"1s\") },
}
";
    let errors = load_errors("rules/pfc-storm.rhai", source);
    assert_eq!(errors.len(), 1);
    // Column 17 is the second `=`.
    assert!(errors[0].starts_with("rules/pfc-storm.rhai:3:17: "), "{}", errors[0]);
    assert!(errors[0].contains("'='"), "{}", errors[0]);
}

#[test]
fn a_type_error_is_found_by_the_trial_run_with_its_line_and_column() {
    let source = "fn fire(w) {
    // Microseconds times a string: no such operator.
    w.paused * \"us\" > 500000.0
}
#{
    name: \"pfc-storm\",
    select: [\"ethtool_tx_prio_pause_duration_us\"],
    windows: #{ paused: rate(\"ethtool_tx_prio_pause_duration_us\", \"1s\") },
}
";
    let errors = load_errors("pfc-storm.rhai", source);
    assert_eq!(errors.len(), 1);
    // Column 14 is the `*`.
    assert!(errors[0].starts_with("pfc-storm.rhai:3:14: fire(w) fails with every window at 0: "), "{}", errors[0]);
    assert!(errors[0].contains("Function not found: *"), "{}", errors[0]);
}

#[test]
fn an_unknown_declaration_field_is_named_with_its_line() {
    let source = "fn fire(w) { w.paused > 500000.0 }
#{
    name: \"pfc-storm\",
    select: [\"ethtool_tx_prio_pause_duration_us\"],
    windows: #{ paused: rate(\"ethtool_tx_prio_pause_duration_us\", \"1s\") },
    keep_firing: \"30s\",
}
";
    let errors = load_errors("pfc-storm.rhai", source);
    assert_eq!(errors.len(), 1);
    assert!(errors[0].starts_with("pfc-storm.rhai:6:5: unknown field `keep_firing`"), "{}", errors[0]);
    assert!(errors[0].contains("keep_firing_for"), "the message lists the valid fields: {}", errors[0]);
}

#[test]
fn a_window_on_a_metric_no_selector_names_is_rejected() {
    let source = "fn fire(w) { w.paused > 500000.0 }
#{
    name: \"pfc-storm\",
    select: [\"ethtool_tx_prio_pause_duration_us\"],
    windows: #{
        paused: rate(\"ethtool_rx_prio_pause_duration_us\", \"1s\"),
    },
}
";
    let errors = load_errors("pfc-storm.rhai", source);
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0],
        "pfc-storm.rhai:6:9: window `paused` reads \"ethtool_rx_prio_pause_duration_us\", \
         which no selector in `select` names"
    );
}

#[test]
fn every_broken_file_of_a_set_is_reported_together() {
    let good = storm("");
    let typo = good.replace("group_by:", "grop_by:").replace("pfc-storm", "pfc-typo");
    let syntax = good.replace("fn clear(w) {", "fn clear(w) ").replace("pfc-storm", "pfc-syntax");
    let files = [("a.rhai", good.as_str()), ("b.rhai", typo.as_str()), ("c.rhai", syntax.as_str())];
    let errors = rule::load_sources(&common::sources(&files), Helpers::default()).expect_err("two are broken");
    let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, vec!["b.rhai", "c.rhai"]);
    assert!(errors.iter().all(|e| e.line > 0), "{errors:?}");
}

#[test]
fn comparing_a_window_with_a_string_is_rejected_at_load_time() {
    let source = "fn fire(w) {
    w.paused > \"500k\"
}
#{
    name: \"pfc-storm\",
    select: [\"ethtool_tx_prio_pause_duration_us\"],
    windows: #{ paused: rate(\"ethtool_tx_prio_pause_duration_us\", \"1s\") },
}
";
    // A rule that can never fire must not load silently.
    let errors = match rule::load_sources(&common::sources(&[("pfc-storm.rhai", source)]), Helpers::default()) {
        Ok(_) => vec![],
        Err(errors) => errors.iter().map(ToString::to_string).collect(),
    };
    assert_eq!(errors.len(), 1, "loaded a rule that compares µs with a string");
    assert!(errors[0].starts_with("pfc-storm.rhai:2:14: "), "{}", errors[0]);
}

#[test]
fn a_window_error_points_at_the_window_not_at_a_comment_naming_it() {
    let source = "// paused: µs per second the NIC paused its switch port
fn fire(w) { w.paused > 500000.0 }
#{
    name: \"pfc-storm\",
    select: [\"ethtool_tx_prio_pause_duration_us\"],
    windows: #{
        paused: rate(\"ethtool_rx_prio_pause_duration_us\", \"1s\"),
    },
}
";
    let errors = load_errors("pfc-storm.rhai", source);
    assert!(errors[0].starts_with("pfc-storm.rhai:7:9: window `paused`"), "{}", errors[0]);
}

#[test]
fn a_fire_that_returns_a_number_is_rejected_with_its_position() {
    let source = "// The rate, where a condition was meant.
fn fire(w) { w.paused }
#{
    name: \"pfc-storm\",
    select: [\"ethtool_tx_prio_pause_duration_us\"],
    windows: #{ paused: rate(\"ethtool_tx_prio_pause_duration_us\", \"1s\") },
}
";
    let errors = load_errors("pfc-storm.rhai", source);
    assert!(errors[0].starts_with("pfc-storm.rhai:2:"), "{}", errors[0]);
    assert!(errors[0].contains("must return a bool"), "{}", errors[0]);
}

#[test]
fn every_error_of_a_declaration_is_reported_at_once_in_file_order() {
    let source = "fn fire(w) { w.paused > 500000.0 }
#{
    name: \"pfc-storm\",
    selct: [\"ethtool_tx_prio_pause_duration_us\"],
    severity: \"warn\",
    windows: #{ paused: rate(\"ethtool_tx_prio_pause_duration_us\", \"1s\") },
    cooldown: \"10\",
}
";
    let errors = load_errors("pfc-storm.rhai", source);
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert!(errors[0].starts_with("pfc-storm.rhai:2:1: `select` must name at least one"), "{}", errors[0]);
    assert!(errors[1].starts_with("pfc-storm.rhai:4:5: unknown field `selct`"), "{}", errors[1]);
    assert!(errors[2].starts_with("pfc-storm.rhai:5:5: severity \"warn\""), "{}", errors[2]);
    assert!(errors[3].starts_with("pfc-storm.rhai:7:5: `cooldown`"), "{}", errors[3]);
}

#[test]
fn an_action_for_each_of_something_other_than_a_job_is_rejected_and_job_fills_only_with_each() {
    let source = |each: &str| {
        format!(
            "fn fire(w) {{ w.paused > 500000.0 }}
#{{
    name: \"leaf-jobs\",
    select: [\"ethtool_tx_prio_pause_duration_us\"],
    group_by: [\"switch\"],
    windows: #{{ paused: rate(\"ethtool_tx_prio_pause_duration_us\", \"1s\") }},
    actions: [ #{{ action: \"nccl.qps\", {each} target: #{{ job: \"{{job}}\" }}, params: #{{ qps: \"4\" }} }} ],
}}
"
        )
    };
    let errors = load_errors("leaf-jobs.rhai", &source("each: \"port\","));
    assert!(errors[0].starts_with("leaf-jobs.rhai:7:5: action \"nccl.qps\": each = \"port\""), "{}", errors[0]);
    let errors = load_errors("leaf-jobs.rhai", &source(""));
    assert!(errors[0].contains("{job} is not a label of this rule's subjects"), "{}", errors[0]);
    rule::load_sources(&[("leaf-jobs.rhai".into(), source("each: \"job\","))], Helpers::default()).unwrap();
}
