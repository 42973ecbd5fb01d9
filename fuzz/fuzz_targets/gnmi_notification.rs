//! gNMI notifications from a switch, arbitrary: the input is a sequence of
//! length-delimited protobuf `Notification`s (as they arrive in a
//! Subscribe stream's responses), each run through the sensor's ingest
//! (prefix joined with each update's path, mapped to readings, the ON_CHANGE
//! memory, deletes) and followed by a heartbeat. Nothing panics, and every
//! series' samples are strictly increasing in time: the engine refuses a
//! sample that is not after its series' last one.

#![no_main]

use std::collections::HashMap;
use std::sync::OnceLock;

use engine::{SensorContext, SeriesTable};
use gnmi_proto::gnmi::{Notification, SubscriptionList};
use gnmi_proto::parse_path;
use libfuzzer_sys::fuzz_target;
use prost::Message;
use sensors::gnmi::ingest::Memory;
use sensors::gnmi::mapping::{OidNames, QueueFields};
use sensors::gnmi::plan::StreamPlan;

/// A stream with ON_CHANGE subscriptions (oper-status, the PFC watchdog)
/// and the OID names of the `sonic-db-origin` style, as a session has them.
fn setup() -> &'static (StreamPlan, OidNames) {
    static SETUP: OnceLock<(StreamPlan, OidNames)> = OnceLock::new();
    SETUP.get_or_init(|| {
        let on_change = ["/interfaces/interface[name=*]/state/oper-status", "/COUNTERS/*/Pfcwd"]
            .iter()
            .map(|p| parse_path(p).expect("a valid path"))
            .collect();
        let stream = StreamPlan { list: SubscriptionList::default(), on_change };
        let oids = OidNames {
            ports: HashMap::from([("oid:0x1000000000002".to_string(), "Ethernet4".to_string())]),
            queues: HashMap::from([("oid:0x15000000000103".to_string(), ("Ethernet4".to_string(), 3))]),
            queue_fields: QueueFields { counters: true, watchdog: true },
            ..OidNames::default()
        };
        (stream, oids)
    })
}

fuzz_target!(|data: &[u8]| {
    let (stream, oids) = setup();
    let (tx, _rx) = tokio::sync::mpsc::channel(1);
    let (_stop, shutdown) = tokio::sync::watch::channel(false);
    let ctx = SensorContext::new(SeriesTable::default(), "gnmi", 1000, tx, shutdown);
    let mut memory = Memory::default();
    let mut last = HashMap::new();
    let mut check = |samples: Vec<engine::Sample>| {
        for s in samples {
            if let Some(before) = last.insert(s.series, s.ts) {
                assert!(s.ts > before, "series {:?} stamped {} after {before}", s.series, s.ts);
            }
        }
    };
    let mut buf = data;
    while !buf.is_empty() {
        let Ok(notification) = Notification::decode_length_delimited(&mut buf) else { return };
        let (samples, problems) = memory.ingest(&ctx, "leaf01", stream, oids, &notification);
        assert!(problems.len() <= notification.update.len(), "more problems than updates");
        check(samples);
        check(memory.beat(notification.timestamp));
    }
});
