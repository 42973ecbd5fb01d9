//! Tests of the exec actuator: rendering, refused values, and real runs of
//! small programs (execute, verify and undo).

use std::collections::BTreeMap;
use std::future::Future;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use engine::{Action, Actuator, ActuatorError, Labels, Outcome, Prior, Verification};
use serde_json::Value;

use super::template::display;
use super::{ExecActuator, ExecConfig};

fn action(node: &str) -> Action {
    Action {
        kind: "link.isolate".into(),
        target: Labels::from_pairs([("node", node), ("netdev", "eth6"), ("switch", "leaf-rail6")]),
        params: BTreeMap::from([("reason".to_string(), "flap-storm".to_string())]),
    }
}

fn actuator(argv: &[&str]) -> ExecActuator {
    ExecConfig::new(argv.iter().copied()).build("exec-test").unwrap()
}

#[test]
fn placeholders_are_filled_from_the_action() {
    let exec = actuator(&[
        "/usr/local/sbin/isolate",
        "{kind}",
        "--verb={verb}",
        "--where={target.node}:{target.netdev}",
        "{params.reason}",
        "literal",
    ]);
    assert_eq!(
        exec.render(&action("node-03")).unwrap(),
        ["/usr/local/sbin/isolate", "link.isolate", "--verb=isolate", "--where=node-03:eth6", "flap-storm", "literal"]
    );
}

#[tokio::test]
async fn the_plan_is_the_argv_with_shell_quoting_where_needed() {
    let exec = actuator(&["/usr/local/sbin/isolate", "--comment", "rocemend: link flap", "{target.node}"]);
    let plan = exec.dry_run(&action("node-03")).await.unwrap();
    assert_eq!(plan.actuator, "exec-test");
    assert_eq!(plan.requests, ["/usr/local/sbin/isolate --comment 'rocemend: link flap' node-03"]);
}

#[tokio::test]
async fn injection_attempts_never_reach_argv() {
    // The program would record any run; none may happen.
    let exec = actuator(&["/bin/echo", "--node={target.node}"]);
    for evil in
        ["; rm -rf /", "$(id)", "`id`", "-rf", "--help", "a b", "node-01\nnode-02", "$HOME", "*", "", "a|b", "x'y"]
    {
        let expected = format!("invalid action: placeholder {{target.node}} value {evil:?} is refused: ");
        for result in [exec.dry_run(&action(evil)).await.map(|_| ()), exec.execute(&action(evil)).await.map(|_| ())] {
            let err = result.unwrap_err();
            assert!(matches!(err, ActuatorError::Invalid(_)), "{evil:?}: {err:?}");
            assert!(err.to_string().starts_with(&expected), "{evil:?}: {err}");
        }
    }
}

#[tokio::test]
async fn a_missing_value_names_the_placeholder() {
    let exec = actuator(&["/bin/echo", "{target.rail}"]);
    let err = exec.dry_run(&action("node-03")).await.unwrap_err();
    let target = r#"{netdev="eth6",node="node-03",switch="leaf-rail6"}"#;
    assert_eq!(
        err.to_string(),
        format!(
            r#"invalid action: placeholder {{target.rail}} has no value: the action's target {target} has no label "rail""#
        )
    );
    let exec = actuator(&["/bin/echo", "{params.level}"]);
    let err = exec.execute(&action("node-03")).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid action: placeholder {params.level} has no value: the action has no parameter \"level\" (it has: reason)"
    );
}

/// Writes the executable script `name` in `dir` and returns its path.
fn script(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// Writes an executable script that records its arguments, one per line, in
/// the file named by `$OUT`.
fn argv_recorder(dir: &Path) -> String {
    script(dir, "record-argv", "for arg in \"$@\"; do printf '%s\\n' \"$arg\"; done > \"$OUT\"\n")
}

/// Runs `command`, retrying "text file busy": a script just written can be
/// briefly held open for writing by a process that another test thread forked
/// at that moment (a known Linux race), which is not what these tests are about.
async fn fresh<T, F: Future<Output = Result<T, ActuatorError>>>(command: impl Fn() -> F) -> Result<T, ActuatorError> {
    for _ in 0..20 {
        match command().await {
            Err(ActuatorError::Failed(m)) if m.contains("Text file busy") => {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await
            }
            other => return other,
        }
    }
    command().await
}

#[tokio::test]
async fn each_argument_arrives_as_one_element_and_no_shell_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("argv.txt");
    let mut config = ExecConfig::new([
        argv_recorder(dir.path()).as_str(),
        "two words",
        "*",
        "$HOME",
        "$(id)",
        "--node={target.node}",
        "{target.switch}",
        "{params.reason}",
    ]);
    config.env.insert("OUT".to_string(), out.display().to_string());
    let exec = config.build("recorder").unwrap();
    let action = action("a=b,c:d@e/f+g_h.i");
    let outcome = fresh(|| exec.execute(&action)).await.unwrap();
    let recorded = std::fs::read_to_string(&out).unwrap();
    let args: Vec<&str> = recorded.lines().collect();
    // Literal config text arrives verbatim: no word splitting, no glob, no
    // expansion, because no shell ever sees the argv.
    assert_eq!(args, ["two words", "*", "$HOME", "$(id)", "--node=a=b,c:d@e/f+g_h.i", "leaf-rail6", "flap-storm"]);
    assert!(outcome.summary.ends_with("exited with exit status: 0"), "{}", outcome.summary);
}

#[tokio::test]
async fn dry_run_shows_exactly_what_execute_ran() {
    let exec = actuator(&["/bin/echo", "isolating", "{target.node}/{target.netdev}", "because: {params.reason}"]);
    let plan = exec.dry_run(&action("node-03")).await.unwrap();
    let outcome = exec.execute(&action("node-03")).await.unwrap();
    assert_eq!(outcome.requests, plan.requests);
    assert_eq!(plan.requests, ["/bin/echo isolating node-03/eth6 'because: flap-storm'"]);
    // Its stdout is not a prior state unless the config says so.
    assert_eq!(outcome.prior, None);
    assert_eq!(
        outcome.summary,
        "/bin/echo exited with exit status: 0; stdout: \"isolating node-03/eth6 because: flap-storm\""
    );
}

#[tokio::test]
async fn a_command_that_outlives_its_timeout_is_a_timeout() {
    let mut config = ExecConfig::new(["/bin/sleep", "30"]);
    config.timeout = std::time::Duration::from_millis(200);
    let err = config.build("slow").unwrap().execute(&action("node-03")).await.unwrap_err();
    assert_eq!(err, ActuatorError::Timeout(200));
}

#[tokio::test]
async fn a_non_zero_exit_fails_with_the_status_and_stderr() {
    let mut config = ExecConfig::new(["/bin/ls", "/nonexistent-rocemend-{target.node}"]);
    config.env.insert("LC_ALL".into(), "C".into());
    let err = config.build("ls").unwrap().execute(&action("node-03")).await.unwrap_err();
    let ActuatorError::Failed(message) = &err else { panic!("{err:?}") };
    assert!(message.starts_with("/bin/ls exited with exit status: 2; stderr: "), "{message}");
    assert!(message.contains("/nonexistent-rocemend-node-03"), "{message}");
}

#[tokio::test]
async fn a_program_that_cannot_start_fails_naming_it() {
    let err = actuator(&["/nonexistent/rocemend-tool"]).execute(&action("node-03")).await.unwrap_err();
    let ActuatorError::Failed(message) = &err else { panic!("{err:?}") };
    assert!(message.starts_with("cannot start /nonexistent/rocemend-tool: "), "{message}");
}

#[tokio::test]
async fn output_beyond_the_limit_is_cut_from_the_summary() {
    // 1..=5000, one per line: 23,893 bytes.
    let outcome = actuator(&["/usr/bin/seq", "1", "5000"]).execute(&action("node-03")).await.unwrap();
    let cut = 23_893 - super::actuator::OUTPUT_LIMIT;
    assert!(
        outcome.summary.ends_with(&format!("… ({cut} more bytes)\"")),
        "{}",
        &outcome.summary[outcome.summary.len() - 80..]
    );
    // Kept output (newlines escaped) plus the status line: well under twice the limit.
    assert!(outcome.summary.len() < 2 * super::actuator::OUTPUT_LIMIT, "{}", outcome.summary.len());
}

/// An exec actuator whose verify command is `verify_argv`.
fn verifier(verify_argv: &[&str]) -> ExecActuator {
    let mut config = ExecConfig::new(["/bin/true"]);
    config.verify_argv = Some(verify_argv.iter().map(|a| a.to_string()).collect());
    config.build("verifier").unwrap()
}

#[tokio::test]
async fn verify_reads_the_exit_status_of_the_verify_command() {
    let dir = tempfile::tempdir().unwrap();
    // Exits with its first argument after printing the others, one per line.
    let check =
        script(dir.path(), "check", "code=$1; shift; for l in \"$@\"; do printf '%s\\n' \"$l\"; done; exit $code\n");
    let cases = [
        (vec!["0", "ignored"], Verification::InEffect),
        (vec!["1"], Verification::NotInEffect),
        // The first line, trimmed, with placeholders filled as in argv.
        (
            vec!["2", "  ecn-min now 3 on {target.node}  ", "second line"],
            Verification::Changed("ecn-min now 3 on node-03".into()),
        ),
        (vec!["2"], Verification::Changed("changed by someone else".into())),
        (vec!["2", "   "], Verification::Changed("changed by someone else".into())),
    ];
    let node_03 = action("node-03");
    for (args, expected) in cases {
        let argv: Vec<&str> = std::iter::once(check.as_str()).chain(args.iter().copied()).collect();
        let exec = verifier(&argv);
        assert_eq!(fresh(|| exec.verify(&node_03, None)).await, Ok(expected), "{args:?}");
    }
}

#[tokio::test]
async fn a_verify_status_above_two_fails_with_the_status_and_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let check = script(dir.path(), "check", "echo 'cannot reach leaf-rail6' >&2; exit 3\n");
    let exec = verifier(&[&check]);
    let node_03 = action("node-03");
    let err = fresh(|| exec.verify(&node_03, None)).await.unwrap_err();
    assert_eq!(
        err,
        ActuatorError::Failed(format!("{check} exited with exit status: 3; stderr: \"cannot reach leaf-rail6\""))
    );
}

#[tokio::test]
async fn a_verify_command_that_outlives_its_timeout_is_a_timeout() {
    let mut config = ExecConfig::new(["/bin/true"]);
    config.verify_argv = Some(vec!["/bin/sleep".into(), "30".into()]);
    config.timeout = std::time::Duration::from_millis(200);
    let err = config.build("slow").unwrap().verify(&action("node-03"), None).await.unwrap_err();
    assert_eq!(err, ActuatorError::Timeout(200));
}

#[tokio::test]
async fn without_verify_argv_verify_is_unknown() {
    let verification = actuator(&["/bin/true"]).verify(&action("node-03"), None).await;
    assert_eq!(verification, Ok(Verification::Unknown));
}

#[tokio::test]
async fn a_refused_value_stops_verify_before_anything_runs() {
    let err = verifier(&["/bin/true", "{target.node}"]).verify(&action("$(id)"), None).await.unwrap_err();
    assert!(matches!(err, ActuatorError::Invalid(_)), "{err:?}");
}

/// An actuator whose command prints `stdout_lines` and reports its first line
/// as the prior state, and whose undo records its argv in `out`.
fn undoable(dir: &Path, out: &Path, stdout_lines: &[&str]) -> ExecActuator {
    let mut argv = vec!["/usr/bin/printf".to_string(), "%s\\n".to_string()];
    argv.extend(stdout_lines.iter().map(|l| l.to_string()));
    let mut config = ExecConfig::new(argv);
    config.prior_from_stdout = true;
    config.undo_argv = Some(vec![argv_recorder(dir), "--restore={prior}".into(), "{target.node}".into()]);
    config.env.insert("OUT".to_string(), out.display().to_string());
    config.build("undoable").unwrap()
}

#[tokio::test]
async fn undo_receives_the_prior_state_that_execute_read_from_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("argv.txt");
    let exec = undoable(dir.path(), &out, &["  ecn-min=5,ecn-max=9  ", "second line"]);
    let applied = exec.execute(&action("node-03")).await.unwrap();
    assert_eq!(applied.prior, Some(Prior::from_json(Value::from("ecn-min=5,ecn-max=9"))));
    let plan = exec.dry_run_undo(&action("node-03"), &applied).await.unwrap();
    assert!(!out.exists(), "a dry run ran the undo command");
    let node_03 = action("node-03");
    let undone = fresh(|| exec.undo(&node_03, &applied)).await.unwrap();
    let recorded = std::fs::read_to_string(&out).unwrap();
    assert_eq!(recorded.lines().collect::<Vec<_>>(), ["--restore=ecn-min=5,ecn-max=9", "node-03"]);
    let recorder = dir.path().join("record-argv").display().to_string();
    assert_eq!(plan.actuator, "undoable");
    assert_eq!(plan.requests, [display(&[recorder, "--restore=ecn-min=5,ecn-max=9".into(), "node-03".into()])]);
    assert_eq!(undone.requests, plan.requests);
    assert!(undone.summary.ends_with("exited with exit status: 0"), "{}", undone.summary);
    assert_eq!(undone.prior, None);
}

#[tokio::test]
async fn a_command_that_prints_nothing_records_no_prior_and_its_undo_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("argv.txt");
    let exec = undoable(dir.path(), &out, &["   "]);
    let applied = exec.execute(&action("node-03")).await.unwrap();
    assert_eq!(applied.prior, None);
    let err = exec.undo(&action("node-03"), &applied).await.unwrap_err();
    assert_eq!(
        err,
        ActuatorError::Invalid("placeholder {prior} has no value: the outcome recorded no prior state".into())
    );
    assert!(!out.exists(), "the undo command ran");
}

#[tokio::test]
async fn a_prior_line_cut_by_the_output_limit_is_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let long = "a".repeat(super::actuator::OUTPUT_LIMIT + 1);
    let applied = undoable(dir.path(), &dir.path().join("argv.txt"), &[&long]).execute(&action("node-03")).await;
    assert_eq!(applied.unwrap().prior, None);
}

#[tokio::test]
async fn a_prior_that_is_not_a_safe_string_never_reaches_the_undo_command() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("argv.txt");
    let exec = undoable(dir.path(), &out, &["unused"]);
    for (prior, expected) in [
        (
            Value::from(5),
            "invalid action: placeholder {prior} value 5 is refused: the outcome's prior is not a JSON string",
        ),
        (serde_json::json!({"ecn-min": 5}), "invalid action: placeholder {prior} value {\"ecn-min\":5} is refused"),
        (
            Value::from("5; reboot"),
            "invalid action: placeholder {prior} value \"5; reboot\" is refused: it contains ';'",
        ),
        (Value::from("--all"), "invalid action: placeholder {prior} value \"--all\" is refused: it starts with '-'"),
    ] {
        let applied = Outcome { summary: String::new(), requests: Vec::new(), prior: Some(Prior::from_json(prior)) };
        for result in [
            exec.dry_run_undo(&action("node-03"), &applied).await.map(|_| ()),
            exec.undo(&action("node-03"), &applied).await.map(|_| ()),
        ] {
            let err = result.unwrap_err();
            assert!(matches!(err, ActuatorError::Invalid(_)), "{err:?}");
            assert!(err.to_string().starts_with(expected), "{err}");
        }
    }
    assert!(!out.exists(), "the undo command ran");
}

#[tokio::test]
async fn a_failing_undo_command_fails_with_its_status() {
    let mut config = ExecConfig::new(["/bin/true"]);
    config.undo_argv = Some(vec!["/bin/false".into(), "{target.node}".into()]);
    let applied = Outcome { summary: String::new(), requests: Vec::new(), prior: None };
    let err = config.build("x").unwrap().undo(&action("node-03"), &applied).await.unwrap_err();
    assert_eq!(err, ActuatorError::Failed("/bin/false exited with exit status: 1".into()));
}

#[tokio::test]
async fn without_undo_argv_undo_is_not_supported() {
    let exec = actuator(&["/bin/true"]);
    let applied = exec.execute(&action("node-03")).await.unwrap();
    let expected = ActuatorError::NotSupported("exec-test has no undo_argv, so it cannot undo link.isolate".into());
    assert_eq!(exec.dry_run_undo(&action("node-03"), &applied).await.unwrap_err(), expected);
    assert_eq!(exec.undo(&action("node-03"), &applied).await.unwrap_err(), expected);
}
