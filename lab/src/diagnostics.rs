//! Diagnostics when something fails on the cluster: what the cluster looked like right after an
//! act, a bounded wait or `cluster up` failed, saved to a directory, plus the three most telling
//! lines for the terminal.
//!
//! Models: chainsaw's `catch`/`finally` (collect events and pod logs when a step fails) and kind's
//! `export logs`; the code is ours. [`collect`] writes into its directory:
//!
//! | file | what |
//! |---|---|
//! | `observations.json` | what [`telling_lines`] read (a real failure's file is a test case) |
//! | `summary.json`, `summary.txt` | the failed step, the error verbatim, the last state of the wait that ran out, the three lines, every file written and every collection step that failed |
//! | `events.json`, `events.txt` | core/v1 Events of the lab namespaces and `kyverno`, oldest first (JSON verbatim; text: time, type, namespace, object, reason, message) |
//! | `kyverno-controller.json` | the admission controller's Deployment replicas, its pods' containers with restart counts, `kyverno-svc`'s ready endpoints, the lab's webhooks registered |
//! | `kyverno-pods.json`, `kyverno-deployments.json` | every pod / Deployment of `kyverno`, verbatim (restart counts of every Kyverno pod) |
//! | `logs/<pod>.<container>.log`, `….previous.log` | the last [`LOG_TAIL_LINES`] lines of each container of every admission-controller pod (kube API `pods/log`, `timestamps=true`), and of its previous instance when it restarted |
//! | `webhooks.json` | every Validating- and MutatingWebhookConfiguration, verbatim |
//! | `nodes.json`, `nodes.txt` | every Node's conditions |
//! | `daemons/<file>` | the last [`DAEMON_TAIL_LINES`] lines of each daemon log of an embedded cluster's state dir (given by the caller) |
//!
//! Each collection step runs under its own bound ([`STEP_BOUND`]) and a step that fails is one
//! line in `summary.collector_failures`: it never replaces the original error, which the caller
//! keeps returning.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Event, Pod};
use serde::{Deserialize, Serialize};

use crate::cluster::{self, Cluster};
use crate::error::LabError;
pub use lab_core::diagnostics::*;

/// Bound of each collection step (one API list, one log read, one file copy).
pub const STEP_BOUND: Duration = Duration::from_secs(15);
/// Lines kept of each Kyverno container log.
pub const LOG_TAIL_LINES: i64 = 200;
/// Lines kept of each daemon log of the embedded backend.
pub const DAEMON_TAIL_LINES: usize = 200;
/// Service in front of Kyverno's admission webhooks (chart 3.9.x).
pub const KYVERNO_SERVICE: &str = "kyverno-svc";

/// Whether an act's error is a failure on the cluster worth diagnostics (a wait ran out, the API
/// or the CRI refused, the cluster differs from the evidence, a fault was refused); input, usage,
/// lock and evidence-file errors, interruptions and an unreachable cluster (nothing to read there;
/// the student tool then writes nothing) are not.
pub fn worth_collecting(err: &LabError) -> bool {
    matches!(
        err,
        LabError::WaitTimedOut { .. }
            | LabError::Kube(_)
            | LabError::Cri { .. }
            | LabError::ClusterMismatch { .. }
            | LabError::FaultRefused { .. }
    )
}

/// One Event, flattened for the table and the picker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventRow {
    /// The newest of `lastTimestamp`, `eventTime`, `series.lastObservedTime`, `firstTimestamp`,
    /// `metadata.creationTimestamp` (RFC 3339 UTC).
    pub time: String,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Namespace of the Event.
    pub namespace: String,
    /// `Kind/name` of the object it is about.
    pub object: String,
    /// `reason`.
    pub reason: String,
    /// `message`.
    pub message: String,
    /// `count` (1 when absent).
    pub count: i32,
}

/// Flattens one Event.
pub fn event_row(e: &Event) -> EventRow {
    let t = |t: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| {
        t.as_ref().map(|t| rfc3339(t.0))
    };
    let time = [
        t(&e.last_timestamp),
        e.event_time.as_ref().map(|m| rfc3339(m.0)),
        e.series
            .as_ref()
            .and_then(|s| s.last_observed_time.as_ref())
            .map(|m| rfc3339(m.0)),
        t(&e.first_timestamp),
        t(&e.metadata.creation_timestamp),
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or_default();
    EventRow {
        time,
        type_: e.type_.clone().unwrap_or_default(),
        namespace: e.metadata.namespace.clone().unwrap_or_default(),
        object: format!(
            "{}/{}",
            e.involved_object.kind.as_deref().unwrap_or("?"),
            e.involved_object.name.as_deref().unwrap_or("?")
        ),
        reason: e.reason.clone().unwrap_or_default(),
        message: e.message.clone().unwrap_or_default(),
        count: e.count.unwrap_or(1),
    }
}

/// RFC 3339 UTC (ms) of a k8s-openapi time (a `jiff::Timestamp`).
fn rfc3339(t: k8s_openapi::jiff::Timestamp) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(t.as_millisecond())
        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

/// The admission controller as the collector saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControllerState {
    /// Its Deployment: `None` when it does not exist.
    pub deployment: Option<Replicas>,
    /// Its pods ([`cluster::ADMISSION_POD_SELECTOR`]).
    pub pods: Vec<PodState>,
    /// Ready endpoints of [`KYVERNO_SERVICE`] (`None`: not read).
    pub ready_endpoints: Option<usize>,
    /// Names of the registered webhooks that belong to the lab's policy
    /// (`…-finegrained-kca-webhook-label`); `None`: not read.
    pub lab_webhooks: Option<Vec<String>>,
}

/// A Deployment's replica counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replicas {
    /// `spec.replicas` (1 when absent, the API default).
    pub spec: i32,
    /// `status.readyReplicas`.
    pub ready: i32,
    /// `status.availableReplicas`.
    pub available: i32,
}

/// One pod and its containers' restart counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodState {
    /// `metadata.name`.
    pub name: String,
    /// `status.phase`.
    pub phase: String,
    /// Whether `metadata.deletionTimestamp` is set.
    pub terminating: bool,
    /// Per container: (name, restartCount, the last termination's reason).
    pub containers: Vec<ContainerState>,
}

/// One container's status.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerState {
    /// Container name.
    pub name: String,
    /// `restartCount`.
    pub restarts: i32,
    /// `ready`.
    pub ready: bool,
    /// `lastState.terminated.reason` (e.g. `OOMKilled`, `Error`).
    pub last_terminated: Option<String>,
}

fn pod_state(p: &Pod) -> PodState {
    let st = p.status.clone().unwrap_or_default();
    PodState {
        name: p.metadata.name.clone().unwrap_or_default(),
        phase: st.phase.clone().unwrap_or_default(),
        terminating: p.metadata.deletion_timestamp.is_some(),
        containers: st
            .init_container_statuses
            .iter()
            .flatten()
            .chain(st.container_statuses.iter().flatten())
            .map(|c| ContainerState {
                name: c.name.clone(),
                restarts: c.restart_count,
                ready: c.ready,
                last_terminated: c
                    .last_state
                    .as_ref()
                    .and_then(|s| s.terminated.as_ref())
                    .and_then(|t| t.reason.clone()),
            })
            .collect(),
    }
}

fn replicas(d: &Deployment) -> Replicas {
    let st = d.status.clone().unwrap_or_default();
    Replicas {
        spec: d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
        ready: st.ready_replicas.unwrap_or(0),
        available: st.available_replicas.unwrap_or(0),
    }
}

/// What the picker reads: the failure and what the collector saw.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observations {
    /// The step that failed, e.g. `lab b act 2` or `cluster up`.
    pub failed_step: String,
    /// The error, verbatim (all its causes, `: `-joined).
    pub error: String,
    /// The last state of the wait that ran out, when the error carries one.
    pub wait: Option<WaitState>,
    /// Events, oldest first.
    pub events: Vec<EventRow>,
    /// The admission controller (`None`: not read).
    pub controller: Option<ControllerState>,
    /// The admission controller containers' last log lines (the current pods', then previous
    /// instances'), oldest first.
    pub admission_log: Vec<String>,
}

/// Whether a log line is an error line: zap's console `\tERROR\t`, JSON `"level":"error"`, logfmt
/// `level=error`, klog's `E` + `MMDD` header (Kyverno 1.19 logs through logr to zap or klog).
pub fn is_error_line(line: &str) -> bool {
    // A `timestamps=true` prefix (`2026-…Z `) is skipped for the klog header.
    let body = match line.split_once(' ') {
        Some((ts, rest)) if ts.len() >= 20 && ts.ends_with('Z') && ts.contains('T') => rest,
        _ => line,
    };
    let klog = body.len() > 5
        && body.starts_with('E')
        && body[1..5].bytes().all(|b| b.is_ascii_digit())
        && body.as_bytes()[5] == b' ';
    klog || body.contains("\tERROR\t")
        || body.contains(" ERROR ")
        || body.contains("\"level\":\"error\"")
        || body.contains("level=error")
}

/// When an error's first line hands over to a daemon's log (`… exited; last lines of
/// <log>:`, the embedded cluster's wait on a daemon that died), that log's last error line in
/// the lines that follow: klog `E`/`F` (`E1201 14:24:14.783584 630 run.go:72] …`), or what
/// [`is_error_line`] counts as one. `None` otherwise.
pub fn daemon_error_line(error: &str) -> Option<&str> {
    let mut lines = error.lines();
    let first = lines.next()?;
    if !first.trim_end().ends_with(':') || !first.contains("last lines of") {
        return None;
    }
    lines.map(str::trim).rev().find(|l| {
        let fatal = l.len() > 5
            && l.starts_with('F')
            && l[1..5].bytes().all(|b| b.is_ascii_digit())
            && l.as_bytes()[5] == b' ';
        fatal || is_error_line(l) || l.contains("level=fatal")
    })
}

/// The admission controller line, when something about it is abnormal: Deployment absent, fewer
/// ready than wanted (0 wanted included), no ready endpoint behind `kyverno-svc`, a container that
/// restarted, or none of the lab's webhooks registered while some are expected.
pub fn controller_line(c: &ControllerState) -> Option<String> {
    let mut parts = Vec::new();
    let mut abnormal = false;
    let who = format!(
        "{}/{}",
        cluster::KYVERNO_NAMESPACE,
        cluster::ADMISSION_DEPLOYMENT
    );
    match &c.deployment {
        None => {
            abnormal = true;
            parts.push(format!("{who}: absent"));
        }
        Some(r) => {
            abnormal |= r.spec == 0 || r.ready < r.spec;
            parts.push(format!(
                "{who}: replicas {} (ready {}, available {})",
                r.spec, r.ready, r.available
            ));
        }
    }
    if c.pods.is_empty() {
        parts.push("no admission-controller pod".into());
    }
    let restarted: Vec<String> = c
        .pods
        .iter()
        .flat_map(|p| {
            p.containers
                .iter()
                .filter(|k| k.restarts > 0)
                .map(move |k| {
                    format!(
                        "{}/{} restarted {}×{}",
                        p.name,
                        k.name,
                        k.restarts,
                        k.last_terminated
                            .as_deref()
                            .map(|r| format!(" (last: {r})"))
                            .unwrap_or_default()
                    )
                })
        })
        .collect();
    abnormal |= !restarted.is_empty();
    parts.extend(restarted);
    if let Some(n) = c.ready_endpoints {
        abnormal |= n == 0;
        parts.push(if n == 0 {
            format!("{KYVERNO_SERVICE}: no ready endpoints")
        } else {
            format!("{KYVERNO_SERVICE}: {n} ready endpoints")
        });
    }
    if let Some(w) = &c.lab_webhooks {
        parts.push(if w.is_empty() {
            format!(
                "registration absent: no webhook of policy {}",
                cluster::POLICY_NAME
            )
        } else {
            format!("registered: {}", w.join(", "))
        });
    }
    abnormal.then(|| parts.join("; "))
}

/// Kubelet's `MissingClusterDNS` Warning: repeated for every pod of a node whose kubelet has no
/// cluster DNS (the embedded node's configuration; kubelet `pkg/kubelet/network/dns`), so a
/// standing condition rather than news.
const STANDING_WARNINGS: &[&str] = &["MissingClusterDNS"];

/// How telling a Warning is: about the admission controller or outside `kyverno` (the lab
/// namespaces) ranks above the other Kyverno controllers; a standing condition
/// ([`STANDING_WARNINGS`]) is 0, never picked.
fn warning_rank(e: &EventRow) -> u8 {
    if STANDING_WARNINGS.contains(&e.reason.as_str()) {
        0
    } else if e.namespace != cluster::KYVERNO_NAMESPACE
        || e.object.contains(cluster::ADMISSION_DEPLOYMENT)
    {
        2
    } else {
        1
    }
}

/// The three most telling lines of a failure, in this order of preference:
/// 1. the last state of the wait that ran out, else the error's first line;
/// 2. the admission controller when something about it is abnormal ([`controller_line`]);
/// 3. the newest `Warning` Event of the highest rank (`warning_rank`: the admission controller's
///    and the lab namespaces' first; standing conditions are never shown, they stay in
///    `events.txt`);
/// 4. the admission controller's last error log line ([`is_error_line`]).
///
/// At most three lines; fewer when less was seen. Pure.
pub fn telling_lines(o: &Observations) -> Vec<String> {
    let mut lines = Vec::new();
    lines.push(match &o.wait {
        Some(w) => format!(
            "{} failed: waited {} s for {}; last state: {}",
            o.failed_step,
            w.waited_ms / 1000,
            w.what,
            w.last_state
        ),
        None => match daemon_error_line(&o.error) {
            Some(cause) => format!(
                "{} failed: {} {}",
                o.failed_step,
                o.error.lines().next().unwrap_or("").trim_end(),
                cause
            ),
            None => format!(
                "{} failed: {}",
                o.failed_step,
                o.error.lines().next().unwrap_or("")
            ),
        },
    });
    if let Some(l) = o.controller.as_ref().and_then(controller_line) {
        lines.push(l);
    }
    if let Some(e) = o
        .events
        .iter()
        .filter(|e| e.type_ == "Warning" && warning_rank(e) > 0)
        .max_by_key(|e| (warning_rank(e), &e.time))
    {
        lines.push(format!(
            "Warning event {} {}/{} {}: {}",
            e.time, e.namespace, e.object, e.reason, e.message
        ));
    }
    if let Some(l) = o.admission_log.iter().rev().find(|l| is_error_line(l)) {
        lines.push(format!(
            "admission controller's last error: {}",
            l.trim_end()
        ));
    }
    lines.truncate(3);
    lines
}

/// What [`collect`] is asked to do.
#[derive(Debug, Clone)]
pub struct Request {
    /// Where the files go (created).
    pub dir: PathBuf,
    /// The step that failed, e.g. `lab b act 2`, `cluster up`.
    pub failed_step: String,
    /// The error, verbatim.
    pub error: String,
    /// The last state of the wait that ran out, if the error carries one.
    pub wait: Option<WaitState>,
    /// The lab namespaces whose Events are read (with `kyverno`).
    pub namespaces: Vec<String>,
    /// The embedded cluster's daemon log directory (`<state dir>/logs`), tailed into `daemons/`.
    pub daemon_logs: Option<PathBuf>,
}

/// The namespaces whose Events are read besides `kyverno`: the lab's target and control namespaces.
pub fn lab_namespaces() -> Vec<String> {
    vec![
        crate::labs::common::TARGET_NAMESPACE.to_owned(),
        crate::labs::common::CONTROL_NAMESPACE.to_owned(),
    ]
}

/// The request for act `act` of `lab` that failed with `err`: step `lab a act 2`, the error's text
/// with its causes, its wait state, the lab namespaces.
pub fn act_request(
    lab: crate::evidence::Lab,
    act: u8,
    err: &LabError,
    dir: PathBuf,
    daemon_logs: Option<PathBuf>,
) -> Request {
    let mut error = err.to_string();
    let mut cur = std::error::Error::source(err);
    while let Some(c) = cur {
        error.push_str(&format!(": {c}"));
        cur = c.source();
    }
    Request {
        dir,
        failed_step: format!("lab {} act {act}", lab.as_str()),
        error,
        wait: wait_state(err),
        namespaces: lab_namespaces(),
        daemon_logs,
    }
}

struct Writer {
    dir: PathBuf,
    files: Vec<String>,
    failures: Vec<String>,
}

impl Writer {
    fn write(&mut self, rel: &str, bytes: &[u8]) {
        let p = self.dir.join(rel);
        let r = p
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&p, bytes));
        match r {
            Ok(()) => self.files.push(rel.to_owned()),
            Err(e) => self.failures.push(format!("writing {}: {e}", p.display())),
        }
    }
    fn json<T: Serialize>(&mut self, rel: &str, v: &T) {
        match serde_json::to_vec_pretty(v) {
            Ok(b) => self.write(rel, &b),
            Err(e) => self.failures.push(format!("encoding {rel}: {e}")),
        }
    }
    fn fail(&mut self, step: &str, e: impl std::fmt::Display) {
        self.failures.push(format!("{step}: {e}"));
    }
}

/// Runs one collection step under [`STEP_BOUND`]; a failure or a timeout becomes `None` and a line
/// in the writer's failures.
async fn step<T>(
    w: &mut Writer,
    what: &str,
    f: impl std::future::Future<Output = Result<T, LabError>>,
) -> Option<T> {
    match tokio::time::timeout(STEP_BOUND, f).await {
        Ok(Ok(v)) => Some(v),
        Ok(Err(e)) => {
            w.fail(what, e);
            None
        }
        Err(_) => {
            w.fail(what, format!("no answer within {} s", STEP_BOUND.as_secs()));
            None
        }
    }
}

/// Collects the diagnostics of one failure into `req.dir` (see the module docs for the files) and
/// returns the summary (also written as `summary.json` and `summary.txt`). Never fails: every step
/// that cannot be done is a line in [`Summary::collector_failures`]. `kubeconfig`: as for
/// [`Cluster::connect`]. Bounded: at most [`STEP_BOUND`] per step.
pub async fn collect(kubeconfig: Option<&Path>, req: &Request) -> Summary {
    let collected_at = crate::cluster::now_rfc3339();
    let mut w = Writer {
        dir: req.dir.clone(),
        files: Vec::new(),
        failures: Vec::new(),
    };
    if let Err(e) = std::fs::create_dir_all(&req.dir) {
        w.fail(&format!("creating {}", req.dir.display()), e);
    }
    let mut obs = Observations {
        failed_step: req.failed_step.clone(),
        error: req.error.clone(),
        wait: req.wait.clone(),
        ..Default::default()
    };
    let cl = step(
        &mut w,
        "connecting to the API server",
        Cluster::connect(kubeconfig),
    )
    .await;
    if let Some(cl) = cl {
        collect_cluster(&cl, req, &mut w, &mut obs).await;
    }
    if let Some(logs) = &req.daemon_logs {
        tail_daemon_logs(logs, &mut w);
    }
    // The picker's input, so a real failure can become a test case of [`telling_lines`].
    w.json("observations.json", &obs);
    let mut summary = Summary {
        failed_step: req.failed_step.clone(),
        error: req.error.clone(),
        wait: req.wait.clone(),
        telling: telling_lines(&obs),
        collected_at,
        files: Vec::new(),
        collector_failures: Vec::new(),
    };
    // The summary lists itself and the text file.
    w.files.push(SUMMARY_FILE.into());
    w.files.push("summary.txt".into());
    summary.files = w.files.clone();
    summary.collector_failures = w.failures.clone();
    if let Err(e) = std::fs::write(req.dir.join("summary.txt"), summary_text(&summary)) {
        summary
            .collector_failures
            .push(format!("writing summary.txt: {e}"));
    }
    if let Ok(b) = serde_json::to_vec_pretty(&summary)
        && let Err(e) = std::fs::write(req.dir.join(SUMMARY_FILE), b)
    {
        summary
            .collector_failures
            .push(format!("writing {SUMMARY_FILE}: {e}"));
    }
    summary
}

/// The cluster's part of [`collect`], each a named step: Events, Kyverno's Deployments, pods and
/// endpoints, the webhook configurations, the admission controller's logs, the Nodes.
async fn collect_cluster(cl: &Cluster, req: &Request, w: &mut Writer, obs: &mut Observations) {
    obs.events = collect_events(cl, &req.namespaces, w).await;
    let (mut ctl, admission) = collect_kyverno(cl, w).await;
    let lab_webhooks = collect_webhooks(cl, w).await;
    if let Some(ctl) = &mut ctl {
        ctl.lab_webhooks = lab_webhooks;
        w.json("kyverno-controller.json", ctl);
    }
    obs.controller = ctl;
    obs.admission_log = collect_admission_logs(cl, &admission, w).await;
    collect_nodes(cl, w).await;
}

/// `events.json` (verbatim) and `events.txt` (the table) of the lab namespaces and `kyverno`,
/// oldest first; returns their rows.
async fn collect_events(cl: &Cluster, lab_namespaces: &[String], w: &mut Writer) -> Vec<EventRow> {
    let mut namespaces = lab_namespaces.to_vec();
    namespaces.push(cluster::KYVERNO_NAMESPACE.into());
    let mut events: Vec<Event> = Vec::new();
    for ns in &namespaces {
        if let Some(mut e) = step(w, &format!("listing Events of {ns}"), cl.events(ns)).await {
            events.append(&mut e);
        }
    }
    let mut rows: Vec<(EventRow, Event)> = events.into_iter().map(|e| (event_row(&e), e)).collect();
    rows.sort_by(|a, b| a.0.time.cmp(&b.0.time));
    w.json(
        "events.json",
        &rows.iter().map(|r| &r.1).collect::<Vec<_>>(),
    );
    let mut table = String::from("TIME\tTYPE\tNAMESPACE\tOBJECT\tREASON\tCOUNT\tMESSAGE\n");
    for (r, _) in &rows {
        table.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{}\n",
            r.time,
            r.type_,
            r.namespace,
            r.object,
            r.reason,
            r.count,
            r.message.replace('\n', " ")
        ));
    }
    w.write("events.txt", table.as_bytes());
    rows.into_iter().map(|r| r.0).collect()
}

/// Kyverno's Deployments, pods (restart counts) and the admission controller's ready endpoints
/// (`kyverno-deployments.json`, `kyverno-pods.json`, `kyverno-svc-endpointslices.json`). Returns
/// the controller's state (None when its Deployments could not be listed) and its pods.
async fn collect_kyverno(cl: &Cluster, w: &mut Writer) -> (Option<ControllerState>, Vec<Pod>) {
    let ns = cluster::KYVERNO_NAMESPACE;
    let mut ctl = ControllerState::default();
    let mut read_ctl = false;
    if let Some(ds) = step(w, "listing Deployments of kyverno", cl.deployments(ns)).await {
        w.json("kyverno-deployments.json", &ds);
        ctl.deployment = ds
            .iter()
            .find(|d| d.metadata.name.as_deref() == Some(cluster::ADMISSION_DEPLOYMENT))
            .map(replicas);
        read_ctl = true;
    }
    let pods = step(w, "listing pods of kyverno", cl.pods(ns)).await;
    let admission: Vec<Pod> = pods
        .iter()
        .flatten()
        .filter(|p| {
            p.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("app.kubernetes.io/component"))
                .is_some_and(|c| c == "admission-controller")
        })
        .cloned()
        .collect();
    if let Some(pods) = &pods {
        w.json("kyverno-pods.json", pods);
        ctl.pods = admission.iter().map(pod_state).collect();
    }
    if let Some(slices) = step(
        w,
        "listing EndpointSlices of kyverno-svc",
        cl.endpoint_slices(ns, KYVERNO_SERVICE),
    )
    .await
    {
        ctl.ready_endpoints = Some(
            slices
                .iter()
                .flat_map(|s| s.endpoints.iter())
                .filter(|e| e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true))
                .count(),
        );
        w.json("kyverno-svc-endpointslices.json", &slices);
    }
    (read_ctl.then_some(ctl), admission)
}

/// `webhooks.json`: every Validating- and MutatingWebhookConfiguration, verbatim; returns the
/// lab's registered webhooks (None when the validating ones could not be listed).
async fn collect_webhooks(cl: &Cluster, w: &mut Writer) -> Option<Vec<String>> {
    let validating = step(
        w,
        "listing ValidatingWebhookConfigurations",
        cl.webhook_configurations(),
    )
    .await;
    let mutating = step(
        w,
        "listing MutatingWebhookConfigurations",
        cl.mutating_webhook_configurations(),
    )
    .await;
    let lab_webhooks = validating.as_ref().map(|v| {
        v.iter()
            .flat_map(|c| c.webhooks.iter().flatten())
            .map(|h| h.name.clone())
            .filter(|n| n.ends_with(&format!("-finegrained-{}", cluster::POLICY_NAME)))
            .collect()
    });
    w.json(
        "webhooks.json",
        &serde_json::json!({"validating": validating, "mutating": mutating}),
    );
    lab_webhooks
}

/// The last [`LOG_TAIL_LINES`] lines of each container of the admission controller's pods, and of
/// the previous instance of a restarted one (`logs/<pod>.<container>[.previous].log`); returns
/// every line read, in that order.
async fn collect_admission_logs(cl: &Cluster, admission: &[Pod], w: &mut Writer) -> Vec<String> {
    let ns = cluster::KYVERNO_NAMESPACE;
    let mut lines = Vec::new();
    for p in admission {
        let name = p.metadata.name.clone().unwrap_or_default();
        for c in pod_state(p).containers {
            let mut runs = vec![false];
            if c.restarts > 0 {
                runs.push(true);
            }
            for previous in runs {
                let what = format!(
                    "reading the log of {ns}/{name}/{}{}",
                    c.name,
                    if previous { " (previous)" } else { "" }
                );
                if let Some(text) = step(
                    w,
                    &what,
                    cl.pod_log_tail(ns, &name, &c.name, LOG_TAIL_LINES, previous),
                )
                .await
                {
                    let rel = format!(
                        "logs/{name}.{}{}.log",
                        c.name,
                        if previous { ".previous" } else { "" }
                    );
                    w.write(&rel, text.as_bytes());
                    lines.extend(text.lines().map(str::to_owned));
                }
            }
        }
    }
    lines
}

/// `nodes.json` and `nodes.txt`: every Node's conditions.
async fn collect_nodes(cl: &Cluster, w: &mut Writer) {
    let Some(nodes) = step(w, "listing Nodes", cl.nodes()).await else {
        return;
    };
    let conds: Vec<serde_json::Value> = nodes
        .iter()
        .map(|n| {
            serde_json::json!({
                "name": n.metadata.name,
                "conditions": n.status.as_ref().and_then(|s| s.conditions.clone()),
            })
        })
        .collect();
    let mut text = String::from("NODE\tTYPE\tSTATUS\tREASON\tLAST TRANSITION\tMESSAGE\n");
    for n in &nodes {
        for c in n
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
        {
            text.push_str(&format!(
                "{}\t{}\t{}\t{}\t{}\t{}\n",
                n.metadata.name.as_deref().unwrap_or("?"),
                c.type_,
                c.status,
                c.reason.as_deref().unwrap_or(""),
                c.last_transition_time
                    .as_ref()
                    .map(|t| rfc3339(t.0))
                    .unwrap_or_default(),
                c.message.as_deref().unwrap_or("")
            ));
        }
    }
    w.json("nodes.json", &conds);
    w.write("nodes.txt", text.as_bytes());
}

/// Copies the last [`DAEMON_TAIL_LINES`] lines of every file in `logs` to `daemons/`
/// ([`tail_file`]; directories are passed over, and anything else but a regular file is a
/// failure line naming it).
fn tail_daemon_logs(logs: &Path, w: &mut Writer) {
    let entries = match std::fs::read_dir(logs) {
        Ok(e) => e,
        Err(e) => return w.fail(&format!("reading {}", logs.display()), e),
    };
    // The entry's own type: a symlink to a directory is not passed over but refused.
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
        .map(|e| e.path())
        .collect();
    files.sort();
    for f in files {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match tail_file(&f, DAEMON_TAIL_LINES) {
            Ok(text) => w.write(&format!("daemons/{name}"), text.as_bytes()),
            Err(e) => w.fail("tailing a daemon log", e),
        }
    }
}

/// How much of a daemon log's end [`tail_file`] reads: 1 MiB, far more than
/// [`DAEMON_TAIL_LINES`] lines of any node daemon's log (klog lines are under 1 KiB but for the
/// rare dump of a whole object).
pub const DAEMON_TAIL_BYTES: u64 = 1 << 20;

/// The last `n` lines of the regular file `path`, reading at most its last [`DAEMON_TAIL_BYTES`]
/// (`lab_core::files::read_tail_in`: a symlink is not followed, a FIFO, device, socket or
/// directory is refused).
///
/// Errors: the open's (`ELOOP` for a symlink, `NotFound`) or the refusal, with the file's path.
pub fn tail_file(path: &Path, n: usize) -> std::io::Result<String> {
    let named =
        |e: std::io::Error| std::io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| named(std::io::Error::from(std::io::ErrorKind::InvalidInput)))?;
    let bytes = lab_core::files::read_tail_in(dir, name, DAEMON_TAIL_BYTES).map_err(named)?;
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    let mut out = lines[start..].join("\n");
    out.push('\n');
    Ok(out)
}

#[cfg(test)]
mod tests;
