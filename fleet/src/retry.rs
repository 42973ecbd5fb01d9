//! Requests that survive a dead member.
//!
//! The client balances requests over every endpoint, and it goes on picking
//! a member that no longer answers: each pick fails at once with "tcp
//! connect error". With three members and one down, about a third of the
//! requests failed, and a fleet-scoped action needs two or three of them,
//! so half the actions were held as "coordination unavailable" although two
//! members and their leader were serving. A request that failed before it
//! reached any member, or that a member refused unread for want of a leader,
//! changed nothing in etcd, so it is sent again (to whichever member the
//! client picks next) until the request timeout runs out. Any other failure
//! may have been applied and is returned at once.

use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// Pause between two attempts: long enough not to spin on a member that
/// refuses at once, short against the request timeout (a second or more).
const PAUSE: Duration = Duration::from_millis(10);

/// The first pause before a new session after one was lost: etcd elects a
/// new leader within about a second, and a member that restarts answers
/// again within a few; a tenth of a second ends a short outage promptly.
const RECONNECT_MIN: Duration = Duration::from_millis(100);

/// The longest pause between two sessions: well inside the shortest lease
/// (2 s), so a daemon whose etcd comes back is in a session again before a
/// lease it held could lapse.
pub(crate) const RECONNECT_MAX: Duration = Duration::from_secs(1);

/// The pauses between the sessions of one outage: [`RECONNECT_MIN`],
/// doubling up to [`RECONNECT_MAX`], without end.
pub(crate) fn reconnect_delays() -> backon::ExponentialBackoff {
    use backon::BackoffBuilder;
    backon::ExponentialBuilder::new()
        .with_min_delay(RECONNECT_MIN)
        .with_max_delay(RECONNECT_MAX)
        .without_max_times()
        .build()
}

/// Runs `attempt` until it succeeds, fails in a way that may have reached
/// etcd, or `timeout` has passed since the first attempt. Errors name
/// `what` and the endpoints.
pub(crate) async fn call<T, F, Fut>(
    what: &str,
    endpoints: &[String],
    timeout: Duration,
    attempt: F,
) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, etcd_client::Error>>,
{
    call_while(what, endpoints, timeout, never_applied, attempt).await
}

/// As [`call`] for a read, which changes nothing however often it arrives: it is sent again
/// after any failure of the transport too, such as a connection the member dropped when it was
/// killed with the read in flight (one daemon of sixteen was held as "etcd unavailable" that
/// way while two members and their new leader were serving).
pub(crate) async fn read<T, F, Fut>(
    what: &str,
    endpoints: &[String],
    timeout: Duration,
    attempt: F,
) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, etcd_client::Error>>,
{
    call_while(what, endpoints, timeout, lost_in_transport, attempt).await
}

/// Runs `attempt` until it succeeds, fails in a way `may_repeat` does not allow, or `timeout`
/// has passed since the first attempt.
async fn call_while<T, F, Fut>(
    what: &str,
    endpoints: &[String],
    timeout: Duration,
    may_repeat: fn(&etcd_client::Error) -> bool,
    mut attempt: F,
) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, etcd_client::Error>>,
{
    let deadline = Instant::now() + timeout;
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        match tokio::time::timeout_at(deadline, attempt()).await {
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) if may_repeat(&e) && Instant::now() + PAUSE < deadline => {
                tracing::debug!(message = "etcd request not delivered; sending it again.", what, attempts, error = %e);
                tokio::time::sleep(PAUSE).await;
            }
            Ok(Err(e)) => return Err(format!("{what} at {}: {e}", endpoints.join(","))),
            Err(_) => return Err(format!("{what} at {}: no answer within {timeout:?}", endpoints.join(","))),
        }
    }
}

/// Whether `e` says the request changed nothing in etcd: the connection to
/// the member picked could not be made, or the member has no leader (with
/// `require_leader`, it refuses before reading the request).
fn never_applied(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::GRpcStatus(status) if status.code() == tonic::Code::Unavailable => {
            not_connected(status) || status.message().contains("no leader")
        }
        etcd_client::Error::TransportError(error) => not_connected(error),
        _ => false,
    }
}

/// Whether `e` is a failure of the transport or of the member (any `Unavailable`, a dropped
/// connection), not an answer of etcd's: a read that failed so may be sent again.
fn lost_in_transport(e: &etcd_client::Error) -> bool {
    match e {
        etcd_client::Error::GRpcStatus(status) => {
            matches!(status.code(), tonic::Code::Unavailable | tonic::Code::Cancelled | tonic::Code::Unknown)
        }
        etcd_client::Error::TransportError(_) => true,
        _ => false,
    }
}

/// Whether an error's chain of causes holds a failed connect.
fn not_connected(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            if matches!(io.kind(), ConnectionRefused | AddrNotAvailable | NetworkUnreachable | HostUnreachable) {
                return true;
            }
        }
        if e.to_string().contains("connect error") {
            return true;
        }
        cause = e.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_connect_or_a_leaderless_member_never_applied_anything() {
        let unavailable = tonic::Status::unavailable("tcp connect error");
        assert!(never_applied(&etcd_client::Error::GRpcStatus(unavailable)));
        assert!(never_applied(&etcd_client::Error::GRpcStatus(tonic::Status::unavailable("etcdserver: no leader"))));
        let refused = tonic::Status::unknown("tcp connect error");
        assert!(!never_applied(&etcd_client::Error::GRpcStatus(refused)), "only Unavailable is a transport failure");
        let reset = tonic::Status::unavailable("connection reset by peer");
        assert!(!never_applied(&etcd_client::Error::GRpcStatus(reset)), "a reset may follow a delivered request");
        let compare = tonic::Status::failed_precondition("etcdserver: revision mismatch");
        assert!(!never_applied(&etcd_client::Error::GRpcStatus(compare)));
    }

    #[test]
    fn a_read_is_sent_again_after_any_failure_of_the_transport_but_not_after_an_answer() {
        let reset = tonic::Status::unavailable("connection reset by peer");
        assert!(lost_in_transport(&etcd_client::Error::GRpcStatus(reset)));
        assert!(lost_in_transport(&etcd_client::Error::GRpcStatus(tonic::Status::unknown("h2 protocol error"))));
        let denied = tonic::Status::permission_denied("etcdserver: permission denied");
        assert!(!lost_in_transport(&etcd_client::Error::GRpcStatus(denied)));
        let invalid = tonic::Status::invalid_argument("etcdserver: key is not provided");
        assert!(!lost_in_transport(&etcd_client::Error::GRpcStatus(invalid)));
    }

    #[tokio::test(start_paused = true)]
    async fn a_read_dropped_in_flight_is_sent_again_where_a_write_is_not() {
        let endpoints = vec!["http://127.0.0.1:1".to_string()];
        let dropped = || etcd_client::Error::GRpcStatus(tonic::Status::unavailable("connection reset by peer"));
        let mut tries = 0;
        let got = read("reading", &endpoints, Duration::from_secs(1), || {
            tries += 1;
            let fail = tries < 2;
            async move {
                if fail {
                    Err(dropped())
                } else {
                    Ok(7)
                }
            }
        })
        .await;
        assert_eq!((got, tries), (Ok(7), 2));
        let mut tries = 0;
        let got: Result<i32, String> = call("writing", &endpoints, Duration::from_secs(1), || {
            tries += 1;
            async move { Err(dropped()) }
        })
        .await;
        assert!(got.is_err());
        assert_eq!(tries, 1, "a write that may have been applied is not sent again");
    }

    #[tokio::test(start_paused = true)]
    async fn an_undelivered_request_is_sent_again_until_the_timeout() {
        let endpoints = vec!["http://127.0.0.1:1".to_string()];
        let mut tries = 0;
        let got = call("reading", &endpoints, Duration::from_secs(1), || {
            tries += 1;
            let fail = tries < 3;
            async move {
                if fail {
                    Err(etcd_client::Error::GRpcStatus(tonic::Status::unavailable("tcp connect error")))
                } else {
                    Ok(7)
                }
            }
        })
        .await;
        assert_eq!(got, Ok(7));
        assert_eq!(tries, 3);

        let mut tries = 0;
        let never = call("reading", &endpoints, Duration::from_secs(1), || {
            tries += 1;
            async { Err::<(), _>(etcd_client::Error::GRpcStatus(tonic::Status::unavailable("tcp connect error"))) }
        })
        .await;
        let why = never.unwrap_err();
        assert!(why.starts_with("reading at http://127.0.0.1:1: "), "{why}");
        assert!((90..=100).contains(&tries), "{tries} attempts in 1 s at 10 ms apart");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_that_may_have_been_applied_is_not_repeated() {
        let mut tries = 0;
        let got = call("taking", &[], Duration::from_secs(1), || {
            tries += 1;
            async { Err::<(), _>(etcd_client::Error::GRpcStatus(tonic::Status::unavailable("connection reset"))) }
        })
        .await;
        assert!(got.is_err());
        assert_eq!(tries, 1);
    }
}
