//! Tests of the exec actuator: rendering, refused values, and real runs of
//! small programs.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use engine::{Action, Actuator, ActuatorError, Labels};

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
    assert_eq!(
        err.to_string(),
        "invalid action: placeholder {target.rail} has no value: the action's target \
         {netdev=\"eth6\",node=\"node-03\",switch=\"leaf-rail6\"} has no label \"rail\""
    );
    let exec = actuator(&["/bin/echo", "{params.level}"]);
    let err = exec.execute(&action("node-03")).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid action: placeholder {params.level} has no value: the action has no parameter \"level\" (it has: reason)"
    );
}

/// Writes an executable script that records its arguments, one per line, in
/// the file named by `$OUT`.
fn argv_recorder(dir: &Path) -> String {
    let path = dir.join("record-argv");
    std::fs::write(&path, "#!/bin/sh\nfor arg in \"$@\"; do printf '%s\\n' \"$arg\"; done > \"$OUT\"\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// Executes, retrying "text file busy": a script just written can be briefly
/// held open for writing by a process that another test thread forked at
/// that moment (a known Linux race), which is not what this test is about.
async fn execute_fresh_script(exec: &ExecActuator, action: &Action) -> Result<engine::Outcome, ActuatorError> {
    for _ in 0..20 {
        match exec.execute(action).await {
            Err(ActuatorError::Failed(m)) if m.contains("Text file busy") => {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await
            }
            other => return other,
        }
    }
    exec.execute(action).await
}

#[tokio::test]
async fn each_argument_arrives_as_one_element_and_no_shell_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("argv.txt");
    let config = ExecConfig {
        argv: [
            argv_recorder(dir.path()).as_str(),
            "two words",
            "*",
            "$HOME",
            "$(id)",
            "--node={target.node}",
            "{target.switch}",
            "{params.reason}",
        ]
        .map(String::from)
        .to_vec(),
        timeout: "10s".into(),
        env: BTreeMap::from([("OUT".to_string(), out.display().to_string())]),
    };
    let exec = config.build("recorder").unwrap();
    let outcome = execute_fresh_script(&exec, &action("a=b,c:d@e/f+g_h.i")).await.unwrap();
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
    assert_eq!(
        outcome.summary,
        "/bin/echo exited with exit status: 0; stdout: \"isolating node-03/eth6 because: flap-storm\""
    );
}

#[tokio::test]
async fn a_command_that_outlives_its_timeout_is_a_timeout() {
    let mut config = ExecConfig::new(["/bin/sleep", "30"]);
    config.timeout = "200ms".into();
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
