//! Generator of the grading fixtures under `lab/tests/fixtures/{a,b,c}/`.
//!
//! `pass/` is a complete work directory (inputs + one `evidence/NN.json` per act of `lab::acts`) whose evidence has the
//! shapes real acts record: API answers with the exact message texts of kube-apiserver v1.35 and
//! Kyverno v1.19 (k8s.io/apiserver v0.35 `pkg/admission/plugin/webhook/errors/statuserror.go` and
//! `pkg/util/webhook/error.go`; kyverno `pkg/webhooks/resource/vpol/handler.go`), follow-up GETs, and
//! digests that chain (freeze-plan.json holds the digest of 03.json, and so on). These are
//! synthetic fixtures for the pure graders, not recordings of a cluster run.
//!
//! `flagged/<case>/` holds only the files that differ from `pass/` plus `case.json`
//! (`{act, expect, why}`): the grader of `act` must report the code `expect`.
//!
//! The committed files are checked against this generator by the `fixtures_are_up_to_date` test;
//! `UPDATE_FIXTURES=1 cargo test -p lab --test grade_fixtures` rewrites them.

use std::collections::BTreeMap;

use lab::classify::classify;
use lab::digest::digest_value;
use lab::evidence::{ActStatus, Evidence, GetResult, Lab, RequestRecord, SCHEMA_VERSION};
use lab::facts::{self, a, b};
use lab::inputs::{Context, InputFile};
use serde_json::{Value, json};

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
const FAIL_HOOK: &str = "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label";
const IGNORE_HOOK: &str = "vpol.validate.kyverno.svc-ignore-finegrained-kca-webhook-label";
const TARGET: &str = "kca-webhook-target";
const CONTROL: &str = "kca-webhook-control";

/// The lab's timeline origin plus `ms` milliseconds, RFC 3339 UTC (ms).
pub fn ts(ms: i64) -> String {
    let base = chrono::DateTime::parse_from_rfc3339("2026-11-29T10:00:00.000Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    facts::format_rfc3339(base + chrono::Duration::milliseconds(ms))
}

fn uid(n: u32) -> String {
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

fn status_body(code: u16, reason: &str, message: &str) -> Value {
    let mut v = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "code": code
    });
    if !reason.is_empty() {
        v["reason"] = json!(reason);
    }
    v
}

fn pod_body(
    name: &str,
    ns: &str,
    labels: &BTreeMap<String, String>,
    uid: &str,
    created: &str,
    dry_run: bool,
) -> Value {
    let mut meta = json!({"name": name, "namespace": ns, "uid": uid, "creationTimestamp": created});
    if !dry_run {
        meta["resourceVersion"] = json!("4711");
    }
    if !labels.is_empty() {
        meta["labels"] = json!(labels);
    }
    json!({
        "kind": "Pod", "apiVersion": "v1", "metadata": meta,
        "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1", "imagePullPolicy": "IfNotPresent"}]},
        "status": {"phase": "Pending", "qosClass": "BestEffort"}
    })
}

/// One request record, classified with the real classifier.
pub fn request(
    name: &str,
    ns: &str,
    good: bool,
    dry_run: bool,
    sent: i64,
    elapsed: u64,
    answer: Answer,
) -> RequestRecord {
    let labels: BTreeMap<String, String> = if good {
        [("environment".to_owned(), "lab".to_owned())].into()
    } else {
        BTreeMap::new()
    };
    let answered = sent + elapsed as i64;
    let get_at = ts(answered + 15);
    let (http_status, reason, message, raw, get) = match answer {
        Answer::Stored(u) => (
            201,
            None,
            None,
            pod_body(
                name,
                ns,
                &labels,
                &u,
                &format!("{}Z", &ts(answered)[..19]),
                false,
            ),
            GetResult {
                exists: true,
                uid: Some(u),
                phase: Some("Pending".to_owned()),
                at: get_at,
            },
        ),
        Answer::Deny(hook) => {
            let m = format!(
                "admission webhook \"{hook}\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED"
            );
            (
                400,
                None,
                Some(m.clone()),
                status_body(400, "", &m),
                GetResult {
                    exists: false,
                    uid: None,
                    phase: None,
                    at: get_at,
                },
            )
        }
        Answer::Timeout(hook) => {
            let m = format!(
                "Internal error occurred: failed calling webhook \"{hook}\": failed to call webhook: Post \"https://kyverno-svc.kyverno.svc:443/vpol/kca-webhook-label?timeout=3s\": context deadline exceeded"
            );
            let mut body = status_body(500, "InternalError", &m);
            body["details"] =
                json!({"causes": [{"message": m.trim_start_matches("Internal error occurred: ")}]});
            (
                500,
                Some("InternalError".to_owned()),
                Some(m),
                body,
                GetResult {
                    exists: false,
                    uid: None,
                    phase: None,
                    at: get_at,
                },
            )
        }
        Answer::DryRunAdmitted(u) => (
            201,
            None,
            None,
            pod_body(
                name,
                ns,
                &labels,
                &u,
                &format!("{}Z", &ts(answered)[..19]),
                true,
            ),
            GetResult {
                exists: false,
                uid: None,
                phase: None,
                at: get_at,
            },
        ),
    };
    let outcome = classify(
        http_status,
        reason.as_deref(),
        message.as_deref(),
        &get,
        dry_run,
        lab::grade::MARKERS,
    );
    RequestRecord {
        name: name.to_owned(),
        namespace: ns.to_owned(),
        labels,
        dry_run,
        sent_at: ts(sent),
        answered_at: ts(answered),
        elapsed_ms: elapsed,
        http_status,
        reason,
        message,
        outcome,
        get,
        raw_response: raw,
    }
}

/// One raw record as the act recorder writes it (`{"at", "what", "data"}`).
fn raw_rec(what: &str, at: i64, data: Value) -> Value {
    json!({"at": ts(at), "what": what, "data": data})
}

/// A `v1` Pod as the API server returns it, for the fields a [`facts::PodObservation`] is read from.
fn pod_object(p: &facts::PodObservation) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": p.name, "namespace": p.namespace, "uid": p.uid},
        "status": {"phase": p.phase, "containerStatuses": [{"name": "kyverno", "restartCount": p.restart_count}]}
    })
}

/// A running pod's observation at `at` ms, derived ([`lab::derive::pod`], as the acts derive it)
/// from the Pod [`pod_object`] writes for it (no restarts).
fn pod_obs(name: &str, ns: &str, uid: &str, phase: &str, at: i64) -> facts::PodObservation {
    let raw = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": uid},
        "status": {"phase": phase, "containerStatuses": [{"name": "kyverno", "restartCount": 0}]}
    });
    lab::derive::pod(&raw, ts(at)).expect("a Pod")
}

/// The Lease `kyverno/kyverno` as the API server returns it, for the fields a
/// [`a::LeaseFacts`] is read from.
fn lease_object(l: &a::LeaseFacts) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": l.name, "namespace": l.namespace, "uid": uid(0x1ea5)},
        "spec": {"acquireTime": l.acquire_time, "holderIdentity": l.holder,
                 "leaseDurationSeconds": l.lease_duration_seconds,
                 "leaseTransitions": l.lease_transitions, "renewTime": l.renew_time}
    })
}

/// The Lease `kyverno/kyverno` read at `at` ms, as the acts derive it ([`lab::derive::lease`])
/// from the object (the one [`lease_object`] writes back): held by `holder` since `acquired`,
/// renewed at `renewed`, 12 s, after `transitions` transitions.
fn lease_read(
    holder: &str,
    acquired: &str,
    renewed: String,
    transitions: u32,
    at: i64,
) -> a::LeaseFacts {
    let raw = json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "kyverno", "namespace": "kyverno", "uid": uid(0x1ea5)},
        "spec": {"acquireTime": acquired, "holderIdentity": holder, "leaseDurationSeconds": 12,
                 "leaseTransitions": transitions, "renewTime": renewed}
    });
    lab::derive::lease(&raw, ts(at)).expect("a Lease")
}

/// The admission controller's Deployment as the API server returns it, for the fields a
/// [`a::DeploymentFacts`] is read from: `replicas` wanted, `ready` of them ready.
fn deployment_object(replicas: u32, ready: u32) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "kyverno-admission-controller", "namespace": "kyverno", "uid": DEPLOY_UID},
        "spec": {"replicas": replicas},
        "status": {"readyReplicas": ready, "replicas": replicas}
    })
}

/// [`deployment_object`]'s facts, as the acts derive them ([`lab::derive::deployment`]).
fn deployment_read(replicas: u32, ready: u32) -> a::DeploymentFacts {
    lab::derive::deployment(&deployment_object(replicas, ready)).expect("a Deployment")
}

fn webhook(failure_policy: &str, at: i64) -> facts::WebhookFacts {
    facts::WebhookFacts {
        configuration: "kyverno-resource-validating-webhook-cfg".into(),
        configuration_uid: Some(uid(0xc0f)),
        name: if failure_policy == "Fail" {
            FAIL_HOOK
        } else {
            IGNORE_HOOK
        }
        .into(),
        service: Some(facts::ServiceRef {
            namespace: "kyverno".into(),
            name: "kyverno-svc".into(),
            path: Some("/vpol/kca-webhook-label".into()),
            port: 443,
        }),
        url: None,
        failure_policy: failure_policy.into(),
        timeout_seconds: 3,
        namespace_selector: json!({"matchLabels": {"kubernetes.io/metadata.name": TARGET}}),
        object_selector: json!({}),
        // As the real run recorded it (recorded/b-20261129T153816Z act 2): Kyverno v1.19.1 adds
        // no matchConditions to this policy's webhook.
        match_conditions: serde_json::Value::Null,
        rules: json!([{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"], "scope": "*"}]),
        side_effects: "NoneOnDryRun".into(),
        match_policy: Some("Equivalent".into()),
        observed_at: ts(at),
    }
}

/// The raw ValidatingWebhookConfiguration read with `w`: its name and UID, `w` its one webhook.
fn configuration_of(w: &facts::WebhookFacts) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": w.configuration, "uid": w.configuration_uid},
        "webhooks": [webhook_entry(w)]
    })
}

fn webhook_entry(w: &facts::WebhookFacts) -> Value {
    json!({
        "name": w.name,
        "clientConfig": {"service": {"namespace": "kyverno", "name": "kyverno-svc", "path": "/vpol/kca-webhook-label", "port": 443}, "caBundle": "LS0tLS1CRUdJTi..."},
        "rules": w.rules, "failurePolicy": w.failure_policy, "matchPolicy": "Equivalent",
        "namespaceSelector": w.namespace_selector, "objectSelector": w.object_selector,
        "sideEffects": w.side_effects, "timeoutSeconds": w.timeout_seconds,
        "admissionReviewVersions": ["v1"], "matchConditions": w.match_conditions
    })
}

fn stored_policy(failure_policy: &str) -> Value {
    let file = if failure_policy == "Fail" {
        InputFile::Policy
    } else {
        InputFile::PolicyIgnore
    };
    let mut p = super::reference::value(file, &Context::default()).unwrap();
    p["metadata"] = json!({
        "name": "kca-webhook-label", "uid": POLICY_UID, "generation": if failure_policy == "Fail" { 1 } else { 2 },
        "resourceVersion": "1200", "creationTimestamp": "2026-11-29T10:01:00Z"
    });
    p["spec"]["evaluation"]["admission"] = json!({"enabled": true});
    p["status"] = json!({"conditionStatus": {"ready": true, "message": "", "conditions": [
        {"type": "WebhookConfigured", "status": "True", "reason": "Succeeded", "message": "Webhook configured."}
    ]}, "generated": false});
    p
}

/// One audit event line as kube-apiserver v1.35.8 writes it at level Metadata for a pod create
/// (`audit.k8s.io/v1` Event, JSON; the shape of a real embedded-node line of 2026-11-30: user
/// `kca-admin` with its credential id, no userAgent, `requestURI` `…/pods?` or `…/pods?&dryRun=All`),
/// for request `r`: `responseStatus` = the HTTP status (and on failure the Status message),
/// `annotations` = the authorizer's decision, the pod-security policy, plus `extra`.
pub fn audit_line(r: &RequestRecord, n: usize, extra: &[(&str, &str)]) -> String {
    let mut ann = json!({
        "authorization.k8s.io/decision": "allow",
        "authorization.k8s.io/reason": "",
        "pod-security.kubernetes.io/enforce-policy": "privileged:latest"
    });
    for (k, v) in extra {
        ann[*k] = json!(v);
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
        "stage": "ResponseComplete",
        "requestURI": format!("/api/v1/namespaces/{}/pods?{dry}", r.namespace),
        "verb": "create",
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
/// act 6's target-namespace pods stored under Ignore (labs B and C) failed open (annotation
/// naming the Ignore webhook); every other request has just its code.
fn audit_record(lab: Lab, act: u8, facts: &Value, start: i64, end: i64) -> Value {
    let requests = lab::evidence::request_records(&[facts]);
    let mut lines = Vec::new();
    for (n, r) in requests.values().enumerate() {
        let open = matches!(lab, Lab::B | Lab::C)
            && act == 6
            && r.namespace == TARGET
            && r.outcome == lab::evidence::Outcome::Stored;
        let extra: &[(&str, &str)] = if open {
            &[(
                "failed-open.validating.webhook.admission.k8s.io/round_0_index_0",
                IGNORE_HOOK,
            )]
        } else {
            &[]
        };
        lines.push(audit_line(r, act as usize * 100 + n, extra));
    }
    let record = lab::audit::AdmissionAudit {
        source: "kube-apiserver audit log (--audit-log-path) /var/lib/kca/audit/audit.log".into(),
        status: lab::audit::AuditStatus::Observed,
        reason: None,
        log: Some("/var/lib/kca/audit/audit.log".into()),
        offset: Some(4096),
        window: (ts(start), ts(end)),
        waited_ms: 0,
        requests: requests
            .values()
            .map(|r| lab::audit::request_audit(r, &lines))
            .collect(),
    };
    serde_json::to_value(record).unwrap()
}

fn evidence(
    lab: Lab,
    act: u8,
    start: i64,
    end: i64,
    inputs: &[(&str, &Value)],
    facts: impl serde::Serialize,
    raw: Vec<Value>,
) -> Value {
    let mut facts = serde_json::to_value(facts).unwrap();
    if lab::acts::spec(lab, act).is_some_and(|s| s.audit) {
        let a = audit_record(lab, act, &facts, start, end);
        facts[lab::audit::FACTS_KEY] = a;
    }
    let ev = Evidence {
        schema_version: SCHEMA_VERSION,
        lab,
        act,
        status: ActStatus::Completed,
        started_at: ts(start),
        finished_at: ts(end),
        inputs: inputs
            .iter()
            .map(|(n, v)| ((*n).to_owned(), digest_value(v)))
            .collect(),
        facts,
        raw,
        interruption: None,
        versions: None,
    };
    serde_json::to_value(ev).unwrap()
}

/// Builder state: the files so far.
struct Tree {
    lab: Lab,
    files: BTreeMap<String, Value>,
}

impl Tree {
    fn ev(&self, act: u8) -> &Value {
        &self.files[&format!("evidence/{act:02}.json")]
    }
    fn put_ev(&mut self, act: u8, v: Value) {
        self.files.insert(format!("evidence/{act:02}.json"), v);
    }
    fn put(&mut self, file: InputFile, v: Value) -> Value {
        self.files.insert(file.file_name().to_owned(), v.clone());
        v
    }
    fn ctx(&self) -> Context {
        let mut ctx = Context {
            node_uid: Some(NODE_UID.into()),
            namespaces: Some(
                [
                    (TARGET.to_owned(), NS_TARGET_UID.to_owned()),
                    (CONTROL.to_owned(), NS_CONTROL_UID.to_owned()),
                ]
                .into(),
            ),
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
}

/// Acts 1-3, shared by labs A and B. Time origin: act 1 at 0 ms.
fn acts_1_to_3(t: &mut Tree) {
    acts_1_and_2(t);
    act3_baseline(t);
}

/// Acts 1-2, shared by every lab.
fn acts_1_and_2(t: &mut Tree) {
    let lab = t.lab;
    let scope = t.put(
        InputFile::Scope,
        super::reference::value(InputFile::Scope, &t.ctx()).unwrap(),
    );
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
        namespaces: [
            (TARGET.to_owned(), NS_TARGET_UID.to_owned()),
            (CONTROL.to_owned(), NS_CONTROL_UID.to_owned()),
        ]
        .into(),
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
    t.put_ev(
        1,
        evidence(
            lab,
            1,
            0,
            400,
            &[("scope.json", &scope)],
            a1,
            vec![raw_rec("lab-mark", 300, mark)],
        ),
    );

    let policy = t.put(
        InputFile::Policy,
        super::reference::value(InputFile::Policy, &t.ctx()).unwrap(),
    );
    let w = webhook("Fail", 61_000);
    let a2 = facts::Act2Facts {
        policy: stored_policy("Fail"),
        webhook: w.clone(),
    };
    t.put_ev(
        2,
        evidence(
            lab,
            2,
            60_000,
            61_500,
            &[("policy.json", &policy)],
            a2,
            vec![
                raw_rec("policy-stored", 60_500, {
                    let mut p = stored_policy("Fail");
                    p.as_object_mut().unwrap().remove("status");
                    p
                }),
                raw_rec("webhook-configuration", 61_000, configuration_of(&w)),
            ],
        ),
    );
}

/// Act 3 of labs A and B: the sequential baseline.
fn act3_baseline(t: &mut Tree) {
    let lab = t.lab;
    let good_uid = uid(0x600d);
    let good = request(
        "kca-good-100200-a1b2c3",
        TARGET,
        true,
        false,
        120_000,
        45,
        Answer::Stored(good_uid.clone()),
    );
    let bad = request(
        "kca-bad-100201-d4e5f6",
        TARGET,
        false,
        false,
        121_000,
        38,
        Answer::Deny(FAIL_HOOK),
    );
    let existing = pod_obs(&good.name, TARGET, &good_uid, "Running", 126_000);
    let raw = vec![good.raw_response.clone(), bad.raw_response.clone()];
    t.put_ev(
        3,
        evidence(
            lab,
            3,
            119_000,
            126_500,
            &[],
            facts::Act3Facts {
                good,
                bad,
                existing,
            },
            raw,
        ),
    );
}

fn existing_at(at: i64) -> facts::PodObservation {
    pod_obs(
        "kca-good-100200-a1b2c3",
        TARGET,
        &uid(0x600d),
        "Running",
        at,
    )
}

fn identity() -> b::ProcessIdentity {
    b::ProcessIdentity {
        pid: 4242,
        pid_start_time_ticks: 1_234_567,
        container_id: CONTAINER_ID.into(),
        pod_uid: CTRL_POD_UID.into(),
    }
}

/// A freeze run starting at `t0` ms. `ignore`: failurePolicy Ignore.
fn freeze_run(t0: i64, resume_after_sec: u32, ignore: bool, n: u32) -> b::FreezeRun {
    let hook = if ignore { IGNORE_HOOK } else { FAIL_HOOK };
    let frozen = t0 + 200;
    let resumed = frozen + i64::from(resume_after_sec) * 1000 + 5;
    let w = webhook(if ignore { "Ignore" } else { "Fail" }, frozen + 150);
    let (good, bad) = if ignore {
        (
            Answer::Stored(uid(0xa000 + n)),
            Answer::Stored(uid(0xb000 + n)),
        )
    } else {
        (Answer::Timeout(hook), Answer::Timeout(hook))
    };
    let target_good = request(
        &format!("kca-freeze{n}-good-a{n}0001"),
        TARGET,
        true,
        false,
        frozen + 400,
        3_012,
        good,
    );
    let target_bad = request(
        &format!("kca-freeze{n}-bad-b{n}0002"),
        TARGET,
        false,
        false,
        frozen + 3_600,
        3_007,
        bad,
    );
    let control = request(
        &format!("kca-freeze{n}-control-c{n}0003"),
        CONTROL,
        false,
        false,
        frozen + 6_800,
        41,
        Answer::Stored(uid(0xc000 + n)),
    );
    let mid = request(
        &format!("kca-resume{n}-bad-d{n}0004"),
        TARGET,
        false,
        false,
        resumed + 300,
        3_004,
        Answer::Timeout(hook),
    );
    let deny = request(
        &format!("kca-resume{n}-bad-e{n}0005"),
        TARGET,
        false,
        false,
        resumed + 3_600,
        52,
        Answer::Deny(hook),
    );
    let after_resume = if ignore {
        // Under Ignore a still-slow answer is admitted: keep the run simple, the deny comes first.
        vec![deny.clone()]
    } else {
        vec![mid, deny.clone()]
    };
    b::FreezeRun {
        freeze: b::FreezeWindow {
            identity: identity(),
            watchdog_pid: Some(5151 + n),
            watchdog_armed_at: ts(t0 + 100),
            resume_after_sec,
            frozen_at: ts(frozen),
            state_during: Some("T".into()),
            resumed_at: ts(resumed),
            resumed_by: b::Resumer::Watchdog,
            state_after: "S".into(),
        },
        registration_present_during_freeze: true,
        registration_snapshot: webhook_entry(&w),
        registration_checked_at: ts(frozen + 150),
        timeout_seconds: 3,
        target_good,
        target_bad,
        control,
        after_resume,
        first_explicit_deny: Some(deny),
        existing: existing_at(resumed + 4_000),
        restart_count_before: 0,
        restart_count_after: 0,
        first_deny_after_resume_ms: Some((resumed + 3_600 + 52 - resumed) as u64),
        identity_after: Some(identity()),
    }
}

fn raw_of(reqs: &[&RequestRecord]) -> Vec<Value> {
    reqs.iter().map(|r| r.raw_response.clone()).collect()
}

/// The passing lab B work directory.
pub fn lab_b_pass() -> BTreeMap<String, Value> {
    let mut t = Tree {
        lab: Lab::B,
        files: BTreeMap::new(),
    };
    acts_1_to_3(&mut t);
    let plan = t.put(
        InputFile::FreezePlan,
        super::reference::value(InputFile::FreezePlan, &t.ctx()).unwrap(),
    );
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
    t.put_ev(
        4,
        evidence(
            Lab::B,
            4,
            180_000,
            181_000,
            &[("freeze-plan.json", &plan)],
            a4,
            vec![raw_rec(
                "cri-container",
                180_400,
                json!({
                    "attempt": 0, "container_id": CONTAINER_ID, "container_name": "kyverno",
                    "pid": identity().pid, "pod_name": CTRL_POD, "pod_namespace": "kyverno",
                    "pod_uid": identity().pod_uid, "state": "CONTAINER_RUNNING"
                }),
            )],
        ),
    );

    let run5 = freeze_run(240_000, 20, false, 5);
    let raw5 = raw_of(&[&run5.target_good, &run5.target_bad, &run5.control]);
    t.put_ev(
        5,
        evidence(
            Lab::B,
            5,
            240_000,
            272_000,
            &[("freeze-plan.json", &plan)],
            run5,
            raw5,
        ),
    );

    let ignore = t.put(
        InputFile::PolicyIgnore,
        super::reference::value(InputFile::PolicyIgnore, &t.ctx()).unwrap(),
    );
    let healthy_bad = request(
        "kca-ignore-healthy-bad-f60001",
        TARGET,
        false,
        false,
        302_000,
        47,
        Answer::Deny(IGNORE_HOOK),
    );
    let run6 = freeze_run(303_000, 10, true, 6);
    let w6 = webhook("Ignore", 301_500);
    let mut raw6 = raw_of(&[&healthy_bad, &run6.target_good, &run6.target_bad]);
    raw6.push(raw_rec("policy-stored", 301_000, {
        let mut p = stored_policy("Ignore");
        p.as_object_mut().unwrap().remove("status");
        p
    }));
    raw6.push(raw_rec(
        "webhook-configuration-ignore",
        301_500,
        configuration_of(&w6),
    ));
    let a6 = b::Act6Facts {
        policy_uid_before: POLICY_UID.into(),
        policy: stored_policy("Ignore"),
        webhook: w6,
        healthy_bad,
        run: run6,
    };
    t.put_ev(
        6,
        evidence(
            Lab::B,
            6,
            300_000,
            325_000,
            &[("policy-ignore.json", &ignore)],
            a6,
            raw6,
        ),
    );

    let recovery = t.put(
        InputFile::Recovery,
        super::reference::value(InputFile::Recovery, &t.ctx()).unwrap(),
    );
    let healthy_bad = request(
        "kca-recovery-bad-f70001",
        TARGET,
        false,
        false,
        360_000,
        44,
        Answer::Deny(IGNORE_HOOK),
    );
    let w7 = webhook("Ignore", 359_000);
    let mut raw7 = raw_of(&[&healthy_bad]);
    raw7.push(raw_rec(
        "webhook-configuration",
        359_000,
        configuration_of(&w7),
    ));
    let a7 = b::Act7Facts {
        policy_uid: POLICY_UID.into(),
        webhook: w7,
        healthy_bad,
        existing: existing_at(361_000),
    };
    t.put_ev(
        7,
        evidence(
            Lab::B,
            7,
            358_000,
            362_000,
            &[("recovery.json", &recovery)],
            a7,
            raw7,
        ),
    );

    let report = t.put(
        InputFile::ReportB,
        super::reference::value(InputFile::ReportB, &t.ctx()).unwrap(),
    );
    let a8 = act8_facts(&t, &report);
    t.put_ev(
        8,
        evidence(
            Lab::B,
            8,
            400_000,
            400_300,
            &[("report.json", &report)],
            a8,
            vec![],
        ),
    );
    t.files
}

fn act8_facts(t: &Tree, report: &Value) -> facts::Act8Facts {
    let digests = t.ctx().evidence_digests;
    let checks = report
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            let evidence = if k.ends_with("_sha256") {
                let act = match (t.lab, k.as_str()) {
                    (
                        _,
                        "fail_evidence_sha256"
                        | "scale_evidence_sha256"
                        | "leader_freeze_evidence_sha256",
                    ) => 5,
                    (Lab::B, "ignore_evidence_sha256")
                    | (Lab::A, "recovery_evidence_sha256")
                    | (Lab::C, "follower_freeze_evidence_sha256") => 6,
                    _ => 7,
                };
                json!(digests[&act])
            } else {
                v.clone()
            };
            facts::ReportCheck {
                field: k.clone(),
                report: v.clone(),
                agrees: &evidence == v,
                evidence,
            }
        })
        .collect();
    facts::Act8Facts {
        checks,
        evidence_digests: digests
            .iter()
            .map(|(a, d)| (format!("{a:02}"), d.clone()))
            .collect(),
    }
}

/// The passing lab A work directory.
pub fn lab_a_pass() -> BTreeMap<String, Value> {
    let mut t = Tree {
        lab: Lab::A,
        files: BTreeMap::new(),
    };
    acts_1_to_3(&mut t);
    let plan = t.put(
        InputFile::ScalePlan,
        super::reference::value(InputFile::ScalePlan, &t.ctx()).unwrap(),
    );
    let deployment = deployment_read(1, 1);
    let lease = |holder: &str, at: i64| {
        lease_read(holder, "2026-11-29T09:58:00.000000Z", ts(at - 1_000), 0, at)
    };
    let a4 = a::Act4Facts {
        node_uid: NODE_UID.into(),
        deployment: deployment.clone(),
        pods: vec![pod_obs(
            CTRL_POD,
            "kyverno",
            CTRL_POD_UID,
            "Running",
            180_300,
        )],
        lease: lease(CTRL_POD, 180_400),
        investigated_at: ts(180_500),
    };
    t.put_ev(
        4,
        evidence(
            Lab::A,
            4,
            180_000,
            181_000,
            &[("scale-plan.json", &plan)],
            a4.clone(),
            vec![
                raw_rec("deployment", 180_200, deployment_object(1, 1)),
                raw_rec(
                    "pods",
                    180_300,
                    Value::Array(a4.pods.iter().map(pod_object).collect()),
                ),
                raw_rec("lease", 180_400, lease_object(&a4.lease)),
            ],
        ),
    );

    // Act 5: scale to 0 at 240 s; pods gone at 245 s; the registration is gone (Kyverno's cleanup).
    let target_bad = request(
        "kca-scale-bad-a50001",
        TARGET,
        false,
        false,
        246_000,
        36,
        Answer::Stored(uid(0xa5b)),
    );
    let control = request(
        "kca-scale-control-a50002",
        CONTROL,
        false,
        false,
        246_500,
        33,
        Answer::Stored(uid(0xa5c)),
    );
    let raw5 = raw_of(&[&target_bad, &control]);
    let a5 = a::Act5Facts {
        watcher: a::WatcherFacts {
            pid: Some(6161),
            armed_at: ts(239_500),
            restore_after_sec: 55,
            original_replicas: 1,
            deadline_at: Some(ts(294_500)),
            fault_dir: Some("/root/kca-webhook/faults/scale-20261129T100359Z".into()),
        },
        scaled_at: ts(240_000),
        pods_gone_at: Some(ts(245_000)),
        policy: a::PolicyPresence {
            exists: true,
            uid: Some(POLICY_UID.into()),
            at: ts(245_200),
        },
        webhook_configurations: json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfigurationList", "metadata": {"resourceVersion": "2100"}, "items": []}),
        policy_webhook_present: false,
        registrations_checked_at: ts(245_400),
        target_bad,
        control,
        existing: existing_at(247_000),
    };
    t.put_ev(
        5,
        evidence(
            Lab::A,
            5,
            239_000,
            248_000,
            &[("scale-plan.json", &plan)],
            a5,
            raw5,
        ),
    );

    // Act 6: the watcher restores at 295 s (55 s after the scale). Every step's `waited_ms` counts
    // from the one instant act 6's recovery wait began (248.51 s), as the act records it.
    let confirmed = |at: i64| a::TimelineStep {
        status: a::StepStatus::Confirmed,
        at: Some(ts(at)),
        last_seen: None,
        waited_ms: (at - 248_510) as u64,
    };
    let probe1 = request(
        "kca-recover-bad-a60001",
        TARGET,
        false,
        true,
        312_000,
        40,
        Answer::DryRunAdmitted("e1e2e3e4-aaaa-4bbb-8ccc-dddddddddddd".into()),
    );
    let probe2 = request(
        "kca-recover-bad-a60002",
        TARGET,
        false,
        true,
        318_000,
        61,
        Answer::Deny(FAIL_HOOK),
    );
    let a6 = a::Act6Facts {
        replicas_restored: confirmed(295_010),
        restored_by: Some(a::Restorer::Watcher),
        pod_created: confirmed(295_400),
        new_pod: Some(pod_obs(
            NEW_CTRL_POD,
            "kyverno",
            NEW_CTRL_POD_UID,
            "Running",
            303_000,
        )),
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
        admitted_during_scale_down: Some(pod_obs(
            "kca-scale-bad-a50001",
            TARGET,
            &uid(0xa5b),
            "Running",
            318_200,
        )),
        existing: Some(existing_at(318_300)),
    };
    t.put_ev(
        6,
        evidence(Lab::A, 6, 248_500, 318_500, &[], a6.clone(), {
            let mut raw = vec![raw_rec(
                "lease-before",
                248_505,
                lease_object(&lease(CTRL_POD, 248_505)),
            )];
            raw.extend(raw_of(&[&probe1, &probe2]));
            for p in [&probe1, &probe2] {
                raw.push(json!({"at": p.get.at, "what": "request:deny-probe-dry-run", "data": p}));
            }
            for (what, p) in [
                ("admitted-during-scale-down", &a6.admitted_during_scale_down),
                ("existing", &a6.existing),
            ] {
                raw.push(raw_rec(what, 318_300, serde_json::to_value(p).unwrap()));
            }
            raw
        }),
    );

    let good = request(
        "kca-dryrun-good-a70001",
        TARGET,
        true,
        true,
        360_000,
        55,
        Answer::DryRunAdmitted("f1f2f3f4-bbbb-4ccc-8ddd-eeeeeeeeeeee".into()),
    );
    let bad = request(
        "kca-dryrun-bad-a70002",
        TARGET,
        false,
        true,
        361_000,
        49,
        Answer::Deny(FAIL_HOOK),
    );
    let echo = a::DryRunEcho {
        kind: "Pod".into(),
        name: good.name.clone(),
        namespace: TARGET.into(),
        labels: good.labels.clone(),
    };
    let raw7 = raw_of(&[&good, &bad]);
    let a7 = a::Act7Facts {
        good,
        good_response: echo,
        bad,
        side_effects: "NoneOnDryRun".into(),
        webhook_name: FAIL_HOOK.into(),
    };
    t.put_ev(7, evidence(Lab::A, 7, 359_000, 362_000, &[], a7, raw7));

    let report = t.put(
        InputFile::ReportA,
        super::reference::report_a(&t.ctx(), false).unwrap(),
    );
    let a8 = act8_facts(&t, &report);
    t.put_ev(
        8,
        evidence(
            Lab::A,
            8,
            400_000,
            400_300,
            &[("report.json", &report)],
            a8,
            vec![],
        ),
    );
    t.files
}

/// One flagged case: a mutation of the passing tree, the act whose grader must catch it, the code.
pub struct Case {
    /// Directory name.
    pub name: &'static str,
    /// The act graded.
    pub act: u8,
    /// The finding code that must be reported.
    pub expect: &'static str,
    /// Why it must be flagged.
    pub why: &'static str,
    /// The mutation.
    pub mutate: fn(&mut BTreeMap<String, Value>),
}

fn facts_mut(files: &mut BTreeMap<String, Value>, act: u8) -> &mut Value {
    &mut files.get_mut(&format!("evidence/{act:02}.json")).unwrap()["facts"]
}

/// Re-records the digests of inputs in evidence `inputs` maps (after an input was mutated on
/// purpose, so only the intended finding shows).
fn refresh_input_digests(files: &mut BTreeMap<String, Value>) {
    let inputs: BTreeMap<String, String> = files
        .iter()
        .filter(|(k, _)| !k.starts_with("evidence/"))
        .map(|(k, v)| (k.clone(), digest_value(v)))
        .collect();
    for (k, v) in files.iter_mut() {
        if k.starts_with("evidence/")
            && let Some(m) = v.get_mut("inputs").and_then(|m| m.as_object_mut())
        {
            for (name, d) in m.iter_mut() {
                if let Some(now) = inputs.get(name) {
                    *d = json!(now);
                }
            }
        }
    }
}

fn set_answer_already_exists(r: &mut Value) {
    let m = format!("pods \"{}\" already exists", r["name"].as_str().unwrap());
    r["http_status"] = json!(409);
    r["reason"] = json!("AlreadyExists");
    r["message"] = json!(m);
    r["raw_response"] = status_body(409, "AlreadyExists", &m);
    r["outcome"] = json!("explicit-deny");
}

fn set_deny_without_marker(r: &mut Value) {
    let m =
        "admission webhook \"images.example.com\" denied the request: image registry not allowed";
    r["message"] = json!(m);
    r["raw_response"] = status_body(400, "", m);
}

fn stored_without_uid(r: &mut Value) {
    r["get"]["exists"] = json!(false);
    r["get"]["uid"] = Value::Null;
    r["get"]["phase"] = Value::Null;
}

fn answered_fast(r: &mut Value) {
    let sent = facts::parse_rfc3339(r["sent_at"].as_str().unwrap()).unwrap();
    r["elapsed_ms"] = json!(200);
    r["answered_at"] = json!(facts::format_rfc3339(
        sent + chrono::Duration::milliseconds(200)
    ));
}

/// Edits the audit event of the request at `ptr` (a JSON pointer under act `act`'s facts, e.g.
/// `/target_bad`): the verbatim line and its parsed view together, so only the claim changes.
fn edit_audit(files: &mut BTreeMap<String, Value>, act: u8, ptr: &str, edit: fn(&mut Value)) {
    let facts = facts_mut(files, act);
    let name = facts.pointer(ptr).unwrap()["name"].clone();
    let reqs = facts[lab::audit::FACTS_KEY]["requests"]
        .as_array_mut()
        .unwrap();
    let r = reqs.iter_mut().find(|r| r["name"] == name).unwrap();
    let mut ev: Value = serde_json::from_str(r["lines"][0].as_str().unwrap()).unwrap();
    edit(&mut ev);
    let line = ev.to_string();
    r["events"][0] = serde_json::to_value(lab::audit::parse_line(0, &line).unwrap()).unwrap();
    r["lines"][0] = json!(line);
}

const FAILED_OPEN_0: &str = "failed-open.validating.webhook.admission.k8s.io/round_0_index_0";

/// Cases shared by both labs (acts 1-3).
fn shared_cases() -> Vec<Case> {
    vec![
        Case {
            name: "act1-empty-facts",
            act: 1,
            expect: "facts-invalid",
            why: "facts is {}",
            mutate: |f| *facts_mut(f, 1) = json!({}),
        },
        Case {
            name: "act1-scope-node-uid-differs",
            act: 1,
            expect: "uid-mismatch",
            why: "scope.json names another node's UID than act 1 observed",
            mutate: |f| {
                f.get_mut("scope.json").unwrap()["node_uid"] =
                    json!("00000000-0000-4000-8000-000000000001");
                refresh_input_digests(f);
            },
        },
        Case {
            name: "act1-scope-changed-after-act",
            act: 1,
            expect: "input-changed",
            why: "scope.json edited after act 1 recorded its digest",
            mutate: |f| {
                f.get_mut("scope.json").unwrap()["node_uid"] =
                    json!("00000000-0000-4000-8000-000000000001")
            },
        },
        Case {
            name: "act2-policy-without-uid",
            act: 2,
            expect: "stored-without-uid",
            why: "the stored policy has no metadata.uid",
            mutate: |f| {
                facts_mut(f, 2)["policy"]["metadata"]
                    .as_object_mut()
                    .unwrap()
                    .remove("uid");
            },
        },
        Case {
            name: "act2-webhook-ignore",
            act: 2,
            expect: "value-mismatch",
            why: "the registered webhook's failurePolicy is Ignore while policy.json says Fail",
            mutate: |f| facts_mut(f, 2)["webhook"]["failure_policy"] = json!("Ignore"),
        },
        Case {
            name: "act3-empty-facts",
            act: 3,
            expect: "facts-invalid",
            why: "facts is {}",
            mutate: |f| *facts_mut(f, 3) = json!({}),
        },
        Case {
            name: "act3-stored-without-uid",
            act: 3,
            expect: "stored-without-uid",
            why: "good is stored, but the GET found nothing",
            mutate: |f| stored_without_uid(&mut facts_mut(f, 3)["good"]),
        },
        Case {
            name: "act3-deny-without-marker",
            act: 3,
            expect: "deny-without-marker",
            why: "bad is counted as an explicit deny, but another webhook denied it",
            mutate: |f| set_deny_without_marker(&mut facts_mut(f, 3)["bad"]),
        },
        Case {
            name: "act3-already-exists-as-deny",
            act: 3,
            expect: "already-exists-counted-as-deny",
            why: "a 409 AlreadyExists is recorded as explicit-deny",
            mutate: |f| set_answer_already_exists(&mut facts_mut(f, 3)["bad"]),
        },
        Case {
            name: "act3-existing-new-uid",
            act: 3,
            expect: "pod-replaced",
            why: "existing has another UID than the good pod",
            mutate: |f| {
                facts_mut(f, 3)["existing"]["uid"] = json!("00000000-0000-4000-8000-00000000beef")
            },
        },
        Case {
            name: "act3-interrupted",
            act: 3,
            expect: "evidence-interrupted",
            why: "the act was interrupted",
            mutate: |f| {
                let e = f.get_mut("evidence/03.json").unwrap();
                e["status"] = json!("interrupted");
                e["interruption"] = json!("runner received SIGTERM");
            },
        },
    ]
}

/// Lab B flagged cases.
pub fn lab_b_cases() -> Vec<Case> {
    let mut v = shared_cases();
    v.extend([
        Case {
            name: "act3-audit-view-not-from-lines",
            act: 3,
            expect: "raw-mismatch",
            why: "the parsed audit view says code 403 for the denied pod, its verbatim line says 400",
            mutate: |f| {
                let a = &mut facts_mut(f, 3)[lab::audit::FACTS_KEY];
                for r in a["requests"].as_array_mut().unwrap() {
                    r["events"][0]["code"] = json!(403);
                }
            },
        },
        Case {
            name: "act5-audit-timeout-stored",
            act: 5,
            expect: "audit-contradicted",
            why: "a webhook-timeout under Fail whose audit event says 201 (the API server stored it)",
            mutate: |f| edit_audit(f, 5, "/target_bad", |e| e["responseStatus"] = json!({"metadata": {}, "code": 201})),
        },
        Case {
            name: "act5-audit-no-final-event",
            act: 5,
            expect: "observation-missing",
            why: "the frozen request's only audit event is ResponseStarted, no ResponseComplete",
            mutate: |f| edit_audit(f, 5, "/target_good", |e| e["stage"] = json!("ResponseStarted")),
        },
        Case {
            name: "act6-audit-stored-without-failed-open",
            act: 6,
            expect: "audit-contradicted",
            why: "a pod stored under Ignore during the freeze whose audit event has no failed-open annotation",
            mutate: |f| edit_audit(f, 6, "/target_good", |e| {
                e["annotations"].as_object_mut().unwrap().remove(FAILED_OPEN_0);
            }),
        },
        Case {
            name: "act6-audit-failed-open-other-webhook",
            act: 6,
            expect: "audit-contradicted",
            why: "the failed-open annotation names the Fail webhook, not the act's Ignore webhook",
            mutate: |f| edit_audit(f, 6, "/target_bad", |e| e["annotations"][FAILED_OPEN_0] = json!(FAIL_HOOK)),
        },
        Case {
            name: "act7-audit-deny-code-differs",
            act: 7,
            expect: "audit-contradicted",
            why: "the explicit deny's audit event says 500, the client got 400",
            mutate: |f| edit_audit(f, 7, "/healthy_bad", |e| e["responseStatus"]["code"] = json!(500)),
        },
        Case {
            name: "act4-plan-digest-mismatch",
            act: 4,
            expect: "digest-mismatch",
            why: "freeze-plan.json evidence_sha256 is not the digest of 03.json",
            mutate: |f| {
                f.get_mut("freeze-plan.json").unwrap()["evidence_sha256"] = json!("0".repeat(64));
                refresh_input_digests(f);
            },
        },
        Case {
            name: "act4-empty-facts",
            act: 4,
            expect: "facts-invalid",
            why: "facts is {}",
            mutate: |f| *facts_mut(f, 4) = json!({}),
        },
        Case {
            name: "act5-empty-facts",
            act: 5,
            expect: "facts-invalid",
            why: "facts is {}",
            mutate: |f| *facts_mut(f, 5) = json!({}),
        },
        Case {
            name: "act5-timeout-in-200ms",
            act: 5,
            expect: "timeout-too-fast",
            why: "a webhook-timeout answered in 0.2 s while timeoutSeconds is 3",
            mutate: |f| answered_fast(&mut facts_mut(f, 5)["target_bad"]),
        },
        Case {
            name: "act5-surviving-pod-new-uid",
            act: 5,
            expect: "pod-replaced",
            why: "the 'surviving' pod has a new UID",
            mutate: |f| {
                facts_mut(f, 5)["existing"]["uid"] = json!("00000000-0000-4000-8000-00000000beef")
            },
        },
        Case {
            name: "act5-control-stored-without-uid",
            act: 5,
            expect: "stored-without-uid",
            why: "control is stored, but the GET found nothing",
            mutate: |f| stored_without_uid(&mut facts_mut(f, 5)["control"]),
        },
        Case {
            name: "act5-deny-after-resume-without-marker",
            act: 5,
            expect: "deny-without-marker",
            why: "the first explicit deny after resume carries no marker",
            mutate: |f| set_deny_without_marker(&mut facts_mut(f, 5)["first_explicit_deny"]),
        },
        Case {
            name: "act5-registration-gone",
            act: 5,
            expect: "registration-missing",
            why: "the registration must stay during a freeze",
            mutate: |f| {
                let x = facts_mut(f, 5);
                x["registration_present_during_freeze"] = json!(false);
                x["registration_snapshot"] = Value::Null;
            },
        },
        Case {
            name: "act5-other-process",
            act: 5,
            expect: "identity-changed",
            why: "the frozen PID's start time is not act 4's",
            mutate: |f| facts_mut(f, 5)["freeze"]["identity"]["pid_start_time_ticks"] = json!(999),
        },
        Case {
            name: "act5-restart-same-container",
            act: 5,
            expect: "restart-contradicted",
            why: "a restart count that went up needs a new container after the freeze",
            mutate: |f| facts_mut(f, 5)["restart_count_after"] = json!(1),
        },
        Case {
            name: "act5-new-container-no-restart",
            act: 5,
            expect: "restart-contradicted",
            why: "a new container after the freeze needs a restart count that went up",
            mutate: |f| {
                facts_mut(f, 5)["identity_after"]["container_id"] = json!("f".repeat(64));
            },
        },
        Case {
            name: "act6-policy-replaced",
            act: 6,
            expect: "uid-mismatch",
            why: "the policy after the switch has another UID",
            mutate: |f| {
                facts_mut(f, 6)["policy"]["metadata"]["uid"] =
                    json!("00000000-0000-4000-8000-0000000000aa")
            },
        },
        Case {
            name: "act6-ignore-stored-in-200ms",
            act: 6,
            expect: "timeout-too-fast",
            why: "under Ignore the target request was stored without waiting for the timeout",
            mutate: |f| answered_fast(&mut facts_mut(f, 6)["target_good"]),
        },
        Case {
            name: "act6-healthy-already-exists",
            act: 6,
            expect: "already-exists-counted-as-deny",
            why: "the healthy deny under Ignore is a 409 AlreadyExists",
            mutate: |f| set_answer_already_exists(&mut facts_mut(f, 6)["healthy_bad"]),
        },
        Case {
            name: "act7-recovery-digest-mismatch",
            act: 7,
            expect: "digest-mismatch",
            why: "recovery.json ignore_evidence_sha256 is not the digest of 06.json",
            mutate: |f| {
                f.get_mut("recovery.json").unwrap()["ignore_evidence_sha256"] =
                    json!("1".repeat(64));
                refresh_input_digests(f);
            },
        },
        Case {
            name: "act7-existing-new-uid",
            act: 7,
            expect: "pod-replaced",
            why: "the act-3 pod has a new UID",
            mutate: |f| {
                facts_mut(f, 7)["existing"]["uid"] = json!("00000000-0000-4000-8000-00000000beef")
            },
        },
        Case {
            name: "act8-report-digest-mismatch",
            act: 8,
            expect: "digest-mismatch",
            why: "report.json fail_evidence_sha256 is not the digest of 05.json",
            mutate: |f| {
                f.get_mut("report.json").unwrap()["fail_evidence_sha256"] = json!("2".repeat(64));
                refresh_input_digests(f);
            },
        },
        Case {
            name: "act8-evidence-changed",
            act: 8,
            expect: "digest-mismatch",
            why: "05.json was edited after the report recorded its digest",
            mutate: |f| facts_mut(f, 5)["target_good"]["elapsed_ms"] = json!(3013),
        },
    ]);
    v
}

/// Lab A flagged cases.
pub fn lab_a_cases() -> Vec<Case> {
    let mut v = shared_cases();
    v.extend([
        Case {
            name: "act5-audit-failed-open-while-unregistered",
            act: 5,
            expect: "audit-contradicted",
            why: "the violating pod admitted with no registration carries a failed-open annotation (it would have been a failed call, not an absent webhook)",
            mutate: |f| edit_audit(f, 5, "/target_bad", |e| e["annotations"][FAILED_OPEN_0] = json!(FAIL_HOOK)),
        },
        Case {
            name: "act7-audit-dry-run-deny-code-differs",
            act: 7,
            expect: "audit-contradicted",
            why: "the dry-run deny's audit event says 201, the client got 400",
            mutate: |f| edit_audit(f, 7, "/bad", |e| e["responseStatus"] = json!({"metadata": {}, "code": 201})),
        },
        Case {
            name: "act4-plan-digest-mismatch",
            act: 4,
            expect: "digest-mismatch",
            why: "scale-plan.json evidence_sha256 is not the digest of 03.json",
            mutate: |f| {
                f.get_mut("scale-plan.json").unwrap()["evidence_sha256"] = json!("0".repeat(64));
                refresh_input_digests(f);
            },
        },
        Case {
            name: "act4-lease-holder-unknown",
            act: 4,
            expect: "value-mismatch",
            why: "the Lease holder is not a recorded pod",
            mutate: |f| facts_mut(f, 4)["lease"]["holder"] = json!("someone-else"),
        },
        Case { name: "act5-empty-facts", act: 5, expect: "facts-invalid", why: "facts is {}", mutate: |f| *facts_mut(f, 5) = json!({}) },
        Case {
            name: "act5-claim-contradicts-raw-list",
            act: 5,
            expect: "registration-claim-contradicted",
            why: "claims the webhook is present while the raw list is empty",
            mutate: |f| facts_mut(f, 5)["policy_webhook_present"] = json!(true),
        },
        Case {
            name: "act5-admitted-without-uid",
            act: 5,
            expect: "stored-without-uid",
            why: "the admitted violating request is 'stored' but the GET found nothing",
            mutate: |f| stored_without_uid(&mut facts_mut(f, 5)["target_bad"]),
        },
        Case {
            name: "act5-surviving-pod-new-uid",
            act: 5,
            expect: "pod-replaced",
            why: "the 'surviving' pod has a new UID",
            mutate: |f| facts_mut(f, 5)["existing"]["uid"] = json!("00000000-0000-4000-8000-00000000beef"),
        },
        Case {
            name: "act6-lease-not-confirmed",
            act: 6,
            expect: "not-confirmed",
            why: "the Lease wait ran out",
            mutate: |f| {
                facts_mut(f, 6)["lease_acquired"] =
                    json!({"status": "not-confirmed", "at": null, "last_seen": "holder kyverno-admission-controller-6d9c7b8f5d-x2k4p", "waited_ms": 60000});
            },
        },
        Case {
            name: "act6-deny-before-registration",
            act: 6,
            expect: "times-inconsistent",
            why: "the first deny is dated before the webhook was registered",
            mutate: |f| facts_mut(f, 6)["webhook_registered"]["at"] = json!(ts(320_000)),
        },
        Case {
            name: "act6-probe-not-dry-run",
            act: 6,
            expect: "value-mismatch",
            why: "a recovery probe was not a server dry-run",
            mutate: |f| facts_mut(f, 6)["deny_probes"][1]["dry_run"] = json!(false),
        },
        Case {
            name: "act7-dry-run-found-by-get",
            act: 7,
            expect: "rejected-but-stored",
            why: "dry-run-admitted, but the GET found the object",
            mutate: |f| {
                let g = &mut facts_mut(f, 7)["good"]["get"];
                g["exists"] = json!(true);
                g["uid"] = json!("f1f2f3f4-bbbb-4ccc-8ddd-eeeeeeeeeeee");
            },
        },
        Case {
            name: "act7-deny-without-marker",
            act: 7,
            expect: "deny-without-marker",
            why: "the dry-run deny carries no marker",
            mutate: |f| set_deny_without_marker(&mut facts_mut(f, 7)["bad"]),
        },
        Case {
            name: "act8-report-says-kept",
            act: 8,
            expect: "report-contradicted",
            why: "report says registration-kept while 05.json shows it absent",
            mutate: |f| {
                f.get_mut("report.json").unwrap()["scale_down"] = json!("registration-kept");
                refresh_input_digests(f);
            },
        },
        Case {
            name: "act8-report-digest-mismatch",
            act: 8,
            expect: "digest-mismatch",
            why: "report.json dry_run_evidence_sha256 is not the digest of 07.json",
            mutate: |f| {
                f.get_mut("report.json").unwrap()["dry_run_evidence_sha256"] = json!("3".repeat(64));
                refresh_input_digests(f);
            },
        },
    ]);
    v
}

/// One lab C replica: (pod name, pod UID, pod IP, container ID, PID).
type Replica = (String, String, String, String, u32);

/// Lab C's replicas; the first holds the Lease until act 5.
fn lab_c_replicas() -> Vec<Replica> {
    [
        (
            CTRL_POD.to_owned(),
            CTRL_POD_UID.to_owned(),
            "10.88.0.12",
            CONTAINER_ID.to_owned(),
            4242,
        ),
        (
            "kyverno-admission-controller-6d9c7b8f5d-b8n3r".to_owned(),
            uid(0xc2),
            "10.88.0.21",
            "4a".repeat(32),
            5151,
        ),
        (
            "kyverno-admission-controller-6d9c7b8f5d-k5v9t".to_owned(),
            uid(0xc3),
            "10.88.0.22",
            "5b".repeat(32),
            5252,
        ),
    ]
    .into_iter()
    .map(|(n, u, ip, c, pid)| (n, u, ip.to_owned(), c, pid))
    .collect()
}

/// The passing lab C work directory.
pub fn lab_c_pass() -> BTreeMap<String, Value> {
    use lab::facts::c;
    let mut t = Tree {
        lab: Lab::C,
        files: BTreeMap::new(),
    };
    acts_1_and_2(&mut t);
    let plan = t.put(
        InputFile::HaPlan,
        super::reference::value(InputFile::HaPlan, &t.ctx()).unwrap(),
    );
    let replicas = lab_c_replicas();
    // Act 3: the healer scales at 120.5 s, the three conditions hold by 150 s, the waves go at
    // 151 s and 152 s, the good and control pods at 153 s.
    let lease = lease_read(
        CTRL_POD,
        "2026-11-29T09:58:00.000000Z",
        ts(149_000),
        0,
        152_310,
    );
    let deployment = deployment_read(3, 3);
    let replica_facts: Vec<c::ReplicaFacts> = replicas
        .iter()
        .map(|(n, u, ip, _, _)| c::ReplicaFacts {
            pod: pod_obs(n, "kyverno", u, "Running", 150_120),
            ready: true,
            pod_ip: Some(ip.clone()),
        })
        .collect();
    let raw_pods: Vec<Value> = replica_facts
        .iter()
        .map(|r| {
            let mut p = pod_object(&r.pod);
            p["status"]["podIP"] = json!(r.pod_ip);
            p["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
            p
        })
        .collect();
    // The act sorts the endpoints by pod name.
    let mut endpoints: Vec<c::EndpointFacts> = replicas
        .iter()
        .map(|(n, _, ip, _, _)| c::EndpointFacts {
            address: ip.clone(),
            pod: Some(n.clone()),
            ready: true,
        })
        .collect();
    endpoints.sort_by(|a, b| a.pod.cmp(&b.pod));
    let slices = endpoint_slices(&endpoints);
    let mut bad = Vec::new();
    for w in 0..2i64 {
        for i in 0..6i64 {
            bad.push(request(
                &format!("kca-c3-bad-w{w}-{i}-100231-c3{w}{i}0a"),
                TARGET,
                false,
                false,
                153_000 + w * 1_000 + i * 3,
                40 + i as u64,
                Answer::Deny(FAIL_HOOK),
            ));
        }
    }
    let good_uid = uid(0xc600d);
    let good = request(
        "kca-c3-good-100233-c3600d",
        TARGET,
        true,
        false,
        155_000,
        45,
        Answer::Stored(good_uid.clone()),
    );
    let control = request(
        "kca-c3-control-100233-c3c0c0",
        CONTROL,
        false,
        false,
        155_200,
        30,
        Answer::Stored(uid(0xc3c0)),
    );
    let counts = [(10u64, 15u64), (0, 3), (2, 7)];
    let metrics = replica_metrics;
    let a3 = c::Act3Facts {
        scale: c::ScaleUpFacts {
            fault_id: "scale-03-20261129T100200Z-4242".into(),
            replicas_before: 1,
            replicas: 3,
            scaled_at: ts(120_500),
            restore_deadline_at: ts(1_920_300),
        },
        deployment: deployment.clone(),
        replicas: replica_facts,
        endpoints,
        webhook: webhook("Fail", 150_000),
        lease: lease.clone(),
        wait: c::ReadyWait {
            ready_pods_at: ts(149_000),
            ready_endpoints_at: ts(150_000),
            registration_at: ts(121_000),
            waited_ms: 29_400,
        },
        waves: 2,
        wave_size: 6,
        bad: bad.clone(),
        good: good.clone(),
        control: control.clone(),
        existing: pod_obs(&good.name, TARGET, &good_uid, "Running", 160_000),
        replica_requests: replicas
            .iter()
            .zip(counts)
            .map(|((n, ..), (b, a))| c::ReplicaRequests {
                pod: n.clone(),
                before: Some(b),
                after: Some(a),
            })
            .collect(),
    };
    let mut raw3 = vec![
        raw_rec(
            "healer-ready",
            120_300,
            json!({"ok": true, "pid": 6262, "armed_at": ts(120_300), "deadline_at": ts(1_920_300)}),
        ),
        raw_rec(
            "scale-up",
            120_500,
            json!({
                "sent_at": ts(120_450), "answered_at": ts(120_500), "replicas_before": 1,
                "raw": {"apiVersion": "autoscaling/v1", "kind": "Scale",
                        "metadata": {"name": "kyverno-admission-controller", "namespace": "kyverno", "uid": DEPLOY_UID},
                        "spec": {"replicas": 3}, "status": {"replicas": 1}}
            }),
        ),
        raw_rec(
            "ready-wait",
            150_050,
            json!([
                {"at": ts(121_000), "pods_listed": 3, "pods_ready": 1, "pods_ok": false,
                 "endpoints_ready": 1, "endpoints_ok": false, "registration": true},
                {"at": ts(149_000), "pods_listed": 3, "pods_ready": 3, "pods_ok": true,
                 "endpoints_ready": 2, "endpoints_ok": false, "registration": true},
                {"at": ts(150_000), "pods_listed": 3, "pods_ready": 3, "pods_ok": true,
                 "endpoints_ready": 3, "endpoints_ok": true, "registration": true},
            ]),
        ),
        raw_rec("endpoint-slices", 150_100, slices),
        raw_rec("pods", 150_100, Value::Array(raw_pods)),
        raw_rec("deployment", 151_200, deployment_object(3, 3)),
        raw_rec("lease", 152_300, lease_object(&lease)),
    ];
    for ((n, ..), (b, _)) in replicas.iter().zip(counts) {
        raw3.push(raw_rec(
            &format!("replica-metrics-before:{n}"),
            152_500,
            metrics(b),
        ));
    }
    let reqs: Vec<&RequestRecord> = bad.iter().chain([&good, &control]).collect();
    raw3.extend(raw_of(&reqs));
    for ((n, ..), (_, a)) in replicas.iter().zip(counts) {
        raw3.push(raw_rec(
            &format!("replica-metrics-after:{n}"),
            155_500,
            metrics(a),
        ));
    }
    t.put_ev(
        3,
        evidence(
            Lab::C,
            3,
            120_000,
            160_500,
            &[("ha-plan.json", &plan)],
            &a3,
            raw3,
        ),
    );

    // Act 4: the Lease, the three processes, the Lease again.
    let freeze_plan = t.put(
        InputFile::FreezePlanC,
        super::reference::value(InputFile::FreezePlanC, &t.ctx()).unwrap(),
    );
    let process = |r: &Replica| c::ReplicaProcess {
        pod_name: r.0.clone(),
        identity: replica_identity(r),
        restart_count: 0,
        process_state: "S".into(),
    };
    let lease4 = |at: i64| a::LeaseFacts {
        renew_time: Some(ts(at - 1_500)),
        at: ts(at),
        ..lease.clone()
    };
    let a4 = c::Act4Facts {
        node_uid: NODE_UID.into(),
        deployment_uid: DEPLOY_UID.into(),
        lease: lease4(180_100),
        leader: process(&replicas[0]),
        followers: replicas[1..].iter().map(process).collect(),
        lease_after: lease4(180_600),
        investigated_at: ts(180_700),
    };
    let mut raw4 = vec![raw_rec("lease-before", 180_100, lease_object(&a4.lease))];
    for (n, u, _, cid, pid) in &replicas {
        raw4.push(raw_rec(
            &format!("cri-container:{n}"),
            180_300,
            json!({
                "attempt": 0, "container_id": cid, "container_name": "kyverno",
                "pid": pid, "pod_name": n, "pod_namespace": "kyverno",
                "pod_uid": u, "state": "CONTAINER_RUNNING"
            }),
        ));
    }
    raw4.push(raw_rec(
        "lease-after",
        180_600,
        lease_object(&a4.lease_after),
    ));
    t.put_ev(
        4,
        evidence(
            Lab::C,
            4,
            180_000,
            181_000,
            &[("freeze-plan.json", &freeze_plan)],
            &a4,
            raw4,
        ),
    );
    lab_c_acts_5_to_8(&mut t, &replicas, &a3, &a4, &freeze_plan);
    t.files
}

/// The identity act 4 reads of a lab C replica's process.
fn replica_identity(r: &Replica) -> b::ProcessIdentity {
    b::ProcessIdentity {
        pid: r.4,
        pid_start_time_ticks: 1_234_567 + u64::from(r.4),
        container_id: r.3.clone(),
        pod_uid: r.1.clone(),
    }
}

/// `kyverno-svc`'s EndpointSlices as the API server lists them, for `endpoints`.
fn endpoint_slices(endpoints: &[lab::facts::c::EndpointFacts]) -> Value {
    json!([{
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
        "metadata": {"name": "kyverno-svc-x7k2p", "namespace": "kyverno"},
        "endpoints": endpoints.iter().map(|e| json!({
            "addresses": [e.address], "conditions": {"ready": e.ready},
            "targetRef": {"kind": "Pod", "name": e.pod, "namespace": "kyverno"}
        })).collect::<Vec<_>>()
    }])
}

/// One replica's `GET /metrics` answer through the pod proxy, with its pod admission counter.
fn replica_metrics(n: u64) -> Value {
    json!({"status": 200, "lines": [format!(
        "kyverno_admission_requests_total{{request_operation=\"CREATE\",resource_kind=\"Pod\",resource_namespace=\"kca-webhook-target\"}} {n}"
    )]})
}

/// Who holds the Lease `kyverno`: a replica index, `leaseTransitions`, and when it acquired the
/// Lease (ms, and `acquireTime` verbatim).
#[derive(Clone)]
struct LeaseState {
    holder: usize,
    transitions: u32,
    acquired: (i64, String),
}

/// One lab C freeze (act 5: the leader under Fail; act 6: a follower under Ignore).
struct CFreeze {
    act: u8,
    /// When the Lease is read right before the freeze (ms); the freeze begins 200 ms later.
    lease_read: i64,
    /// The frozen replica (an index of [`lab_c_replicas`]).
    target: usize,
    resume_after_sec: u32,
    waves: u32,
    wave_size: u32,
    /// Which requests of a wave reach the frozen replica (indices).
    met: &'static [usize],
    lease: LeaseState,
    /// The replica that takes the Lease during the freeze (14.5 s after the holder's last renew).
    takeover: Option<usize>,
    /// Whether the frozen replica's container restarts after the resume.
    restarts: bool,
    /// Each replica's pod admission counter before and after the act.
    counters: [(u64, u64); 3],
}

/// A lab C freeze run and its raw records (appended to `raw`), as `lab/src/labs/c.rs`
/// `replica_freeze` records them: the Lease and the process before, each replica's counter, the
/// waves during the freeze, the samples each second, the first deny after the resume, the settle,
/// the pods, the process, the Lease and the counters after, the existing pod. Returns the run,
/// when the act ends (ms) and the Lease after it.
fn c_freeze_run(
    f: &CFreeze,
    replicas: &[Replica],
    existing: &facts::PodObservation,
    raw: &mut Vec<Value>,
) -> (lab::facts::c::ReplicaFreezeRun, i64, LeaseState) {
    use lab::facts::c;
    let ignore = f.act == 6;
    let hook = if ignore { IGNORE_HOOK } else { FAIL_HOOK };
    let tag = format!("c{}", f.act);
    let frozen = f.lease_read + 200;
    let armed = frozen - 10;
    let resumed = frozen + i64::from(f.resume_after_sec) * 1000 + 12;
    let target = &replicas[f.target];
    let identity = replica_identity(target);
    // A live holder renews every 2 s (Kyverno's retry period); a frozen one stops renewing, and
    // another replica takes the Lease once it expired (12 s) and its own retry came round.
    let renew_at = |acq: i64, x: i64| acq + ((x - 60 - acq).max(0) / 2000) * 2000;
    let l0 = f.lease.clone();
    let frozen_renew = renew_at(l0.acquired.0, frozen);
    let take = f.takeover.map(|h| (h, frozen_renew + 14_500));
    let state_at = |x: i64| -> (LeaseState, i64) {
        match take {
            Some((h, at)) if x >= at + 40 => (
                LeaseState {
                    holder: h,
                    transitions: l0.transitions + 1,
                    acquired: (at, ts(at)),
                },
                renew_at(at, x),
            ),
            _ if l0.holder == f.target && x >= frozen => (l0.clone(), frozen_renew),
            _ => (l0.clone(), renew_at(l0.acquired.0, x)),
        }
    };
    let lease_now = |x: i64| {
        let (st, renew) = state_at(x);
        lease_read(
            &replicas[st.holder].0,
            &st.acquired.1,
            ts(renew),
            st.transitions,
            x,
        )
    };
    let lease_before = lease_now(f.lease_read);
    raw.push(raw_rec(
        "lease-before",
        f.lease_read,
        lease_object(&lease_before),
    ));
    raw.push(raw_rec(
        "cri-container-before",
        f.lease_read + 10,
        json!({
            "attempt": 0, "container_id": identity.container_id, "container_name": "kyverno",
            "pid": identity.pid, "pod_name": target.0, "pod_namespace": "kyverno",
            "pod_uid": identity.pod_uid, "state": "CONTAINER_RUNNING"
        }),
    ));
    for (i, (r, (before, _))) in replicas.iter().zip(f.counters).enumerate() {
        raw.push(raw_rec(
            &format!("replica-metrics-before:{}", r.0),
            f.lease_read + 30 + i as i64 * 8,
            replica_metrics(before),
        ));
    }
    let attempt = format!("freeze-0{}-20261129T1000{}Z-4242", f.act, f.act);
    let ledger = |resumed_at: Option<i64>| {
        json!({
            "attempt": attempt, "deadline_at": ts(armed + i64::from(f.resume_after_sec) * 1000),
            "frozen_at": ts(frozen), "healer": {"pid": 7000 + u32::from(f.act), "start_ticks": 1_300_000},
            "healer_ready_at": ts(armed), "note": null, "process_gone_after_resume": false,
            "resumed_at": resumed_at.map(ts), "resumed_by": resumed_at.map(|_| "healer"),
            "state_after_resume": resumed_at.map(|_| "S"),
            "status": if resumed_at.is_some() { "resumed" } else { "frozen" },
            "stop_sent_at": ts(frozen)
        })
    };
    raw.push(raw_rec("fault-ledger-frozen", frozen + 15, ledger(None)));
    let w = webhook(if ignore { "Ignore" } else { "Fail" }, frozen + 18);
    // The waves: each request of a wave sent at once; those that reach the frozen replica wait
    // for the timeout (a webhook-timeout under Fail, stored under Ignore), the others are denied.
    let (mut bad, mut control) = (Vec::new(), Vec::new());
    let mut sent = frozen + 25;
    for wv in 0..f.waves {
        let mut wave = Vec::new();
        for i in 0..f.wave_size as usize {
            let met = f.met.contains(&i);
            let name = format!(
                "kca-{tag}-frozen-bad-w{wv}-{i}-10040{}-{tag}{wv}{i}f",
                f.act
            );
            let (elapsed, answer) = match (met, ignore) {
                (true, true) => (
                    3_013,
                    Answer::Stored(uid(0x5000 + u32::from(f.act) * 0x100 + wv * 16 + i as u32)),
                ),
                (true, false) => (3_006 + u64::from(wv), Answer::Timeout(hook)),
                (false, _) => (12 + (i as u64 * 7) % 50, Answer::Deny(hook)),
            };
            wave.push(request(&name, TARGET, false, false, sent, elapsed, answer));
        }
        let ctl = request(
            &format!("kca-{tag}-frozen-control-w{wv}-10041{}-{tag}c{wv}", f.act),
            CONTROL,
            false,
            false,
            sent,
            14,
            Answer::Stored(uid(0x6000 + u32::from(f.act) * 0x100 + wv)),
        );
        let end = sent + wave.iter().map(|r| r.elapsed_ms as i64).max().unwrap_or(0);
        for r in &wave {
            raw.push(json!({"at": ts(end + 17), "what": "request:frozen-bad", "data": r}));
        }
        raw.push(json!({"at": ts(end + 17), "what": "request:frozen-control", "data": ctl}));
        bad.extend(wave);
        control.push(ctl);
        sent = end + 19;
    }
    // The Lease and the EndpointSlice, read each second from the freeze until the resume.
    let mut endpoints: Vec<c::EndpointFacts> = replicas
        .iter()
        .map(|r| c::EndpointFacts {
            address: r.2.clone(),
            pod: Some(r.0.clone()),
            ready: true,
        })
        .collect();
    endpoints.sort_by(|a, b| a.pod.cmp(&b.pod));
    let (mut lease_samples, mut endpoint_samples, mut samples_raw) = (vec![], vec![], vec![]);
    for k in 0..=i64::from(f.resume_after_sec) {
        let x = frozen + 60 + k * 1000;
        let l = lease_now(x);
        samples_raw.push(json!({"what": "lease", "at": ts(x), "lease": lease_object(&l)}));
        samples_raw.push(
            json!({"what": "endpoint-slices", "at": ts(x), "slices": endpoint_slices(&endpoints)}),
        );
        lease_samples.push(c::LeaseSample {
            at: ts(x),
            holder: l.holder,
            renew_time: l.renew_time,
            lease_transitions: l.lease_transitions,
            error: None,
        });
        endpoint_samples.push(c::EndpointSample {
            at: ts(x),
            endpoints: endpoints.clone(),
            error: None,
        });
    }
    raw.push(raw_rec(
        "freeze-samples",
        resumed + 30,
        Value::Array(samples_raw),
    ));
    raw.push(raw_rec(
        "fault-ledger-resumed",
        resumed + 31,
        ledger(Some(resumed)),
    ));
    let deny = request(
        &format!("kca-{tag}-after-10042{}-{tag}a0", f.act),
        TARGET,
        false,
        false,
        resumed + 1_000,
        6,
        Answer::Deny(hook),
    );
    raw.push(json!({"at": ts(resumed + 1_023), "what": "request:after-resume", "data": deny}));
    // The settle: every replica Ready and a ready endpoint, the Lease on a replica, no sooner
    // than the Lease's duration and retry (14 s) after the resume.
    let settle_start = resumed + 1_026;
    let holder_after = take.map_or(l0.holder, |(h, _)| h);
    let check = |at: i64, ready: usize, restarts: u32, target_ready: bool| {
        json!({"at": ts(at), "endpoints_ready": ready, "lease_holder": replicas[holder_after].0,
               "pods_listed": 3, "pods_ready": ready, "target_ready": target_ready,
               "target_restart_count": restarts})
    };
    let (checks, settled) = if f.restarts {
        (
            vec![
                check(settle_start + 5, 3, 0, true),
                check(resumed + 11_000, 2, 0, false),
                check(resumed + 12_100, 2, 1, false),
                check(resumed + 25_000, 3, 1, true),
            ],
            resumed + 26_300,
        )
    } else {
        (vec![check(settle_start + 5, 3, 0, true)], resumed + 14_200)
    };
    raw.push(raw_rec("settle-wait", settled, Value::Array(checks)));
    let restart_after = u32::from(f.restarts);
    let pods: Vec<Value> = replicas
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let mut o = pod_obs(&r.0, "kyverno", &r.1, "Running", settled);
            o.restart_count = Some(if i == f.target { restart_after } else { 0 });
            let mut p = pod_object(&o);
            p["status"]["podIP"] = json!(r.2);
            p["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
            p
        })
        .collect();
    raw.push(raw_rec("pods-after", settled + 1, Value::Array(pods)));
    let identity_after = if f.restarts {
        b::ProcessIdentity {
            pid: identity.pid + 1000,
            pid_start_time_ticks: identity.pid_start_time_ticks + 400_000,
            container_id: "6c".repeat(32),
            pod_uid: identity.pod_uid.clone(),
        }
    } else {
        identity.clone()
    };
    raw.push(raw_rec(
        "cri-container-after",
        settled + 6,
        json!({
            "attempt": restart_after, "container_id": identity_after.container_id,
            "container_name": "kyverno", "pid": identity_after.pid, "pod_name": target.0,
            "pod_namespace": "kyverno", "pod_uid": identity_after.pod_uid,
            "state": "CONTAINER_RUNNING"
        }),
    ));
    let lease_after = lease_now(settled + 9);
    raw.push(raw_rec(
        "lease-after",
        settled + 9,
        lease_object(&lease_after),
    ));
    for (i, (r, (_, after))) in replicas.iter().zip(f.counters).enumerate() {
        raw.push(raw_rec(
            &format!("replica-metrics-after:{}", r.0),
            settled + 15 + i as i64 * 6,
            replica_metrics(after),
        ));
    }
    let run = c::ReplicaFreezeRun {
        target_role: if f.act == 5 { "leader" } else { "follower" }.into(),
        target_pod: target.0.clone(),
        lease_before,
        freeze: b::FreezeWindow {
            identity: identity.clone(),
            watchdog_pid: Some(7000 + u32::from(f.act)),
            watchdog_armed_at: ts(armed),
            resume_after_sec: f.resume_after_sec,
            frozen_at: ts(frozen),
            state_during: Some("T".into()),
            resumed_at: ts(resumed),
            resumed_by: b::Resumer::Watchdog,
            state_after: "S".into(),
        },
        registration_present_during_freeze: true,
        registration_snapshot: webhook_entry(&w),
        registration_checked_at: ts(frozen + 18),
        timeout_seconds: 3,
        waves: f.waves,
        wave_size: f.wave_size,
        bad,
        control,
        lease_samples,
        endpoint_samples,
        replica_requests: replicas
            .iter()
            .zip(f.counters)
            .map(|(r, (before, after))| c::ReplicaRequests {
                pod: r.0.clone(),
                before: Some(before),
                after: Some(after),
            })
            .collect(),
        after_resume: vec![deny.clone()],
        first_deny_after_resume_ms: Some((deny_answered(&deny) - resumed) as u64),
        first_explicit_deny: Some(deny),
        target_after: c::TargetAfter {
            pod: target.0.clone(),
            pod_uid_before: target.1.clone(),
            pod_uid_after: Some(target.1.clone()),
            restart_count_before: 0,
            restart_count_after: restart_after,
            ready_after: true,
            identity_after: Some(identity_after),
            holds_lease_after: lease_after.holder.as_deref() == Some(target.0.as_str()),
            settled_at: ts(settled),
            waited_ms: (settled - settle_start) as u64,
        },
        lease_after,
        existing: facts::PodObservation {
            at: ts(settled + 30),
            ..existing.clone()
        },
    };
    (run, settled + 300, state_at(settled + 9).0)
}

/// When a request was answered (ms on the fixtures' timeline).
fn deny_answered(r: &RequestRecord) -> i64 {
    let base = facts::parse_rfc3339(&ts(0)).unwrap();
    (facts::parse_rfc3339(&r.answered_at).unwrap() - base).num_milliseconds()
}

/// Lab C acts 5-8: the leader frozen under Fail (it restarts, a follower takes the Lease), the
/// policy switched to Ignore and a follower frozen, the scale back to one replica, the report.
fn lab_c_acts_5_to_8(
    t: &mut Tree,
    replicas: &[Replica],
    a3: &lab::facts::c::Act3Facts,
    a4: &lab::facts::c::Act4Facts,
    freeze_plan: &Value,
) {
    use lab::facts::c;
    // Act 5: the leader (replica 0) frozen 20 s from 240.2 s; replica 1 takes the Lease.
    let mut raw5 = vec![raw_rec("healed-earlier-faults", 240_000, json!([]))];
    let (run5, end5, lease5) = c_freeze_run(
        &CFreeze {
            act: 5,
            lease_read: 240_000,
            target: 0,
            resume_after_sec: 20,
            waves: 3,
            wave_size: 6,
            met: &[2],
            lease: LeaseState {
                holder: 0,
                transitions: 0,
                acquired: (-120_000, a4.lease.acquire_time.clone().unwrap()),
            },
            takeover: Some(1),
            restarts: true,
            counters: [(15, 0), (4, 13), (7, 16)],
        },
        replicas,
        &a3.existing,
        &mut raw5,
    );
    t.put_ev(
        5,
        evidence(
            Lab::C,
            5,
            240_000,
            end5,
            &[("freeze-plan.json", freeze_plan)],
            &run5,
            raw5,
        ),
    );

    // Act 6: the policy switched to Ignore at 300 s, a healthy deny, then the first follower by
    // name (replica 2; replica 1 holds the Lease) frozen 10 s.
    let ignore = t.put(
        InputFile::PolicyIgnore,
        super::reference::value(InputFile::PolicyIgnore, &t.ctx()).unwrap(),
    );
    let w6 = webhook("Ignore", 300_080);
    let without_status = |fp: &str| {
        let mut p = stored_policy(fp);
        p.as_object_mut().unwrap().remove("status");
        p
    };
    let healthy_bad = request(
        "kca-c6-healthy-bad-100430-c6h0",
        TARGET,
        false,
        false,
        300_400,
        12,
        Answer::Deny(IGNORE_HOOK),
    );
    let mut raw6 = vec![
        raw_rec("healed-earlier-faults", 300_000, json!([])),
        raw_rec("policy-before", 300_000, without_status("Fail")),
        raw_rec("policy-stored", 300_030, without_status("Ignore")),
        raw_rec(
            "webhook-configuration-ignore",
            300_080,
            configuration_of(&w6),
        ),
        json!({"at": ts(300_430), "what": "request:healthy-bad", "data": healthy_bad}),
    ];
    let (run6, end6, lease6) = c_freeze_run(
        &CFreeze {
            act: 6,
            lease_read: 300_450,
            target: 2,
            resume_after_sec: 10,
            waves: 2,
            wave_size: 9,
            met: &[0, 6],
            lease: lease5,
            takeover: None,
            restarts: false,
            counters: [(0, 8), (13, 20), (16, 19)],
        },
        replicas,
        &a3.existing,
        &mut raw6,
    );
    let a6 = c::Act6Facts {
        policy_uid_before: POLICY_UID.into(),
        policy: stored_policy("Ignore"),
        webhook: w6,
        healthy_bad,
        run: run6,
    };
    t.put_ev(
        6,
        evidence(
            Lab::C,
            6,
            300_000,
            end6,
            &[
                ("freeze-plan.json", freeze_plan),
                ("policy-ignore.json", &ignore),
            ],
            &a6,
            raw6,
        ),
    );

    // Act 7: act 3's scale attempt healed at 360 s (back to 1); the two other pods terminate
    // (grace period 30 s); replica 1, the Lease's holder, stays.
    let recovery = t.put(
        InputFile::RecoveryC,
        super::reference::value(InputFile::RecoveryC, &t.ctx()).unwrap(),
    );
    let kept = &replicas[lease6.holder];
    let heal = json!({
        "action": "restored", "at": ts(360_004), "attempt": a3.scale.fault_id,
        "by": {"pid": 4242, "start_ticks": 1_216_895}, "command": "act 7 (scale back)",
        "healer": {"pid": 6262, "start_ticks": 1_219_624}, "healer_signalled": "sigterm-sent, exited",
        "kind": "scale", "note": null, "restore": {"at": ts(360_070), "result": "restored"},
        "resume": null
    });
    let wait_check = |at: i64, listed: u32| {
        json!({"at": ts(at), "lease_holder": kept.0, "pods_listed": listed, "pods_live": 1,
               "pods_ready": 1, "registration": true, "spec_replicas": 1})
    };
    let probe = request(
        "kca-c7-bad-100500-c7b0",
        TARGET,
        false,
        false,
        393_100,
        6,
        Answer::Deny(IGNORE_HOOK),
    );
    let lease7 = a::LeaseFacts {
        at: ts(393_010),
        renew_time: Some(ts(
            lease6.acquired.0 + ((393_010 - 60 - lease6.acquired.0) / 2000) * 2000
        )),
        ..a6.run.lease_after.clone()
    };
    let w7 = webhook("Ignore", 393_016);
    let a7 = c::Act7Facts {
        scale_back: c::ScaleBackFacts {
            fault_id: a3.scale.fault_id.clone(),
            action: "restored".into(),
            replicas_before: 3,
            replicas: 1,
            at: ts(360_004),
        },
        deployment: deployment_read(1, 1),
        replicas: vec![c::ReplicaFacts {
            pod: pod_obs(&kept.0, "kyverno", &kept.1, "Running", 392_900),
            ready: true,
            pod_ip: Some(kept.2.clone()),
        }],
        lease: lease7,
        policy_uid: POLICY_UID.into(),
        webhook: w7.clone(),
        deny_probes: vec![probe.clone()],
        healthy_bad: probe.clone(),
        existing: facts::PodObservation {
            at: ts(393_160),
            ..a3.existing.clone()
        },
        waited_ms: 33_170,
    };
    let raw7 = vec![
        raw_rec("deployment-before", 360_003, deployment_object(3, 3)),
        raw_rec("scale-back-heal", 360_075, json!([heal])),
        raw_rec("scale-attempt-heal", 360_075, heal),
        raw_rec(
            "scale-back-wait",
            392_900,
            json!([wait_check(360_200, 3), wait_check(392_900, 1)]),
        ),
        raw_rec("lease", 393_010, lease_object(&a7.lease)),
        raw_rec("policy", 393_015, stored_policy("Ignore")),
        raw_rec("webhook-configuration", 393_016, configuration_of(&w7)),
        json!({"at": ts(393_125), "what": "request:deny-probe", "data": probe}),
    ];
    t.put_ev(
        7,
        evidence(
            Lab::C,
            7,
            360_000,
            393_300,
            &[("recovery.json", &recovery)],
            &a7,
            raw7,
        ),
    );

    // Act 8: the report, each word the evidence's (`rules::c::report_expectations`).
    let words = lab::rules::c::report_expectations(a3, &run5, &a6, &a7);
    let report = t.put(
        InputFile::ReportC,
        super::reference::report_c(&t.ctx(), &words).unwrap(),
    );
    let a8 = act8_facts(t, &report);
    t.put_ev(
        8,
        evidence(
            Lab::C,
            8,
            400_000,
            400_300,
            &[("report.json", &report)],
            a8,
            vec![],
        ),
    );
}

/// Lab C's flagged cases: the shared ones that fit its act 3 (whose `bad` is a list), then its own.
pub fn lab_c_cases() -> Vec<Case> {
    let generic = [
        "act3-empty-facts",
        "act3-stored-without-uid",
        "act3-existing-new-uid",
        "act3-interrupted",
    ];
    let mut v: Vec<Case> = shared_cases()
        .into_iter()
        .filter(|c| c.act <= 2 || generic.contains(&c.name))
        .collect();
    v.extend([
        Case {
            name: "act3c-deny-without-marker",
            act: 3,
            expect: "deny-without-marker",
            why: "a violating pod of a wave is counted as an explicit deny, but another webhook denied it",
            mutate: |f| set_deny_without_marker(&mut facts_mut(f, 3)["bad"][0]),
        },
        Case {
            name: "act3c-already-exists-as-deny",
            act: 3,
            expect: "already-exists-counted-as-deny",
            why: "a 409 AlreadyExists in a wave is recorded as explicit-deny",
            mutate: |f| set_answer_already_exists(&mut facts_mut(f, 3)["bad"][3]),
        },
        Case {
            name: "act3c-a-violating-pod-admitted-in-a-wave",
            act: 3,
            expect: "outcome-unexpected",
            why: "a violating pod of the parallel baseline was stored: a replica admitted it without the policy's verdict",
            mutate: |f| {
                let r = &mut facts_mut(f, 3)["bad"][7];
                let name = r["name"].as_str().unwrap().to_owned();
                *r = serde_json::to_value(request(
                    &name,
                    TARGET,
                    false,
                    false,
                    154_003,
                    41,
                    Answer::Stored(uid(0xbad7)),
                ))
                .unwrap();
            },
        },
        Case {
            name: "act3c-two-replicas-ready",
            act: 3,
            expect: "value-mismatch",
            why: "only two of the three replicas were Ready when the baseline was sent",
            mutate: |f| {
                facts_mut(f, 3)["replicas"][2]["ready"] = json!(false);
            },
        },
        Case {
            name: "act4c-leader-is-not-the-lease-holder",
            act: 4,
            expect: "value-mismatch",
            why: "the replica recorded as the leader is not the Lease kyverno's holder",
            mutate: |f| {
                let a4 = facts_mut(f, 4);
                let follower = a4["followers"][0].clone();
                a4["followers"][0] = a4["leader"].clone();
                a4["leader"] = follower;
            },
        },
        Case {
            name: "act5c-empty-facts",
            act: 5,
            expect: "facts-invalid",
            why: "facts is {}",
            mutate: |f| *facts_mut(f, 5) = json!({}),
        },
        Case {
            name: "act5c-timed-out-but-stored",
            act: 5,
            expect: "rejected-but-stored",
            why: "a wave's request that met the frozen leader timed out under Fail, yet its follow-up GET found the pod",
            mutate: |f| {
                let g = &mut facts_mut(f, 5)["bad"][2]["get"];
                g["exists"] = json!(true);
                g["uid"] = json!("00000000-0000-4000-8000-0000000005b2");
                g["phase"] = json!("Pending");
            },
        },
        Case {
            name: "act5c-timeout-in-200ms",
            act: 5,
            expect: "timeout-too-fast",
            why: "a webhook-timeout of a wave answered in 0.2 s while timeoutSeconds is 3",
            mutate: |f| answered_fast(&mut facts_mut(f, 5)["bad"][8]),
        },
        Case {
            name: "act5c-target-is-not-act4s-leader",
            act: 5,
            expect: "value-mismatch",
            why: "the replica frozen as the leader is a follower of act 4",
            mutate: |f| {
                let name = f["evidence/04.json"]["facts"]["followers"][0]["pod_name"].clone();
                facts_mut(f, 5)["target_pod"] = name;
            },
        },
        Case {
            name: "act5c-control-denied",
            act: 5,
            expect: "outcome-unexpected",
            why: "a control pod, outside the webhook's namespaceSelector, was denied during the freeze",
            mutate: |f| {
                let r = &mut facts_mut(f, 5)["control"][1];
                let name = r["name"].as_str().unwrap().to_owned();
                let sent = facts::parse_rfc3339(r["sent_at"].as_str().unwrap()).unwrap();
                let base = facts::parse_rfc3339(&ts(0)).unwrap();
                *r = serde_json::to_value(request(
                    &name,
                    CONTROL,
                    false,
                    false,
                    (sent - base).num_milliseconds(),
                    14,
                    Answer::Deny(FAIL_HOOK),
                ))
                .unwrap();
            },
        },
        Case {
            name: "act5c-lease-samples-missing",
            act: 5,
            expect: "observation-missing",
            why: "the Lease was not read for 5 s of the freeze (a gap longer than three sample periods)",
            mutate: |f| {
                let samples = facts_mut(f, 5)["lease_samples"].as_array_mut().unwrap();
                samples.drain(6..10);
            },
        },
        Case {
            name: "act5c-restart-same-container",
            act: 5,
            expect: "restart-contradicted",
            why: "the former leader's restart count went up, but its container after the settle is the frozen one",
            mutate: |f| {
                let x = facts_mut(f, 5);
                x["target_after"]["identity_after"] = x["freeze"]["identity"].clone();
            },
        },
        Case {
            name: "act6c-lease-moved-during-follower-freeze",
            act: 6,
            expect: "value-mismatch",
            why: "a follower's freeze, yet a Lease read during it names another holder",
            mutate: |f| {
                let name = f["evidence/04.json"]["facts"]["leader"]["pod_name"].clone();
                facts_mut(f, 6)["lease_samples"][4]["holder"] = name;
            },
        },
        Case {
            name: "act6c-ignore-stored-in-200ms",
            act: 6,
            expect: "timeout-too-fast",
            why: "under Ignore a request that met the frozen follower was stored without waiting for the timeout",
            mutate: |f| answered_fast(&mut facts_mut(f, 6)["bad"][0]),
        },
        Case {
            name: "act6c-follower-other-process",
            act: 6,
            expect: "identity-changed",
            why: "the frozen follower's process is not the one act 4 found in its pod",
            mutate: |f| facts_mut(f, 6)["freeze"]["identity"]["pid_start_time_ticks"] = json!(999),
        },
        Case {
            name: "act6c-policy-replaced",
            act: 6,
            expect: "uid-mismatch",
            why: "the policy after the switch has another UID",
            mutate: |f| {
                facts_mut(f, 6)["policy"]["metadata"]["uid"] =
                    json!("00000000-0000-4000-8000-0000000000aa")
            },
        },
        Case {
            name: "act7c-two-replicas-left",
            act: 7,
            expect: "value-mismatch",
            why: "two replicas are left after the scale back to the original one",
            mutate: |f| {
                let kept = f["evidence/07.json"]["facts"]["replicas"][0].clone();
                let mut other = f["evidence/03.json"]["facts"]["replicas"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|r| r["pod"]["name"] != kept["pod"]["name"])
                    .unwrap()
                    .clone();
                other["pod"]["at"] = kept["pod"]["at"].clone();
                facts_mut(f, 7)["replicas"]
                    .as_array_mut()
                    .unwrap()
                    .push(other);
            },
        },
        Case {
            name: "act7c-recovery-digest-mismatch",
            act: 7,
            expect: "digest-mismatch",
            why: "recovery.json ignore_evidence_sha256 is not the digest of 06.json",
            mutate: |f| {
                f.get_mut("recovery.json").unwrap()["ignore_evidence_sha256"] =
                    json!("1".repeat(64));
                refresh_input_digests(f);
            },
        },
        Case {
            name: "act7c-existing-new-uid",
            act: 7,
            expect: "pod-replaced",
            why: "act 3's pod has a new UID after the scale back",
            mutate: |f| {
                facts_mut(f, 7)["existing"]["uid"] = json!("00000000-0000-4000-8000-00000000beef")
            },
        },
        Case {
            name: "act8c-report-lease-kept",
            act: 8,
            expect: "report-contradicted",
            why: "report says the Lease was kept while act 5's samples show a follower took it during the freeze",
            mutate: |f| {
                f.get_mut("report.json").unwrap()["lease"] = json!("kept");
                refresh_input_digests(f);
            },
        },
        Case {
            name: "act8c-report-digest-mismatch",
            act: 8,
            expect: "digest-mismatch",
            why: "report.json leader_freeze_evidence_sha256 is not the digest of 05.json",
            mutate: |f| {
                f.get_mut("report.json").unwrap()["leader_freeze_evidence_sha256"] =
                    json!("2".repeat(64));
                refresh_input_digests(f);
            },
        },
        Case {
            name: "act8c-evidence-changed",
            act: 8,
            expect: "digest-mismatch",
            why: "06.json was edited after the report recorded its digest",
            mutate: |f| facts_mut(f, 6)["bad"][0]["elapsed_ms"] = json!(3014),
        },
    ]);
    v
}

/// All fixture files of `lab` (relative to `fixtures/<lab>/`): `pass/...` and `flagged/<case>/...`.
pub fn generate(lab: Lab) -> BTreeMap<String, Value> {
    let (pass, cases) = match lab {
        Lab::A => (lab_a_pass(), lab_a_cases()),
        Lab::B => (lab_b_pass(), lab_b_cases()),
        Lab::C => (lab_c_pass(), lab_c_cases()),
    };
    // One passing evidence file per act of the registry: a new act needs its fixture here.
    let evidence: Vec<String> = pass
        .keys()
        .filter(|k| k.starts_with("evidence/"))
        .cloned()
        .collect();
    let expected: Vec<String> = lab::acts::numbers(lab)
        .map(|a| format!("evidence/{a:02}.json"))
        .collect();
    assert_eq!(
        evidence,
        expected,
        "lab {}: pass/ evidence vs the acts registry",
        lab.as_str()
    );
    let mut out = BTreeMap::new();
    for (k, v) in &pass {
        out.insert(format!("pass/{k}"), v.clone());
    }
    for c in cases {
        let mut files = pass.clone();
        (c.mutate)(&mut files);
        for (k, v) in &files {
            if pass.get(k) != Some(v) {
                out.insert(format!("flagged/{}/{k}", c.name), v.clone());
            }
        }
        out.insert(
            format!("flagged/{}/case.json", c.name),
            json!({"act": c.act, "expect": c.expect, "why": c.why}),
        );
    }
    out
}
