//! The control service, served by `rocemend run`.
//!
//! Reads go to the ledger directly; everything about the engine or the
//! dispatcher goes to the run loop as a [`Command`] and waits for its
//! answer, so the loop stays the only owner of its state.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;

use engine::dispatch::DispatchError;
use engine::ledger::{Filter, Ledger, RuleRecord};
use engine::names::did_you_mean;
use engine::runtime::{Command, DispatchCommand, EngineCommand, EngineView, ReloadRequest as ReloadRequestCommand};
use engine::time::{parse_duration, wall_clock_now};
use engine::{Mode, RuleHealth};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use super::auth::{Access, Tokens};
use super::events::EventHub;
use super::incidents;
use super::pb::control_server::Control;
use super::pb::*;
use sensors::job::{check_name, JobPush};

/// The service. One per listener: the unix socket's has no tokens (the
/// kernel vouches for the caller), the TCP listener's has.
#[derive(Clone)]
pub struct ControlService {
    commands: mpsc::Sender<Command>,
    ledger: Ledger,
    hub: EventHub,
    jobs: Option<mpsc::Sender<JobPush>>,
    tokens: Option<Arc<Tokens>>,
    health: engine::HealthBoard,
    /// The playbook's `[rule.NAME] mode`s, for the mode in effect `ListRules` shows.
    rule_modes: Arc<HashMap<String, Mode>>,
}

fn gone() -> Status {
    Status::unavailable("the daemon is shutting down")
}

fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("{{\"error\":{:?}}}", e.to_string()))
}

/// The serde name of an enum value (`critical`, `dry-run`).
fn name<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

fn internal(e: impl std::fmt::Display) -> Status {
    Status::internal(e.to_string())
}

fn labels_map(l: &engine::Labels) -> std::collections::HashMap<String, String> {
    l.0.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

impl ControlService {
    /// A service sending commands to `commands`, reading `ledger`, streaming
    /// `hub`'s events and handing job pushes to `jobs` (`None`: this daemon
    /// takes none).
    pub fn new(
        commands: mpsc::Sender<Command>,
        ledger: Ledger,
        hub: EventHub,
        jobs: Option<mpsc::Sender<JobPush>>,
    ) -> ControlService {
        ControlService {
            commands,
            ledger,
            hub,
            jobs,
            tokens: None,
            health: engine::HealthBoard::default(),
            rule_modes: Arc::default(),
        }
    }

    /// The same service, showing the sensors' health from `health`.
    pub fn with_health(mut self, health: engine::HealthBoard) -> ControlService {
        self.health = health;
        self
    }

    /// The same service, knowing the playbook's per-rule modes
    /// (`Playbook::rule_modes`), so `ListRules` shows the mode in effect.
    pub fn with_rule_modes(mut self, rule_modes: HashMap<String, Mode>) -> ControlService {
        self.rule_modes = Arc::new(rule_modes);
        self
    }

    /// The mode `rule`'s decisions are made in, declared `declared`: the
    /// dispatcher's rule (`Dispatcher::effective_mode`) on what this service knows.
    fn mode_in_effect(&self, global: Mode, rule: &str, declared: Mode) -> Mode {
        let playbook = self.rule_modes.get(rule).copied().unwrap_or(Mode::Enforce);
        global.at_most(playbook).at_most(declared).for_dispatch()
    }

    /// The same service, requiring bearer tokens (for TCP).
    pub fn with_tokens(mut self, tokens: Tokens) -> ControlService {
        self.tokens = Some(Arc::new(tokens));
        self
    }

    fn allow<T>(&self, request: &Request<T>, need: Access, call: &str) -> Result<(), Status> {
        match &self.tokens {
            None => Ok(()),
            Some(tokens) => tokens.check(request.metadata(), need, call),
        }
    }

    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<T, Status> {
        let (tx, rx) = oneshot::channel();
        self.commands.send(make(tx)).await.map_err(|_| gone())?;
        rx.await.map_err(|_| gone())
    }

    async fn engine(&self) -> Result<EngineView, Status> {
        self.ask(|reply| EngineCommand::View { reply }.into()).await
    }
}

type EventStream = Pin<Box<dyn Stream<Item = Result<Event, Status>> + Send>>;

#[tonic::async_trait]
impl Control for ControlService {
    async fn status(&self, request: Request<StatusRequest>) -> Result<Response<StatusReply>, Status> {
        self.allow(&request, Access::Read, "Status")?;
        let status = self.ask(|reply| DispatchCommand::Status { reply }.into()).await?;
        let window_start = wall_clock_now().saturating_sub(status.breaker_window);
        Ok(Response::new(StatusReply {
            mode: status.mode.as_str().to_string(),
            breaker_json: json(&status.breaker),
            breaker_trips_in_window: status.breaker.trips_since(window_start) as u32,
            breaker_window_ns: status.breaker_window,
            pending_json: status.pending.iter().map(json).collect(),
            in_effect_json: status.in_effect.iter().map(json).collect(),
            ledger_records: self.ledger.len() as u64,
            silences_json: status.silences.iter().map(json).collect(),
            drifted_json: status.drifted.iter().map(json).collect(),
            sensors_json: self.health.snapshot().iter().map(json).collect(),
            ledger_json: status.ledger.as_ref().map(json).unwrap_or_default(),
            offenders_json: status.offenders.iter().map(json).collect(),
        }))
    }

    async fn list_decisions(
        &self,
        request: Request<ListDecisionsRequest>,
    ) -> Result<Response<ListDecisionsReply>, Status> {
        self.allow(&request, Access::Read, "ListDecisions")?;
        let r = request.into_inner();
        let filter = Filter {
            since: (r.since_ns > 0).then_some(r.since_ns),
            rule: (!r.rule.is_empty()).then_some(r.rule),
            target: (!r.target.is_empty()).then_some(r.target),
        };
        let after = (!r.after.is_empty()).then_some(r.after.as_str());
        let limit = if r.limit == 0 { engine::ledger::MAX_PAGE } else { r.limit as usize };
        let page = self.ledger.page(&filter, after, limit).map_err(internal)?;
        Ok(Response::new(page_reply(&page)))
    }

    async fn explain(&self, request: Request<ExplainRequest>) -> Result<Response<ExplainReply>, Status> {
        self.allow(&request, Access::Read, "Explain")?;
        let id = request.into_inner().id;
        let d =
            self.ledger.get(&id).map_err(internal)?.ok_or_else(|| Status::not_found(format!("no decision {id}")))?;
        let mut chain = vec![json(&d)];
        for linked in [&d.undo_of, &d.undone_by].into_iter().flatten() {
            if let Some(other) = self.ledger.get(linked).map_err(internal)? {
                chain.push(json(&other));
            }
        }
        // Only rules on a ladder have a record; a read that fails leaves
        // the line out rather than the decision unexplained.
        let offender = self.ledger.offender(&d.proposal.rule, &d.proposal.subject).unwrap_or_else(|error| {
            tracing::warn!(message = "Could not read a repeat offender for explain.", %error, id = %id);
            None
        });
        Ok(Response::new(ExplainReply {
            decisions_json: chain,
            offender_json: offender.as_ref().map(json).unwrap_or_default(),
        }))
    }

    async fn list_rules(&self, request: Request<ListRulesRequest>) -> Result<Response<ListRulesReply>, Status> {
        self.allow(&request, Access::Read, "ListRules")?;
        let view = self.engine().await?;
        let global = self.ask(|reply| DispatchCommand::Status { reply }.into()).await?.mode;
        // A scan of every decision kept: off the runtime's threads.
        let ledger = self.ledger.clone();
        let records = tokio::task::spawn_blocking(move || ledger.rule_records()).await.map_err(internal)?;
        let records = records.map_err(internal)?;
        let rules = view
            .rules
            .iter()
            .map(|(rule, health)| {
                let count = |s: engine::State| {
                    view.instances.iter().filter(|i| i.rule == rule.name && i.instance.state == s).count() as u32
                };
                let (health, last_error, last_error_ns) = match health {
                    RuleHealth::Ok => {
                        let (e, at) = self.hub.last_error(&rule.name).unwrap_or_default();
                        ("ok", e, at)
                    }
                    RuleHealth::Quarantined { error, at } => ("quarantined", error.to_string(), *at),
                };
                Rule {
                    name: rule.name.clone(),
                    description: rule.description.clone(),
                    severity: name(&rule.severity),
                    mode: self.mode_in_effect(global, &rule.name, rule.mode).as_str().to_string(),
                    declared_mode: rule.mode.as_str().to_string(),
                    health: health.to_string(),
                    last_error,
                    last_error_ns,
                    firing: count(engine::State::Firing),
                    pending: count(engine::State::Pending),
                    ..record_fields(records.get(&rule.name).cloned().unwrap_or_default())
                }
            })
            .collect();
        Ok(Response::new(ListRulesReply { rules }))
    }

    async fn list_instances(
        &self,
        request: Request<ListInstancesRequest>,
    ) -> Result<Response<ListInstancesReply>, Status> {
        self.allow(&request, Access::Read, "ListInstances")?;
        let rule = request.into_inner().rule;
        let view = self.engine().await?;
        let instances = view
            .instances
            .iter()
            .filter(|i| rule.is_empty() || i.rule == rule)
            .filter(|i| i.instance.state != engine::State::Inactive)
            .map(|i| Instance {
                rule: i.rule.clone(),
                subject: labels_map(&i.subject),
                state: i.instance.state.as_str().to_string(),
                since_ns: i.instance.since,
                active_at_ns: i.instance.active_at,
                stale: i.instance.stale,
            })
            .collect();
        Ok(Response::new(ListInstancesReply { instances }))
    }

    async fn list_incidents(
        &self,
        request: Request<ListIncidentsRequest>,
    ) -> Result<Response<ListIncidentsReply>, Status> {
        self.allow(&request, Access::Read, "ListIncidents")?;
        let since = request.into_inner().since_ns;
        let view = self.engine().await?;
        let filter = Filter { since: (since > 0).then_some(since), rule: None, target: None };
        let decisions = self.ledger.list(&filter).map_err(internal)?;
        let resolutions = self.ledger.resolutions().map_err(internal)?;
        let list = incidents::incidents(&decisions, &view.instances, &resolutions, since);
        Ok(Response::new(ListIncidentsReply { incidents: list }))
    }

    type WatchStream = EventStream;

    async fn watch(&self, request: Request<WatchRequest>) -> Result<Response<Self::WatchStream>, Status> {
        self.allow(&request, Access::Read, "Watch")?;
        let kinds = request.into_inner().kinds;
        let mut rx = self.hub.subscribe();
        let closed = self.hub.closed();
        let (tx, out) = mpsc::channel(64);
        tokio::spawn(async move {
            tokio::pin!(closed);
            loop {
                let received = tokio::select! {
                    r = rx.recv() => r,
                    _ = &mut closed => return,
                };
                let event = match received {
                    Ok(e) => e,
                    Err(broadcast::error::RecvError::Lagged(n)) => Event {
                        at_ns: wall_clock_now(),
                        kind: "lagged".into(),
                        text: format!("{n} events were missed: this client reads too slowly"),
                        json: format!("{{\"missed\":{n}}}"),
                    },
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                if !kinds.is_empty() && event.kind != "lagged" && !kinds.contains(&event.kind) {
                    continue;
                }
                if tx.send(Ok(event)).await.is_err() {
                    return; // the client went away
                }
            }
        });
        Ok(Response::new(Box::pin(tokio_stream::wrappers::ReceiverStream::new(out))))
    }

    async fn approve(&self, request: Request<DecisionRequest>) -> Result<Response<DecisionReply>, Status> {
        self.allow(&request, Access::Write, "Approve")?;
        let r = request.into_inner();
        let result = self.ask(|reply| DispatchCommand::Approve { id: r.id, by: r.by, reply }.into()).await?;
        let d = result.map_err(refused)?;
        Ok(Response::new(DecisionReply { decision_json: json(&d) }))
    }

    async fn reject(&self, request: Request<DecisionRequest>) -> Result<Response<DecisionReply>, Status> {
        self.allow(&request, Access::Write, "Reject")?;
        let r = request.into_inner();
        let result = self.ask(|reply| DispatchCommand::Reject { id: r.id, by: r.by, reply }.into()).await?;
        let d = result.map_err(refused)?;
        Ok(Response::new(DecisionReply { decision_json: json(&d) }))
    }

    async fn undo(&self, request: Request<DecisionRequest>) -> Result<Response<DecisionReply>, Status> {
        self.allow(&request, Access::Write, "Undo")?;
        let r = request.into_inner();
        if !is_decision_id(&r.id) {
            let hint = if incidents::is_incident_id(&r.id) { "; to end an incident: rocemend resolve" } else { "" };
            return Err(Status::invalid_argument(format!(
                "{:?} is not a decision id (hex digits, as `rocemend decisions` lists them){hint}",
                r.id
            )));
        }
        let by = if r.by.is_empty() { "unknown".to_string() } else { r.by };
        let result = self.ask(|reply| DispatchCommand::Undo { id: r.id, by, reply }.into()).await?;
        let d = result.map_err(refused)?;
        Ok(Response::new(DecisionReply { decision_json: json(&d) }))
    }

    async fn resolve_incident(
        &self,
        request: Request<ResolveIncidentRequest>,
    ) -> Result<Response<ResolveIncidentReply>, Status> {
        self.allow(&request, Access::Write, "ResolveIncident")?;
        let r = request.into_inner();
        let incident = self.open_incident(&r.id).await?;
        let by = if r.by.is_empty() { "unknown".to_string() } else { r.by };
        let started = incident.started_ns;
        let subject = engine::Labels::from_pairs(incident.subject.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let (rule, id) = (incident.rule, incident.id);
        let command = |reply| DispatchCommand::Resolve { incident: id, rule, subject, started, by, reply }.into();
        let (resolution, decisions) = self.ask(command).await?.map_err(refused)?;
        Ok(Response::new(ResolveIncidentReply {
            resolution_json: json(&resolution),
            decisions_json: decisions.iter().map(json).collect(),
        }))
    }

    async fn reset_breaker(
        &self,
        request: Request<ResetBreakerRequest>,
    ) -> Result<Response<ResetBreakerReply>, Status> {
        self.allow(&request, Access::Write, "ResetBreaker")?;
        let by = request.into_inner().by;
        let previous = self.ask(|reply| DispatchCommand::ResetBreaker { by, reply }.into()).await?;
        Ok(Response::new(ResetBreakerReply { previous_json: json(&previous) }))
    }

    async fn set_mode(&self, request: Request<SetModeRequest>) -> Result<Response<SetModeReply>, Status> {
        self.allow(&request, Access::Write, "SetMode")?;
        let r = request.into_inner();
        let mode = r.mode.parse().map_err(|e: engine::mode::UnknownMode| Status::invalid_argument(e.to_string()))?;
        let by = if r.by.is_empty() { "unknown".to_string() } else { r.by };
        self.commands.send(DispatchCommand::SetMode { mode, by }.into()).await.map_err(|_| gone())?;
        Ok(Response::new(SetModeReply {}))
    }

    async fn reload(&self, request: Request<ReloadRequest>) -> Result<Response<ReloadReply>, Status> {
        self.allow(&request, Access::Write, "Reload")?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        let request = ReloadRequestCommand { allow_shrink: request.into_inner().allow_shrink, reply: Some(reply) };
        self.commands.send(EngineCommand::Reload(request).into()).await.map_err(|_| gone())?;
        let report = answer.await.map_err(|_| gone())?.map_err(|e| Status::failed_precondition(e.to_string()))?;
        Ok(Response::new(ReloadReply {
            unchanged: report.unchanged.len() as u32,
            changed: report.changed,
            added: report.added,
            removed: report.removed,
        }))
    }

    async fn silence(&self, request: Request<SilenceRequest>) -> Result<Response<SilenceReply>, Status> {
        self.allow(&request, Access::Write, "Silence")?;
        let r = request.into_inner();
        let duration =
            parse_duration(&r.duration).map_err(|e| Status::invalid_argument(format!("silence duration: {e}")))?;
        if duration <= 0 {
            return Err(Status::invalid_argument("silence duration must be positive"));
        }
        if !r.rule.is_empty() {
            // A silence of a rule that is not loaded would hold nothing and
            // say it holds something: a typo must not pass for a silence.
            let view = self.engine().await?;
            if !view.rules.iter().any(|(rule, _)| rule.name == r.rule) {
                let names = view.rules.iter().map(|(rule, _)| rule.name.as_str());
                return Err(Status::invalid_argument(format!(
                    "no rule {:?} is loaded{}",
                    r.rule,
                    did_you_mean(&r.rule, names)
                )));
            }
        }
        let silence = engine::dispatch::Silence {
            id: String::new(),
            rule: (!r.rule.is_empty()).then_some(r.rule),
            target: (!r.target.is_empty()).then_some(r.target),
            until: wall_clock_now().saturating_add(duration),
            by: r.by,
            reason: r.reason,
        };
        let set = self.ask(|reply| DispatchCommand::Silence { silence, reply }.into()).await?;
        let set = set.map_err(|e| Status::invalid_argument(e.to_string()))?;
        let (rule, target) = (set.rule.as_deref().unwrap_or("*"), set.target.as_deref().unwrap_or("*"));
        tracing::info!(message = "Silence set.", id = %set.id, rule, target, until = set.until, by = %set.by);
        Ok(Response::new(SilenceReply { silence_json: json(&set) }))
    }

    async fn unsilence(&self, request: Request<UnsilenceRequest>) -> Result<Response<UnsilenceReply>, Status> {
        self.allow(&request, Access::Write, "Unsilence")?;
        let id = request.into_inner().id;
        let lifted = self.ask(|reply| DispatchCommand::Unsilence { id: id.clone(), reply }.into()).await?;
        if !lifted {
            return Err(Status::not_found(format!("no silence {id} (it may have ended)")));
        }
        Ok(Response::new(UnsilenceReply {}))
    }

    async fn push_job(&self, request: Request<PushJobRequest>) -> Result<Response<PushJobReply>, Status> {
        self.allow(&request, Access::Write, "PushJob")?;
        let r = request.into_inner();
        check_name("job", &r.job).map_err(|e| Status::invalid_argument(e.to_string()))?;
        for n in &r.nodes {
            check_name("node", n).map_err(|e| Status::invalid_argument(e.to_string()))?;
        }
        let mut values = Vec::new();
        for (metric, value) in [
            ("job_step_time_seconds", r.step_time_seconds),
            ("nccl_busbw_gbps", r.busbw_gbps),
            ("nccl_algbw_gbps", r.algbw_gbps),
        ] {
            if let Some(v) = value {
                if !v.is_finite() || v < 0.0 {
                    return Err(Status::invalid_argument(format!("{metric} = {v}: must be a finite number >= 0")));
                }
                values.push((metric, v));
            }
        }
        if values.is_empty() && r.nodes.is_empty() {
            return Err(Status::invalid_argument("nothing to push: give a signal or the job's nodes"));
        }
        let at = if r.at_ns > 0 { r.at_ns } else { wall_clock_now() };
        let (reply, answer) = oneshot::channel();
        let jobs = self.jobs.as_ref().ok_or_else(|| {
            Status::failed_precondition(
                "this daemon takes no job signals: engine.exit_when_sensors_end is set (a replay)",
            )
        })?;
        jobs.send(JobPush { job: r.job, nodes: r.nodes, at, values, reply }).await.map_err(|_| gone())?;
        let samples = answer.await.map_err(|_| gone())?.map_err(|e| Status::resource_exhausted(e.to_string()))?;
        Ok(Response::new(PushJobReply { samples }))
    }
}

impl ControlService {
    /// The incident `id` if it is firing, the one state an operator can end;
    /// why not otherwise, as gRPC says it.
    async fn open_incident(&self, id: &str) -> Result<Incident, Status> {
        if !incidents::is_incident_id(id) {
            return Err(Status::invalid_argument(format!(
                "{id:?} is not an incident id (\"inc-\" and 12 hex digits, as `rocemend incidents` lists them)"
            )));
        }
        let view = self.engine().await?;
        let decisions = self.ledger.list(&Filter::default()).map_err(internal)?;
        let resolutions = self.ledger.resolutions().map_err(internal)?;
        let found = incidents::incidents(&decisions, &view.instances, &resolutions, 0).into_iter().find(|i| i.id == id);
        let incident =
            found.ok_or_else(|| Status::not_found(format!("no incident {id} (`rocemend incidents` lists them)")))?;
        let why = match incident.state.as_str() {
            "firing" => return Ok(incident),
            "resolved" if !incident.resolved_by.is_empty() => {
                format!("it was resolved by {} at {}", incident.resolved_by, crate::time::rfc3339(incident.resolved_ns))
            }
            "resolved" | "over" => "it is resolved already".to_string(),
            "pending" => "it is pending: its rule has not fired, so nothing was done to end".to_string(),
            "stale" => "its inputs stopped: it ends when they come back".to_string(),
            other => format!("it is {other}"),
        };
        Err(Status::failed_precondition(format!("cannot resolve {id}: {why}")))
    }
}

/// The fields of `Rule` that carry `r`, a rule's measured record.
fn record_fields(r: RuleRecord) -> Rule {
    Rule {
        proposals: r.proposals,
        executed: r.executed,
        effective: r.effective,
        ineffective: r.ineffective,
        harmful: r.harmful,
        unread: r.unread,
        effective_percent: r.effective_percent(),
        median_time_to_effect_ns: r.median_time_to_effect_ns.unwrap_or(0),
        ..Rule::default()
    }
}

/// Whether `id` can name a decision: hex digits (the ledger's ids), or `m`
/// and hex digits (a dispatcher without a ledger).
fn is_decision_id(id: &str) -> bool {
    let hex = id.strip_prefix('m').unwrap_or(id);
    !hex.is_empty() && hex.len() <= 32 && hex.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A refused approval or rejection as gRPC says it: an unknown id is
/// NOT_FOUND, a decision that is not waiting is FAILED_PRECONDITION.
fn refused(error: DispatchError) -> Status {
    match error {
        DispatchError::Unknown(_) => Status::not_found(error.to_string()),
        _ => Status::failed_precondition(error.to_string()),
    }
}

/// The most bytes of JSON one page of decisions carries: with the request's
/// framing, well under gRPC's 4 MiB default limit, whatever the records hold.
pub const MAX_PAGE_BYTES: usize = 2 << 20;

/// `page` as a reply of at most [`MAX_PAGE_BYTES`]: records past the bound
/// are left for the next page (one record is always sent, so a page moves on).
fn page_reply(page: &engine::ledger::Page) -> ListDecisionsReply {
    let mut decisions_json: Vec<String> = Vec::new();
    let mut bytes = 0;
    let mut next_after = page.next_after.clone();
    for d in &page.decisions {
        let text = json(d);
        if !decisions_json.is_empty() && bytes + text.len() > MAX_PAGE_BYTES {
            next_after = Some(page.decisions[decisions_json.len() - 1].id.clone());
            break;
        }
        bytes += text.len();
        decisions_json.push(text);
    }
    ListDecisionsReply { decisions_json, next_after: next_after.unwrap_or_default() }
}
