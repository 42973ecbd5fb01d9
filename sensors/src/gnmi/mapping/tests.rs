//! Tests of the gNMI mapping: every row of its table, absent values, one bad field at a time.

use super::*;
use gnmi_proto::parse_path;

fn map(path: &str, val: TypedValue) -> Result<Vec<Reading>, MapError> {
    let mut out = Vec::new();
    map_update(&parse_path(path).unwrap(), &val, &mut out).map(|_| out)
}

#[test]
fn one_bad_pfc_field_is_one_error_and_the_storm_in_the_next_field_still_counts() {
    let json = serde_json::json!({
        "SAI_PORT_STAT_PFC_3_RX_PKTS": "lots",
        "SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION_US": "990000",
    });
    let mut out = Vec::new();
    let path = parse_path("COUNTERS_DB@/COUNTERS/Ethernet8").unwrap();
    let e = map_update(&path, &value::json_ietf(&json), &mut out).unwrap_err();
    assert!(e.to_string().contains("SAI_PORT_STAT_PFC_3_RX_PKTS"), "{e}");
    assert_eq!(out, [counter("switch_pfc_rx_pause_duration_us", "Ethernet8", None, Some(3), 990_000)]);
    // The same in a queue table: the bad status costs only itself.
    let json =
        serde_json::json!({"Ethernet8:3": {"PFC_WD_STATUS": "on fire", "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED": "2"}});
    let mut out = Vec::new();
    let path = parse_path("COUNTERS_DB@/COUNTERS/Ethernet8/Pfcwd").unwrap();
    assert!(map_update(&path, &value::json_ietf(&json), &mut out).is_err());
    assert_eq!(out, [counter("switch_pfcwd_deadlock_detected", "Ethernet8", Some(3), None, 2)]);
}

#[test]
fn a_paused_queue_is_reported_for_the_lossless_priorities_the_qos_maps_send_to_it() {
    use crate::switch_series::ViewTables;
    let json = serde_json::json!({"etp2:5": {"SAI_QUEUE_ATTR_PAUSE_STATUS": "true"}, "etp2:3": {"SAI_QUEUE_ATTR_PAUSE_STATUS": "false"}});
    let path = parse_path("COUNTERS_DB@/COUNTERS/etp2/Queues").unwrap();
    let paused = |oids: &OidNames| {
        let mut out = Vec::new();
        map_update_with(&path, &value::json_ietf(&json), oids, &mut out).unwrap();
        out.iter().map(|r| (r.port.to_string(), r.queue, r.prio, r.level)).collect::<Vec<_>>()
    };
    // Without the maps, queue q is priority q (the image's AZURE map).
    let keys = OidNames::default();
    assert_eq!(
        paused(&keys),
        [("etp2".into(), Some(3), None, 0.0), ("etp2".into(), Some(5), None, 1.0)]
            .map(|(p, q, _, l): (String, _, Option<u8>, _)| (p, q, q, l))
    );
    // Priority 3 (lossless) mapped to queue 5: queue 5's status is priority 3's; queue 3 is no
    // lossless priority's.
    let entry = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let mut maps = sonic::NameMaps::default();
    maps.ports.insert("Ethernet4".into(), "oid:0x1".into());
    for q in 0..8u32 {
        let oid = format!("oid:0x10{q}");
        maps.queues.insert(format!("Ethernet4:{q}"), oid.clone());
        maps.queue_index.insert(oid.clone(), q.to_string());
        maps.queue_type.insert(oid, "SAI_QUEUE_TYPE_UNICAST".into());
    }
    let azure: sonic::client::Entry =
        (0..8).map(|p| (p.to_string(), if p == 3 { "5".into() } else { p.to_string() })).collect();
    let tables = ViewTables {
        ports: Some([("Ethernet4".to_string(), entry(&[("alias", "etp2")]))].into()),
        port_qos: Some(
            [("Ethernet4".to_string(), entry(&[("pfc_enable", "3"), ("pfc_to_queue_map", "AZURE")]))].into(),
        ),
        pfc_maps: Some([("AZURE".to_string(), azure)].into()),
        name_maps: Some(maps),
        ..ViewTables::default()
    };
    let (view, problems) = SwitchView::build(&tables, Default::default()).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let mut named = OidNames { view: Some(std::sync::Arc::new(view)), ..OidNames::default() };
    named.add_aliases(&serde_json::json!({"Ethernet4": {"alias": "etp2"}})).unwrap();
    assert_eq!(paused(&named), [("Ethernet4".to_string(), Some(5), Some(3), 1.0)]);
    let spec = counter("x", "p", Some(5), Some(3), 1).spec("leaf01");
    assert_eq!((spec.labels.get("queue"), spec.labels.get("prio")), (Some("5"), Some("3")));
}

#[test]
fn each_asic_familys_pfc_counters_map() {
    let json = serde_json::json!({
        "SAI_PORT_STAT_PFC_3_ON2OFF_RX_PKTS": "4",
        "SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION": "700",
        "SAI_PORT_STAT_PFC_03_RX_PKTS": "1",
    });
    let out = map("COUNTERS_DB@/COUNTERS/Ethernet8", value::json_ietf(&json)).unwrap();
    assert_eq!(
        out,
        [
            counter("switch_pfc_on2off_rx_pkts", "Ethernet8", None, Some(3), 4),
            counter("switch_pfc_rx_pause_duration_us", "Ethernet8", None, Some(3), 700),
        ]
    );
}

#[test]
fn a_pfc_counter_on_ethernet8_maps_to_switch_pfc_rx_pkts_prio_3() {
    let json = serde_json::json!({"SAI_PORT_STAT_PFC_3_RX_PKTS": "42", "SAI_PORT_STAT_IF_IN_OCTETS": "9"});
    let out = map("COUNTERS_DB@/COUNTERS/Ethernet8", value::json_ietf(&json)).unwrap();
    assert_eq!(out, [counter("switch_pfc_rx_pkts", "Ethernet8", None, Some(3), 42)]);
    let out =
        map("COUNTERS_DB@/COUNTERS/Ethernet8/SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION_US", value::string("7")).unwrap();
    assert_eq!(out, [counter("switch_pfc_rx_pause_duration_us", "Ethernet8", None, Some(3), 7)]);
}

#[test]
fn a_ports_bytes_sent_map_to_switch_port_tx_bytes_and_its_bytes_received_to_nothing() {
    let json = serde_json::json!({"SAI_PORT_STAT_IF_OUT_OCTETS": "123456", "SAI_PORT_STAT_IF_IN_OCTETS": "9"});
    let out = map("COUNTERS_DB@/COUNTERS/Ethernet32", value::json_ietf(&json)).unwrap();
    assert_eq!(out, [counter("switch_port_tx_bytes", "Ethernet32", None, None, 123_456)]);
    let err = map("COUNTERS_DB@/COUNTERS/Ethernet32/SAI_PORT_STAT_IF_OUT_OCTETS", value::string("lots")).unwrap_err();
    assert!(err.to_string().contains("SAI_PORT_STAT_IF_OUT_OCTETS"), "{err}");
}

#[test]
fn queues_and_the_watchdog_carry_port_and_queue() {
    let json = serde_json::json!({"Ethernet4:3": {
        "SAI_QUEUE_STAT_PACKETS": "5",
        "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS": "3",
        "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES": "1024",
    }});
    let out = map("COUNTERS_DB@/COUNTERS/Ethernet4/Queues", value::json_ietf(&json)).unwrap();
    assert_eq!(out.len(), 3);
    assert_eq!(out[0], counter("switch_queue_packets", "Ethernet4", Some(3), None, 5));
    assert!(out.contains(&counter("switch_queue_ecn_marked_packets", "Ethernet4", Some(3), None, 3)), "{out:?}");
    assert!(out.contains(&gauge("switch_queue_watermark_bytes", "Ethernet4", Some(3), 1024.0)), "{out:?}");
    let json =
        serde_json::json!({"Ethernet4:3": {"PFC_WD_STATUS": "stormed", "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED": "2"}});
    let out = map("COUNTERS_DB@/COUNTERS/Ethernet4/Pfcwd", value::json_ietf(&json)).unwrap();
    assert_eq!(out[0], counter("switch_pfcwd_deadlock_detected", "Ethernet4", Some(3), None, 2));
    assert_eq!(out[1], gauge("switch_pfcwd_stormed", "Ethernet4", Some(3), 1.0));
}

#[test]
fn openconfig_leaves_map_to_oper_up_and_counters() {
    let out = map("/interfaces/interface[name=Ethernet0]/state/oper-status", value::string("DOWN")).unwrap();
    assert_eq!(out, [gauge("switch_oper_up", "Ethernet0", None, 0.0)]);
    let out = map("/interfaces/interface[name=Ethernet0]/state/counters/carrier-transitions", value::uint(3)).unwrap();
    assert_eq!(out, [counter("switch_carrier_transitions", "Ethernet0", None, None, 3)]);
}

#[test]
fn sonic_none_and_empty_values_are_absent_not_errors() {
    for absent in [value::string("None"), value::string(""), value::string("N/A"), TypedValue { value: None }] {
        assert_eq!(map("COUNTERS_DB@/COUNTERS/Ethernet8", absent.clone()), Ok(vec![]), "{absent:?}");
        assert_eq!(map("/COUNTERS/Ethernet8/SAI_PORT_STAT_PFC_3_RX_PKTS", absent.clone()), Ok(vec![]));
        assert_eq!(map("/COUNTERS/Ethernet*/Pfcwd", absent), Ok(vec![]));
    }
    assert_eq!(map("/COUNTERS/Ethernet8/SAI_PORT_STAT_PFC_3_RX_PKTS", value::json_ietf(&Json::Null)), Ok(vec![]));
    let json = serde_json::json!({"SAI_PORT_STAT_PFC_3_RX_PKTS": "None", "SAI_PORT_STAT_PFC_4_RX_PKTS": "9"});
    let out = map("COUNTERS_DB@/COUNTERS/Ethernet8", value::json_ietf(&json)).unwrap();
    assert_eq!(out, [counter("switch_pfc_rx_pkts", "Ethernet8", None, Some(4), 9)]);
    let json = serde_json::json!({"Ethernet4:3": {"PFC_WD_STATUS": "None", "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED": ""}, "Ethernet4:4": null});
    assert_eq!(map("/COUNTERS/Ethernet4/Pfcwd", value::json_ietf(&json)), Ok(vec![]));
}

#[test]
fn json_in_a_string_val_and_in_json_val_is_read() {
    let text = r#"{"Ethernet0": {"SAI_PORT_STAT_PFC_3_TX_PKTS": "5"}}"#;
    let out = map("sonic-db:/COUNTERS_DB/localhost/COUNTERS/Ethernet*", value::string(text)).unwrap();
    assert_eq!(out, [counter("switch_pfc_tx_pkts", "Ethernet0", None, Some(3), 5)]);
    let json = gnmi_proto::gnmi::typed_value::Value::JsonVal(text.as_bytes().to_vec());
    let out = map("sonic-db:/COUNTERS_DB/COUNTERS/Ethernet*", TypedValue { value: Some(json) }).unwrap();
    assert_eq!(out, [counter("switch_pfc_tx_pkts", "Ethernet0", None, Some(3), 5)]);
}

#[test]
fn periodic_watermark_entries_are_skipped() {
    let json = serde_json::json!({"Ethernet0:3": {"SAI_QUEUE_STAT_PACKETS": "5"}, "Ethernet0:3:periodic": {"SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES": "9"}});
    let out = map("COUNTERS_DB@/COUNTERS/Ethernet*/Queues", value::json_ietf(&json)).unwrap();
    assert_eq!(out, [counter("switch_queue_packets", "Ethernet0", Some(3), None, 5)]);
}

#[test]
fn oid_keys_are_named_by_the_name_maps() {
    let mut names = OidNames { queue_fields: QueueFields { counters: false, watchdog: true }, ..Default::default() };
    names.add_ports(&serde_json::json!({"Ethernet4": "oid:0x1000000000002"})).unwrap();
    names.add_queues(&serde_json::json!({"Ethernet4:3": "oid:0x15000000000103"})).unwrap();
    let with = |path: &str, val: TypedValue| {
        let mut out = Vec::new();
        map_update_with(&parse_path(path).unwrap(), &val, &names, &mut out).map(|_| out)
    };
    let port = serde_json::json!({"SAI_PORT_STAT_PFC_3_RX_PKTS": "11"});
    let out = with("sonic-db:/COUNTERS_DB/localhost/COUNTERS/oid:0x1000000000002", value::json_ietf(&port));
    assert_eq!(out.unwrap(), [counter("switch_pfc_rx_pkts", "Ethernet4", None, Some(3), 11)]);
    let queue = serde_json::json!({"SAI_QUEUE_STAT_PACKETS": "5", "PFC_WD_STATUS": "stormed"});
    let out = with("sonic-db:/COUNTERS_DB/COUNTERS/oid:0x15000000000103", value::json_ietf(&queue)).unwrap();
    assert_eq!(out, [gauge("switch_pfcwd_stormed", "Ethernet4", Some(3), 1.0)], "only the watchdog's fields");
    let err = with("sonic-db:/COUNTERS_DB/COUNTERS/oid:0x99", value::json_ietf(&port)).unwrap_err();
    assert!(matches!(err, MapError::UnknownPath(_)), "{err}");
}

#[test]
fn garbage_and_unknown_paths_are_errors() {
    let json = serde_json::json!({"SAI_PORT_STAT_PFC_3_RX_PKTS": "lots"});
    let err = map("COUNTERS_DB@/COUNTERS/Ethernet8", value::json_ietf(&json)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "COUNTERS_DB@/COUNTERS/Ethernet8 SAI_PORT_STAT_PFC_3_RX_PKTS: \"lots\" is not a counter"
    );
    assert!(matches!(map("/system/state/hostname", value::string("x")), Err(MapError::UnknownPath(_))));
    assert!(matches!(map("COUNTERS_DB@/COUNTERS/Ethernet8", value::string("x")), Err(MapError::BadValue { .. })));
}
#[test]
fn the_port_table_gives_the_links_state_and_portsorchs_count_of_its_changes() {
    let table = serde_json::json!({"Ethernet0": {"oper_status": "up", "flap_count": "2", "admin_status": "up"},
                       "Ethernet4": {"oper_status": "down", "flap_count": "lots"}});
    let mut out = Vec::new();
    let path = parse_path("APPL_DB@/PORT_TABLE").unwrap();
    let error = map_update(&path, &value::json_ietf(&table), &mut out).unwrap_err();
    assert_eq!(error.to_string(), "APPL_DB@/PORT_TABLE Ethernet4 flap_count: \"lots\" is not a counter");
    assert_eq!(
        out,
        [
            counter("switch_carrier_transitions", "Ethernet0", None, None, 2),
            gauge("switch_oper_up", "Ethernet0", None, 1.0),
            gauge("switch_oper_up", "Ethernet4", None, 0.0),
        ],
        "the bad field is one error; the rest of the update counts"
    );
    // One entry, as ON_CHANGE sends it in the sonic-db-origin style.
    let entry = serde_json::json!({"oper_status": "up", "flap_count": "3"});
    let out = map("sonic-db:/APPL_DB/localhost/PORT_TABLE/Ethernet4", value::json_ietf(&entry));
    assert_eq!(
        out.unwrap(),
        [
            counter("switch_carrier_transitions", "Ethernet4", None, None, 3),
            gauge("switch_oper_up", "Ethernet4", None, 1.0)
        ]
    );
}
