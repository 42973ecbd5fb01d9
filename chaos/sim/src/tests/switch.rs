//! The simulated switch through a real gNMI client: Get, Set with SONiC's
//! validation, and Subscribe in every mode.

use std::time::Duration;

use gnmi_proto::gnmi::subscribe_response::Response;
use gnmi_proto::gnmi::subscription_list::Mode as ListMode;
use gnmi_proto::gnmi::{Encoding, Subscription, SubscriptionList, SubscriptionMode, Update};
use gnmi_proto::{parse_path, path_to_string, value, ClientConfig, GnmiClient, SetOps};
use sim::switch::{spawn, Model, Options, RunningSwitch, Styles};

async fn switch(ports: usize) -> (RunningSwitch, GnmiClient) {
    let sw = spawn("sw", ([127, 0, 0, 1], 0).into(), Model::new(ports), Options::default()).await.unwrap();
    let client = GnmiClient::connect(&ClientConfig::plain(sw.addr.to_string())).await.unwrap();
    (sw, client)
}

fn update(path: &str, val: gnmi_proto::gnmi::TypedValue) -> Update {
    Update { path: Some(parse_path(path).unwrap()), val: Some(val), ..Default::default() }
}

/// The prefix naming COUNTERS_DB the classic SONiC way: by its target.
fn counters_db() -> gnmi_proto::gnmi::Path {
    gnmi_proto::gnmi::Path { target: "COUNTERS_DB".into(), ..Default::default() }
}

const GREEN_MIN: &str = "/sonic-db:CONFIG_DB/WRED_PROFILE/AZURE_LOSSLESS/green_min_threshold";

async fn get_text(client: &mut GnmiClient, path: &str) -> String {
    let response = client.get(None, vec![parse_path(path).unwrap()], Encoding::JsonIetf).await.unwrap();
    value::to_text(response.notification[0].update[0].val.as_ref().unwrap()).unwrap()
}

#[tokio::test]
async fn capabilities_name_the_models_and_version() {
    let (sw, mut client) = switch(2).await;
    let caps = client.capabilities().await.unwrap();
    assert_eq!(caps.g_nmi_version, "0.7.0");
    assert!(caps.supported_models.iter().any(|m| m.name == "openconfig-interfaces"));
    assert!(caps.supported_encodings.contains(&(Encoding::JsonIetf as i32)));
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn a_wred_threshold_set_is_seen_by_get_and_by_an_on_change_stream() {
    let (sw, mut client) = switch(2).await;
    assert_eq!(get_text(&mut client, GREEN_MIN).await, "1048576");

    let list = SubscriptionList {
        subscription: vec![Subscription {
            path: Some(parse_path(GREEN_MIN).unwrap()),
            mode: SubscriptionMode::OnChange as i32,
            ..Default::default()
        }],
        encoding: Encoding::JsonIetf as i32,
        ..Default::default()
    };
    let mut stream = client.subscribe(list).await.unwrap();
    let first = stream.message().await.unwrap().unwrap();
    let Some(Response::Update(n)) = first.response else { panic!("expected the initial value, got {first:?}") };
    assert_eq!(value::to_text(n.update[0].val.as_ref().unwrap()).unwrap(), "1048576");
    assert!(matches!(stream.message().await.unwrap().unwrap().response, Some(Response::SyncResponse(true))));

    let ops = SetOps { update: vec![update(GREEN_MIN, value::string("524288"))], ..Default::default() };
    let response = client.set(ops).await.unwrap();
    assert_eq!(response.response.len(), 1);
    assert_eq!(get_text(&mut client, GREEN_MIN).await, "524288");
    assert_eq!(sw.model.config_entry("WRED_PROFILE", "AZURE_LOSSLESS").unwrap()["green_min_threshold"], "524288");

    let next = tokio::time::timeout(Duration::from_secs(5), stream.message()).await.unwrap().unwrap().unwrap();
    let Some(Response::Update(n)) = next.response else { panic!("expected the change, got {next:?}") };
    let path = gnmi_proto::path::join(n.prefix.as_ref(), n.update[0].path.as_ref().unwrap());
    assert_eq!(path_to_string(&path), "sonic-db:/CONFIG_DB/WRED_PROFILE/AZURE_LOSSLESS/green_min_threshold");
    assert_eq!(value::to_text(n.update[0].val.as_ref().unwrap()).unwrap(), "524288");
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn bad_paths_are_not_found_and_bad_values_invalid_argument() {
    let (sw, mut client) = switch(2).await;
    let cases = [
        (
            "/sonic-db:CONFIG_DB/WRED_PROFILE/AZURE_LOSSLESS/blue_min_threshold",
            value::string("1"),
            tonic::Code::NotFound,
        ),
        ("/sonic-db:CONFIG_DB/PFC_WD/Ethernet99/action", value::string("drop"), tonic::Code::NotFound),
        ("/sonic-db:CONFIG_DB/NO_TABLE/x/y", value::string("1"), tonic::Code::NotFound),
        ("/sonic-db:CONFIG_DB/PFC_WD/Ethernet0/detection_time", value::string("50"), tonic::Code::InvalidArgument),
        ("/sonic-db:CONFIG_DB/PFC_WD/Ethernet4/restoration_time", value::uint(60001), tonic::Code::InvalidArgument),
        ("/sonic-db:CONFIG_DB/PFC_WD/Ethernet0/action", value::string("explode"), tonic::Code::InvalidArgument),
        (
            "/sonic-db:CONFIG_DB/WRED_PROFILE/AZURE_LOSSLESS/green_max_threshold",
            value::string("1"),
            tonic::Code::InvalidArgument,
        ),
        (
            "/sonic-db:CONFIG_DB/WRED_PROFILE/AZURE_LOSSLESS/green_drop_probability",
            value::string("101"),
            tonic::Code::InvalidArgument,
        ),
        (
            "/sonic-db:CONFIG_DB/WRED_PROFILE/AZURE_LOSSLESS/ecn",
            value::string("ecn_blue"),
            tonic::Code::InvalidArgument,
        ),
        (
            GREEN_MIN,
            gnmi_proto::gnmi::TypedValue { value: Some(gnmi_proto::gnmi::typed_value::Value::BytesVal(vec![1])) },
            tonic::Code::InvalidArgument,
        ),
    ];
    for (path, val, code) in cases {
        let err = client.set(SetOps { update: vec![update(path, val)], ..Default::default() }).await.unwrap_err();
        assert_eq!(err.code(), Some(code), "{path}: {err}");
    }
    // Counters are read-only, named by the prefix target.
    let ops = SetOps {
        prefix: Some(parse_path("COUNTERS_DB@/").unwrap()),
        update: vec![update("/COUNTERS/Ethernet0/SAI_PORT_STAT_PFC_3_RX_PKTS", value::string("0"))],
        ..Default::default()
    };
    let err = client.set(ops).await.unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::InvalidArgument), "{err}");
    assert!(err.to_string().contains("only CONFIG_DB can be set"), "{err}");
    let err = client
        .set(SetOps {
            update: vec![update("/sonic-db:CONFIG_DB/PFC_WD/Ethernet0/detection_time", value::string("50"))],
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("detection_time 50 is out of range 100..5000 ms"), "{err}");
    // Nothing of the failed Sets stuck.
    assert_eq!(get_text(&mut client, "/sonic-db:CONFIG_DB/PFC_WD/Ethernet0/detection_time").await, "200");
    let err = client
        .get(Some(counters_db()), vec![parse_path("/COUNTERS/Ethernet400").unwrap()], Encoding::JsonIetf)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::NotFound));
    assert!(err.to_string().contains("no port matches \"Ethernet400\""), "{err}");
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn sample_streams_sync_after_the_initial_values_then_follow_the_model() {
    let (sw, mut client) = switch(2).await;
    sw.model.set_port_counter("Ethernet4", "SAI_PORT_STAT_PFC_3_RX_PKTS", 10).unwrap();
    let list = SubscriptionList {
        prefix: Some(parse_path("COUNTERS_DB@/").unwrap()),
        subscription: vec![Subscription {
            path: Some(parse_path("/COUNTERS/Ethernet4/SAI_PORT_STAT_PFC_3_RX_PKTS").unwrap()),
            mode: SubscriptionMode::Sample as i32,
            sample_interval: 50_000_000,
            ..Default::default()
        }],
        encoding: Encoding::JsonIetf as i32,
        ..Default::default()
    };
    let mut stream = client.subscribe(list).await.unwrap();
    let mut values = Vec::new();
    let mut synced_after = None;
    while values.len() < 4 {
        let m = tokio::time::timeout(Duration::from_secs(5), stream.message()).await.unwrap().unwrap().unwrap();
        match m.response {
            Some(Response::SyncResponse(true)) => synced_after = Some(values.len()),
            Some(Response::Update(n)) => {
                assert_eq!(n.prefix.as_ref().unwrap().target, "COUNTERS_DB");
                values.push(value::to_u64(n.update[0].val.as_ref().unwrap()).unwrap());
                if values.len() == 2 {
                    sw.model.set_port_counter("Ethernet4", "SAI_PORT_STAT_PFC_3_RX_PKTS", 99).unwrap();
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(synced_after, Some(1), "sync_response follows the initial value");
    assert_eq!(values[..2], [10, 10]);
    assert_eq!(values[3], 99);
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn once_and_poll_send_everything_then_sync() {
    let (sw, mut client) = switch(3).await;
    sw.model.inject_pfc_storm("Ethernet8", 4).unwrap();
    sw.model.advance(Duration::from_millis(500));
    let sub = |path: &str| Subscription { path: Some(parse_path(path).unwrap()), ..Default::default() };
    let list = SubscriptionList {
        prefix: Some(counters_db()),
        subscription: vec![sub("/COUNTERS/Ethernet*/Pfcwd")],
        mode: ListMode::Once as i32,
        encoding: Encoding::JsonIetf as i32,
        ..Default::default()
    };
    let mut stream = client.subscribe(list).await.unwrap();
    let Some(Response::Update(n)) = stream.message().await.unwrap().unwrap().response else { panic!() };
    assert_eq!(n.update.len(), 3, "one update per port");
    let json = value::to_json(n.update[2].val.as_ref().unwrap()).unwrap().unwrap();
    assert_eq!(json["Ethernet8:4"]["PFC_WD_STATUS"], "stormed");
    assert_eq!(json["Ethernet8:3"]["PFC_WD_STATUS"], "operational");
    assert!(matches!(stream.message().await.unwrap().unwrap().response, Some(Response::SyncResponse(true))));
    assert!(stream.message().await.unwrap().is_none(), "ONCE ends the stream");

    let list = SubscriptionList {
        subscription: vec![sub("openconfig:/interfaces/interface[name=Ethernet0]/state/oper-status")],
        mode: ListMode::Poll as i32,
        encoding: Encoding::JsonIetf as i32,
        ..Default::default()
    };
    let mut stream = client.subscribe(list).await.unwrap();
    let Some(Response::Update(n)) = stream.message().await.unwrap().unwrap().response else { panic!() };
    assert_eq!(value::to_text(n.update[0].val.as_ref().unwrap()).unwrap(), "UP");
    assert!(matches!(stream.message().await.unwrap().unwrap().response, Some(Response::SyncResponse(true))));
    sw.model.set_oper_up("Ethernet0", false).unwrap();
    stream.poll().await.unwrap();
    let Some(Response::Update(n)) = stream.message().await.unwrap().unwrap().response else { panic!() };
    assert_eq!(value::to_text(n.update[0].val.as_ref().unwrap()).unwrap(), "DOWN");
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn a_subscription_to_an_unknown_path_fails_with_not_found() {
    let (sw, mut client) = switch(1).await;
    let list = SubscriptionList {
        subscription: vec![Subscription { path: Some(parse_path("/qos/nothing").unwrap()), ..Default::default() }],
        ..Default::default()
    };
    let err = client.subscribe(list).await.unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::NotFound), "{err}");
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn a_target_only_in_the_path_names_no_database() {
    let (sw, mut client) = switch(1).await;
    // `COUNTERS_DB@` parses into the path's target, which gNMI ignores outside the prefix.
    let in_path = parse_path("COUNTERS_DB@/COUNTERS/Ethernet0").unwrap();
    assert_eq!(in_path.target, "COUNTERS_DB");
    let err = client.get(None, vec![in_path.clone()], Encoding::JsonIetf).await.unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::NotFound), "{err}");
    let text = err.to_string();
    assert!(text.contains("missing prefix target COUNTERS_DB"), "{text}");
    assert!(text.contains("the target \"COUNTERS_DB\" in the path is ignored"), "{text}");
    // The same in a subscription and a Set.
    let list = SubscriptionList {
        subscription: vec![Subscription { path: Some(in_path), ..Default::default() }],
        encoding: Encoding::JsonIetf as i32,
        ..Default::default()
    };
    assert_eq!(client.subscribe(list).await.unwrap_err().code(), Some(tonic::Code::NotFound));
    let ops = SetOps {
        update: vec![update("CONFIG_DB@/PFC_WD/Ethernet0/action", value::string("alert"))],
        ..Default::default()
    };
    let err = client.set(ops).await.unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::NotFound), "{err}");
    assert!(err.to_string().contains("missing prefix target CONFIG_DB"), "{err}");
    assert_eq!(sw.model.config_entry("PFC_WD", "Ethernet0").unwrap()["action"], "drop");
    // With the target in the prefix, it is found.
    let (prefix, path) = gnmi_proto::path::split_target(parse_path("COUNTERS_DB@/COUNTERS/Ethernet0").unwrap());
    let response = client.get(prefix, vec![path], Encoding::JsonIetf).await.unwrap();
    let n = &response.notification[0];
    assert_eq!(n.prefix.as_ref().unwrap().target, "COUNTERS_DB", "the prefix is echoed");
    assert_eq!(n.update[0].path.as_ref().unwrap().target, "", "update paths carry no target");
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn get_and_set_work_in_both_path_styles_and_a_switch_may_take_one() {
    use gnmi_proto::sonic::PathStyle;
    let (sw, mut client) = switch(2).await;
    let styles = [
        PathStyle::PrefixTarget,
        PathStyle::SonicDbOrigin { namespace: None },
        PathStyle::SonicDbOrigin { namespace: Some("localhost".into()) },
    ];
    for (i, style) in styles.iter().enumerate() {
        let value_now = if i == 0 { "drop" } else { "alert" };
        let (prefix, path) = style.request("CONFIG_DB", &["PFC_WD", "Ethernet4", "action"]);
        let response = client.get(prefix.clone(), vec![path.clone()], Encoding::JsonIetf).await.unwrap();
        assert_eq!(value::to_text(response.notification[0].update[0].val.as_ref().unwrap()).unwrap(), value_now);
        let ops = SetOps {
            prefix,
            update: vec![Update { path: Some(path), val: Some(value::string("alert")), ..Default::default() }],
            ..Default::default()
        };
        client.set(ops).await.unwrap_or_else(|e| panic!("{}: {e}", style.name()));
        assert_eq!(sw.model.config_entry("PFC_WD", "Ethernet4").unwrap()["action"], "alert");
    }
    // A missing key and a table the switch does not have are told apart.
    let (prefix, path) = PathStyle::PrefixTarget.request("CONFIG_DB", &["PFC_WD", "Ethernet40"]);
    let missing = client.get(prefix, vec![path], Encoding::JsonIetf).await.unwrap_err();
    assert_eq!(missing.code(), Some(tonic::Code::NotFound));
    assert!(
        missing.to_string().contains("No valid entry found on CONFIG_DB with key PFC_WD|Ethernet40"),
        "sonic-gnmi's words: {missing}"
    );
    let (prefix, path) = PathStyle::PrefixTarget.request("CONFIG_DB", &["ACL_RULE", "r1"]);
    let unserved = client.get(prefix, vec![path], Encoding::JsonIetf).await.unwrap_err();
    assert_eq!(unserved.code(), Some(tonic::Code::NotFound));
    assert!(unserved.to_string().contains("not served"), "{unserved}");
    assert!(!unserved.to_string().contains("not found"), "{unserved}");
    sw.stop().await.unwrap();

    // A switch that takes the prefix target only refuses origin sonic-db, and the other way round.
    for (only, works, refused) in [
        (Styles::PrefixTargetOnly, PathStyle::PrefixTarget, PathStyle::SonicDbOrigin { namespace: None }),
        (Styles::SonicDbOriginOnly, PathStyle::SonicDbOrigin { namespace: None }, PathStyle::PrefixTarget),
    ] {
        let options = Options { styles: only, ..Options::default() };
        let sw = spawn("sw", ([127, 0, 0, 1], 0).into(), Model::new(1), options).await.unwrap();
        let mut client = GnmiClient::connect(&ClientConfig::plain(sw.addr.to_string())).await.unwrap();
        let (prefix, path) = works.request("COUNTERS_DB", &["COUNTERS_PORT_NAME_MAP"]);
        assert!(client.get(prefix, vec![path], Encoding::JsonIetf).await.is_ok(), "{only:?}");
        let (prefix, path) = refused.request("COUNTERS_DB", &["COUNTERS_PORT_NAME_MAP"]);
        let err = client.get(prefix, vec![path], Encoding::JsonIetf).await.unwrap_err();
        assert_eq!(err.code(), Some(tonic::Code::NotFound), "{only:?}: {err}");
        assert!(err.to_string().contains(&format!("in the {} style", refused.name())), "{err}");
        sw.stop().await.unwrap();
    }
}

fn profile_field(name: &str, field: &str, v: &str) -> Update {
    update(&format!("/sonic-db:CONFIG_DB/localhost/WRED_PROFILE/{name}/{field}"), value::string(v))
}

fn bind(queue: &str, profile: &str) -> Update {
    update(&format!("/sonic-db:CONFIG_DB/localhost/QUEUE/{queue}/wred_profile"), value::string(profile))
}

fn binding(sw: &RunningSwitch, queue: &str) -> Option<String> {
    sw.model.config_entry("QUEUE", queue).and_then(|e| e.get("wred_profile").cloned())
}

#[tokio::test]
async fn a_queue_is_bound_to_its_own_profile_in_one_set_and_back_again() {
    let (sw, mut client) = switch(2).await;
    assert_eq!(get_text(&mut client, "/sonic-db:CONFIG_DB/QUEUE/Ethernet4|3/wred_profile").await, "AZURE_LOSSLESS");
    // The binding comes first in the request, the profile after: the Set is
    // checked as a whole, so the profile it creates counts.
    let ops = SetOps {
        update: vec![
            bind("Ethernet4|3", "MINE"),
            profile_field("MINE", "green_min_threshold", "262144"),
            profile_field("MINE", "green_max_threshold", "524288"),
        ],
        ..Default::default()
    };
    client.set(ops).await.unwrap();
    assert_eq!(binding(&sw, "Ethernet4|3").as_deref(), Some("MINE"));
    assert_eq!(binding(&sw, "Ethernet0|3").as_deref(), Some("AZURE_LOSSLESS"));
    let green_min = |sw: &RunningSwitch, port: &str, queue: usize| {
        sim::switch::config::queue_green_min(&sw.model.read().config, port, queue)
    };
    assert_eq!(green_min(&sw, "Ethernet4", 3), Some(262144.0));
    assert_eq!(green_min(&sw, "Ethernet4", 4), Some(1048576.0));
    // Deleting the profile while re-binding the queue away from it, in one Set, is no conflict.
    let ops = SetOps {
        delete: vec![parse_path("/sonic-db:CONFIG_DB/localhost/WRED_PROFILE/MINE").unwrap()],
        update: vec![bind("Ethernet4|3", "AZURE_LOSSLESS")],
        ..Default::default()
    };
    client.set(ops).await.unwrap();
    assert_eq!(binding(&sw, "Ethernet4|3").as_deref(), Some("AZURE_LOSSLESS"));
    assert_eq!(sw.model.config_entry("WRED_PROFILE", "MINE"), None);
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn a_dangling_binding_and_deleting_a_bound_profile_are_refused() {
    let (sw, client) = switch(2).await;
    let before = sw.model.read().config.clone();
    let refused = |ops: SetOps| {
        let mut client = client.clone();
        async move { client.set(ops).await.unwrap_err() }
    };
    // A binding to a profile that does not exist (a leafref, as SONiC's YANG checks it).
    let err = refused(SetOps { update: vec![bind("Ethernet4|3", "NOPE")], ..Default::default() }).await;
    assert_eq!(err.code(), Some(tonic::Code::InvalidArgument), "{err}");
    assert!(err.to_string().contains("QUEUE|Ethernet4|3 wred_profile \"NOPE\": no such WRED_PROFILE entry"), "{err}");
    // The profile deleted by the same Set that binds it: still dangling.
    let ops = SetOps {
        delete: vec![parse_path("/sonic-db:CONFIG_DB/localhost/WRED_PROFILE/MINE").unwrap()],
        update: vec![profile_field("OTHER", "green_min_threshold", "1"), bind("Ethernet0|4", "MINE")],
        ..Default::default()
    };
    assert_eq!(refused(ops).await.code(), Some(tonic::Code::InvalidArgument));
    // The shared profile, deleted while every lossless queue uses it.
    let ops = SetOps {
        delete: vec![parse_path("/sonic-db:CONFIG_DB/localhost/WRED_PROFILE/AZURE_LOSSLESS").unwrap()],
        ..Default::default()
    };
    let err = refused(ops).await;
    assert_eq!(err.code(), Some(tonic::Code::InvalidArgument), "{err}");
    assert!(
        err.to_string().contains("WRED_PROFILE|AZURE_LOSSLESS is still in use by QUEUE|Ethernet0|3, QUEUE|Ethernet0|4"),
        "{err}"
    );
    // Keys and names SONiC's YANG refuses, and a queue of a port the switch does not have.
    for (ops, code) in [
        (vec![bind("Ethernet4|9", "AZURE_LOSSLESS")], tonic::Code::InvalidArgument),
        (vec![bind("Ethernet4", "AZURE_LOSSLESS")], tonic::Code::InvalidArgument),
        (vec![bind("Ethernet44|3", "AZURE_LOSSLESS")], tonic::Code::NotFound),
        (vec![bind("Ethernet4|3", "A.B")], tonic::Code::InvalidArgument),
        (vec![profile_field("A.B", "green_min_threshold", "1")], tonic::Code::InvalidArgument),
        (vec![update("/sonic-db:CONFIG_DB/QUEUE/Ethernet4|3/scheduler", value::string("s1"))], tonic::Code::NotFound),
    ] {
        let err = refused(SetOps { update: ops, ..Default::default() }).await;
        assert_eq!(err.code(), Some(code), "{err}");
    }
    assert_eq!(sw.model.read().config, before, "nothing of the refused Sets stuck");
    sw.stop().await.unwrap();
}

#[tokio::test]
async fn on_change_heartbeats_are_sent_unless_the_switch_ignores_them() {
    for ignore in [false, true] {
        let options = Options { ignore_heartbeat_interval: ignore, ..Options::default() };
        let sw = spawn("sw", ([127, 0, 0, 1], 0).into(), Model::new(1), options).await.unwrap();
        let mut client = GnmiClient::connect(&ClientConfig::plain(sw.addr.to_string())).await.unwrap();
        let list = SubscriptionList {
            subscription: vec![Subscription {
                path: Some(parse_path("openconfig:/interfaces/interface[name=Ethernet0]/state/oper-status").unwrap()),
                mode: SubscriptionMode::OnChange as i32,
                heartbeat_interval: 50_000_000,
                ..Default::default()
            }],
            encoding: Encoding::JsonIetf as i32,
            ..Default::default()
        };
        let mut stream = client.subscribe(list).await.unwrap();
        let mut updates = 0;
        let deadline = tokio::time::Instant::now() + Duration::from_millis(500);
        while let Ok(Ok(Some(m))) = tokio::time::timeout_at(deadline, stream.message()).await {
            if let Some(Response::Update(n)) = m.response {
                assert_eq!(n.update[0].path.as_ref().unwrap().origin, "openconfig");
                updates += 1;
            }
        }
        if ignore {
            assert_eq!(updates, 1, "the initial value only");
        } else {
            assert!(updates >= 5, "a value every 50 ms, got {updates}");
        }
        sw.stop().await.unwrap();
    }
}
