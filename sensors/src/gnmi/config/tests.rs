//! Tests of the gnmi sensor's settings: defaults, refusals, path styles, presets.

use super::*;
use crate::gnmi::mapping::QueueFields;
use gnmi_proto::path_to_string;
use gnmi_proto::TlsFileError;

const EXAMPLE: &str = r#"
presets = ["sonic_pfc", "openconfig_interfaces"]
sample_interval = "2s"

[[targets]]
name = "leaf01"
address = "127.0.0.1:9339"

[[subscriptions]]
path = "COUNTERS_DB@/COUNTERS/Ethernet0/SAI_PORT_STAT_PFC_3_RX_PKTS"
mode = "sample"
sample_interval = "1500ms"
"#;

/// Each stream as `prefix => [paths]`, and whether any subscription
/// path carries a target.
fn layout(plan: &TargetPlan, style: &PathStyle) -> Vec<(String, Vec<String>)> {
    plan.streams(style)
        .iter()
        .map(|s| {
            let prefix = s.list.prefix.as_ref().map(path_to_string).unwrap_or_default();
            let paths = s
                .list
                .subscription
                .iter()
                .map(|sub| {
                    let path = sub.path.as_ref().unwrap();
                    assert_eq!(path.target, "", "a target in a subscription path is ignored by targets");
                    path_to_string(path)
                })
                .collect();
            (prefix, paths)
        })
        .collect()
}

fn owned(layout: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
    layout.iter().map(|(p, paths)| (p.to_string(), paths.iter().map(|s| s.to_string()).collect())).collect()
}

#[test]
fn the_example_round_trips_and_puts_the_database_in_the_prefix_target() {
    let config: GnmiConfig = toml::from_str(EXAMPLE).unwrap();
    let again: GnmiConfig = toml::from_str(&toml::to_string(&config).unwrap()).unwrap();
    assert_eq!(again, config);
    let sensor = config.build("fabric").unwrap();
    let plan = &sensor.targets()[0];
    assert_eq!(plan.style, StyleChoice::Fixed(PathStyle::PrefixTarget));
    assert_eq!(
        layout(plan, &PathStyle::PrefixTarget),
        owned(&[
            ("COUNTERS_DB@/", &["/COUNTERS/Ethernet*", "/COUNTERS/Ethernet0/SAI_PORT_STAT_PFC_3_RX_PKTS"]),
            (
                "",
                &[
                    "openconfig:/interfaces/interface[name=*]/state/oper-status",
                    "openconfig:/interfaces/interface[name=*]/state/counters",
                ]
            ),
        ])
    );
    let streams = plan.streams(&PathStyle::PrefixTarget);
    assert_eq!(streams[0].list.subscription[0].sample_interval, 2_000_000_000);
    assert_eq!(streams[0].list.subscription[1].sample_interval, 1_500_000_000);
    let on_change = &streams[1].list.subscription[0];
    assert_eq!(on_change.mode, SubscriptionMode::OnChange as i32);
    assert_eq!(on_change.heartbeat_interval, 1_000_000_000, "the heartbeat is asked of the switch");
    assert_eq!(streams[1].list.subscription[1].heartbeat_interval, 0);
    assert_eq!(path_to_string(&streams[1].on_change[0]), "openconfig:/interfaces/interface[name=*]/state/oper-status");
    assert!(streams[0].on_change.is_empty());
    assert!(plan.streams(&PathStyle::SonicDbOrigin { namespace: None }).is_empty());
}

#[test]
fn a_sub_second_sample_of_sonics_databases_is_refused_and_one_second_works() {
    let build = |text: &str| {
        let text = format!("{text}\n[[targets]]\nname = \"leaf01\"\naddress = \"127.0.0.1:9339\"\n");
        toml::from_str::<GnmiConfig>(&text).unwrap().build("switches").map(drop)
    };
    let e = build("presets = [\"sonic_pfc\"]\nsample_interval = \"200ms\"").unwrap_err();
    assert_eq!(
        e.to_string(),
        "configuration: sample_interval 200ms is below sonic-gnmi's minimum of 1s for SONiC's databases \
         (it refuses the subscription: \"invalid interval … It cannot be less than 1s\")"
    );
    assert!(build("presets = [\"sonic_pfc\", \"sonic_queues\", \"sonic_pfcwd\"]").is_ok(), "the default is 1 s");
    assert!(build("presets = [\"sonic_pfc\"]\nsample_interval = \"1s\"").is_ok());
    let own = |path: &str| format!("[[subscriptions]]\npath = \"{path}\"\nsample_interval = \"500ms\"");
    let e = build(&own("COUNTERS_DB@/COUNTERS/Ethernet0")).unwrap_err();
    assert!(e.to_string().contains("subscription \"/COUNTERS/Ethernet0\": sample_interval 500ms"), "{e}");
    assert!(build(&own("sonic-db:/COUNTERS_DB/localhost/COUNTERS/oid:0x1")).is_err());
    // ON_CHANGE has no interval (the watchdog preset); OpenConfig paths are not SONiC's databases.
    assert!(build("presets = [\"sonic_queues\", \"openconfig_interfaces\"]\nsample_interval = \"100ms\"").is_err());
    assert!(build("presets = [\"sonic_pfcwd\"]\nsample_interval = \"100ms\"").is_ok());
    assert!(build("presets = [\"openconfig_interfaces\"]\nsample_interval = \"100ms\"").is_ok());
    assert!(build(&own("/interfaces/interface[name=Ethernet0]/state/counters")).is_ok());
}

#[test]
fn presets_become_oids_in_the_sonic_db_style_and_users_paths_stay_as_written() {
    let mut config: GnmiConfig = toml::from_str(EXAMPLE).unwrap();
    config.presets = vec![Preset::SonicPfc, Preset::SonicPfcwd, Preset::OpenconfigInterfaces];
    config.targets[0].path_style = Some(PathStyleSetting::SonicDbOrigin);
    config.targets[0].namespace = Some("localhost".into());
    let sensor = config.build("fabric").unwrap();
    let plan = &sensor.targets()[0];
    let style = PathStyle::SonicDbOrigin { namespace: Some("localhost".into()) };
    assert_eq!(plan.style, StyleChoice::Fixed(style.clone()));
    let oids = plan.oids.as_ref().unwrap();
    assert_eq!((oids.ports, oids.queues), (Some(2_000_000_000), Some(2_000_000_000)));
    assert_eq!(oids.queue_fields, QueueFields { counters: false, watchdog: true });
    // The virtual paths are gone from the static streams; the user's path keeps its prefix target.
    assert_eq!(
        layout(plan, &style),
        owned(&[
            (
                "",
                &[
                    "openconfig:/interfaces/interface[name=*]/state/oper-status",
                    "openconfig:/interfaces/interface[name=*]/state/counters",
                ]
            ),
            ("COUNTERS_DB@/", &["/COUNTERS/Ethernet0/SAI_PORT_STAT_PFC_3_RX_PKTS"]),
        ])
    );
    // auto plans both.
    config.targets[0].path_style = Some(PathStyleSetting::Auto);
    let sensor = config.build("fabric").unwrap();
    let plan = &sensor.targets()[0];
    assert_eq!(plan.style, StyleChoice::Auto { namespace: Some("localhost".into()) });
    assert!(plan.oids.is_some());
    assert_eq!(layout(plan, &PathStyle::PrefixTarget)[0].1[1], "/COUNTERS/Ethernet*/Pfcwd");
}

#[test]
fn the_prefix_and_the_targets_target_go_in_the_request_prefix() {
    let mut config: GnmiConfig = toml::from_str(EXAMPLE).unwrap();
    config.prefix = Some("COUNTERS_DB@/COUNTERS".into());
    config.subscriptions[0].path = "/Ethernet0/Queues".into();
    config.targets[0].target = Some("OC-YANG".into());
    let sensor = config.build("fabric").unwrap();
    assert_eq!(
        layout(&sensor.targets()[0], &PathStyle::PrefixTarget),
        owned(&[
            ("COUNTERS_DB@/", &["/COUNTERS/Ethernet*"]),
            (
                "OC-YANG@/",
                &[
                    "openconfig:/interfaces/interface[name=*]/state/oper-status",
                    "openconfig:/interfaces/interface[name=*]/state/counters",
                ]
            ),
            ("COUNTERS_DB@/COUNTERS", &["/Ethernet0/Queues"]),
        ])
    );
    // A prefix without a target takes the target's; a path's own target wins over both.
    config.prefix = Some("/qos".into());
    config.subscriptions[0].path = "/interfaces".into();
    config.subscriptions.push(SubscriptionConfig {
        path: "sw7@/interfaces".into(),
        mode: StreamMode::OnChange,
        sample_interval: None,
    });
    let sensor = config.build("fabric").unwrap();
    let streams = layout(&sensor.targets()[0], &PathStyle::PrefixTarget);
    assert_eq!(streams[2], ("OC-YANG@/qos".to_string(), vec!["/interfaces".to_string()]));
    assert_eq!(streams[3], ("sw7@/qos".to_string(), vec!["/interfaces".to_string()]));
}

#[test]
fn a_target_given_by_name_is_reached_as_the_inventory_says() {
    let inventory = engine::Topology::parse(
        "[gnmi]\npath_style = \"auto\"\n[[switch]]\nname = \"leaf01\"\nrole = \"leaf\"\naddress = \"127.0.0.1:9339\"\nnamespace = \"asic0\"\n",
        "inventory.toml",
    )
    .unwrap();
    let by_name: GnmiConfig = toml::from_str("presets = [\"sonic_pfc\"]\n[[targets]]\nname = \"leaf01\"\n").unwrap();
    let mut resolved = by_name.targets[0].clone();
    resolved.fill_from_inventory(Some(&inventory)).unwrap();
    assert_eq!(resolved.address, "127.0.0.1:9339");
    assert_eq!((resolved.path_style, resolved.namespace.as_deref()), (Some(PathStyleSetting::Auto), Some("asic0")));
    assert!(by_name.build_in("gnmi", Some(&inventory)).is_ok());
    let none = by_name.build_in("gnmi", None).unwrap_err().to_string();
    assert!(none.contains("but there is no inventory"), "{none}");
    let mut typo = by_name.clone();
    typo.targets[0].name = "leaf10".into();
    let unknown = typo.build_in("gnmi", Some(&inventory)).unwrap_err().to_string();
    assert!(unknown.contains("not in the inventory; did you mean \"leaf01\"?"), "{unknown}");
    let mut both = by_name.clone();
    both.targets[0].path_style = Some(PathStyleSetting::PrefixTarget);
    let conflict = both.build_in("gnmi", Some(&inventory)).unwrap_err().to_string();
    assert!(conflict.contains("reached as the inventory says"), "{conflict}");
}

#[test]
fn tls_is_spelled_as_the_inventory_spells_it_and_the_old_keys_are_refused_with_the_new_spelling() {
    let target = |tls: &str| {
        format!("presets = [\"sonic_pfc\"]\n[[targets]]\nname = \"leaf01\"\naddress = \"127.0.0.1:9339\"\n{tls}\n")
    };
    let config: GnmiConfig =
        toml::from_str(&target("tls = { ca_file = \"/etc/ca.pem\", domain = \"leaf01.test\" }")).unwrap();
    let tls = config.targets[0].tls.as_ref().unwrap();
    assert_eq!((tls.ca_file.to_str(), tls.domain.as_deref()), (Some("/etc/ca.pem"), Some("leaf01.test")));
    let again: GnmiConfig = toml::from_str(&toml::to_string(&config).unwrap()).unwrap();
    assert_eq!(again, config);
    for (old, new) in [("ca", "ca_file"), ("cert", "cert_file"), ("key", "key_file"), ("tls_domain", "domain")] {
        let config: GnmiConfig = toml::from_str(&target(&format!("{old} = \"x\""))).unwrap();
        let err = config.build("gnmi").unwrap_err();
        assert!(matches!(&err, SensorConfigError::Respelled { old: o, .. } if *o == old), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "configuration: target \"leaf01\": `{old}` is no longer read; write `tls = {{ {new} = … }}`: a \
                 switch's TLS is spelled as the inventory spells it, tls = {{ ca_file, cert_file, key_file, domain }}"
            )
        );
        // A target reached through the inventory is refused the same way.
        let mut by_name = config.clone();
        by_name.targets[0].address.clear();
        let err = by_name.build_in("gnmi", None).unwrap_err();
        assert!(matches!(&err, SensorConfigError::Respelled { .. }), "{err:?}");
    }
}

#[test]
fn bad_settings_are_named() {
    let base: GnmiConfig = toml::from_str(EXAMPLE).unwrap();
    let mut c = base.clone();
    c.targets[0].password = Some("secret".into());
    assert!(c.build("x").unwrap_err().to_string().contains("inline username or password is refused"));
    let unparsed = crate::build("gnmi", "x", toml::from_str(&format!("timeout = \"soon\"\n{EXAMPLE}")).unwrap());
    assert_eq!(
        unparsed.err().unwrap().to_string(),
        "sensor \"x\" (kind \"gnmi\"): timeout: invalid value: string \"soon\", expected a duration"
    );
    let mut c = base.clone();
    c.subscriptions[0].path = "/a[b=c".into();
    assert!(c.build("x").unwrap_err().to_string().contains("unclosed '['"));
    let mut c = base.clone();
    c.backoff_max = Duration::from_millis(50);
    let err = c.build("x").unwrap_err();
    assert!(matches!(&err, SensorConfigError::OutOfRange { setting, .. } if setting == "backoff_max"), "{err:?}");
    assert_eq!(err.to_string(), "configuration: backoff_max 50ms is below backoff_initial 100ms");
    let mut c = base.clone();
    c.heartbeat = Duration::from_millis(10);
    let err = c.build("x").unwrap_err();
    assert!(matches!(&err, SensorConfigError::OutOfRange { setting, .. } if setting == "heartbeat"), "{err:?}");
    let mut c = base.clone();
    c.heartbeat = Duration::ZERO;
    let sensor = c.build("x").unwrap();
    let on_change = &sensor.targets()[0].streams(&PathStyle::PrefixTarget)[1].list.subscription[0];
    assert_eq!(on_change.heartbeat_interval, 0, "no heartbeat asked for when it is off");
    let mut c = base.clone();
    c.targets[0].namespace = Some("localhost".into());
    assert!(c.build("x").unwrap_err().to_string().contains("namespace goes with path_style"));
    c.targets[0].path_style = Some(PathStyleSetting::Auto);
    c.targets[0].namespace = Some("a/b".into());
    assert!(c.build("x").unwrap_err().to_string().contains("is not a path element"));
    let mut c = base.clone();
    c.targets[0].tls = Some(SwitchTls {
        ca_file: "/nonexistent/ca.pem".into(),
        cert_file: Some("/nonexistent/cert.pem".into()),
        key_file: Some("/nonexistent/key.pem".into()),
        domain: None,
    });
    let err = c.build("x").unwrap_err();
    assert!(
        matches!(&err, SensorConfigError::Tls { setting, source: TlsFileError::Read { field: "cert_file", .. } }
            if setting == "target \"leaf01\": tls"),
        "{err:?}"
    );
    assert!(err.to_string().starts_with("configuration: target \"leaf01\": tls: cert_file /nonexistent/cert.pem: "));
    c.targets[0].tls.as_mut().unwrap().key_file = None;
    let err = c.build("x").unwrap_err().to_string();
    assert_eq!(err, "configuration: target \"leaf01\": tls: cert_file and key_file go together");
    let mut c = base;
    c.targets.push(c.targets[0].clone());
    let err = c.build("x").unwrap_err();
    assert!(matches!(&err, SensorConfigError::Duplicate { name, .. } if name == "leaf01"), "{err:?}");
    assert!(err.to_string().contains("listed twice"));
    assert!(toml::from_str::<GnmiConfig>("targets = []\nprests = []").is_err());
    let style: Result<GnmiConfig, _> =
        toml::from_str("[[targets]]\nname = \"a\"\naddress = \"b\"\npath_style = \"sideways\"");
    assert!(style.is_err());
}
