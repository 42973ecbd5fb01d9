//! The simulated switch through a real gNMI client: Get, Set with SONiC's
//! validation, and Subscribe in every mode.

use std::time::Duration;

use gnmi_proto::gnmi::subscribe_response::Response;
use gnmi_proto::gnmi::subscription_list::Mode as ListMode;
use gnmi_proto::gnmi::{Encoding, Subscription, SubscriptionList, SubscriptionMode, Update};
use gnmi_proto::{parse_path, path_to_string, value, ClientConfig, GnmiClient, SetOps};
use sim::switch::{spawn, Model, Options, RunningSwitch};

async fn switch(ports: usize) -> (RunningSwitch, GnmiClient) {
    let sw = spawn("sw", ([127, 0, 0, 1], 0).into(), Model::new(ports), Options::default()).await.unwrap();
    let client = GnmiClient::connect(&ClientConfig::plain(sw.addr.to_string())).await.unwrap();
    (sw, client)
}

fn update(path: &str, val: gnmi_proto::gnmi::TypedValue) -> Update {
    Update { path: Some(parse_path(path).unwrap()), val: Some(val), ..Default::default() }
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
        (
            "COUNTERS_DB@/COUNTERS/Ethernet0/SAI_PORT_STAT_PFC_3_RX_PKTS",
            value::string("0"),
            tonic::Code::InvalidArgument,
        ),
    ];
    for (path, val, code) in cases {
        let err = client.set(SetOps { update: vec![update(path, val)], ..Default::default() }).await.unwrap_err();
        assert_eq!(err.code(), Some(code), "{path}: {err}");
    }
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
        .get(None, vec![parse_path("COUNTERS_DB@/COUNTERS/Ethernet400").unwrap()], Encoding::JsonIetf)
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::NotFound));
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
        subscription: vec![sub("COUNTERS_DB@/COUNTERS/Ethernet*/Pfcwd")],
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
