//! Wrong input is refused, loudly, and `check` and `run` agree on it.
//!
//! Each case below breaks one thing of an otherwise valid daemon config,
//! inventory, playbook, rule directory or of the machine (a port held). For
//! every case, `rocemend check --config` and `rocemend run --config` must
//! both exit 2 and both name the problem at its `file:line:col`; the cases
//! run [`PARALLEL`] at a time. One more test makes mistakes in every stage
//! at once and wants them all from one `check` run. The table of cases and the messages they get is
//! generated into docs/config.md; regenerate it with
//! `ROCEMEND_BLESS_DOCS=1 cargo test --test it -- bad_configs::`.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, repo, text};

/// One bad input.
struct Case {
    /// What is wrong, for the docs.
    what: &'static str,
    /// Top-level keys added to the daemon config.
    config_top: &'static str,
    /// Tables appended to the daemon config.
    config_tables: &'static str,
    /// Top-level keys added to the playbook.
    playbook_top: &'static str,
    /// Tables appended to the playbook (before its actuators).
    playbook_tables: &'static str,
    /// The playbook's actuators, when not the standard ones.
    actuators: Option<&'static str>,
    /// An extra rule file (name, source) in the rule directory.
    rule: Option<(&'static str, &'static str)>,
    /// An extra file (name, text) beside the config: an inventory the case names.
    file: Option<(&'static str, &'static str)>,
    /// Every fragment the refusal must contain, in the order written.
    expect: &'static [&'static str],
}

const NONE: Case = Case {
    what: "",
    config_top: "",
    config_tables: "",
    playbook_top: "",
    playbook_tables: "",
    actuators: None,
    rule: None,
    file: None,
    expect: &[],
};

/// One log actuator per action family of the standard rules.
const ACTUATORS: &str = "\
[[actuator]]\nname = \"pfcwd\"\ntype = \"log\"\nhandles = [\"pfcwd.*\"]\n\
[[actuator]]\nname = \"ecn\"\ntype = \"log\"\nhandles = [\"ecn.*\"]\n\
[[actuator]]\nname = \"link\"\ntype = \"log\"\nhandles = [\"link.*\"]\n\
[[actuator]]\nname = \"rail\"\ntype = \"log\"\nhandles = [\"rail.*\"]\n\
[[actuator]]\nname = \"cordon\"\ntype = \"log\"\nhandles = [\"node.*\"]\n\
[[actuator]]\nname = \"nccl\"\ntype = \"log\"\nhandles = [\"nccl.*\"]\n\
[[actuator]]\nname = \"ecmp\"\ntype = \"log\"\nhandles = [\"ecmp.*\"]\n\
[[actuator]]\nname = \"notify\"\ntype = \"log\"\nhandles = [\"webhook.*\"]\ndestructive = false\n";

/// Every case, in the order of the table in docs/config.md. The lists below
/// keep a case a line, as that table does (`rustfmt::skip`: rustfmt would
/// spread each over seven).
fn cases() -> Vec<Case> {
    [
        config_cases(),
        machine_cases(),
        inventory_cases(),
        playbook_cases(),
        unsafe_cases(),
        switch_and_rule_cases(),
        template_cases(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The daemon config's own settings and its fleet table.
#[rustfmt::skip]
fn config_cases() -> Vec<Case> {
    vec![
        // The daemon config's own settings.
        Case { what: "`control.listen` without TLS", config_tables: "[control]\nlisten = \"127.0.0.1:0\"\n", expect: &["rocemend.toml:", "needs control.tls_cert"], ..NONE },
        Case { what: "a bad `log.level`", config_tables: "[log]\nlevel = \"loud\"\n", expect: &["rocemend.toml:", "log.level \"loud\": \"loud\" is not a level"], ..NONE },
        Case { what: "an unknown `log.format`", config_tables: "[log]\nformat = \"xml\"\n", expect: &["rocemend.toml:", "log.format \"xml\": expected human or json"], ..NONE },
        Case { what: "a `metrics.listen` that is no address", config_tables: "[metrics]\nlisten = \"nowhere\"\n", expect: &["rocemend.toml:", "metrics.listen \"nowhere\""], ..NONE },
        Case { what: "`state_dir` is a file", config_top: "state_dir = \"a-file\"\n", expect: &["rocemend.toml:", "a-file: is not a directory"], ..NONE },
        Case { what: "`state_dir` cannot be created", config_top: "state_dir = \"a-file/state\"\n", expect: &["rocemend.toml:", "cannot be created"], ..NONE },
        Case { what: "an unknown `engine.clock`", config_tables: "[engine]\nclock = \"walll\"\n", expect: &["rocemend.toml:", "engine.clock \"walll\": expected wall or samples"], ..NONE },
        Case { what: "an `engine.tick` that is no duration", config_tables: "[engine]\ntick = \"fast\"\n", expect: &["rocemend.toml:", "engine.tick"], ..NONE },
        Case { what: "an `engine.tick` of 0", config_tables: "[engine]\ntick = \"0s\"\n", expect: &["rocemend.toml:", "expected 1ms to 60s"], ..NONE },
        Case { what: "an `engine.reload_poll` that is no duration", config_tables: "[engine]\nreload_poll = \"2x\"\n", expect: &["rocemend.toml:", "engine.reload_poll"], ..NONE },
        Case { what: "an `engine.rule_cost_budget` of 0", config_tables: "[engine]\nrule_cost_budget = 0.0\n", expect: &["rocemend.toml:", "engine.rule_cost_budget = 0"], ..NONE },
        Case { what: "an `engine.max_series_per_sensor` of 0", config_tables: "[engine]\nmax_series_per_sensor = 0\n", expect: &["rocemend.toml:", "at least 1"], ..NONE },
        Case { what: "a misspelt key", config_tables: "[engine]\ntickk = \"50ms\"\n", expect: &["rocemend.toml:", "unknown field `tickk`"], ..NONE },
        Case { what: "`record_keep = 0`", config_top: "record = \"rec/recording.jsonl\"\nrecord_keep = 0\n", expect: &["rocemend.toml:5:1", "record_keep = 0: expected at least 1"], ..NONE },
        Case { what: "`record_thin_to = \"0s\"`", config_top: "record = \"rec/recording\"\nrecord_thin_to = \"0s\"\n", expect: &["rocemend.toml:5:1", "record_thin_to = 0: expected a resolution"], ..NONE },
        Case { what: "a `record_thin_after` that is no duration", config_top: "record = \"rec/recording\"\nrecord_thin_after = \"a day\"\n", expect: &["rocemend.toml:5:", "record_thin_after: "], ..NONE },
        Case { what: "a sensor of an unknown type", config_tables: "[[sensor]]\ntype = \"sniffer\"\n", expect: &["rocemend.toml:", "unknown kind \"sniffer\""], ..NONE },
        Case { what: "a sensor setting of the wrong type", config_tables: "[[sensor]]\ntype = \"rdma_sysfs\"\ninterval = 5\n", expect: &["rocemend.toml:", "sensor \"rdma_sysfs\""], ..NONE },
        Case { what: "a missing inventory", config_top: "inventory = \"no-such-inventory.toml\"\n", expect: &["rocemend.toml:4:1", "no-such-inventory.toml: no such file"], ..NONE },
        // The inventory: the cabling it describes, and this daemon's place in it.
        Case { what: "an empty inventory", config_top: "inventory = \"empty.toml\"\n", file: Some(("empty.toml", "cluster = \"c\"\n")), expect: &["empty.toml:1:1", "the inventory lists no switch and no node"], ..NONE },
        Case { what: "a NIC on another rail's leaf", config_top: "inventory = \"cabling.toml\"\n", file: Some(("cabling.toml", WRONG_RAIL)), expect: &["cabling.toml:17:1", "node \"node-01\" NIC mlx5_1 (eth1) is on rail 1, but its cable goes to leaf-rail0 port Ethernet4, which serves rail 0"], ..NONE },
        Case { what: "two NICs on one switch port", config_top: "inventory = \"cabling.toml\"\n", file: Some(("cabling.toml", ONE_PORT_TWO_NICS)), expect: &["cabling.toml:", "switch \"leaf-rail0\" port \"Ethernet0\" is cabled to two NICs: node \"node-01\" NIC mlx5_0 (eth0) and node \"node-01\" NIC mlx5_1 (eth1)"], ..NONE },
        Case { what: "the daemon's node not in the inventory", config_top: "inventory = \"nodes.toml\"\n", config_tables: "[[sensor]]\ntype = \"netlink_link\"\n", file: Some(("nodes.toml", OTHER_NODES)), expect: &["rocemend.toml:1:1", "node \"node-01\" is not in the inventory (1 node listed)", "did you mean \"node-02\"?"], ..NONE },
        // The fleet table: checked by `check` as `run` reads it.
        Case { what: "a `fleet.lease_ttl` under 2 s", config_tables: "[fleet]\netcd = [\"http://127.0.0.1:2379\"]\nidentity = \"n1\"\nlease_ttl = \"500ms\"\n", expect: &["rocemend.toml:", "fleet.lease_ttl = \"500ms\": etcd leases are whole seconds"], ..NONE },
        Case { what: "a `fleet.etcd` that is no URL", config_tables: "[fleet]\netcd = [\"127.0.0.1:2379\"]\nidentity = \"n1\"\n", expect: &["rocemend.toml:", "fleet.etcd: \"127.0.0.1:2379\" is not an http:// or https:// URL"], ..NONE },
        Case { what: "`fleet.shard` without a sensor that reads switches", config_tables: "[fleet]\netcd = [\"http://127.0.0.1:2379\"]\nidentity = \"agg-1\"\nshard = \"pod-a\"\n", expect: &["rocemend.toml:", "fleet.shard shares the switches the gnmi sensors read, and no [[sensor]] reads switches"], ..NONE },
        // Remote write: the receiver, the queue's bounds, the credentials.
        Case { what: "a `remote_write.url` that is no http URL", config_tables: "[remote_write]\nurl = \"ftp://tsdb/api/v1/write\"\n", expect: &["rocemend.toml:", "remote_write.url: URL \"ftp://tsdb/api/v1/write\" does not start with http:// or https://"], ..NONE },
        Case { what: "`remote_write` over https without `ca_file`", config_tables: "[remote_write]\nurl = \"https://tsdb.example/api/v1/write\"\n", expect: &["rocemend.toml:", "https needs ca_file to check the receiver"], ..NONE },
        Case { what: "a `remote_write.timeout` that is no duration", config_tables: "[remote_write]\nurl = \"http://127.0.0.1:9090/api/v1/write\"\ntimeout = \"soon\"\n", expect: &["rocemend.toml:", "remote_write.timeout"], ..NONE },
        Case { what: "a `remote_write.queue_capacity` below `max_samples_per_send`", config_tables: "[remote_write]\nurl = \"http://127.0.0.1:9090/api/v1/write\"\nqueue_capacity = 100\n", expect: &["rocemend.toml:", "remote_write.queue_capacity = 100: expected at least max_samples_per_send (2000)"], ..NONE },
        Case { what: "a `remote_write.max_backoff` below `min_backoff`", config_tables: "[remote_write]\nurl = \"http://127.0.0.1:9090/api/v1/write\"\nmin_backoff = \"1s\"\nmax_backoff = \"100ms\"\n", expect: &["rocemend.toml:", "remote_write.max_backoff = \"100ms\": expected at least min_backoff (\"1s\")"], ..NONE },
        Case { what: "a missing `remote_write.bearer_token_file`", config_tables: "[remote_write]\nurl = \"http://127.0.0.1:9090/api/v1/write\"\nbearer_token_file = \"no-such-token\"\n", expect: &["rocemend.toml:", "remote_write.bearer_token_file: ", "no-such-token: No such file"], ..NONE },
        Case { what: "a `remote_write.headers` entry the protocol sets", config_tables: "[remote_write]\nurl = \"http://127.0.0.1:9090/api/v1/write\"\n[remote_write.headers]\nContent-Type = \"text/plain\"\n", expect: &["rocemend.toml:", "remote_write.headers.Content-Type: the protocol sets this header itself"], ..NONE },
        Case { what: "a `remote_write.external_labels` name that is no label name", config_tables: "[remote_write]\nurl = \"http://127.0.0.1:9090/api/v1/write\"\n[remote_write.external_labels]\n\"bad-name\" = \"x\"\n", expect: &["rocemend.toml:", "remote_write.external_labels.bad-name: not a label name"], ..NONE },
    ]
}

/// The playbook: limits that switch safety off or contradict themselves, and routing mistakes.
#[rustfmt::skip]
fn playbook_cases() -> Vec<Case> {
    vec![
        // The playbook: limits that switch safety off or contradict themselves.
        Case { what: "`breaker.trip_after = 0`", playbook_tables: "[breaker]\ntrip_after = 0\n", expect: &["playbook.toml:", "breaker.trip_after: 0 means the circuit breaker never trips"], ..NONE },
        Case { what: "a breaker window of `\"0\"`", playbook_tables: "[breaker]\nwindow = \"0\"\n", expect: &["playbook.toml:", "breaker.window"], ..NONE },
        Case { what: "`target.max_per_window = 0`", playbook_tables: "[target]\nmax_per_window = 0\n", expect: &["playbook.toml:", "target.max_per_window"], ..NONE },
        Case { what: "`limits.max_rails_per_plane = 0`", playbook_tables: "[limits]\nmax_rails_per_plane = 0\n", expect: &["playbook.toml:", "limits.max_rails_per_plane"], ..NONE },
        Case { what: "a cooldown longer than its window", playbook_tables: "[target]\ncooldown = \"2h\"\nwindow = \"1m\"\n", expect: &["playbook.toml:", "is longer than the target window"], ..NONE },
        Case { what: "`action_timeout = \"0\"`", playbook_top: "action_timeout = \"0\"\n", expect: &["playbook.toml:", "action_timeout"], ..NONE },
        Case { what: "`retry.attempts = 4e9`", playbook_tables: "[retry]\nattempts = 4000000000\n", expect: &["playbook.toml:", "attempts"], ..NONE },
        Case { what: "a `kubernetes_condition.heartbeat` of a second", playbook_tables: "[kubernetes_condition]\napi_server = \"http://127.0.0.1:8001\"\nheartbeat = \"1s\"\n", expect: &["playbook.toml:", "kubernetes_condition.heartbeat = \"1s\": expected 10s to 1h"], ..NONE },
        Case { what: "`kubernetes_condition` over https without `ca_file`", playbook_tables: "[kubernetes_condition]\napi_server = \"https://10.0.0.1:6443\"\n", expect: &["playbook.toml:", "kubernetes_condition: an https api_server needs ca_file"], ..NONE },
        Case { what: "a missing `kubernetes_condition.token_file`", playbook_tables: "[kubernetes_condition]\napi_server = \"http://127.0.0.1:8001\"\ntoken_file = \"no-such-token\"\n", expect: &["playbook.toml:", "kubernetes_condition.token_file ", "no-such-token: No such file"], ..NONE },
        // The playbook: routing mistakes.
        Case { what: "an unknown rule in `[rule.NAME]`", playbook_tables: "[rule.link-flaps]\nmode = \"off\"\n", expect: &["playbook.toml:", "[rule.link-flaps] names no rule", "did you mean \"link-flap\"?"], ..NONE },
        Case { what: "an unknown kind in `[[approval]]`", playbook_tables: "[[approval]]\nactions = [\"node.cordn\"]\n", expect: &["playbook.toml:", "approval: no rule proposes \"node.cordn\"", "did you mean \"node.cordon\"?"], ..NONE },
        Case { what: "a `[[canary]]` judged by a window its rule does not have", playbook_tables: "[[canary]]\nactions = [\"ecmp.widen_hash\"]\nafter = \"45s\"\nworse = \"skew\"\n", expect: &["playbook.toml:", "canary.worse: rule \"ecmp-imbalance\"", "no window \"skew\"", "spread"], ..NONE },
        Case { what: "a `[[canary]]` judged at once", playbook_tables: "[[canary]]\nactions = [\"ecmp.widen_hash\"]\nafter = \"0s\"\nworse = \"spread\"\n", expect: &["canary[0].after = 0"], ..NONE },
        Case { what: "an `[[expect]]` watching a window its rule does not have", playbook_tables: "[[expect]]\nactions = [\"ecn.lower\"]\nworse = [\"marks_per_s\", \"paused\"]\n", expect: &["playbook.toml:", "expect.worse: rule \"switch-egress-congestion\"", "no window \"paused\"", "marks_per_s"], ..NONE },
        Case { what: "an `[[expect]]` reading the jobs' step time at once", playbook_tables: "[[expect]]\nactions = [\"rail.drain\"]\nworse = [\"job.step_time\"]\nsettle = \"0s\"\n", expect: &["expect[0].settle = 0"], ..NONE },
        Case { what: "an `[[expect]] worse` naming neither a window nor a job signal", playbook_tables: "[[expect]]\nactions = [\"rail.drain\"]\nworse = [\"job.step\"]\n", expect: &["expect.worse: rule \"symbol-errors\"", "no window \"job.step\"", "or a job signal: job.step_time"], ..NONE },
        Case { what: "a rule enforced on a canary group that does not exist", playbook_tables: "[canary_groups.rack-a]\nrack = \"rack-a\"\n\n[rule.link-flap]\nenforce_on = \"rack-b\"\n", expect: &["playbook.toml:", "enforce_on = \"rack-b\" (rule link-flap) names no canary group (the [canary_groups]: rack-a)"], ..NONE },
        Case { what: "a canary group with no label", playbook_tables: "[canary_groups.everyone]\n", expect: &["playbook.toml:", "canary_groups.everyone has no label: it would hold the whole fleet"], ..NONE },
        Case { what: "a rule enforced on two canary groups", playbook_tables: "[canary_groups.rack-a]\nrack = \"rack-a\"\n\n[canary_groups.pod-2]\npod = \"pod-2\"\n\n[rule.pfc-storm]\nenforce_on = \"rack-a\"\n\n[[ladder]]\nrules = [\"pfc-storm\"]\nrungs = [\"pfcwd.escalate\", \"link.isolate\"]\nenforce_on = \"pod-2\"\n", expect: &["playbook.toml:", "rule pfc-storm is enforced on two canary groups, rack-a and pod-2: name one"], ..NONE },
        Case { what: "an `[[expect]]` with no time to work", playbook_tables: "[[expect]]\nactions = [\"ecn.lower\"]\nwithin = \"0s\"\n", expect: &["expect[0].within = 0"], ..NONE },
        Case { what: "an unknown kind in `[[expect]]`", playbook_tables: "[[expect]]\nactions = [\"ecn.lowr\"]\n", expect: &["playbook.toml:", "expect: no rule proposes \"ecn.lowr\"", "did you mean \"ecn.lower\"?"], ..NONE },
        Case { what: "a `[[ladder]]` rung its rule has no action for", playbook_tables: "[[ladder]]\nrules = [\"pfc-storm\"]\nrungs = [\"pfcwd.escalate\", \"link.isolate\"]\n", expect: &["playbook.toml:", "ladder.rungs: rule \"pfc-storm\"", "has no action for rung \"link.isolate\" (its actions: pfcwd.escalate)"], ..NONE },
        Case { what: "a `[[ladder]]` of one rung", playbook_tables: "[[ladder]]\nrules = [\"pfc-storm\"]\nrungs = [\"pfcwd.escalate\"]\n", expect: &["playbook.toml:", "ladder[0].rungs has 1 rung(s): a ladder needs at least two"], ..NONE },
        Case { what: "a `[[ladder]]` for a rule the directory lacks", playbook_tables: "[[ladder]]\nrules = [\"pfc-strom\"]\nrungs = [\"pfcwd.escalate\", \"link.isolate\"]\n", expect: &["playbook.toml:", "ladder.rules: no enabled rule \"pfc-strom\""], ..NONE },
        Case { what: "an unknown kind in `[undo]`", playbook_tables: "[undo]\non_resolve = [\"ecn.lowr\"]\n", expect: &["playbook.toml:", "undo.on_resolve: no rule proposes \"ecn.lowr\"", "did you mean \"ecn.lower\"?"], ..NONE },
        Case { what: "`handles = [\"*\", \"\"]`", actuators: Some("[[actuator]]\nname = \"all\"\ntype = \"log\"\nhandles = [\"*\", \"\"]\n"), expect: &["playbook.toml:", "\"\" is not an action kind"], ..NONE },
        Case {
            what: "two actuators for `pfcwd.*`",
            actuators: Some(TWO_PFCWD),
            expect: &["playbook.toml:", "actuator \"pfcwd-2\": \"pfcwd.*\" never reaches it"],
            ..NONE
        },
        Case { what: "no actuator for `node.*`", actuators: Some(WITHOUT_NODE), expect: &["playbook.toml:", "rule \"gpu-xid\"", "proposes \"node.cordon\", which no actuator handles"], ..NONE },
        Case { what: "`handles = [\"lnk.*\"]`", actuators: Some(LNK), expect: &["playbook.toml:", "rule \"link-flap\"", "proposes \"link.isolate\", which no actuator handles: is \"lnk.*\" meant to be \"link.*\"?"], ..NONE },
        Case { what: "a pfcwd actuator without `[gnmi]`", actuators: Some(PFCWD_NO_GNMI), expect: &["playbook.toml:", "rule \"pfc-storm\"", "proposes \"pfcwd.escalate\", routed to actuator \"pfcwd\"", "no [gnmi] settings"], ..NONE },
        Case { what: "an actuator of an unknown type", actuators: Some(TELEPORT), expect: &["playbook.toml:", "unknown kind \"teleport\""], ..NONE },
        Case { what: "an actuator for another node", actuators: Some(OTHER_NODE), expect: &["playbook.toml:", "node = \"node-99\" is not this daemon's node \"node-01\""], ..NONE },
    ]
}

/// What only the machine `check` runs on can tell: files and directories
/// that are not what the config takes them for, and a port another process
/// holds (`BUSY` is a port this test holds while it runs).
#[rustfmt::skip]
fn machine_cases() -> Vec<Case> {
    vec![
        Case { what: "`record` is a directory", config_top: "record = \"a-dir\"\n", expect: &["rocemend.toml:4:1", "record ", "a-dir: is a directory"], ..NONE },
        Case { what: "`record` in a directory that is a file", config_top: "record = \"a-file/rec.jsonl\"\n", expect: &["rocemend.toml:4:1", "its directory", "a-file: is not a directory"], ..NONE },
        Case { what: "`state_dir` in a directory that is a file", config_top: "state_dir = \"a-file/deeper/state\"\n", expect: &["rocemend.toml:3:1", "cannot be created"], ..NONE },
        Case { what: "a `metrics.listen` address in use", config_tables: "[metrics]\nlisten = \"127.0.0.1:BUSY\"\n", expect: &["rocemend.toml:7:1", "metrics.listen \"127.0.0.1:", "already in use by another process"], ..NONE },
        Case { what: "a `control.socket` that is a plain file", config_tables: "[control]\nsocket = \"a-file\"\n", expect: &["rocemend.toml:7:1", "a-file", "not a socket"], ..NONE },
        Case { what: "a sensor's `max_series = 0`", config_tables: "[[sensor]]\ntype = \"netlink_link\"\nmax_series = 0\n", expect: &["rocemend.toml:8:1", "sensor \"netlink_link\": max_series = 0", "expected at least 1"], ..NONE },
        Case { what: "a replay sensor's recording is missing", config_tables: "[[sensor]]\ntype = \"replay\"\npath = \"no-such.jsonl\"\n", expect: &["rocemend.toml:6:1", "no-such.jsonl\" names no file"], ..NONE },
        Case { what: "a replay sensor's negative speed", config_tables: "[[sensor]]\ntype = \"replay\"\npath = \"a-file\"\nspeed = -1.0\n", expect: &["rocemend.toml:6:1", "speed"], ..NONE },
        Case { what: "an `engine.shutdown_timeout` of 0", config_tables: "[engine]\nshutdown_timeout = \"0s\"\n", expect: &["rocemend.toml:", "engine.shutdown_timeout", "expected 1s to 10m"], ..NONE },
        Case { what: "an `engine.rule_cost_budget` over a core", config_tables: "[engine]\nrule_cost_budget = 2.0\n", expect: &["rocemend.toml:", "engine.rule_cost_budget = 2"], ..NONE },
        Case { what: "an `engine.tick` over a minute", config_tables: "[engine]\ntick = \"2m\"\n", expect: &["rocemend.toml:", "expected 1ms to 60s"], ..NONE },
        Case { what: "a lone word as `log.level`", config_tables: "[log]\nlevel = \"verbose\"\n", expect: &["rocemend.toml:", "log.level \"verbose\""], ..NONE },
        Case { what: "a missing playbook", config_top: "playbook = \"no-such-playbook.toml\"\n", expect: &["rocemend.toml:3:1", "playbook ", "no-such-playbook.toml: no such file"], ..NONE },
    ]
}

/// The inventory's own checks (engine/src/topology/checks.rs), each reached
/// through the config that names it.
#[rustfmt::skip]
fn inventory_cases() -> Vec<Case> {
    let inv = |text: &'static str| Some(("cabling.toml", text));
    let top = "inventory = \"cabling.toml\"\n";
    vec![
        Case { what: "a NIC on a leaf of another plane", config_top: top, file: inv(WRONG_PLANE), expect: &["cabling.toml:", "is on plane 0, but its cable goes to leaf-rail0 port Ethernet0, which is on plane 1"], ..NONE },
        Case { what: "a node with an empty name", config_top: top, file: inv("[[node]]\nname = \"\"\n"), expect: &["cabling.toml:2:", "a node has an empty name"], ..NONE },
        Case { what: "a switch listed twice", config_top: top, file: inv("[[switch]]\nname = \"leaf-rail0\"\nrole = \"leaf\"\n[[switch]]\nname = \"leaf-rail0\"\nrole = \"leaf\"\n"), expect: &["cabling.toml:5:", "switch \"leaf-rail0\" is listed twice"], ..NONE },
        Case { what: "a GPU index listed twice", config_top: top, file: inv("[[node]]\nname = \"node-01\"\n[[node.gpu]]\nindex = 0\n[[node.gpu]]\nindex = 0\n"), expect: &["cabling.toml:6:", "node \"node-01\": GPU index 0 is listed twice"], ..NONE },
        Case { what: "a device listed twice on a node", config_top: top, file: inv(TWO_ETH0), expect: &["cabling.toml:", "node \"node-01\": device \"eth0\" is listed twice"], ..NONE },
        Case { what: "a NIC naming a GPU the node does not list", config_top: top, file: inv(UNLISTED_GPU), expect: &["cabling.toml:", "names GPU 3, which the node does not list"], ..NONE },
        Case { what: "a NIC cabled to a switch not listed", config_top: top, file: inv(UNLISTED_LEAF), expect: &["cabling.toml:", "is cabled to switch \"leaf-rial0\", which is not listed", "did you mean \"leaf-rail0\"?"], ..NONE },
        Case { what: "a NIC cabled to a spine", config_top: top, file: inv(TO_SPINE), expect: &["cabling.toml:", "a spine: NICs are cabled to leaves"], ..NONE },
        Case { what: "a misspelt inventory key", config_top: top, file: inv("[[switch]]\nname = \"leaf-rail0\"\nrol = \"leaf\"\n"), expect: &["cabling.toml:3:1", "rol"], ..NONE },
    ]
}

/// Limits that all but switch a safety off: refused unless `allow_unsafe`,
/// with the hint only where `allow_unsafe` would let them through.
#[rustfmt::skip]
fn unsafe_cases() -> Vec<Case> {
    const HINT: &str = "(set `allow_unsafe = true` if this is meant)";
    vec![
        Case { what: "`target.cooldown = \"0\"`", playbook_tables: "[target]\ncooldown = \"0\"\n", expect: &["playbook.toml:5:1", "target.cooldown: a cooldown of 0", HINT], ..NONE },
        Case { what: "`limits.window = \"1ms\"`", playbook_tables: "[limits]\nwindow = \"1ms\"\n", expect: &["playbook.toml:5:1", "limits.window: a window of 1ms", HINT], ..NONE },
        Case { what: "`limits.window = \"0\"`", playbook_tables: "[limits]\nwindow = \"0\"\n", expect: &["playbook.toml:5:1", "every per-window limit is off", HINT], ..NONE },
        Case { what: "`limits.max_cordon_percent = 100`", playbook_tables: "[limits]\nmax_cordon_percent = 100.0\n", expect: &["playbook.toml:5:1", "more than half the fleet may be cordoned at once", HINT], ..NONE },
        Case { what: "`limits.max_cordon_percent = 150` (no hint: never allowed)", playbook_tables: "[limits]\nmax_cordon_percent = 150.0\n", expect: &["playbook.toml:5:1", "limits.max_cordon_percent: 150: expected a percentage, 0 to 100"], ..NONE },
        Case { what: "`limits.max_cordons = 0`", playbook_tables: "[limits]\nmax_cordons = 0\n", expect: &["playbook.toml:5:1", "limits.max_cordons: 0 holds every cordon", HINT], ..NONE },
        Case { what: "`limits.max_jobs_touched = -1` (no hint: never allowed)", playbook_tables: "[limits]\nmax_jobs_touched = -1\n", expect: &["playbook.toml:5:20", "limits.max_jobs_touched: -1: expected a number of running jobs, 0 to 4294967295"], ..NONE },
        Case { what: "`limits.per_kind` of 0", playbook_tables: "[limits]\nper_kind = { \"ecn.lower\" = 0 }\n", expect: &["playbook.toml:5:", "0 holds every ecn.lower", HINT], ..NONE },
        Case { what: "`breaker.trip_after = 1000000`", playbook_tables: "[breaker]\ntrip_after = 1000000\n", expect: &["playbook.toml:5:1", "breaker.trip_after: 1000000: the breaker would trip only after the damage is done", HINT], ..NONE },
        Case { what: "`destructive = false` on the cordon actuator", actuators: Some(HARMLESS_CORDON), expect: &["playbook.toml:", "actuator \"cordon\": destructive = false, but its type declares node.cordon", HINT], ..NONE },
        Case { what: "an approval `timeout = \"0\"`", playbook_tables: "[[approval]]\nactions = [\"node.cordon\"]\ntimeout = \"0\"\n", expect: &["playbook.toml:6:1", "approval.timeout = \"0\": a request would expire as it is made"], ..NONE },
        Case { what: "`retry.attempts = 0` (no hint: never allowed)", playbook_tables: "[retry]\nattempts = 0\n", expect: &["playbook.toml:5:1", "retry.attempts: 0: expected 1 to 10"], ..NONE },
        Case { what: "a misspelt playbook key", playbook_top: "mdoe = \"enforce\"\n", expect: &["playbook.toml:4:1", "unknown field `mdoe`"], ..NONE },
        Case { what: "an actuator defined twice", actuators: Some(TWICE), expect: &["playbook.toml:", "actuator \"link\" is defined twice"], ..NONE },
        Case { what: "an actuator that handles nothing", actuators: Some("[[actuator]]\nname = \"none\"\ntype = \"log\"\nhandles = []\n"), expect: &["playbook.toml:7:1", "actuator \"none\" handles no action kind"], ..NONE },
    ]
}

/// Rules whose action templates name a label their subjects do not carry,
/// and other rule mistakes.
#[rustfmt::skip]
fn template_cases() -> Vec<Case> {
    vec![
        Case { what: "a `{netdev}` template in a rule grouped by node", rule: Some(("by_node.rhai", NETDEV_BY_NODE)), expect: &["by_node.rhai:8:", "action \"link.isolate\": {netdev} is not a label of this rule's subjects: it groups by [\"node\"]"], ..NONE },
        Case { what: "a misspelt template label", rule: Some(("typo.rhai", NODEE)), expect: &["typo.rhai:8:", "{nodee} is not a label of this rule's subjects"], ..NONE },
        Case { what: "a rule that does not compile", rule: Some(("syntax.rhai", "fn fire(w) { w.n > }\n#{ name: \"syntax\" }\n")), expect: &["syntax.rhai:1:"], ..NONE },
        Case { what: "a rule without `fn fire`", rule: Some(("nofire.rhai", "#{ name: \"nofire\", select: [\"link_carrier_down_count\"], windows: #{ n: last(\"link_carrier_down_count\") } }\n")), expect: &["nofire.rhai:1:", "missing `fn fire(w)`"], ..NONE },
        Case { what: "a rule with an unknown window function", rule: Some(("window.rhai", "fn fire(w) { w.n > 1.0 }\n#{ name: \"window\", select: [\"link_carrier_down_count\"], windows: #{ n: lastt(\"link_carrier_down_count\") } }\n")), expect: &["window.rhai:2:", "lastt"], ..NONE },
    ]
}

/// Switches named outside the inventory, and broken rules.
#[rustfmt::skip]
fn switch_and_rule_cases() -> Vec<Case> {
    vec![
        // Switches: written once, in the inventory; named everywhere else.
        Case {
            what: "a switch the inventory does not have",
            config_top: "inventory = \"inventory.toml\"\n",
            actuators: Some(PFCWD_NAMED_TYPO),
            expect: &["playbook.toml:", "gnmi.switches: switch \"leaf-rial0\" is not in the inventory; did you mean \"leaf-rail0\"?"],
            ..NONE
        },
        Case { what: "a switch named without an inventory", actuators: Some(PFCWD_NAMED), expect: &["playbook.toml:", "is named, but there is no inventory"], ..NONE },
        Case {
            what: "a named switch with access settings in the playbook",
            config_top: "inventory = \"inventory.toml\"\n",
            actuators: Some(PFCWD_NAMED_STYLED),
            expect: &["playbook.toml:", "switches named from the inventory are reached as the inventory says"],
            ..NONE
        },
        Case {
            what: "a gnmi sensor target the inventory does not have",
            config_top: "inventory = \"inventory.toml\"\n",
            config_tables: "[[sensor]]\ntype = \"gnmi\"\npresets = [\"sonic_pfc\"]\n[[sensor.targets]]\nname = \"leaf-rial0\"\n",
            expect: &["rocemend.toml:", "switch \"leaf-rial0\" is not in the inventory; did you mean \"leaf-rail0\"?"],
            ..NONE
        },
        Case {
            what: "an inline gNMI password",
            config_tables: "[[sensor]]\ntype = \"gnmi\"\npresets = [\"sonic_pfc\"]\n[[sensor.targets]]\nname = \"leaf-rail0\"\naddress = \"127.0.0.1:1\"\npassword = \"s3cret\"\n",
            expect: &["rocemend.toml:", "an inline username or password is refused"],
            ..NONE
        },
        // Rules.
        Case {
            what: "a rule with three mistakes",
            rule: Some(("broken.rhai", "#{\n  name: \"broken\",\n  selct: [\"x\"],\n  severity: \"warn\",\n  cooldown: \"10\",\n}\n")),
            expect: &["broken.rhai:3:", "selct", "broken.rhai:4:", "severity", "broken.rhai:5:", "cooldown"],
            ..NONE
        },
        Case {
            what: "two rules of one name",
            rule: Some(("again.rhai", "fn fire(w) { w.n > 1.0 }\n#{ name: \"link-flap\", select: [\"link_carrier_down_count\"], windows: #{ n: last(\"link_carrier_down_count\") } }\n")),
            expect: &[".rhai:", "rule name \"link-flap\" is also used by"],
            ..NONE
        },
    ]
}

const TWO_PFCWD: &str = "\
[[actuator]]\nname = \"pfcwd\"\ntype = \"log\"\nhandles = [\"pfcwd.*\"]\n\
[[actuator]]\nname = \"pfcwd-2\"\ntype = \"log\"\nhandles = [\"pfcwd.*\"]\n\
[[actuator]]\nname = \"rest\"\ntype = \"log\"\nhandles = [\"*\"]\n";

const WITHOUT_NODE: &str = "\
[[actuator]]\nname = \"pfcwd\"\ntype = \"log\"\nhandles = [\"pfcwd.*\"]\n\
[[actuator]]\nname = \"ecn\"\ntype = \"log\"\nhandles = [\"ecn.*\"]\n\
[[actuator]]\nname = \"link\"\ntype = \"log\"\nhandles = [\"link.*\"]\n\
[[actuator]]\nname = \"rail\"\ntype = \"log\"\nhandles = [\"rail.*\"]\n\
[[actuator]]\nname = \"nccl\"\ntype = \"log\"\nhandles = [\"nccl.*\"]\n\
[[actuator]]\nname = \"ecmp\"\ntype = \"log\"\nhandles = [\"ecmp.*\"]\n\
[[actuator]]\nname = \"notify\"\ntype = \"log\"\nhandles = [\"webhook.*\"]\n";

const LNK: &str = "\
[[actuator]]\nname = \"pfcwd\"\ntype = \"log\"\nhandles = [\"pfcwd.*\", \"ecn.*\", \"rail.*\", \"node.*\", \"nccl.*\", \"ecmp.*\", \"webhook.*\"]\n\
[[actuator]]\nname = \"link\"\ntype = \"log\"\nhandles = [\"lnk.*\"]\n";

const PFCWD_NO_GNMI: &str = "\
[[actuator]]\nname = \"pfcwd\"\ntype = \"pfcwd\"\nhandles = [\"pfcwd.*\"]\n[actuator.host]\nnetdevs = [\"eth0\"]\n\
[[actuator]]\nname = \"rest\"\ntype = \"log\"\nhandles = [\"*\"]\n";

/// A pfcwd actuator naming `leaf-rail0` (or a typo of it) from the inventory.
const PFCWD_NAMED: &str = "\
[[actuator]]\nname = \"pfcwd\"\ntype = \"pfcwd\"\nhandles = [\"pfcwd.*\"]\n[actuator.gnmi]\nswitches = [\"leaf-rail0\"]\n\
[[actuator]]\nname = \"rest\"\ntype = \"log\"\nhandles = [\"*\"]\n";

const PFCWD_NAMED_TYPO: &str = "\
[[actuator]]\nname = \"pfcwd\"\ntype = \"pfcwd\"\nhandles = [\"pfcwd.*\"]\n[actuator.gnmi]\nswitches = [\"leaf-rial0\"]\n\
[[actuator]]\nname = \"rest\"\ntype = \"log\"\nhandles = [\"*\"]\n";

const PFCWD_NAMED_STYLED: &str = "\
[[actuator]]\nname = \"pfcwd\"\ntype = \"pfcwd\"\nhandles = [\"pfcwd.*\"]\n[actuator.gnmi]\nswitches = [\"leaf-rail0\"]\npath_style = \"auto\"\n\
[[actuator]]\nname = \"rest\"\ntype = \"log\"\nhandles = [\"*\"]\n";

/// leaf-rail0 serves rail 0; node-01's second NIC is on rail 1 but cabled to it.
const WRONG_RAIL: &str = "\
[[switch]]\nname = \"leaf-rail0\"\nrole = \"leaf\"\nrail = 0\n\
[[node]]\nname = \"node-01\"\n\
[[node.nic]]\nrdma_dev = \"mlx5_0\"\nnetdev = \"eth0\"\nrail = 0\nplane = 0\nswitch = \"leaf-rail0\"\nswitch_port = \"Ethernet0\"\n\
[[node.nic]]\nrdma_dev = \"mlx5_1\"\nnetdev = \"eth1\"\nrail = 1\nplane = 0\nswitch = \"leaf-rail0\"\nswitch_port = \"Ethernet4\"\n";

/// Both of node-01's NICs on leaf-rail0's Ethernet0.
const ONE_PORT_TWO_NICS: &str = "\
[[switch]]\nname = \"leaf-rail0\"\nrole = \"leaf\"\n\
[[node]]\nname = \"node-01\"\n\
[[node.nic]]\nrdma_dev = \"mlx5_0\"\nnetdev = \"eth0\"\nrail = 0\nplane = 0\nswitch = \"leaf-rail0\"\nswitch_port = \"Ethernet0\"\n\
[[node.nic]]\nrdma_dev = \"mlx5_1\"\nnetdev = \"eth1\"\nrail = 0\nplane = 0\nswitch = \"leaf-rail0\"\nswitch_port = \"Ethernet0\"\n";

/// An inventory of node-02 alone (the cases' daemon is node-01).
const OTHER_NODES: &str = "[[node]]\nname = \"node-02\"\n";

/// leaf-rail0 is on plane 1; node-01's NIC cabled to it on plane 0.
const WRONG_PLANE: &str = "\
[[switch]]\nname = \"leaf-rail0\"\nrole = \"leaf\"\nrail = 0\nplane = 1\n\
[[node]]\nname = \"node-01\"\n\
[[node.nic]]\nrdma_dev = \"mlx5_0\"\nnetdev = \"eth0\"\nrail = 0\nplane = 0\nswitch = \"leaf-rail0\"\nswitch_port = \"Ethernet0\"\n";

/// node-01 lists eth0 for two NICs.
const TWO_ETH0: &str = "\
[[node]]\nname = \"node-01\"\n\
[[node.nic]]\nrdma_dev = \"mlx5_0\"\nnetdev = \"eth0\"\nrail = 0\nplane = 0\n\
[[node.nic]]\nrdma_dev = \"mlx5_1\"\nnetdev = \"eth0\"\nrail = 1\nplane = 0\n";

/// A NIC naming GPU 3 of a node that lists GPU 0 only.
const UNLISTED_GPU: &str = "\
[[node]]\nname = \"node-01\"\n[[node.gpu]]\nindex = 0\n\
[[node.nic]]\nrdma_dev = \"mlx5_0\"\nnetdev = \"eth0\"\nrail = 0\nplane = 0\ngpu = 3\n";

/// A NIC cabled to a misspelt leaf.
const UNLISTED_LEAF: &str = "\
[[switch]]\nname = \"leaf-rail0\"\nrole = \"leaf\"\n\
[[node]]\nname = \"node-01\"\n\
[[node.nic]]\nrdma_dev = \"mlx5_0\"\nnetdev = \"eth0\"\nrail = 0\nplane = 0\nswitch = \"leaf-rial0\"\nswitch_port = \"Ethernet0\"\n";

/// A NIC cabled to a spine.
const TO_SPINE: &str = "\
[[switch]]\nname = \"spine0\"\nrole = \"spine\"\n\
[[node]]\nname = \"node-01\"\n\
[[node.nic]]\nrdma_dev = \"mlx5_0\"\nnetdev = \"eth0\"\nrail = 0\nplane = 0\nswitch = \"spine0\"\nswitch_port = \"Ethernet0\"\n";

/// The standard actuators, the cordon one declared harmless: it is a `log`
/// actuator acting like the cordon type, whose kinds are destructive.
const HARMLESS_CORDON: &str = "\
[[actuator]]\nname = \"cordon\"\ntype = \"log\"\nhandles = [\"node.*\"]\nlike = \"cordon\"\ndestructive = false\n\
[[actuator]]\nname = \"rest\"\ntype = \"log\"\nhandles = [\"*\"]\n";

const TWICE: &str = "\
[[actuator]]\nname = \"link\"\ntype = \"log\"\nhandles = [\"link.*\"]\n\
[[actuator]]\nname = \"link\"\ntype = \"log\"\nhandles = [\"*\"]\n";

/// A rule grouped by node whose action names the netdev: a node's subject
/// covers every netdev of it, so there is no one to isolate.
const NETDEV_BY_NODE: &str = "fn fire(w) { w.n > 1.0 }\n#{\n  name: \"by-node\",\n  select: [\"link_carrier_down_count\"],\n  group_by: [\"node\"],\n  windows: #{ n: last(\"link_carrier_down_count\") },\n  actions: [\n    #{ action: \"link.isolate\", target: #{ node: \"{node}\", netdev: \"{netdev}\" } },\n  ],\n}\n";

/// A rule grouped by node and netdev whose action misspells `node`.
const NODEE: &str = "fn fire(w) { w.n > 1.0 }\n#{\n  name: \"typo\",\n  select: [\"link_carrier_down_count\"],\n  group_by: [\"node\", \"netdev\"],\n  windows: #{ n: last(\"link_carrier_down_count\") },\n  actions: [\n    #{ action: \"link.isolate\", target: #{ node: \"{nodee}\", netdev: \"{netdev}\" } },\n  ],\n}\n";

const TELEPORT: &str = "\
[[actuator]]\nname = \"beam\"\ntype = \"teleport\"\nhandles = [\"*\"]\n";

const OTHER_NODE: &str = "\
[[actuator]]\nname = \"link\"\ntype = \"link\"\nhandles = [\"link.*\"]\nnode = \"node-99\"\n\
[[actuator]]\nname = \"rest\"\ntype = \"log\"\nhandles = [\"*\"]\n";

/// Writes the case's files into `dir` and returns the config's path.
fn write(dir: &Path, case: &Case) -> std::path::PathBuf {
    let rules = dir.join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    for entry in std::fs::read_dir(repo("rules")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rhai") {
            std::fs::copy(&path, rules.join(path.file_name().unwrap())).unwrap();
        }
    }
    if let Some((name, source)) = case.rule {
        std::fs::write(rules.join(name), source).unwrap();
    }
    if let Some((name, text)) = case.file {
        std::fs::write(dir.join(name), text).unwrap();
    }
    std::fs::write(dir.join("a-file"), "").unwrap();
    std::fs::create_dir_all(dir.join("a-dir")).unwrap();
    // The inventory the switch cases name (`inventory = "inventory.toml"`).
    std::fs::write(
        dir.join("inventory.toml"),
        "[[switch]]\nname = \"leaf-rail0\"\nrole = \"leaf\"\naddress = \"127.0.0.1:1\"\n",
    )
    .unwrap();
    let actuators = case.actuators.unwrap_or(ACTUATORS);
    let playbook = format!(
        "name = \"p\"\nmode = \"enforce\"\nrules = \"rules\"\n{}{}{actuators}",
        case.playbook_top, case.playbook_tables
    );
    std::fs::write(dir.join("playbook.toml"), playbook).unwrap();
    let state = if case.config_top.contains("state_dir") { String::new() } else { "state_dir = \"state\"\n".into() };
    // Reload polling is off unless the case sets it: a refused config never
    // gets that far, and a wrongly accepted one is stopped anyway.
    let poll = if case.config_tables.contains("reload_poll") { "" } else { "reload_poll = \"0\"\n" };
    let playbook = if case.config_top.contains("playbook") { "" } else { "playbook = \"playbook.toml\"\n" };
    let config = format!(
        "node = \"node-01\"\n{state}{playbook}{}[engine]\n{poll}{}",
        case.config_top,
        case.config_tables.replace("[engine]\n", "").replace("BUSY", &busy_port().to_string())
    );
    let path = dir.join("rocemend.toml");
    std::fs::write(&path, config).unwrap();
    path
}

/// A port this test holds for as long as it runs: `127.0.0.1:BUSY` in a
/// case is an address in use by another process.
fn busy_port() -> u16 {
    static HELD: std::sync::OnceLock<std::net::TcpListener> = std::sync::OnceLock::new();
    HELD.get_or_init(|| std::net::TcpListener::bind("127.0.0.1:0").unwrap()).local_addr().unwrap().port()
}

/// The first of `fragments` that `out` does not contain after the ones
/// before it.
fn first_missing<'a>(out: &str, fragments: &[&'a str]) -> Option<&'a str> {
    let mut rest = out;
    for fragment in fragments {
        let Some(at) = rest.find(fragment) else { return Some(fragment) };
        rest = &rest[at + fragment.len()..];
    }
    None
}

/// `check` and `run` on one case: both exit 2, and the refusal of each. A
/// `run` that accepts the config starts the daemon: it is stopped after
/// [`common::WAIT`] and the case fails.
fn refusals(config: &Path) -> Result<(String, String), String> {
    let check = Command::new(bin()).args(["check", "--config"]).arg(config).output().unwrap();
    if check.status.code() != Some(2) {
        return Err(format!("check exits {:?}:\n{}", check.status.code(), text(&check)));
    }
    let mut run = Command::new(bin())
        .args(["run", "--config"])
        .arg(config)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while run.try_wait().unwrap().is_none() {
        if started.elapsed() > common::WAIT {
            run.kill().unwrap();
            return Err(format!("run accepted it (check refused it):\n{}", text(&check)));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let run = run.wait_with_output().unwrap();
    if run.status.code() != Some(2) {
        return Err(format!("run exits {:?}:\n{}", run.status.code(), text(&run)));
    }
    Ok((text(&check), text(&run)))
}

/// The first line of `out` naming the first expected fragment, the temp
/// directory cut off.
fn message(out: &str, case: &Case, dir: &Path) -> String {
    let dir = format!("{}/", dir.display());
    let line = out
        .lines()
        .find(|l| l.contains(case.expect[0]) && case.expect.get(1).is_none_or(|f| out.contains(f)))
        .unwrap_or("");
    let line = line.trim_start_matches("error  ").trim_start_matches("error: ").replace(&dir, "").replace('|', "\\|");
    // The held port differs from run to run; the docs show its placeholder.
    line.replace(&format!(":{}", busy_port()), ":BUSY").replace(&format!(" {}", busy_port()), " BUSY")
}

#[test]
fn the_base_config_passes_check() {
    let tmp = tempfile::tempdir().unwrap();
    let config = write(tmp.path(), &NONE);
    let out = Command::new(bin()).args(["check", "--config"]).arg(&config).output().unwrap();
    assert!(out.status.success(), "the base of every case must be valid:\n{}", text(&out));
    assert!(text(&out).contains("rules "), "{}", text(&out));
}

/// One case: the docs' row, or why it fails.
fn one(case: &Case) -> Result<String, String> {
    let tmp = tempfile::tempdir().unwrap();
    let config = write(tmp.path(), case);
    let (check, run) = refusals(&config).map_err(|failure| format!("{}: {failure}", case.what))?;
    for (verb, out) in [("check", &check), ("run", &run)] {
        if let Some(fragment) = first_missing(out, case.expect) {
            return Err(format!("{}: `{verb}` does not say {fragment:?} (in order):\n{out}", case.what));
        }
    }
    Ok(format!("| {} | `{}` |", case.what, message(&check, case, tmp.path())))
}

/// How many cases run at once: each spawns `check` and `run`, which read
/// the standard rules; four keep two cores busy without crowding them.
const PARALLEL: usize = 4;

#[test]
fn every_bad_input_is_refused_by_check_and_run_with_the_same_message() {
    let cases = cases();
    let results: Vec<Result<String, String>> = std::thread::scope(|scope| {
        let chunks: Vec<_> = cases
            .chunks(cases.len().div_ceil(PARALLEL))
            .map(|chunk| scope.spawn(move || chunk.iter().map(one).collect::<Vec<_>>()))
            .collect();
        chunks.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    let (rows, failures): (Vec<_>, Vec<_>) = results.into_iter().partition(Result::is_ok);
    let rows: Vec<String> = rows.into_iter().map(Result::unwrap).collect();
    let failures: Vec<String> = failures.into_iter().map(Result::unwrap_err).collect();
    assert!(failures.is_empty(), "{} of {} cases fail:\n\n{}", failures.len(), cases.len(), failures.join("\n\n"));
    assert!(cases.len() >= 80, "the corpus keeps at least 80 cases; it has {}", cases.len());
    let table = format!("| input | `check` and `run` say |\n|---|---|\n{}", rows.join("\n"));
    let docs = repo("docs/config.md");
    let text = std::fs::read_to_string(&docs).unwrap();
    const BEGIN: &str = "<!-- BEGIN bad-inputs (generated by tests/bad_configs.rs) -->";
    const END: &str = "<!-- END bad-inputs -->";
    let (head, rest) = text.split_once(BEGIN).expect("docs/config.md has the bad-inputs BEGIN marker");
    let (_, tail) = rest.split_once(END).expect("docs/config.md has the bad-inputs END marker");
    let want = format!("{head}{BEGIN}\n{table}\n{END}{tail}");
    if std::env::var_os("ROCEMEND_BLESS_DOCS").is_some() {
        std::fs::write(&docs, &want).unwrap();
    } else {
        assert!(text == want, "docs/config.md's table of bad inputs is out of date; regenerate it with\n  ROCEMEND_BLESS_DOCS=1 cargo test --test it -- bad_configs::\n{table}");
    }
}

/// The problems `check` printed, one per `error  file:line:col: …` line.
fn problem_lines(out: &str) -> Vec<&str> {
    out.lines().filter_map(|l| l.strip_prefix("error  ")).collect()
}

/// Whether `line` starts with `file:LINE:COL: ` for a file named `file`.
fn placed_in(line: &str, file: &str) -> bool {
    let Some((path, rest)) = line.split_once(&format!("{file}:")) else { return false };
    let mut parts = rest.splitn(3, ':');
    let numbers = [parts.next(), parts.next()].iter().all(|p| p.is_some_and(|n| n.parse::<u32>().is_ok_and(|n| n > 0)));
    !path.contains(' ') && numbers
}

/// Nine mistakes across the config, the inventory, the playbook and the rules (plus a
/// tenth): one `check` run names every one at its `file:line:col`.
const NINE: [(&str, &str); 10] = [
    ("rocemend.toml", "log.level \"loud\""),
    ("rocemend.toml", "engine.tick = \"0s\""),
    ("rocemend.toml", "record_keep = 0"),
    ("cabling.toml", "a node has an empty name"),
    ("cabling.toml", "GPU index 0 is listed twice"),
    ("playbook.toml", "breaker.trip_after: 0 means"),
    ("playbook.toml", "target.cooldown: a cooldown of 0"),
    ("broken.rhai", "unknown field `selct`"),
    ("broken.rhai", "cooldown"),
    ("by_node.rhai", "{netdev} is not a label of this rule's subjects"),
];

#[test]
fn one_check_run_reports_every_mistake_of_every_stage() {
    let tmp = tempfile::tempdir().unwrap();
    let case = Case {
        config_top: "inventory = \"cabling.toml\"\nrecord = \"rec/recording.jsonl\"\nrecord_keep = 0\n",
        config_tables: "[engine]\ntick = \"0s\"\n[log]\nlevel = \"loud\"\n",
        playbook_tables: "[breaker]\ntrip_after = 0\n[target]\ncooldown = \"0\"\n",
        file: Some((
            "cabling.toml",
            "[[node]]\nname = \"\"\n[[node]]\nname = \"node-01\"\n[[node.gpu]]\nindex = 0\n[[node.gpu]]\nindex = 0\n",
        )),
        rule: Some(("broken.rhai", "#{\n  name: \"broken\",\n  selct: [\"x\"],\n  cooldown: \"10\",\n}\n")),
        ..NONE
    };
    let config = write(tmp.path(), &case);
    std::fs::write(tmp.path().join("rules/by_node.rhai"), NETDEV_BY_NODE).unwrap();
    let out = Command::new(bin()).args(["check", "--config"]).arg(&config).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let problems = problem_lines(&stderr);
    for (file, fragment) in NINE {
        assert!(
            problems.iter().any(|p| placed_in(p, file) && p.contains(fragment)),
            "one check run does not name {fragment:?} at {file}:line:col:\n{stderr}"
        );
    }
    assert!(problems.len() >= NINE.len(), "{stderr}");

    // A config that does not parse at all still has its playbook, inventory and rules checked.
    let text_of = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("nod = \"misspelt\"\n{text_of}")).unwrap();
    let out = Command::new(bin()).args(["check", "--config"]).arg(&config).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let problems = problem_lines(&stderr);
    assert!(problems.iter().any(|p| placed_in(p, "rocemend.toml") && p.contains("unknown field `nod`")), "{stderr}");
    for (file, fragment) in NINE.iter().filter(|(file, _)| *file != "rocemend.toml") {
        assert!(
            problems.iter().any(|p| placed_in(p, file) && p.contains(fragment)),
            "past a config that does not parse, check does not name {fragment:?} at {file}:line:col:\n{stderr}"
        );
    }
}

#[test]
fn allow_unsafe_lets_the_dangerous_limits_through_and_check_lists_each() {
    let tmp = tempfile::tempdir().unwrap();
    let case = Case {
        playbook_top: "allow_unsafe = true\n",
        playbook_tables: "[target]\ncooldown = \"0\"\n[limits]\nwindow = \"1ms\"\nmax_cordon_percent = 100.0\n\
                          [breaker]\ntrip_after = 1000000\n",
        actuators: Some(HARMLESS_CORDON),
        ..NONE
    };
    let config = write(tmp.path(), &case);
    let out = Command::new(bin()).args(["check", "--config"]).arg(&config).output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for setting in
        ["target.cooldown", "limits.window", "limits.max_cordon_percent", "breaker.trip_after", "actuator \"cordon\""]
    {
        let listed = stdout.lines().any(|l| {
            l.starts_with("unsafe ") && l.contains(setting) && l.ends_with("(allowed by allow_unsafe = true)")
        });
        assert!(listed, "check does not list {setting} as allowed unsafe:\n{stdout}");
    }
    assert!(!stdout.contains("set `allow_unsafe = true`"), "no hint to set what is set:\n{stdout}");
}

/// `check` and `run` as user `nobody` (through `setpriv`, util-linux), from `dir`.
fn as_nobody(dir: &Path, verb: &str, config: &Path) -> std::process::Output {
    Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(bin())
        .args([verb, "--config"])
        .arg(config)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn a_state_dir_and_a_recording_the_user_cannot_write_are_refused_by_check_and_run_at_their_keys() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return test_peers::missing("root, to run check and run as another user (nobody)");
    }
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let case = Case { config_top: "state_dir = \"locked\"\nrecord = \"rec.jsonl\"\n", ..NONE };
    let config = write(tmp.path(), &case);
    std::fs::create_dir(tmp.path().join("locked")).unwrap();
    std::fs::write(tmp.path().join("rec.jsonl"), "").unwrap();
    let mode = |path: &str, mode: u32| {
        std::fs::set_permissions(tmp.path().join(path), std::fs::Permissions::from_mode(mode)).unwrap()
    };
    // Everyone may read and enter everything; nobody may write the state
    // directory or the recording (the directory around them it may).
    for (path, m) in [(".", 0o777), ("rules", 0o755), ("locked", 0o555), ("rec.jsonl", 0o444)] {
        mode(path, m);
    }
    for verb in ["check", "run"] {
        let out = as_nobody(tmp.path(), verb, &config);
        let said = text(&out);
        assert_eq!(out.status.code(), Some(2), "`{verb}` as nobody:\n{said}");
        for wanted in [
            "rocemend.toml:3:1: state_dir ",
            "locked: is not writable by this user",
            "rocemend.toml:4:1: record ",
            "rec.jsonl: is not writable by this user",
        ] {
            assert!(said.contains(wanted), "`{verb}` as nobody does not say {wanted:?}:\n{said}");
        }
    }
}
