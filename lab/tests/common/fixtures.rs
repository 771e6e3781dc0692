//! Generator of the grading fixtures under `lab/tests/fixtures/<lab>/`, one directory per lab of
//! the registry (`lab::acts::LABS`).
//!
//! `pass/` is a complete work directory (inputs + one `evidence/NN.json` per act of `lab::acts`)
//! whose evidence has the shapes real acts record: API answers with the exact message texts of
//! kube-apiserver v1.35 and Kyverno v1.19 (k8s.io/apiserver v0.35
//! `pkg/admission/plugin/webhook/errors/statuserror.go` and `pkg/util/webhook/error.go`; kyverno
//! `pkg/webhooks/resource/vpol/handler.go`), follow-up GETs, and digests that chain
//! (freeze-plan.json holds the digest of 03.json, and so on). These are synthetic fixtures for the
//! pure graders, not recordings of a cluster run.
//!
//! The generator of a lab is chosen by its steps in the registry, never by its name ([`Kind`]:
//! a scale to 0, freezes of the one replica, a scale up and freezes of a replica by its role), and
//! reads from the registry what it can: the replica count of the scale, each freeze's act,
//! target, length and requests ([`FreezeStep`]), the failurePolicy in force, the input files each
//! act reads, the request names' prefix (`request_tag`). So a lab made of existing step kinds gets
//! its fixtures with no line here. What two labs' acts share (acts 1-2, the baseline, the freeze
//! window, the policy switch, the report act) is written once.
//!
//! `flagged/<case>/` holds only the files that differ from `pass/` plus `case.json`
//! (`{act, expect, why}`): the grader of `act` must report the code `expect`. The cases are rows
//! ([`cases`](super::cases)).
//!
//! The committed files are checked against this generator by the `fixtures_are_up_to_date` test;
//! `UPDATE_FIXTURES=1 cargo test -p lab --test grade_fixtures` rewrites them.

use std::collections::BTreeMap;

use lab::acts::{self, FailurePolicy, Step, Target};
use lab::digest::digest_value;
use lab::evidence::{ActStatus, Evidence, GetResult, Lab, RequestRecord, SCHEMA_VERSION};
use lab::facts::{self, a, b, c};
use lab::inputs::{Context, InputFile, Source};
use serde_json::{Value, json};

use Answer::{Deny, DryRunAdmitted, Stored, Timeout};

pub const NODE_UID: &str = "6a1f0c2e-8b3d-4e5f-9a7b-1c2d3e4f5a6b";
pub const NS_TARGET_UID: &str = "0b6f3c9e-2d4a-4f7e-9c1a-5e8d7b6a4c3f";
pub const NS_CONTROL_UID: &str = "1c7a4dae-3e5b-4a8f-8d2b-6f9e8c7b5d40";
pub const DEPLOY_UID: &str = "d3e4f5a6-b7c8-4d9e-8f0a-1b2c3d4e5f60";
pub const POLICY_UID: &str = "9f8e7d6c-5b4a-4321-8fed-cba987654321";
pub const CTRL_POD_UID: &str = "5e6f7a8b-9c0d-4e1f-a2b3-c4d5e6f7a8b9";
pub const CTRL_POD: &str = "kyverno-admission-controller-6d9c7b8f5d-x2k4p";
pub const NEW_CTRL_POD_UID: &str = "7a8b9c0d-1e2f-4a3b-8c4d-5e6f7a8b9c0d";
pub const NEW_CTRL_POD: &str = "kyverno-admission-controller-6d9c7b8f5d-q7m2w";
pub const CONTAINER_ID: &str = "3f2a9c1e7b6d5a4f3e2d1c0b9a8f7e6d5c4b3a291807f6e5d4c3b2a190817263";
pub(super) const FAIL_HOOK: &str = "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label";
pub(super) const IGNORE_HOOK: &str =
    "vpol.validate.kyverno.svc-ignore-finegrained-kca-webhook-label";
pub(super) const TARGET: &str = "kca-webhook-target";
pub(super) const CONTROL: &str = "kca-webhook-control";
/// The annotation kube-apiserver writes on a request its first webhook failed open.
pub(super) const FAILED_OPEN_0: &str =
    "failed-open.validating.webhook.admission.k8s.io/round_0_index_0";
/// When the first admission controller took the Lease `kyverno` (`acquireTime`).
const ACQUIRED: &str = "2026-11-29T09:58:00.000000Z";

/// A work directory's files: relative path → JSON.
pub type Files = BTreeMap<String, Value>;

/// The lab's timeline origin plus `ms` milliseconds, RFC 3339 UTC (ms).
pub fn ts(ms: i64) -> String {
    let base = chrono::DateTime::parse_from_rfc3339("2026-11-29T10:00:00.000Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    facts::format_rfc3339(base + chrono::Duration::milliseconds(ms))
}

/// A UID made of `n` (hex).
pub(super) fn uid(n: u32) -> String {
    format!("{n:08x}-1111-4222-8333-{n:012x}")
}

/// How the API server answered.
#[derive(Clone)]
pub enum Answer<'a> {
    /// 201, and the GET finds the pod with this UID (phase `Pending`).
    Stored(String),
    /// 400 deny by the policy's webhook `hook`.
    Deny(&'a str),
    /// 500 InternalError, `context deadline exceeded` calling `hook`.
    Timeout(&'a str),
    /// 201 for a dry-run; the returned uid exists nowhere; GET finds nothing.
    DryRunAdmitted(String),
}

/// A deny by the policy's webhook under Fail.
const DENY_FAIL: Answer = Deny(FAIL_HOOK);
/// A deny by the policy's webhook under Ignore.
const DENY_IGNORE: Answer = Deny(IGNORE_HOOK);

/// The policy's webhook under `failure_policy` (`Fail` or `Ignore`).
fn hook(failure_policy: &str) -> &'static str {
    match failure_policy {
        "Fail" => FAIL_HOOK,
        _ => IGNORE_HOOK,
    }
}

pub(super) fn status_body(code: u16, reason: &str, message: &str) -> Value {
    let mut v = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "code": code
    });
    if !reason.is_empty() {
        v["reason"] = json!(reason);
    }
    v
}

/// One request record: the API server's answer built here, the record made from it as the acts
/// make it ([`lab::probe::record`], classified with the real classifier).
pub fn request(
    name: &str,
    ns: &str,
    good: bool,
    dry_run: bool,
    sent: i64,
    elapsed: u64,
    answer: Answer,
) -> RequestRecord {
    let labels = BTreeMap::from_iter(good.then(|| ("environment".to_owned(), "lab".to_owned())));
    let answered = sent + elapsed as i64;
    let created = format!("{}Z", &ts(answered)[..19]);
    let mut get = GetResult {
        exists: false,
        uid: None,
        phase: None,
        at: ts(answered + 15),
    };
    let (http_status, body) = match answer {
        // The created pod; a dry run's has no resourceVersion and exists nowhere.
        Stored(ref u) | DryRunAdmitted(ref u) => {
            let mut meta =
                json!({"name": name, "namespace": ns, "uid": u, "creationTimestamp": created});
            if matches!(answer, Stored(_)) {
                meta["resourceVersion"] = json!("4711");
                (get.exists, get.uid, get.phase) = (true, Some(u.clone()), Some("Pending".into()));
            }
            if !labels.is_empty() {
                meta["labels"] = json!(labels);
            }
            let body = json!({
                "kind": "Pod", "apiVersion": "v1", "metadata": meta,
                "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1", "imagePullPolicy": "IfNotPresent"}]},
                "status": {"phase": "Pending", "qosClass": "BestEffort"}
            });
            (201, body)
        }
        Deny(hook) => {
            let m = format!(
                "admission webhook \"{hook}\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED"
            );
            (400, status_body(400, "", &m))
        }
        Timeout(hook) => {
            let m = format!(
                "Internal error occurred: failed calling webhook \"{hook}\": failed to call webhook: Post \"https://kyverno-svc.kyverno.svc:443/vpol/kca-webhook-label?timeout=3s\": context deadline exceeded"
            );
            let mut body = status_body(500, "InternalError", &m);
            body["details"] =
                json!({"causes": [{"message": m.trim_start_matches("Internal error occurred: ")}]});
            (500, body)
        }
    };
    let answer = lab::cluster::RawAnswer {
        http_status,
        body,
        sent_at: ts(sent),
        answered_at: ts(answered),
        elapsed_ms: elapsed,
    };
    lab::probe::record(name.to_owned(), ns, labels, dry_run, answer, get)
}

/// A violating pod (no label) created in the target namespace, not a dry run.
pub(super) fn bad_pod(name: &str, sent: i64, elapsed: u64, answer: Answer) -> RequestRecord {
    request(name, TARGET, false, false, sent, elapsed, answer)
}

/// A labelled pod created in the target namespace, not a dry run.
fn good_pod(name: &str, sent: i64, elapsed: u64, answer: Answer) -> RequestRecord {
    request(name, TARGET, true, false, sent, elapsed, answer)
}

/// A pod created in the target namespace as a server dry run; `good`: labelled.
fn dry_run_pod(name: &str, good: bool, sent: i64, elapsed: u64, answer: Answer) -> RequestRecord {
    request(name, TARGET, good, true, sent, elapsed, answer)
}

/// A pod created in the control namespace, outside the webhook's namespaceSelector.
pub(super) fn control_pod(name: &str, sent: i64, elapsed: u64, answer: Answer) -> RequestRecord {
    request(name, CONTROL, false, false, sent, elapsed, answer)
}

/// One raw record as the act recorder writes it (`{"at", "what", "data"}`).
fn raw_rec(what: &str, at: i64, data: impl serde::Serialize) -> Value {
    json!({"at": ts(at), "what": what, "data": data})
}

/// The API server's answers to `reqs`, as the acts keep them raw.
fn raw_of<'r>(reqs: impl IntoIterator<Item = &'r RequestRecord>) -> Vec<Value> {
    reqs.into_iter().map(|r| r.raw_response.clone()).collect()
}

/// A `v1` Pod `ns/name` as the API server returns it, running, its container `kyverno` after
/// `restarts` restarts: the fields a [`facts::PodObservation`] is read from.
fn pod_raw(name: &str, ns: &str, uid: &str, restarts: u32) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": uid},
        "status": {"phase": "Running", "containerStatuses": [{"name": "kyverno", "restartCount": restarts}]}
    })
}

/// A running pod's observation at `at` ms, derived ([`lab::derive::pod`], as the acts derive it)
/// from its [`pod_raw`] (no restarts).
fn pod_obs(name: &str, ns: &str, uid: &str, at: i64) -> facts::PodObservation {
    lab::derive::pod(&pod_raw(name, ns, uid, 0), ts(at)).expect("a Pod")
}

/// `p` observed again at `at` ms.
fn seen_at(p: &facts::PodObservation, at: i64) -> facts::PodObservation {
    let at = ts(at);
    facts::PodObservation { at, ..p.clone() }
}

/// Act 3's good pod, running, observed at `at` ms.
fn existing_at(at: i64) -> facts::PodObservation {
    pod_obs("kca-good-100200-a1b2c3", TARGET, &uid(0x600d), at)
}

/// The Lease `kyverno/kyverno` as the API server returns it, held by `holder` since `since`,
/// renewed at `renew` ms, 12 s, after `transitions` transitions; and its read at `at` ms, derived
/// from it as the acts derive it ([`lab::derive::lease`]).
fn lease(
    holder: &str,
    since: &str,
    renew: i64,
    transitions: u32,
    at: i64,
) -> (a::LeaseFacts, Value) {
    let raw = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "kyverno", "namespace": "kyverno", "uid": uid(0x1ea5)},
        "spec": {"acquireTime": since, "holderIdentity": holder, "leaseDurationSeconds": 12,
                 "leaseTransitions": transitions, "renewTime": ts(renew)}
    });
    (lab::derive::lease(&raw, ts(at)).expect("a Lease"), raw)
}

/// A live holder's last renew before `x` ms when it acquired the Lease at `acquired` ms: every
/// 2 s (Kyverno's retry period), a read 60 ms after a renew seeing it.
fn renew_at(acquired: i64, x: i64) -> i64 {
    acquired + ((x - 60 - acquired).max(0) / 2000) * 2000
}

/// The admission controller's Deployment as the API server returns it, `replicas` wanted, `ready`
/// of them ready; and its facts, derived as the acts derive them ([`lab::derive::deployment`]).
fn deployment(replicas: u32, ready: u32) -> (a::DeploymentFacts, Value) {
    let raw = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "kyverno-admission-controller", "namespace": "kyverno", "uid": DEPLOY_UID},
        "spec": {"replicas": replicas},
        "status": {"readyReplicas": ready, "replicas": replicas}
    });
    (lab::derive::deployment(&raw).expect("a Deployment"), raw)
}

/// The CRI's container of `pod` (namespace `kyverno`) running the process `id`, after `attempt`
/// restarts, as the acts record it raw.
fn cri_container(attempt: u32, id: &b::ProcessIdentity, pod: &str) -> Value {
    json!({
        "attempt": attempt, "container_id": id.container_id, "container_name": "kyverno",
        "pid": id.pid, "pod_name": pod, "pod_namespace": "kyverno", "pod_uid": id.pod_uid,
        "state": "CONTAINER_RUNNING"
    })
}

/// The ValidatingWebhookConfiguration Kyverno keeps for the policy under `failure_policy`, as the
/// API server returns it, with the policy's one webhook.
fn configuration(failure_policy: &str) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "kyverno-resource-validating-webhook-cfg", "uid": uid(0xc0f)},
        "webhooks": [{
            "name": hook(failure_policy),
            "clientConfig": {"service": {"namespace": "kyverno", "name": "kyverno-svc", "path": "/vpol/kca-webhook-label", "port": 443}, "caBundle": "LS0tLS1CRUdJTi..."},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"], "scope": "*"}],
            "failurePolicy": failure_policy, "matchPolicy": "Equivalent",
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": TARGET}},
            "objectSelector": {}, "sideEffects": "NoneOnDryRun", "timeoutSeconds": 3,
            // As the real run recorded it (recorded/b-20261129T153816Z act 2): Kyverno v1.19.1
            // adds no matchConditions to this policy's webhook.
            "admissionReviewVersions": ["v1"], "matchConditions": null
        }]
    })
}

/// The policy's webhook read at `at` ms, derived from its [`configuration`] as the acts derive it
/// ([`lab::derive::registration`]).
fn webhook(failure_policy: &str, at: i64) -> facts::WebhookFacts {
    let raw = configuration(failure_policy);
    lab::derive::registration(&raw, hook(failure_policy), ts(at)).expect("a registration")
}

/// The ValidatingPolicy with `failure_policy` as the API server returns it: `stored`, read back
/// with Kyverno's status; else its answer to the create or update (no status yet).
fn policy(failure_policy: &str, stored: bool) -> Value {
    // Each write is a new resourceVersion: the create or switch (1200, 1300), then Kyverno's
    // status update (+1, the state read back).
    let (file, generation, version) = match failure_policy {
        "Fail" => (InputFile::Policy, 1, 1200),
        _ => (InputFile::PolicyIgnore, 2, 1300),
    };
    let mut p = super::reference::value(file, &Context::default()).unwrap();
    p["metadata"] = json!({
        "name": "kca-webhook-label", "uid": POLICY_UID, "generation": generation,
        "resourceVersion": (version + u32::from(stored)).to_string(),
        "creationTimestamp": "2026-11-29T10:01:00Z"
    });
    p["spec"]["evaluation"]["admission"] = json!({"enabled": true});
    if stored {
        p["status"] = json!({"conditionStatus": {"ready": true, "message": "", "conditions": [
            {"type": "WebhookConfigured", "status": "True", "reason": "Succeeded", "message": "Webhook configured."}
        ]}, "generated": false});
    }
    p
}

/// Act 6's facts around its freeze `run` (labs B and C): the policy switched to Ignore (the answer
/// to the update at `stored` ms and the registration read at `registered` ms, returned as raw
/// records), the webhook read and the healthy deny before the freeze.
fn policy_switch<R>(
    (stored, registered): (i64, i64),
    healthy_bad: RequestRecord,
    run: R,
) -> (facts::PolicySwitch<R>, [Value; 2]) {
    let config = configuration("Ignore");
    let raw = [
        raw_rec("policy-stored", stored, policy("Ignore", false)),
        raw_rec("webhook-configuration-ignore", registered, config),
    ];
    let switch = facts::PolicySwitch {
        policy_uid_before: POLICY_UID.into(),
        policy: policy("Ignore", true),
        webhook: webhook("Ignore", registered),
        healthy_bad,
        run,
    };
    (switch, raw)
}

/// One audit event line as kube-apiserver v1.35.8 writes it at level Metadata for a pod create
/// (`audit.k8s.io/v1` Event, JSON; the shape of a real embedded-node line of 2026-11-30: user
/// `kca-admin` with its credential id, no userAgent, `requestURI` `…/pods?` or `…/pods?&dryRun=All`),
/// for request `r`: `responseStatus` = the HTTP status (and on failure the Status message),
/// `annotations` = the authorizer's decision, the pod-security policy, and when `failed_open` the
/// Ignore webhook's failed-open annotation.
pub fn audit_line(r: &RequestRecord, n: usize, failed_open: bool) -> String {
    let mut ann = json!({"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": "",
        "pod-security.kubernetes.io/enforce-policy": "privileged:latest"});
    if failed_open {
        ann[FAILED_OPEN_0] = json!(IGNORE_HOOK);
    }
    let mut status = json!({"metadata": {}, "code": r.http_status});
    if r.http_status >= 300 {
        status["status"] = json!("Failure");
        status["message"] = json!(r.message.clone().unwrap_or_default());
        if let Some(reason) = &r.reason {
            status["reason"] = json!(reason);
        }
    }
    let received = facts::parse_rfc3339(&r.sent_at).unwrap() + chrono::Duration::milliseconds(1);
    let done = facts::parse_rfc3339(&r.answered_at).unwrap();
    // kube-apiserver writes its latency tracker's annotations on a request it held longer than
    // 500 ms (`writeLatencyToAnnotation`): here the requests that waited for the webhook's
    // timeout, whose call took all but ~2 ms of it (the recorded run: 3.000599063s of 3.002329203s).
    let span_ms = (done - received).num_milliseconds();
    if span_ms > 500 {
        ann["apiserver.latency.k8s.io/total"] = json!(format!("{}s", span_ms as f64 / 1000.0));
        ann[lab::audit::VALIDATING_WEBHOOK_LATENCY] =
            json!(format!("{}s", (span_ms - 2) as f64 / 1000.0));
    }
    let us = |t: chrono::DateTime<chrono::Utc>| t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string();
    let dry = if r.dry_run { "&dryRun=All" } else { "" };
    json!({
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
        "auditID": format!("{:08x}-aaaa-4bbb-8ccc-{:012x}", n, n),
        "stage": "ResponseComplete", "verb": "create",
        "requestURI": format!("/api/v1/namespaces/{}/pods?{dry}", r.namespace),
        "user": {"username": "kca-admin", "groups": ["system:masters", "system:authenticated"],
            "extra": {"authentication.kubernetes.io/credential-id": ["X509SHA256=77a91375ccfb505ffacfc235f66206a3f1253c983335abac0062f9dd1decef4d"]}},
        "sourceIPs": ["10.44.0.1"],
        "objectRef": {"resource": "pods", "namespace": r.namespace, "name": r.name, "apiVersion": "v1"},
        "responseStatus": status,
        "requestReceivedTimestamp": us(received),
        "stageTimestamp": us(done),
        "annotations": ann
    })
    .to_string()
}

/// The audit record of an act as the embedded node's log would give it for the act's requests:
/// in an act that switches the policy to Ignore (the registry's `SwitchPolicy`: act 6 of labs B
/// and C), the target-namespace pods stored failed open (annotation naming the Ignore webhook);
/// every other request has just its code.
fn audit_record(lab: Lab, act: u8, facts: &Value, start: i64, end: i64) -> Value {
    let requests = lab::evidence::request_records(&[facts]);
    let switched = acts::switches_policy(lab, act) && policy_at(lab, act) == "Ignore";
    let mut lines = Vec::new();
    for (n, r) in requests.values().enumerate() {
        let open = switched && r.namespace == TARGET && r.outcome == lab::evidence::Outcome::Stored;
        lines.push(audit_line(r, act as usize * 100 + n, open));
    }
    let audit = |r| lab::audit::request_audit(r, &lines);
    let record = lab::audit::AdmissionAudit {
        source: "kube-apiserver audit log (--audit-log-path) /var/lib/kca/audit/audit.log".into(),
        status: lab::audit::AuditStatus::Observed,
        reason: None,
        log: Some("/var/lib/kca/audit/audit.log".into()),
        offset: Some(4096),
        window: (ts(start), ts(end)),
        waited_ms: 0,
        requests: requests.values().map(audit).collect(),
    };
    serde_json::to_value(record).unwrap()
}

/// The target and control namespaces with their UIDs.
fn namespaces() -> BTreeMap<String, String> {
    let ns = [(TARGET, NS_TARGET_UID), (CONTROL, NS_CONTROL_UID)];
    ns.map(|(n, u)| (n.to_owned(), u.to_owned())).into()
}

/// Which generator writes a lab's passing tree, and which flagged cases fit it
/// ([`super::cases::cases`]): the kind of its steps that also picks its runners (a scale to 0:
/// [`scale_down_acts`]; freezes of the one replica: [`freeze_acts`]; a scale up and freezes of a
/// replica by its role: [`replica_acts`]).
pub use lab::labs::Kind;

/// The failurePolicy in force during act `act` of `lab`: the last one its acts up to `act` apply
/// or switch to, as the webhook writes it (`Fail`, `Ignore`).
pub fn policy_at(lab: Lab, act: u8) -> &'static str {
    let steps = acts::numbers(lab).take_while(|n| *n <= act);
    let policy = (steps.flat_map(|n| acts::steps(lab, n))).fold(None, |p, s| match s {
        Step::ApplyPolicy { failure_policy: to } | Step::SwitchPolicy { to } => Some(*to),
        _ => p,
    });
    match policy {
        Some(FailurePolicy::Ignore) => "Ignore",
        _ => "Fail",
    }
}

/// The input the acts of `lab` read before its first fault act last (the plan: `freeze-plan.json`
/// in labs B and C); every freeze act records its digest.
fn plan(lab: Lab) -> InputFile {
    let first = acts::freezes(lab).first().map_or(u8::MAX, |(n, _)| *n);
    (acts::of(lab).iter())
        .take_while(|s| s.number < first)
        .flat_map(|s| s.inputs.iter().copied())
        .last()
        .expect("a plan before the first freeze")
}

/// When act `act` begins on the fixtures' timeline (ms): a minute per act.
fn slot(act: u8) -> i64 {
    i64::from(act - 1) * 60_000
}

/// One freeze act as the registry writes it, read the same way for one replica
/// ([`freeze_run`]) and for one of several ([`c_freeze_run`]).
struct FreezeStep {
    act: u8,
    /// The replica frozen, by its role.
    target: Target,
    /// Seconds from the freeze to the healer's resume: the registry's, else the plan's
    /// ([`lab::inputs::ResumeAfterSec`]).
    resume_after_sec: u32,
    /// The failurePolicy in force ([`policy_at`]).
    policy: &'static str,
    /// The requests sent while the freeze lasts, `(waves, size)` ([`acts::traffic`]).
    traffic: (u32, u32),
    /// The prefix of the act's request names, the product's ([`lab::labs::common::request_tag`]).
    tag: String,
}

impl FreezeStep {
    /// Act `act`'s freeze in `lab`.
    fn of(lab: Lab, act: u8) -> FreezeStep {
        let plan = lab::inputs::ResumeAfterSec::VALUE.into();
        let (target, secs) = lab::steps::freeze_of(lab, act, plan).expect("a freeze");
        FreezeStep {
            act,
            target,
            resume_after_sec: secs as u32,
            policy: policy_at(lab, act),
            traffic: acts::traffic(lab, act).expect("a freeze sends requests"),
            tag: lab::labs::common::request_tag(lab, act),
        }
    }

    /// When the process is stopped and resumed (ms): 200 ms after the read before the freeze
    /// (`read`), and `resume_after_sec` later with the healer's `lag` (ms).
    fn instants(&self, read: i64, lag: i64) -> (i64, i64) {
        let length = i64::from(self.resume_after_sec) * 1000;
        (read + 200, read + 200 + length + lag)
    }
}

/// Builder state: the files so far.
struct Tree {
    lab: Lab,
    files: Files,
}

impl Tree {
    fn put(&mut self, file: InputFile, v: Value) -> Value {
        self.files.insert(file.file_name().to_owned(), v.clone());
        v
    }

    /// Writes the answer key's input files act `act` reads in the registry, for the evidence so
    /// far, and returns them.
    fn inputs_of(&mut self, act: u8) -> &'static [InputFile] {
        let files = acts::spec(self.lab, act).map_or(&[][..], |s| s.inputs);
        for f in files {
            let v = super::reference::value(*f, &self.ctx()).unwrap();
            self.put(*f, v);
        }
        files
    }

    fn ctx(&self) -> Context {
        let mut ctx = Context {
            node_uid: Some(NODE_UID.into()),
            namespaces: Some(namespaces()),
            deployment_uid: Some(DEPLOY_UID.into()),
            policy_uid: Some(POLICY_UID.into()),
            ..Default::default()
        };
        for act in lab::acts::numbers(self.lab) {
            if let Some(v) = self.files.get(&format!("evidence/{act:02}.json")) {
                ctx.evidence_digests.insert(act, digest_value(v));
            }
        }
        ctx
    }

    /// Writes act `act`'s completed evidence: from `span.0` to `span.1` ms, with the digests of
    /// the input files `inputs` as they are now, `facts` (plus the act's audit record when the
    /// registry says it keeps one) and `raw`.
    fn act(
        &mut self,
        act: u8,
        span: (i64, i64),
        inputs: &[InputFile],
        facts: impl serde::Serialize,
        raw: Vec<Value>,
    ) {
        let mut facts = serde_json::to_value(facts).unwrap();
        if lab::acts::spec(self.lab, act).is_some_and(|s| s.audit) {
            let a = audit_record(self.lab, act, &facts, span.0, span.1);
            facts[lab::audit::FACTS_KEY] = a;
        }
        let digest = |n: &str| (n.to_owned(), digest_value(&self.files[n]));
        let ev = Evidence {
            schema_version: SCHEMA_VERSION,
            lab: self.lab,
            act,
            status: ActStatus::Completed,
            started_at: ts(span.0),
            finished_at: ts(span.1),
            inputs: inputs.iter().map(|f| digest(f.file_name())).collect(),
            facts,
            raw,
            interruption: None,
            versions: None,
        };
        let v = serde_json::to_value(ev).unwrap();
        self.files.insert(format!("evidence/{act:02}.json"), v);
    }
}

/// A tree of `lab` with acts 1-2, shared by every lab: the scope (the lab mark read) and the
/// policy under Fail. Time origin: act 1 at 0 ms.
fn acts_1_and_2(lab: Lab) -> Tree {
    let mut t = Tree {
        lab,
        files: Files::new(),
    };
    let inputs = t.inputs_of(1);
    // The tool's read of the lab mark ConfigMap, as act 1 records it raw.
    let mark = json!({"Ok": {
        "data": {"backend": "embedded", "cluster": "lab", "createdAt": "2026-11-29T09:59:00Z",
                 "mark": "kca-webhook-lab/v1", "node": "kca-lab-node", "nodeUID": NODE_UID},
        "object": "kube-system/kca-webhook-lab",
        "uid": uid(0x3a4c)
    }});
    let a1 = facts::Act1Facts {
        node: facts::NodeFacts {
            name: "kca-lab-node".into(),
            uid: NODE_UID.into(),
        },
        namespaces: namespaces(),
        target: TARGET.into(),
        control: CONTROL.into(),
        controller_deployment: facts::ObjectRef {
            namespace: Some("kyverno".into()),
            name: "kyverno-admission-controller".into(),
            uid: DEPLOY_UID.into(),
        },
        lab_mark: lab::derive::lab_mark(&mark).expect("a lab mark read"),
        checked_at: ts(300),
    };
    let raw = vec![raw_rec("lab-mark", 300, mark)];
    t.act(1, (0, 400), inputs, a1, raw);

    let inputs = t.inputs_of(2);
    let raw = vec![
        raw_rec("policy-stored", 60_500, policy("Fail", false)),
        raw_rec("webhook-configuration", 61_000, configuration("Fail")),
    ];
    let a2 = facts::Act2Facts {
        policy: policy("Fail", true),
        webhook: webhook("Fail", 61_000),
    };
    t.act(2, (60_000, 61_500), inputs, a2, raw);
    t
}

/// Act 3 of labs A and B: the sequential baseline, a good pod stored and a violating one denied.
fn act3_baseline(t: &mut Tree) {
    let good = good_pod("kca-good-100200-a1b2c3", 120_000, 45, Stored(uid(0x600d)));
    let bad = bad_pod("kca-bad-100201-d4e5f6", 121_000, 38, DENY_FAIL);
    let raw = raw_of([&good, &bad]);
    let a3 = facts::Act3Facts {
        good,
        bad,
        existing: existing_at(126_000),
    };
    t.act(3, (119_000, 126_500), &[], a3, raw);
}

/// Act 8's checks of `report` (a report file, `file`), each field against the evidence: a digest
/// field (one `file` binds to an act's evidence) holds that act's digest from `digests`, every
/// other field the report's own word.
pub fn report_checks(
    file: InputFile,
    report: &Value,
    digests: &BTreeMap<u8, String>,
) -> Vec<facts::ReportCheck> {
    let check = |(k, v): (&String, &Value)| {
        let mut bound = file.bound_fields().iter();
        let evidence = match bound.find(|(p, _)| p.strip_prefix("$.") == Some(k)) {
            Some((_, Source::Digest(act))) => json!(digests[act]),
            _ => v.clone(),
        };
        facts::ReportCheck {
            field: k.clone(),
            report: v.clone(),
            agrees: &evidence == v,
            evidence,
        }
    };
    report.as_object().unwrap().iter().map(check).collect()
}

/// The report act of every lab (its last, [`acts::Role::Report`]): `report`, written as the
/// file the act reads, checked field by field against the evidence.
fn report_act(t: &mut Tree, report: Value) {
    let file = report_file(t.lab);
    let report = t.put(file, report);
    let digests = t.ctx().evidence_digests;
    let checks = report_checks(file, &report, &digests);
    let a8 = facts::Act8Facts {
        checks,
        evidence_digests: digests
            .iter()
            .map(|(a, d)| (format!("{a:02}"), d.clone()))
            .collect(),
    };
    t.act(acts::count(t.lab), (400_000, 400_300), &[file], a8, vec![]);
}

/// The report file of `lab`: the input its report act reads.
fn report_file(lab: Lab) -> InputFile {
    let inputs = acts::spec(lab, acts::count(lab)).map_or(&[][..], |s| s.inputs);
    *inputs.first().expect("the report act reads the report")
}

/// A process stopped (`T`) at `frozen` ms and resumed at `resumed` ms (within a second after its
/// `resume_after_sec`) by its watchdog (pid `watchdog`, armed at `armed` ms); sleeping (`S`)
/// after: the freeze step of lab B's one replica and of each of lab C's.
fn freeze_window(
    identity: b::ProcessIdentity,
    watchdog: u32,
    armed: i64,
    (frozen, resumed): (i64, i64),
) -> b::FreezeWindow {
    b::FreezeWindow {
        identity,
        watchdog_pid: Some(watchdog),
        watchdog_armed_at: ts(armed),
        resume_after_sec: ((resumed - frozen) / 1000) as u32,
        frozen_at: ts(frozen),
        state_during: Some("T".into()),
        resumed_at: ts(resumed),
        resumed_by: b::Resumer::Watchdog,
        state_after: "S".into(),
    }
}

/// Lab B's one admission controller process, as act 4 finds it.
fn identity() -> b::ProcessIdentity {
    b::ProcessIdentity {
        pid: 4242,
        pid_start_time_ticks: 1_234_567,
        container_id: CONTAINER_ID.into(),
        pod_uid: CTRL_POD_UID.into(),
    }
}

/// A freeze of the one replica (`f`, lab B's acts 5 and 6) starting at `t0` ms. One request at
/// a time: the good and the violating pod wait for the timeout (stored under Ignore), the control
/// pod is stored; after the resume a late timeout (Fail only), then the first deny.
fn freeze_run(f: &FreezeStep, t0: i64) -> b::FreezeRun {
    let (n, ignore) = (u32::from(f.act), f.policy == "Ignore");
    let (frozen, resumed) = f.instants(t0, 5);
    let hook = hook(f.policy);
    let (good, bad) = if ignore {
        (Stored(uid(0xa000 + n)), Stored(uid(0xb000 + n)))
    } else {
        (Timeout(hook), Timeout(hook))
    };
    let name = |step: &str, kind: &str, k: u32| format!("kca-{step}{n}-{kind}{n}000{k}");
    let target_good = good_pod(&name("freeze", "good-a", 1), frozen + 400, 3_012, good);
    let target_bad = bad_pod(&name("freeze", "bad-b", 2), frozen + 3_600, 3_007, bad);
    let stored = Stored(uid(0xc000 + n));
    let control = control_pod(&name("freeze", "control-c", 3), frozen + 6_800, 41, stored);
    let late = Timeout(hook);
    let mid = bad_pod(&name("resume", "bad-d", 4), resumed + 300, 3_004, late);
    let deny = bad_pod(&name("resume", "bad-e", 5), resumed + 3_600, 52, Deny(hook));
    // Under Ignore a still-slow answer is admitted: keep the run simple, the deny comes first.
    let after_resume = [(!ignore).then_some(mid), Some(deny.clone())];
    b::FreezeRun {
        freeze: freeze_window(identity(), 5151 + n, t0 + 100, (frozen, resumed)),
        registration_present_during_freeze: true,
        registration_snapshot: configuration(f.policy)["webhooks"][0].clone(),
        registration_checked_at: ts(frozen + 150),
        timeout_seconds: 3,
        target_good,
        target_bad,
        control,
        after_resume: after_resume.into_iter().flatten().collect(),
        first_explicit_deny: Some(deny),
        existing: existing_at(resumed + 4_000),
        restart_count_before: 0,
        restart_count_after: 0,
        first_deny_after_resume_ms: Some(3_600 + 52),
        identity_after: Some(identity()),
    }
}

/// A one-replica freeze act (lab B's acts 5 and 6). One that first switches the policy to Ignore
/// (act 6): the switch at 1 s, a healthy deny at 2 s, the freeze run from 3 s.
fn freeze_act(t: &mut Tree, act: u8) {
    let (t0, f) = (slot(act), FreezeStep::of(t.lab, act));
    if !acts::switches_policy(t.lab, act) {
        let run = freeze_run(&f, t0);
        let raw = raw_of([&run.target_good, &run.target_bad, &run.control]);
        return t.act(act, (t0, t0 + 32_000), &[plan(t.lab)], run, raw);
    }
    let inputs = t.inputs_of(act);
    let name = format!("kca-ignore-healthy-bad-f{act}0001");
    let healthy_bad = bad_pod(&name, t0 + 2_000, 47, Deny(hook(f.policy)));
    let run = freeze_run(&f, t0 + 3_000);
    let mut raw = raw_of([&healthy_bad, &run.target_good, &run.target_bad]);
    let (facts, switch) = policy_switch((t0 + 1_000, t0 + 1_500), healthy_bad, run);
    raw.extend(switch);
    t.act(act, (t0, t0 + 25_000), inputs, facts, raw);
}

/// Acts 3-7 of a lab that freezes its one replica ([`Kind::Freeze`]: lab B): each freeze act of
/// the registry after the investigation, with or without a switch to Ignore. Returns the report.
fn freeze_acts(t: &mut Tree) -> Value {
    act3_baseline(t);
    let plan = t.inputs_of(4);
    let a4 = b::Act4Facts {
        node_uid: NODE_UID.into(),
        deployment_uid: DEPLOY_UID.into(),
        pod_name: CTRL_POD.into(),
        pod_namespace: "kyverno".into(),
        container_name: "kyverno".into(),
        identity: identity(),
        restart_count: 0,
        process_state: "S".into(),
        investigated_at: ts(180_500),
    };
    let cri = cri_container(0, &identity(), CTRL_POD);
    let raw4 = vec![raw_rec("cri-container", 180_400, cri)];
    t.act(4, (180_000, 181_000), plan, a4, raw4);
    for (act, _) in acts::freezes(t.lab) {
        freeze_act(t, act);
    }

    let recovery = t.inputs_of(7);
    let healthy_bad = bad_pod("kca-recovery-bad-f70001", 360_000, 44, DENY_IGNORE);
    let raw7 = vec![
        healthy_bad.raw_response.clone(),
        raw_rec("webhook-configuration", 359_000, configuration("Ignore")),
    ];
    let a7 = b::Act7Facts {
        policy_uid: POLICY_UID.into(),
        webhook: webhook("Ignore", 359_000),
        healthy_bad,
        existing: existing_at(361_000),
    };
    t.act(7, (358_000, 362_000), recovery, a7, raw7);
    super::reference::value(report_file(t.lab), &t.ctx()).unwrap()
}

/// Acts 3-7 of a lab that scales the admission controller to 0 ([`Kind::ScaleDown`]: lab A).
/// Returns the report.
fn scale_down_acts(t: &mut Tree) -> Value {
    act3_baseline(t);
    let plan = t.inputs_of(4);
    // The one controller holds the Lease since ACQUIRED; each read sees a renew a second before.
    let (lease, lease_raw) = lease(CTRL_POD, ACQUIRED, 179_400, 0, 180_400);
    let deployment = deployment(1, 1);
    let pod = pod_raw(CTRL_POD, "kyverno", CTRL_POD_UID, 0);
    let a4 = a::Act4Facts {
        node_uid: NODE_UID.into(),
        deployment: deployment.0,
        pods: vec![lab::derive::pod(&pod, ts(180_300)).expect("a Pod")],
        lease,
        investigated_at: ts(180_500),
    };
    let raw4 = vec![
        raw_rec("deployment", 180_200, deployment.1),
        raw_rec("pods", 180_300, json!([pod])),
        raw_rec("lease", 180_400, lease_raw),
    ];
    t.act(4, (180_000, 181_000), plan, a4, raw4);
    a_act5(t);
    a_act6(t);

    let admitted = DryRunAdmitted("f1f2f3f4-bbbb-4ccc-8ddd-eeeeeeeeeeee".into());
    let good = dry_run_pod("kca-dryrun-good-a70001", true, 360_000, 55, admitted);
    let bad = dry_run_pod("kca-dryrun-bad-a70002", false, 361_000, 49, DENY_FAIL);
    let echo = lab::labs::a::dry_run_echo(&good.raw_response);
    let raw7 = raw_of([&good, &bad]);
    let a7 = a::Act7Facts {
        good,
        good_response: echo,
        bad,
        side_effects: "NoneOnDryRun".into(),
        webhook_name: FAIL_HOOK.into(),
    };
    t.act(7, (359_000, 362_000), &[], a7, raw7);

    super::reference::report_a(&t.ctx(), false).unwrap()
}

/// Lab A act 5: scale to 0 at 240 s; pods gone at 245 s; the registration is gone (Kyverno's
/// cleanup), so the violating pod is stored.
fn a_act5(t: &mut Tree) {
    let target_bad = bad_pod("kca-scale-bad-a50001", 246_000, 36, Stored(uid(0xa5b)));
    let control = control_pod("kca-scale-control-a50002", 246_500, 33, Stored(uid(0xa5c)));
    // The healer's answers and the policy read, as the runner records them; the facts derived
    // from them as the act derives them (`lab::derive::watcher`, `scale_down`, `policy_presence`).
    let ready = json!({"ok": true, "pid": 6161, "armed_at": ts(239_500),
        "deadline_at": ts(294_500), "observed_replicas": 1, "error": null});
    let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
        "metadata": {"name": "kyverno-admission-controller", "namespace": "kyverno"}, "spec": {}});
    let down = json!({"sent_at": ts(240_000), "answered_at": ts(240_000),
        "replicas_before": 1, "raw": scale});
    let policy = policy("Fail", true);
    let dir = "/root/kca-webhook/faults/scale-20261129T100359Z";
    let mut raw5 = raw_of([&target_bad, &control]);
    let a5 = a::Act5Facts {
        watcher: lab::derive::watcher(&ready, 55, 1, Some(dir.into())).expect("a ready answer"),
        scaled_at: lab::derive::scale_down(&down).expect("a scale answer"),
        pods_gone_at: Some(ts(245_000)),
        policy: lab::derive::policy_presence(&policy, ts(245_200)).expect("a policy"),
        webhook_configurations: json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfigurationList", "metadata": {"resourceVersion": "2100"}, "items": []}),
        policy_webhook_present: false,
        registrations_checked_at: ts(245_400),
        target_bad,
        control,
        existing: existing_at(247_000),
    };
    raw5.extend([
        raw_rec("watcher-ready", 239_500, ready),
        raw_rec("scale-down", 240_000, down),
        raw_rec("policy", 245_200, policy),
    ]);
    t.act(5, (239_000, 248_000), &[InputFile::ScalePlan], a5, raw5);
}

/// Lab A act 6: the watcher restores at 295 s (55 s after the scale). Every step's `waited_ms`
/// counts from the one instant act 6's recovery wait began (248.51 s), as the act records it.
fn a_act6(t: &mut Tree) {
    let confirmed = |at: i64| a::TimelineStep {
        status: a::StepStatus::Confirmed,
        at: Some(ts(at)),
        last_seen: None,
        waited_ms: (at - 248_510) as u64,
    };
    let dry_admitted = DryRunAdmitted("e1e2e3e4-aaaa-4bbb-8ccc-dddddddddddd".into());
    let probe1 = dry_run_pod("kca-recover-bad-a60001", false, 312_000, 40, dry_admitted);
    let probe2 = dry_run_pod("kca-recover-bad-a60002", false, 318_000, 61, DENY_FAIL);
    let new_pod = pod_obs(NEW_CTRL_POD, "kyverno", NEW_CTRL_POD_UID, 303_000);
    let admitted = pod_obs("kca-scale-bad-a50001", TARGET, &uid(0xa5b), 318_200);
    let a6 = a::Act6Facts {
        replicas_restored: confirmed(295_010),
        restored_by: Some(a::Restorer::Watcher),
        pod_created: confirmed(295_400),
        new_pod: Some(new_pod),
        pod_running: confirmed(298_000),
        previous_lease_holder: Some(CTRL_POD.into()),
        lease_acquired: confirmed(309_500),
        lease_holder: Some(NEW_CTRL_POD.into()),
        webhook_registered: confirmed(311_000),
        // Kyverno registers the webhook again in a new configuration object (act 5 saw none).
        webhook: Some(facts::WebhookFacts {
            configuration_uid: Some(uid(0xc10)),
            ..webhook("Fail", 311_000)
        }),
        first_explicit_deny: confirmed(318_061),
        deny_probes: vec![probe1.clone(), probe2.clone()],
        leader_takeover_ms: Some(11_500),
        lease_after_restore_ms: Some(309_500 - 295_010),
        admitted_during_scale_down: Some(admitted),
        existing: Some(existing_at(318_300)),
    };
    let lease = lease(CTRL_POD, ACQUIRED, 247_505, 0, 248_505).1;
    let mut raw = vec![raw_rec("lease-before", 248_505, lease)];
    raw.extend(raw_of([&probe1, &probe2]));
    for p in [&probe1, &probe2] {
        raw.push(json!({"at": p.get.at, "what": "request:deny-probe-dry-run", "data": p}));
    }
    let admitted = &a6.admitted_during_scale_down;
    raw.push(raw_rec("admitted-during-scale-down", 318_300, admitted));
    raw.push(raw_rec("existing", 318_300, &a6.existing));
    t.act(6, (248_500, 318_500), &[], a6, raw);
}
/// One replica of a replica lab: its pod, the pod's IP, its container and the process in it.
struct Replica {
    pod: String,
    uid: String,
    ip: String,
    container: String,
    pid: u32,
}

impl Replica {
    /// The identity act 4 reads of this replica's process.
    fn identity(&self) -> b::ProcessIdentity {
        b::ProcessIdentity {
            pid: self.pid,
            pid_start_time_ticks: 1_234_567 + u64::from(self.pid),
            container_id: self.container.clone(),
            pod_uid: self.uid.clone(),
        }
    }

    /// This replica's pod observed at `at` ms, running and Ready with its IP, after `restarts`
    /// restarts: its facts, derived as the acts derive them ([`lab::derive::replica`]), and the
    /// raw Pod.
    fn pod(&self, at: i64, restarts: u32) -> (c::ReplicaFacts, Value) {
        let mut p = pod_raw(&self.pod, "kyverno", &self.uid, restarts);
        p["status"]["podIP"] = json!(self.ip);
        p["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
        (lab::derive::replica(&p, ts(at)).expect("a Pod"), p)
    }
}

/// The `n` replicas a lab scales the admission controller to ([`acts::replicas`]); the first (the one
/// replica before the scale) holds the Lease until a leader's freeze.
fn replicas(n: u32) -> Vec<Replica> {
    let replica = |pod: &str, uid: &str, ip: u32, container: &str, pid| Replica {
        pod: format!("kyverno-admission-controller-6d9c7b8f5d-{pod}"),
        uid: uid.into(),
        ip: format!("10.88.0.{ip}"),
        container: container.into(),
        pid,
    };
    let mut all = vec![
        replica("x2k4p", CTRL_POD_UID, 12, CONTAINER_ID, 4242),
        replica("b8n3r", &uid(0xc2), 21, &"4a".repeat(32), 5151),
        replica("k5v9t", &uid(0xc3), 22, &"5b".repeat(32), 5252),
    ];
    for i in 3..n {
        let (pod, container) = (format!("r{i:04}"), format!("{:02x}", 0x5b + i).repeat(32));
        let (uid, pid) = (uid(0xc1 + i), 5151 + 101 * i);
        all.push(replica(&pod, &uid, 20 + i, &container, pid));
    }
    all.truncate(n as usize);
    all
}

/// The replica other than `i` that comes first by pod name: the follower the runners freeze
/// ([`Target::Follower`]) when `i` holds the Lease, and the one that takes the Lease when `i`, its
/// holder, stops renewing it.
fn first_other(i: usize, replicas: &[Replica]) -> usize {
    (0..replicas.len())
        .filter(|j| *j != i)
        .min_by_key(|j| &replicas[*j].pod)
        .expect("another replica")
}

/// `kyverno-svc`'s EndpointSlices as the API server lists them: one ready address per replica,
/// by pod name.
fn endpoint_slices(replicas: &[Replica]) -> Value {
    let mut by_name: Vec<&Replica> = replicas.iter().collect();
    by_name.sort_by_key(|r| &r.pod);
    json!([{
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
        "metadata": {"name": "kyverno-svc-x7k2p", "namespace": "kyverno"},
        "endpoints": by_name.iter().map(|r| json!({
            "addresses": [r.ip], "conditions": {"ready": true},
            "targetRef": {"kind": "Pod", "name": r.pod, "namespace": "kyverno"}
        })).collect::<Vec<_>>()
    }])
}

/// Each replica's pod admission counter (`counts`), `before` or `after` the act (`when`), read
/// through the pod proxy from `at` ms, one every `step` ms, as raw records (`GET /metrics` answers).
fn replica_metrics(
    raw: &mut Vec<Value>,
    when: &str,
    replicas: &[Replica],
    counts: &[(u64, u64)],
    (at, step): (i64, i64),
) {
    for (i, (r, c)) in replicas.iter().zip(counts).enumerate() {
        let n = if when == "before" { c.0 } else { c.1 };
        let line = format!(
            "kyverno_admission_requests_total{{request_operation=\"CREATE\",resource_kind=\"Pod\",resource_namespace=\"kca-webhook-target\"}} {n}"
        );
        let what = format!("replica-metrics-{when}:{}", r.pod);
        let data = json!({"status": 200, "lines": [line]});
        raw.push(raw_rec(&what, at + i as i64 * step, data));
    }
}

/// Each replica's pod admission counter before and after an act, as the facts keep them.
fn replica_requests(replicas: &[Replica], counts: &[(u64, u64)]) -> Vec<c::ReplicaRequests> {
    let row = |(r, (before, after)): (&Replica, &(u64, u64))| c::ReplicaRequests {
        pod: r.pod.clone(),
        before: Some(*before),
        after: Some(*after),
    };
    replicas.iter().zip(counts).map(row).collect()
}

/// Acts 3-7 of a lab that scales the admission controller up and freezes a replica by its role
/// ([`Kind::ReplicaFreeze`]: lab C): as many replicas as its scale asks for, then its two
/// freezes, the first under Fail, the second after a switch to Ignore, each of the replica its
/// [`Target`] names. Returns the report.
fn replica_acts(t: &mut Tree) -> Value {
    let (lab, replicas) = (t.lab, replicas(acts::replicas(t.lab)));
    let a3 = c_act3(t, &replicas);
    c_act4(t, &replicas);
    let lease = LeaseState {
        holder: 0,
        transitions: 0,
        acquired: (-120_000, ACQUIRED.into()),
    };
    let [(fail, _), (ignore, _)] = acts::freezes(lab)[..] else {
        panic!("lab {}: two freezes", lab.as_str())
    };
    assert!(!acts::switches_policy(lab, fail) && acts::switches_policy(lab, ignore));
    let (run5, _, lease5) = c_freeze_act(t, fail, &replicas, &a3, lease);
    let (_, a6, lease6) = c_freeze_act(t, ignore, &replicas, &a3, lease5);
    let a6 = a6.expect("act 6 switches the policy");
    let a7 = c_act7(t, &replicas, &a3, lease6);
    // The report, each word the evidence's (`rules::c::report_expectations`).
    let words = lab::rules::c::report_expectations(&a3, &run5, &a6, &a7);
    super::reference::report_c(&t.ctx(), &words).unwrap()
}

/// Act 4 of a replica lab: the Lease, every replica's process (the holder's first), the Lease
/// again.
fn c_act4(t: &mut Tree, replicas: &[Replica]) {
    let plan = t.inputs_of(4);
    let process = |r: &Replica| c::ReplicaProcess {
        pod_name: r.pod.clone(),
        identity: r.identity(),
        restart_count: 0,
        process_state: "S".into(),
    };
    let lease4 = |at: i64| lease(CTRL_POD, ACQUIRED, at - 1_500, 0, at);
    let ((lease_before, raw_before), (lease_after, raw_after)) = (lease4(180_100), lease4(180_600));
    let a4 = c::Act4Facts {
        node_uid: NODE_UID.into(),
        deployment_uid: DEPLOY_UID.into(),
        lease: lease_before,
        leader: process(&replicas[0]),
        followers: replicas[1..].iter().map(process).collect(),
        lease_after,
        investigated_at: ts(180_700),
    };
    let mut raw4 = vec![raw_rec("lease-before", 180_100, raw_before)];
    for r in replicas {
        let cri = cri_container(0, &r.identity(), &r.pod);
        raw4.push(raw_rec(&format!("cri-container:{}", r.pod), 180_300, cri));
    }
    raw4.push(raw_rec("lease-after", 180_600, raw_after));
    t.act(4, (180_000, 181_000), plan, a4, raw4);
}

/// A replica freeze act (lab C's act 5: the leader under Fail, which loses the Lease and
/// restarts). One that first switches the policy to Ignore (lab C's act 6): the switch at 30 ms, a
/// healthy deny, then the replica the registry's [`Target`] names frozen (lab C: the first
/// follower by name, replica 2, replica 1 holding the Lease). Returns the run, the switch's facts
/// around it when the act switched, and the Lease after the freeze.
fn c_freeze_act(
    t: &mut Tree,
    act: u8,
    replicas: &[Replica],
    a3: &c::Act3Facts,
    lease: LeaseState,
) -> (c::ReplicaFreezeRun, Option<c::Act6Facts>, LeaseState) {
    let t0 = slot(act);
    let mut raw = vec![raw_rec("healed-earlier-faults", t0, json!([]))];
    let mut inputs = vec![plan(t.lab)];
    let switch = acts::switches_policy(t.lab, act).then(|| {
        inputs.extend(t.inputs_of(act));
        let tag = lab::labs::common::request_tag(t.lab, act);
        let name = format!("kca-{tag}-healthy-bad-100430-{tag}h0");
        let healthy_bad = bad_pod(&name, t0 + 400, 12, Deny(hook(policy_at(t.lab, act))));
        let before = policy(policy_at(t.lab, act - 1), false);
        raw.push(raw_rec("policy-before", t0, before));
        raw.push(raw_rec("request:healthy-bad", t0 + 430, &healthy_bad));
        healthy_bad
    });
    let read = t0 + if switch.is_some() { 450 } else { 0 };
    let freeze = CFreeze::new(t.lab, act, replicas, lease, read);
    let (run, end, lease) = c_freeze_run(&freeze, &a3.existing, &mut raw);
    let Some(healthy_bad) = switch else {
        t.act(act, (t0, end), &inputs, &run, raw);
        return (run, None, lease);
    };
    let (a6, switch) = policy_switch((t0 + 30, t0 + 80), healthy_bad, run.clone());
    raw.splice(2..2, switch);
    t.act(act, (t0, end), &inputs, &a6, raw);
    (run, Some(a6), lease)
}

/// Each replica's admission counter around act 3's baseline: the first replicas' moves are the
/// fixture's, the last replica's makes up what the target requests (`requests`) need at least
/// (each reached one replica).
fn baseline_counts(n: usize, requests: u64) -> Vec<(u64, u64)> {
    let moves = [(10, 15), (0, 3), (2, 7)];
    let mut counts: Vec<_> = (0..n).map(|i| *moves.get(i).unwrap_or(&(0, 3))).collect();
    let others: u64 = counts[..n - 1].iter().map(|(b, a)| a - b).sum();
    let last = &mut counts[n - 1];
    last.1 = last.0 + (last.1 - last.0).max(requests.saturating_sub(others));
    counts
}

/// A replica lab's act 3: the healer armed, its scale to `replicas` at 120.5 s (the scale's facts
/// derived from its answers as the act derives them, [`lab::derive::scale_up`]), the wait for
/// the Ready pods, the ready endpoints and the registration, all holding by 150 s; the
/// registry's parallel waves of violating pods from 153 s, one a second, the good and control
/// pods at 155 s.
fn c_act3(t: &mut Tree, replicas: &[Replica]) -> c::Act3Facts {
    let inputs = t.inputs_of(3);
    let (n, original) = (replicas.len() as u32, lab::inputs::OriginalReplicas::VALUE);
    let healer =
        json!({"ok": true, "pid": 6262, "armed_at": ts(120_300), "deadline_at": ts(1_920_300)});
    let scale = json!({
        "sent_at": ts(120_450), "answered_at": ts(120_500), "replicas_before": original,
        "raw": {"apiVersion": "autoscaling/v1", "kind": "Scale",
                "metadata": {"name": "kyverno-admission-controller", "namespace": "kyverno", "uid": DEPLOY_UID},
                "spec": {"replicas": n}, "status": {"replicas": original}}
    });
    let check = |at: i64, pods: u32, endpoints: u32| {
        json!({"at": ts(at), "pods_listed": n, "pods_ready": pods, "pods_ok": pods == n,
               "endpoints_ready": endpoints, "endpoints_ok": endpoints == n, "registration": true})
    };
    let wait = [
        check(121_000, 1, 1),
        check(149_000, n, n - 1),
        check(150_000, n, n),
    ];
    let deadline = lab::derive::healer_deadline(&healer).expect("a ready answer");
    let id = "scale-03-20261129T100200Z-4242".into();
    let scale_up = lab::derive::scale_up(&scale, id, deadline).expect("a scale answer");
    let (waves, wave_size) = acts::baseline(t.lab, 3).expect("a baseline");
    let tag = lab::labs::common::request_tag(t.lab, 3);
    let (lease, lease_raw) = lease(CTRL_POD, ACQUIRED, 149_000, 0, 152_310);
    let (replica_facts, raw_pods): (Vec<_>, Vec<_>) =
        replicas.iter().map(|r| r.pod(150_120, 0)).unzip();
    let mut bad = Vec::new();
    for w in 0..i64::from(waves) {
        for i in 0..i64::from(wave_size) {
            let name = format!("kca-{tag}-bad-w{w}-{i}-100231-{tag}{w}{i}0a");
            let sent = 153_000 + w * 1_000 + i * 3;
            bad.push(bad_pod(&name, sent, 40 + i as u64, DENY_FAIL));
        }
    }
    let good_name = format!("kca-{tag}-good-100233-{tag}600d");
    let good = good_pod(&good_name, 155_000, 45, Stored(uid(0xc600d)));
    let control_name = format!("kca-{tag}-control-100233-{tag}c0c0");
    let control = control_pod(&control_name, 155_200, 30, Stored(uid(0xc3c0)));
    let counts = baseline_counts(replicas.len(), bad.len() as u64 + 1);
    let existing = pod_obs(&good.name, TARGET, &uid(0xc600d), 160_000);
    let (deployment, slices) = (deployment(n, n), endpoint_slices(replicas));
    let endpoints = lab::derive::endpoints(&slices).expect("EndpointSlices");
    let mut raw = vec![
        raw_rec("healer-ready", 120_300, healer),
        raw_rec("scale-up", 120_500, scale),
        raw_rec("ready-wait", 150_050, wait),
        raw_rec("endpoint-slices", 150_100, slices),
        raw_rec("pods", 150_100, Value::Array(raw_pods)),
        raw_rec("deployment", 151_200, deployment.1),
        raw_rec("lease", 152_300, lease_raw),
    ];
    replica_metrics(&mut raw, "before", replicas, &counts, (152_500, 0));
    raw.extend(raw_of(bad.iter().chain([&good, &control])));
    replica_metrics(&mut raw, "after", replicas, &counts, (155_500, 0));
    let a3 = c::Act3Facts {
        scale: scale_up,
        deployment: deployment.0,
        replicas: replica_facts,
        endpoints,
        webhook: webhook("Fail", 150_000),
        lease,
        wait: c::ReadyWait {
            ready_pods_at: ts(149_000),
            ready_endpoints_at: ts(150_000),
            registration_at: ts(121_000),
            waited_ms: 29_400,
        },
        waves,
        wave_size,
        bad,
        good,
        control,
        existing,
        replica_requests: replica_requests(replicas, &counts),
    };
    t.act(3, (120_000, 160_500), inputs, &a3, raw);
    a3
}
/// Who holds the Lease `kyverno`: a replica index, `leaseTransitions`, and when it acquired the
/// Lease (ms, and `acquireTime` verbatim).
#[derive(Clone)]
struct LeaseState {
    holder: usize,
    transitions: u32,
    acquired: (i64, String),
}

impl LeaseState {
    /// How often replica `i`'s container restarted before this Lease: each takeover moved the
    /// Lease from its holder to [`first_other`] (from the first replica on), and the holder that
    /// lost it restarted (Kyverno exits when it loses the leadership).
    fn restarts_of(&self, i: usize, replicas: &[Replica]) -> u32 {
        let mut holder = 0;
        let mut restarts = 0;
        for _ in 0..self.transitions {
            restarts += u32::from(holder == i);
            holder = first_other(holder, replicas);
        }
        restarts
    }

    /// The Lease read at `x` ms, last renewed at `renew` ms, and the object read ([`lease`]).
    fn read(&self, replicas: &[Replica], renew: i64, x: i64) -> (a::LeaseFacts, Value) {
        let holder = &replicas[self.holder].pod;
        lease(holder, &self.acquired.1, renew, self.transitions, x)
    }
}

/// One freeze of a replica lab (lab C's act 5: the leader under Fail; act 6: a follower under
/// Ignore): the registry's step, what the fixture chooses around it, its instants (ms) and its
/// Lease: a live holder renews every 2 s; a frozen one stops renewing, and another replica takes
/// the Lease once it expired (12 s) and its own retry came round.
struct CFreeze<'a> {
    step: FreezeStep,
    replicas: &'a [Replica],
    /// When the Lease is read right before the freeze (ms); the freeze begins 200 ms later.
    lease_read: i64,
    /// The frozen replica (an index of [`replicas`]).
    target: usize,
    /// Which requests of a wave reach the frozen replica (indices).
    met: &'static [usize],
    /// Who holds the Lease before the freeze.
    lease: LeaseState,
    /// When the process is stopped, and resumed (by the healer, 12 ms late).
    frozen: i64,
    resumed: i64,
    /// The frozen holder's last renew.
    frozen_renew: i64,
    /// The replica that takes the Lease during the freeze, and when (14.5 s after the holder's
    /// last renew); the frozen holder's container then restarts after the resume.
    take: Option<(usize, i64)>,
    /// Each replica's pod admission counter before and after the act.
    counters: Vec<(u64, u64)>,
}

impl<'a> CFreeze<'a> {
    /// Act `act`'s freeze of `lab`, the Lease read at `lease_read` ms held as `lease`: the
    /// replica frozen is the one the registry's [`Target`] names now; a holder frozen past the
    /// Lease's duration and a retry loses the Lease to [`first_other`] and restarts (Kyverno
    /// exits when it loses the leadership). A wave's requests that reach the frozen replica, and
    /// each replica's counter (before, and how far it moves unless its replica restarts), are
    /// the fixture's, one set per failurePolicy.
    fn new(lab: Lab, act: u8, replicas: &'a [Replica], lease: LeaseState, lease_read: i64) -> Self {
        let step = FreezeStep::of(lab, act);
        let target = match step.target {
            Target::Leader => lease.holder,
            Target::Follower => first_other(lease.holder, replicas),
            Target::One => panic!(
                "lab {} act {act}: a replica lab names its replica by the Lease",
                lab.as_str()
            ),
        };
        let (frozen, resumed) = step.instants(lease_read, 12);
        let frozen_renew = renew_at(lease.acquired.0, frozen);
        // Lost when the Lease expires before the resume the healer aims at (12 ms earlier).
        let lost = target == lease.holder && frozen_renew + 14_500 < resumed - 12;
        let take = lost.then(|| (first_other(target, replicas), frozen_renew + 14_500));
        let (met, before, moved): (&[usize], [u64; 3], [u64; 3]) = match step.policy {
            "Fail" => (&[2], [15, 4, 7], [9, 9, 9]),
            _ => (&[0, 6], [0, 13, 16], [8, 7, 3]),
        };
        let counters = (0..replicas.len()).map(|i| {
            let (b, m) = (*before.get(i).unwrap_or(&0), *moved.get(i).unwrap_or(&5));
            (b, if lost && i == target { 0 } else { b + m })
        });
        CFreeze {
            step,
            replicas,
            lease_read,
            target,
            met,
            lease,
            frozen,
            resumed,
            frozen_renew,
            take,
            counters: counters.collect(),
        }
    }

    /// Who holds the Lease at `x` ms, and its last renew.
    fn state_at(&self, x: i64) -> (LeaseState, i64) {
        let l0 = &self.lease;
        match self.take {
            Some((h, at)) if x >= at + 40 => (
                LeaseState {
                    holder: h,
                    transitions: l0.transitions + 1,
                    acquired: (at, ts(at)),
                },
                renew_at(at, x),
            ),
            _ if l0.holder == self.target && x >= self.frozen => (l0.clone(), self.frozen_renew),
            _ => (l0.clone(), renew_at(l0.acquired.0, x)),
        }
    }

    /// The Lease read at `x` ms, and the object read.
    fn lease_at(&self, x: i64) -> (a::LeaseFacts, Value) {
        let (st, renew) = self.state_at(x);
        st.read(self.replicas, renew, x)
    }

    /// The fault ledger's entry of the freeze, before and after the healer resumed it.
    fn ledger(&self, resumed_at: Option<i64>) -> Value {
        // The healer armed 10 ms before the freeze.
        let (act, armed) = (self.step.act, self.frozen - 10);
        let deadline = armed + i64::from(self.step.resume_after_sec) * 1000;
        json!({
            "attempt": format!("freeze-0{act}-20261129T1000{act}Z-4242"), "deadline_at": ts(deadline),
            "frozen_at": ts(self.frozen), "healer": {"pid": 7000 + u32::from(act), "start_ticks": 1_300_000},
            "healer_ready_at": ts(armed), "note": null, "process_gone_after_resume": false,
            "resumed_at": resumed_at.map(ts), "resumed_by": resumed_at.map(|_| "healer"),
            "state_after_resume": resumed_at.map(|_| "S"),
            "status": if resumed_at.is_some() { "resumed" } else { "frozen" },
            "stop_sent_at": ts(self.frozen)
        })
    }

    /// The waves: each request of a wave sent at once; those that reach the frozen replica wait
    /// for the timeout (a webhook-timeout under Fail, stored under Ignore), the others are denied.
    /// Returns the violating and the control requests.
    fn waves(&self, raw: &mut Vec<Value>) -> (Vec<RequestRecord>, Vec<RequestRecord>) {
        let (act, tag) = (self.step.act, &self.step.tag);
        let ignore = self.step.policy == "Ignore";
        let hook = hook(self.step.policy);
        let (mut bad, mut control) = (Vec::new(), Vec::new());
        let mut sent = self.frozen + 25;
        let (waves, wave_size) = self.step.traffic;
        for wv in 0..waves {
            let mut wave = Vec::new();
            for i in 0..wave_size as usize {
                let name = format!("kca-{tag}-frozen-bad-w{wv}-{i}-10040{act}-{tag}{wv}{i}f");
                let (elapsed, answer) = match (self.met.contains(&i), ignore) {
                    (true, true) => {
                        let n = 0x5000 + u32::from(act) * 0x100 + wv * 16 + i as u32;
                        (3_013, Stored(uid(n)))
                    }
                    (true, false) => (3_006 + u64::from(wv), Timeout(hook)),
                    (false, _) => (12 + (i as u64 * 7) % 50, Deny(hook)),
                };
                wave.push(bad_pod(&name, sent, elapsed, answer));
            }
            let name = format!("kca-{tag}-frozen-control-w{wv}-10041{act}-{tag}c{wv}");
            let stored = Stored(uid(0x6000 + u32::from(act) * 0x100 + wv));
            let ctl = control_pod(&name, sent, 14, stored);
            let end = sent + wave.iter().map(|r| r.elapsed_ms as i64).max().unwrap_or(0);
            for r in &wave {
                raw.push(raw_rec("request:frozen-bad", end + 17, r));
            }
            raw.push(raw_rec("request:frozen-control", end + 17, &ctl));
            bad.extend(wave);
            control.push(ctl);
            sent = end + 19;
        }
        (bad, control)
    }

    /// The Lease and the EndpointSlices, read each second from the freeze until the resume, and
    /// the samples derived from each read ([`lab::derive::lease_sample`], `endpoint_sample`).
    fn samples(&self, raw: &mut Vec<Value>) -> (Vec<c::LeaseSample>, Vec<c::EndpointSample>) {
        let slices = endpoint_slices(self.replicas);
        let (mut leases, mut endpoints, mut samples) = (vec![], vec![], vec![]);
        for k in 0..=i64::from(self.step.resume_after_sec) {
            let x = self.frozen + 60 + k * 1000;
            let lease = json!({"what": "lease", "at": ts(x), "lease": self.lease_at(x).1});
            let slices = json!({"what": "endpoint-slices", "at": ts(x), "slices": slices});
            leases.push(lab::derive::lease_sample(&lease).expect("a Lease read"));
            endpoints.push(lab::derive::endpoint_sample(&slices).expect("EndpointSlices"));
            samples.extend([lease, slices]);
        }
        raw.push(raw_rec("freeze-samples", self.resumed + 30, samples));
        (leases, endpoints)
    }

    /// The settle: every replica Ready and a ready endpoint, the Lease on a replica, no sooner
    /// than the Lease's duration and retry (14 s) after the resume; then the pods, the frozen
    /// replica's process and the Lease. Returns when the settle began and ended, the process
    /// after and the Lease after.
    fn settle(&self, raw: &mut Vec<Value>) -> (i64, i64, b::ProcessIdentity, a::LeaseFacts) {
        let (f, resumed, restarted) = (self, self.resumed, self.take.is_some());
        let settle_start = resumed + 1_026;
        let holder_after = &self.replicas[self.take.map_or(f.lease.holder, |(h, _)| h)].pod;
        let n = self.replicas.len();
        let check = |at: i64, ready: usize, restarts: u32, target_ready: bool| {
            json!({"at": ts(at), "endpoints_ready": ready, "lease_holder": holder_after,
                   "pods_listed": n, "pods_ready": ready, "target_ready": target_ready,
                   "target_restart_count": restarts})
        };
        let mut checks = vec![check(settle_start + 5, n, 0, true)];
        if restarted {
            checks.push(check(resumed + 11_000, n - 1, 0, false));
            checks.push(check(resumed + 12_100, n - 1, 1, false));
            checks.push(check(resumed + 25_000, n, 1, true));
        }
        let settled = resumed + if restarted { 26_300 } else { 14_200 };
        raw.push(raw_rec("settle-wait", settled, checks));
        let restarts = u32::from(restarted);
        let pod = |(i, r): (usize, &Replica)| {
            let earlier = f.lease.restarts_of(i, self.replicas);
            r.pod(settled, earlier + u32::from(i == f.target) * restarts)
                .1
        };
        let pods: Vec<Value> = self.replicas.iter().enumerate().map(pod).collect();
        raw.push(raw_rec("pods-after", settled + 1, pods));
        let target = &self.replicas[f.target];
        let mut identity = target.identity();
        if restarted {
            identity.pid += 1000;
            identity.pid_start_time_ticks += 400_000;
            identity.container_id = "6c".repeat(32);
        }
        let cri = cri_container(restarts, &identity, &target.pod);
        raw.push(raw_rec("cri-container-after", settled + 6, cri));
        let (lease_after, lease_raw) = self.lease_at(settled + 9);
        raw.push(raw_rec("lease-after", settled + 9, lease_raw));
        (settle_start, settled, identity, lease_after)
    }
}

/// A replica freeze run and its raw records (appended to `raw`), as `lab/src/labs/c.rs`
/// `replica_freeze` records them: the Lease and the process before, each replica's counter, the
/// waves during the freeze, the samples each second, the first deny after the resume, the settle,
/// the pods, the process, the Lease and the counters after, the existing pod. Returns the run,
/// when the act ends (ms) and the Lease after it.
fn c_freeze_run(
    f: &CFreeze,
    existing: &facts::PodObservation,
    raw: &mut Vec<Value>,
) -> (c::ReplicaFreezeRun, i64, LeaseState) {
    let replicas = f.replicas;
    let (act, policy) = (f.step.act, f.step.policy);
    let target = &replicas[f.target];
    let identity = target.identity();
    let (lease_before, lease_raw) = f.lease_at(f.lease_read);
    raw.push(raw_rec("lease-before", f.lease_read, lease_raw));
    let cri = cri_container(0, &identity, &target.pod);
    raw.push(raw_rec("cri-container-before", f.lease_read + 10, cri));
    let at = f.lease_read + 30;
    replica_metrics(raw, "before", replicas, &f.counters, (at, 8));
    let ledger = f.ledger(None);
    raw.push(raw_rec("fault-ledger-frozen", f.frozen + 15, ledger));
    let (bad, control) = f.waves(raw);
    let (lease_samples, endpoint_samples) = f.samples(raw);
    let ledger = f.ledger(Some(f.resumed));
    raw.push(raw_rec("fault-ledger-resumed", f.resumed + 31, ledger));
    let name = format!("kca-{0}-after-10042{act}-{0}a0", f.step.tag);
    let deny = bad_pod(&name, f.resumed + 1_000, 6, Deny(hook(policy)));
    raw.push(raw_rec("request:after-resume", f.resumed + 1_023, &deny));
    let (settle_start, settled, identity_after, lease_after) = f.settle(raw);
    replica_metrics(raw, "after", replicas, &f.counters, (settled + 15, 6));
    let watchdog = 7000 + u32::from(act);
    let run = c::ReplicaFreezeRun {
        target_role: lab::labs::c::role(f.step.target).into(),
        target_pod: target.pod.clone(),
        lease_before,
        freeze: freeze_window(identity, watchdog, f.frozen - 10, (f.frozen, f.resumed)),
        registration_present_during_freeze: true,
        registration_snapshot: configuration(policy)["webhooks"][0].clone(),
        registration_checked_at: ts(f.frozen + 18),
        timeout_seconds: 3,
        waves: f.step.traffic.0,
        wave_size: f.step.traffic.1,
        bad,
        control,
        lease_samples,
        endpoint_samples,
        replica_requests: replica_requests(replicas, &f.counters),
        after_resume: vec![deny.clone()],
        first_deny_after_resume_ms: Some(1_000 + 6),
        first_explicit_deny: Some(deny),
        target_after: c::TargetAfter {
            pod: target.pod.clone(),
            pod_uid_before: target.uid.clone(),
            pod_uid_after: Some(target.uid.clone()),
            restart_count_before: 0,
            restart_count_after: u32::from(f.take.is_some()),
            ready_after: true,
            identity_after: Some(identity_after),
            holds_lease_after: lease_after.holder.as_deref() == Some(target.pod.as_str()),
            settled_at: ts(settled),
            waited_ms: (settled - settle_start) as u64,
        },
        lease_after,
        existing: seen_at(existing, settled + 30),
    };
    (run, settled + 300, f.state_at(settled + 9).0)
}
/// A replica lab's act 7: act 3's scale attempt healed at 360 s (back to the original count);
/// the other pods terminate (grace period 30 s); the Lease's holder after the freezes (`held`)
/// stays.
fn c_act7(t: &mut Tree, replicas: &[Replica], a3: &c::Act3Facts, held: LeaseState) -> c::Act7Facts {
    let inputs = t.inputs_of(7);
    let (n, original) = (replicas.len() as u32, a3.scale.replicas_before);
    let kept = &replicas[held.holder];
    let heal = json!({
        "action": "restored", "at": ts(360_004), "attempt": a3.scale.fault_id,
        "by": {"pid": 4242, "start_ticks": 1_216_895}, "command": "act 7 (scale back)",
        "healer": {"pid": 6262, "start_ticks": 1_219_624}, "healer_signalled": "sigterm-sent, exited",
        "kind": "scale", "note": null, "restore": {"at": ts(360_070), "result": "restored"},
        "resume": null
    });
    let scale_back = lab::derive::scale_back(&heal, n, original).expect("a heal record");
    let wait_check = |at: i64, listed: u32| {
        json!({"at": ts(at), "lease_holder": kept.pod, "pods_listed": listed, "pods_live": original,
               "pods_ready": original, "registration": true, "spec_replicas": original})
    };
    let wait = [wait_check(360_200, n), wait_check(392_900, original)];
    let tag = lab::labs::common::request_tag(t.lab, 7);
    let probe = format!("kca-{tag}-bad-100500-{tag}b0");
    let probe = bad_pod(&probe, 393_100, 6, DENY_IGNORE);
    let (lease7, lease_raw) = held.read(replicas, renew_at(held.acquired.0, 393_010), 393_010);
    let w7 = webhook("Ignore", 393_016);
    let raw = vec![
        raw_rec("deployment-before", 360_003, deployment(n, n).1),
        raw_rec("scale-back-heal", 360_075, json!([heal])),
        raw_rec("scale-attempt-heal", 360_075, heal),
        raw_rec("scale-back-wait", 392_900, json!(wait)),
        raw_rec("lease", 393_010, lease_raw),
        raw_rec("policy", 393_015, policy("Ignore", true)),
        raw_rec("webhook-configuration", 393_016, configuration("Ignore")),
        raw_rec("request:deny-probe", 393_125, json!(probe)),
    ];
    let a7 = c::Act7Facts {
        scale_back,
        deployment: deployment(original, original).0,
        replicas: vec![kept.pod(392_900, 0).0],
        lease: lease7,
        policy_uid: POLICY_UID.into(),
        webhook: w7,
        deny_probes: vec![probe.clone()],
        healthy_bad: probe,
        existing: seen_at(&a3.existing, 393_160),
        waited_ms: 33_170,
    };
    t.act(7, (360_000, 393_300), inputs, &a7, raw);
    a7
}

/// The passing work directory of `lab`: acts 1-2 as every lab has them, acts 3-7 by the
/// generator its steps call for ([`Kind`]), the report act.
pub fn pass(lab: Lab) -> Files {
    let mut t = acts_1_and_2(lab);
    let report = match Kind::of(lab).expect("a generator of the lab's steps") {
        Kind::ScaleDown => scale_down_acts(&mut t),
        Kind::Freeze => freeze_acts(&mut t),
        Kind::ReplicaFreeze => replica_acts(&mut t),
    };
    report_act(&mut t, report);
    t.files
}

/// All fixture files of `lab` (relative to `fixtures/<lab>/`): `pass/...` and `flagged/<case>/...`.
pub fn generate(lab: Lab) -> Files {
    let (pass, cases) = (pass(lab), super::cases::cases(lab));
    // One passing evidence file per act of the registry: a new act needs its fixture here.
    let evidence: Vec<_> = pass
        .keys()
        .filter_map(|k| k.strip_prefix("evidence/"))
        .collect();
    let expected: Vec<_> = acts::numbers(lab).map(|a| format!("{a:02}.json")).collect();
    assert_eq!(evidence, expected, "lab {}: evidence vs acts", lab.as_str());
    let mut out = Files::new();
    for (k, v) in &pass {
        out.insert(format!("pass/{k}"), v.clone());
    }
    for c in cases {
        let mut files = pass.clone();
        (c.mutate)(&mut files);
        for (k, v) in files {
            if pass.get(&k) != Some(&v) {
                out.insert(format!("flagged/{}/{k}", c.name), v);
            }
        }
        out.insert(
            format!("flagged/{}/case.json", c.name),
            json!({"act": c.act, "expect": c.expect, "why": c.why}),
        );
    }
    out
}
