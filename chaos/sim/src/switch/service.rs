//! The gNMI service of the simulated switch: sonic-gnmi's, as [`sonic::gnmi_front::GnmiFront`]
//! reproduces it over the switch's databases, behind what the telemetry container adds
//! around it — password authentication (`gnmi_server/basicAuth.go`), a container that hangs
//! ([`State::silent`](super::model::State::silent)), streams ended when the server stops —
//! and the counts tests read ([`Clients`](super::Clients)).

use std::pin::Pin;
use std::sync::atomic::Ordering;

use gnmi_proto::gnmi::g_nmi_server::GNmi;
use gnmi_proto::gnmi::{
    CapabilityRequest, CapabilityResponse, GetRequest, GetResponse, SetRequest, SetResponse, SubscribeRequest,
    SubscribeResponse,
};
use sonic::gnmi_front::GnmiFront;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status, Streaming};

use super::model::Model;

/// Responses a stream may have queued for a slow client before the forwarding waits: the
/// front bounds its own queue; this one only hands its items on.
const FORWARD_QUEUE: usize = 64;

/// The gNMI service over one model.
#[derive(Debug, Clone)]
pub struct Service {
    model: Model,
    front: GnmiFront,
    credentials: Option<(String, String)>,
    stop: watch::Receiver<bool>,
}

impl Service {
    /// A service over `model` with its profile's front settings, requiring `credentials`
    /// when given; open subscriptions end with `UNAVAILABLE` when `stop` turns true.
    pub fn new(model: Model, credentials: Option<(String, String)>, stop: watch::Receiver<bool>) -> Service {
        let front = GnmiFront::new(model.backend(), model.profile().front.clone());
        Service { model, front, credentials, stop }
    }

    /// sonic-gnmi's password check (`basicAuth.go:18-36`): a missing username or password is
    /// named, a wrong pair is refused with no text.
    fn authorize(&self, metadata: &MetadataMap) -> Result<(), Status> {
        if self.model.read().silent {
            return Err(Status::unavailable("the switch's telemetry server is not answering"));
        }
        let Some((user, password)) = &self.credentials else { return Ok(()) };
        let get = |k: &str| metadata.get(k).and_then(|v| v.to_str().ok());
        match (get("username"), get("password")) {
            (None, _) => Err(Status::unauthenticated("No Username Provided")),
            (_, None) => Err(Status::unauthenticated("No Password Provided")),
            (Some(u), Some(p)) if u == user && p == password => Ok(()),
            _ => Err(Status::unauthenticated("")),
        }
    }
}

/// The responses of one Subscribe.
pub type SubscribeStream = Pin<Box<dyn Stream<Item = Result<SubscribeResponse, Status>> + Send>>;

#[tonic::async_trait]
impl GNmi for Service {
    async fn capabilities(&self, request: Request<CapabilityRequest>) -> Result<Response<CapabilityResponse>, Status> {
        self.authorize(request.metadata())?;
        self.front.capabilities(request).await
    }

    async fn get(&self, request: Request<GetRequest>) -> Result<Response<GetResponse>, Status> {
        self.authorize(request.metadata())?;
        self.front.get(request).await
    }

    async fn set(&self, request: Request<SetRequest>) -> Result<Response<SetResponse>, Status> {
        self.authorize(request.metadata())?;
        let response = self.front.set(request).await?;
        self.model.clients().sets.fetch_add(1, Ordering::Relaxed);
        Ok(response)
    }

    type SubscribeStream = SubscribeStream;

    async fn subscribe(
        &self,
        request: Request<Streaming<SubscribeRequest>>,
    ) -> Result<Response<Self::SubscribeStream>, Status> {
        self.authorize(request.metadata())?;
        let mut inner = self.front.subscribe(request).await?.into_inner();
        let clients = self.model.clone();
        clients.clients().subscribed.fetch_add(1, Ordering::Relaxed);
        clients.clients().streaming.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(FORWARD_QUEUE);
        let mut stop = self.stop.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    // The server stops (or is gone): the stream ends as a restarting
                    // container's does.
                    _ = async { let _ = stop.wait_for(|s| *s).await; } => {
                        let _ = tx.send(Err(Status::unavailable("the switch is shutting down"))).await;
                        break;
                    }
                    _ = tx.closed() => break,
                    item = inner.next() => match item {
                        Some(item) => {
                            if tx.send(item).await.is_err() {
                                break;
                            }
                        }
                        None => break,
                    },
                }
            }
            clients.clients().streaming.fetch_sub(1, Ordering::Relaxed);
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}
