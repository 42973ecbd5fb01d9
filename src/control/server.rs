//! The control service, served by `rocemend run`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use engine::ledger::{Filter, Ledger};
use engine::runtime::Command;
use tokio::net::UnixListener;
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::UnixListenerStream;
use tokio_stream::StreamExt;
use tonic::{Request, Response, Status};

use super::pb::control_server::{Control, ControlServer};
use super::pb::*;

/// The service: reads go to the ledger directly; everything that changes the
/// daemon goes to its run loop as a [`Command`].
pub struct ControlService {
    commands: mpsc::Sender<Command>,
    ledger: Ledger,
}

impl ControlService {
    /// A service sending commands to `commands` and reading `ledger`.
    pub fn new(commands: mpsc::Sender<Command>, ledger: Ledger) -> ControlService {
        ControlService { commands, ledger }
    }

    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<T, Status> {
        let (tx, rx) = oneshot::channel();
        self.commands.send(make(tx)).await.map_err(|_| Status::unavailable("the daemon is shutting down"))?;
        rx.await.map_err(|_| Status::unavailable("the daemon is shutting down"))
    }
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"error\":{:?}}}", e.to_string()))
}

fn internal(e: impl std::fmt::Display) -> Status {
    Status::internal(e.to_string())
}

#[tonic::async_trait]
impl Control for ControlService {
    async fn status(&self, _: Request<StatusRequest>) -> Result<Response<StatusReply>, Status> {
        let status = self.ask(|reply| Command::Status { reply }).await?;
        Ok(Response::new(StatusReply {
            mode: status.mode.as_str().to_string(),
            breaker_json: json(&status.breaker),
            pending_json: status.pending.iter().map(json).collect(),
            in_effect_json: status.in_effect.iter().map(json).collect(),
            ledger_records: self.ledger.len() as u64,
        }))
    }

    async fn list_decisions(
        &self,
        request: Request<ListDecisionsRequest>,
    ) -> Result<Response<ListDecisionsReply>, Status> {
        let r = request.into_inner();
        let filter = Filter {
            since: (r.since_ns > 0).then_some(r.since_ns),
            rule: (!r.rule.is_empty()).then_some(r.rule),
            target: (!r.target.is_empty()).then_some(r.target),
        };
        let decisions = self.ledger.list(&filter).map_err(internal)?;
        Ok(Response::new(ListDecisionsReply { decisions_json: decisions.iter().map(json).collect() }))
    }

    async fn explain(&self, request: Request<ExplainRequest>) -> Result<Response<ExplainReply>, Status> {
        let id = request.into_inner().id;
        let d =
            self.ledger.get(&id).map_err(internal)?.ok_or_else(|| Status::not_found(format!("no decision {id}")))?;
        let mut chain = vec![json(&d)];
        for linked in [&d.undo_of, &d.undone_by].into_iter().flatten() {
            if let Some(other) = self.ledger.get(linked).map_err(internal)? {
                chain.push(json(&other));
            }
        }
        Ok(Response::new(ExplainReply { decisions_json: chain }))
    }

    async fn approve(&self, request: Request<DecisionRequest>) -> Result<Response<DecisionReply>, Status> {
        let r = request.into_inner();
        let result = self.ask(|reply| Command::Approve { id: r.id, by: r.by, reply }).await?;
        let d = result.map_err(Status::failed_precondition)?;
        Ok(Response::new(DecisionReply { decision_json: json(&d) }))
    }

    async fn reject(&self, request: Request<DecisionRequest>) -> Result<Response<DecisionReply>, Status> {
        let r = request.into_inner();
        let result = self.ask(|reply| Command::Reject { id: r.id, by: r.by, reply }).await?;
        let d = result.map_err(Status::failed_precondition)?;
        Ok(Response::new(DecisionReply { decision_json: json(&d) }))
    }

    async fn reset_breaker(
        &self,
        request: Request<ResetBreakerRequest>,
    ) -> Result<Response<ResetBreakerReply>, Status> {
        let by = request.into_inner().by;
        let previous = self.ask(|reply| Command::ResetBreaker { by, reply }).await?;
        Ok(Response::new(ResetBreakerReply { previous_json: json(&previous) }))
    }

    async fn set_mode(&self, request: Request<SetModeRequest>) -> Result<Response<SetModeReply>, Status> {
        let mode = request.into_inner().mode.parse().map_err(Status::invalid_argument)?;
        self.commands.send(Command::SetMode(mode)).await.map_err(|_| Status::unavailable("shutting down"))?;
        Ok(Response::new(SetModeReply {}))
    }

    async fn reload(&self, _: Request<ReloadRequest>) -> Result<Response<ReloadReply>, Status> {
        self.commands.send(Command::Reload).await.map_err(|_| Status::unavailable("shutting down"))?;
        Ok(Response::new(ReloadReply {}))
    }
}

/// Binds the socket (mode 0600; a stale socket file is replaced) and serves
/// until `shutdown` resolves. Connections from other users are refused.
pub async fn serve(
    path: PathBuf,
    service: ControlService,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> std::io::Result<()> {
    let listener = bind(&path)?;
    // SAFETY: geteuid has no preconditions and cannot fail.
    let owner = unsafe { libc::geteuid() };
    let incoming = UnixListenerStream::new(listener).filter(move |conn| match conn {
        Ok(stream) => match stream.peer_cred() {
            Ok(cred) if cred.uid() == owner => true,
            Ok(cred) => {
                tracing::warn!(message = "Control connection refused: not the daemon's user.", uid = cred.uid());
                false
            }
            Err(error) => {
                tracing::warn!(message = "Control connection refused: no peer credentials.", %error);
                false
            }
        },
        Err(_) => true,
    });
    tracing::info!(message = "Control API listening.", socket = %path.display());
    let result = tonic::transport::Server::builder()
        .add_service(ControlServer::new(service))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await;
    let _ = std::fs::remove_file(&path);
    result.map_err(std::io::Error::other)
}

fn bind(path: &Path) -> std::io::Result<UnixListener> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    // The socket is created with the umask's permissions: tighten the umask
    // around the bind so it is never open to others, not even for a moment.
    // SAFETY: umask only swaps the process's file-creation mask.
    let old = unsafe { libc::umask(0o177) };
    let bound = UnixListener::bind(path);
    // SAFETY: as above; restores the previous mask.
    unsafe { libc::umask(old) };
    let listener = bound?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}
