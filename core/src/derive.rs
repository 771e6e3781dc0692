//! Facts derived from raw records: for each kind of raw record an act writes a fact from, the one
//! pure function that maps the record to the fact. The act (`lab`) calls it to write the fact and
//! the grader (`grade/witness.rs`) calls it again on the act's raw record, so the mapping is
//! written once and a recorded fact that differs from the derived one is a finding
//! ([`crate::grade::Code::RawMismatch`]) that names both witnesses.
//!
//! Each function takes the raw record's `data` exactly as the act stored it in the evidence's
//! `raw[]` (the API object serialized as the API server sent it), never a typed client object,
//! and applies the API server's defaults the way the act always did (`spec.replicas` absent = 1,
//! `status.readyReplicas` absent = 0). Each kind also lists, in its `SOURCES`, which raw field
//! each fact field comes from, for the finding's words.
//!
//! Errors: [`DeriveError`] when the record is not the kind's object (not a JSON object, or a field
//! of another JSON type than the API's: `spec.replicas` a string, `metadata.name` a number). The
//! act's own records, serialized from the client's typed objects, always derive.

use serde_json::Value;

use crate::facts::a::{DeploymentFacts, LeaseFacts, PolicyPresence, WatcherFacts};
use crate::facts::c::{
    EndpointFacts, EndpointSample, LeaseSample, ReplicaFacts, ScaleBackFacts, ScaleUpFacts,
};
use crate::facts::{PodObservation, ServiceRef, WebhookFacts};
use crate::rules::common::{ADMISSION_CONTAINER, KYVERNO_NAMESPACE, LEADER_LEASE};

/// A raw record that is not the object its kind says: the JSON pointer (below the record's
/// `data`) of the first field that is not what the API sends, and what it should have been.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeriveError {
    /// JSON pointer below the record's `data` (`/spec/replicas`; empty: the record itself).
    pub pointer: String,
    /// What the API sends there (`an int32`, `a string`, `a Deployment object`).
    pub expected: String,
}

impl std::fmt::Display for DeriveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.pointer.is_empty() {
            "the record"
        } else {
            &self.pointer
        };
        write!(f, "raw {at} is not {}", self.expected)
    }
}

impl std::error::Error for DeriveError {}

/// One fact field and the raw field it is derived from: `(fact field, raw path)`, the raw path
/// dotted below the record's `data` (`status.readyReplicas`); an empty raw path: the field is
/// not in the raw object (the time of the read); an empty fact field: the fact is that one value
/// (`scale.restore_deadline_at`, from the healer's `deadline_at`).
pub type Source = (&'static str, &'static str);

fn err(pointer: &str, expected: impl Into<String>) -> DeriveError {
    DeriveError {
        pointer: pointer.to_owned(),
        expected: expected.into(),
    }
}

/// The object itself when `raw` is a JSON object of `kind` in `api_version` (as the client
/// serializes every object it read, list items too); else [`DeriveError`] naming it.
fn object<'v>(raw: &'v Value, api_version: &str, kind: &str) -> Result<&'v Value, DeriveError> {
    object_at(raw, "", api_version, kind)
}

/// [`object`] of the value at `at` (a JSON pointer) in `raw`.
fn object_at<'v>(
    raw: &'v Value,
    at: &str,
    api_version: &str,
    kind: &str,
) -> Result<&'v Value, DeriveError> {
    let Some(o) = raw.pointer(at).filter(|o| o.is_object()) else {
        return Err(err(at, format!("a {kind} object")));
    };
    for (pointer, want) in [("/apiVersion", api_version), ("/kind", kind)] {
        if o.pointer(pointer).and_then(Value::as_str) != Some(want) {
            return Err(err(&format!("{at}{pointer}"), format!("{want:?}")));
        }
    }
    Ok(o)
}

/// The array at `pointer` (absent or `null`: empty).
fn array<'v>(raw: &'v Value, pointer: &str) -> Result<&'v [Value], DeriveError> {
    match raw.pointer(pointer) {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(a)) => Ok(a),
        Some(_) => Err(err(pointer, "an array")),
    }
}

/// The string at `pointer`, which must be there.
fn required_string(raw: &Value, pointer: &str) -> Result<String, DeriveError> {
    string(raw, pointer)?.ok_or_else(|| err(pointer, "a string"))
}

/// The string at `pointer` (absent or `null`: `None`).
fn string(raw: &Value, pointer: &str) -> Result<Option<String>, DeriveError> {
    match raw.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(err(pointer, "a string")),
    }
}

/// The `int32` at `pointer` (absent or `null`: `None`), negative values as 0 (the act reads
/// counts and durations, which the API never sends negative).
fn count(raw: &Value, pointer: &str) -> Result<Option<u32>, DeriveError> {
    match raw.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .map(|n| Some(n.max(0) as u32))
            .ok_or_else(|| err(pointer, "an int32")),
    }
}

/// The Deployment's facts ([`DeploymentFacts`]; lab A act 4 `raw[deployment]`, lab C acts 3 and
/// 7): `metadata.namespace`, `.name`, `.uid` (absent: empty), `spec.replicas` (absent: 1, as
/// the API server defaults it) and `status.readyReplicas` (absent: 0).
///
/// Errors: [`DeriveError`] when `raw` is no object or one of those fields has another type.
pub fn deployment(raw: &Value) -> Result<DeploymentFacts, DeriveError> {
    let d = object(raw, "apps/v1", "Deployment")?;
    Ok(DeploymentFacts {
        namespace: string(d, "/metadata/namespace")?.unwrap_or_default(),
        name: string(d, "/metadata/name")?.unwrap_or_default(),
        uid: string(d, "/metadata/uid")?.unwrap_or_default(),
        replicas: count(d, "/spec/replicas")?.unwrap_or(1),
        ready_replicas: count(d, "/status/readyReplicas")?.unwrap_or(0),
    })
}

/// Where each field of [`deployment`]'s facts comes from.
pub const DEPLOYMENT_SOURCES: &[Source] = &[
    ("namespace", "metadata.namespace"),
    ("name", "metadata.name"),
    ("uid", "metadata.uid"),
    ("replicas", "spec.replicas"),
    ("ready_replicas", "status.readyReplicas"),
];

/// The Lease `kyverno`'s facts ([`LeaseFacts`]; the leader election of Kyverno's admission
/// controller, read by name): namespace and name (the Lease's; [`KYVERNO_NAMESPACE`] and
/// [`LEADER_LEASE`] when the read found none, `raw` = `null`), `spec.holderIdentity`,
/// `spec.acquireTime` and `spec.renewTime` (RFC 3339, verbatim), `spec.leaseDurationSeconds`
/// (seconds) and `spec.leaseTransitions`. `at` is the time of the read (RFC 3339 UTC, ms), which
/// the object does not hold.
///
/// Errors: [`DeriveError`] when `raw` is neither `null` nor an object, or a field has another type.
pub fn lease(raw: &Value, at: String) -> Result<LeaseFacts, DeriveError> {
    if raw.is_null() {
        return Ok(LeaseFacts {
            namespace: KYVERNO_NAMESPACE.into(),
            name: LEADER_LEASE.into(),
            holder: None,
            acquire_time: None,
            renew_time: None,
            lease_duration_seconds: None,
            lease_transitions: None,
            at,
        });
    }
    let l = object(raw, "coordination.k8s.io/v1", "Lease")?;
    Ok(LeaseFacts {
        namespace: string(l, "/metadata/namespace")?.unwrap_or_default(),
        name: string(l, "/metadata/name")?.unwrap_or_default(),
        holder: string(l, "/spec/holderIdentity")?,
        acquire_time: string(l, "/spec/acquireTime")?,
        renew_time: string(l, "/spec/renewTime")?,
        lease_duration_seconds: count(l, "/spec/leaseDurationSeconds")?,
        lease_transitions: count(l, "/spec/leaseTransitions")?,
        at,
    })
}

/// Where each field of [`lease`]'s facts comes from.
pub const LEASE_SOURCES: &[Source] = &[
    ("namespace", "metadata.namespace"),
    ("name", "metadata.name"),
    ("holder", "spec.holderIdentity"),
    ("acquire_time", "spec.acquireTime"),
    ("renew_time", "spec.renewTime"),
    ("lease_duration_seconds", "spec.leaseDurationSeconds"),
    ("lease_transitions", "spec.leaseTransitions"),
    ("at", ""),
];

/// Where a Lease's holder taken from [`lease`]'s facts (one value: lab A act 6's
/// `previous_lease_holder`) comes from.
pub const LEASE_HOLDER_SOURCES: &[Source] = &[("", "spec.holderIdentity")];

/// A pod's observation ([`PodObservation`]) from the Pod object a read returned: name,
/// namespace and UID from `metadata`, `status.phase`, and the sum of
/// `status.containerStatuses[].restartCount` (`None` when the status lists no containers).
/// `exists` is true (the read found it); `at` is the time of the read (RFC 3339 UTC, ms).
///
/// Errors: [`DeriveError`] when `raw` is no object or one of those fields has another type.
pub fn pod(raw: &Value, at: String) -> Result<PodObservation, DeriveError> {
    let p = object(raw, "v1", "Pod")?;
    let restart_count = match p.pointer("/status/containerStatuses") {
        None | Some(Value::Null) => None,
        Some(Value::Array(cs)) => {
            let mut sum = 0u32;
            for i in 0..cs.len() {
                let n = count(p, &format!("/status/containerStatuses/{i}/restartCount"))?;
                sum = sum.saturating_add(n.unwrap_or(0));
            }
            Some(sum)
        }
        Some(_) => return Err(err("/status/containerStatuses", "an array")),
    };
    Ok(PodObservation {
        name: string(p, "/metadata/name")?.unwrap_or_default(),
        namespace: string(p, "/metadata/namespace")?.unwrap_or_default(),
        exists: true,
        uid: string(p, "/metadata/uid")?,
        phase: string(p, "/status/phase")?,
        restart_count,
        at,
    })
}

/// Where each field of [`pod`]'s observation comes from.
pub const POD_SOURCES: &[Source] = &[
    ("name", "metadata.name"),
    ("namespace", "metadata.namespace"),
    ("exists", ""),
    ("uid", "metadata.uid"),
    ("phase", "status.phase"),
    ("restart_count", "status.containerStatuses[].restartCount"),
    ("at", ""),
];

/// The registration of webhook `webhook` ([`WebhookFacts`]) in the ValidatingWebhookConfiguration
/// `raw` as the API server stores it: the configuration's `metadata.name` and `.uid`, and the
/// webhook entry of that name with its `failurePolicy` (absent: `Fail`, the API server's
/// default), `timeoutSeconds` (seconds; absent: 10), `clientConfig.service` (port absent: 443)
/// or `.url`, `matchPolicy`, `sideEffects`, and `namespaceSelector`, `objectSelector`,
/// `matchConditions` and `rules` verbatim (`null` when absent). `observed_at` is the time of the
/// read (RFC 3339 UTC, ms).
///
/// Errors: [`DeriveError`] when `raw` is no object, holds no webhook `webhook`, or a field has
/// another type.
pub fn registration(
    raw: &Value,
    webhook: &str,
    observed_at: String,
) -> Result<WebhookFacts, DeriveError> {
    let cfg = object(
        raw,
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
    )?;
    let hooks = array(cfg, "/webhooks")?;
    let i = hooks
        .iter()
        .position(|w| w.get("name").and_then(Value::as_str) == Some(webhook))
        .ok_or_else(|| err("/webhooks", format!("a list with the webhook {webhook:?}")))?;
    let at = |field: &str| format!("/webhooks/{i}/{field}");
    let verbatim = |field: &str| cfg.pointer(&at(field)).cloned().unwrap_or(Value::Null);
    let service = match cfg.pointer(&at("clientConfig/service")) {
        None | Some(Value::Null) => None,
        Some(_) => Some(ServiceRef {
            namespace: string(cfg, &at("clientConfig/service/namespace"))?.unwrap_or_default(),
            name: string(cfg, &at("clientConfig/service/name"))?.unwrap_or_default(),
            path: string(cfg, &at("clientConfig/service/path"))?,
            port: match cfg.pointer(&at("clientConfig/service/port")) {
                None | Some(Value::Null) => 443,
                Some(p) => p
                    .as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| err(&at("clientConfig/service/port"), "an int32"))?,
            },
        }),
    };
    Ok(WebhookFacts {
        configuration: string(cfg, "/metadata/name")?.unwrap_or_default(),
        configuration_uid: string(cfg, "/metadata/uid")?,
        name: webhook.to_owned(),
        service,
        url: string(cfg, &at("clientConfig/url"))?,
        failure_policy: string(cfg, &at("failurePolicy"))?.unwrap_or_else(|| "Fail".into()),
        timeout_seconds: count(cfg, &at("timeoutSeconds"))?.unwrap_or(10),
        namespace_selector: verbatim("namespaceSelector"),
        object_selector: verbatim("objectSelector"),
        match_conditions: verbatim("matchConditions"),
        rules: verbatim("rules"),
        side_effects: string(cfg, &at("sideEffects"))?.unwrap_or_default(),
        match_policy: string(cfg, &at("matchPolicy"))?,
        observed_at,
    })
}

/// Where each field of [`registration`]'s facts comes from (`webhooks[]`: the entry named by
/// the fact's `name`).
pub const REGISTRATION_SOURCES: &[Source] = &[
    ("configuration", "metadata.name"),
    ("configuration_uid", "metadata.uid"),
    ("name", "webhooks[].name"),
    ("service", "webhooks[].clientConfig.service"),
    ("url", "webhooks[].clientConfig.url"),
    ("failure_policy", "webhooks[].failurePolicy"),
    ("timeout_seconds", "webhooks[].timeoutSeconds"),
    ("namespace_selector", "webhooks[].namespaceSelector"),
    ("object_selector", "webhooks[].objectSelector"),
    ("match_conditions", "webhooks[].matchConditions"),
    ("rules", "webhooks[].rules"),
    ("side_effects", "webhooks[].sideEffects"),
    ("match_policy", "webhooks[].matchPolicy"),
    ("observed_at", ""),
];

/// Act 1's `lab_mark` from the raw `lab-mark` record (the tool's read of the lab mark ConfigMap,
/// `{"Ok": {"object", "uid", "data"}}`, or `{"Err": "<why>"}` when it could not be read): the
/// text `ConfigMap <namespace>/<name> mark=<data.mark>`, or `None` for an unreadable mark.
///
/// Errors: [`DeriveError`] when `raw` is neither, or `Ok` lacks `object` or `data.mark` as strings.
pub fn lab_mark(raw: &Value) -> Result<Option<String>, DeriveError> {
    if raw.get("Err").is_some() {
        return Ok(None);
    }
    if raw.get("Ok").is_none() {
        return Err(err("", "a lab mark read ({\"Ok\": …} or {\"Err\": …})"));
    }
    let key = crate::rules::common::MARK_KEY;
    let object = string(raw, "/Ok/object")?.ok_or_else(|| err("/Ok/object", "a string"))?;
    let value =
        string(raw, &format!("/Ok/data/{key}"))?.ok_or_else(|| err("/Ok/data/mark", "a string"))?;
    Ok(Some(format!("ConfigMap {object} {key}={value}")))
}

/// Where [`lab_mark`]'s fact comes from (act 1's `lab_mark`).
pub const LAB_MARK_SOURCES: &[Source] = &[("lab_mark", "Ok")];

/// The stored policy's facts as a grader holds them: `metadata.name`, `metadata.uid` and `spec`
/// (verbatim; `null` when absent) of the policy the API server returned (act 2's and act 6's
/// `raw[policy-stored]`, the Kyverno `ValidatingPolicy` as read back). The act records the
/// object itself (`facts.policy`, the defaulted fields included, which the input does not hold);
/// the fields below are the ones a grader holds against the read, [`STORED_POLICY_SOURCES`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct StoredPolicy {
    /// `metadata.name` and `metadata.uid`.
    pub metadata: PolicyMetadata,
    /// `spec`, verbatim (the API server's defaults included).
    pub spec: Value,
}

/// The stored policy's `metadata.name` and `metadata.uid` (`None` when absent).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PolicyMetadata {
    /// `metadata.name`.
    pub name: Option<String>,
    /// `metadata.uid`.
    pub uid: Option<String>,
}

/// The stored policy's facts ([`StoredPolicy`]) from the raw read of the policy.
///
/// Errors: [`DeriveError`] when `raw` is no object, or the name or UID is not a string.
pub fn stored_policy(raw: &Value) -> Result<StoredPolicy, DeriveError> {
    if !raw.is_object() {
        return Err(err("", "a policy object"));
    }
    Ok(StoredPolicy {
        metadata: PolicyMetadata {
            name: string(raw, "/metadata/name")?,
            uid: string(raw, "/metadata/uid")?,
        },
        spec: raw.get("spec").cloned().unwrap_or(Value::Null),
    })
}

/// Where each field of [`stored_policy`]'s facts comes from (fact fields dotted, as in the
/// recorded policy).
pub const STORED_POLICY_SOURCES: &[Source] = &[
    ("metadata.name", "metadata.name"),
    ("metadata.uid", "metadata.uid"),
    ("spec", "spec"),
];

/// A container as the node's container runtime answered for it (CRI `ContainerStatus`, the raw
/// `cri-container*` records: the tool's `cri::ContainerIdentity`), in the terms of the facts
/// that record a process: [`cri_container`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CriContainer {
    /// The container's process as CRI names it (the facts' `ProcessIdentity` less the start
    /// time, which only `/proc` gives).
    pub identity: CriProcess,
    /// The pod's name (`io.kubernetes.pod.name`).
    pub pod_name: String,
    /// kubelet's restart count of the container: CRI's `metadata.attempt` (kubelet creates a
    /// container with `attempt` = the restart count it then reports, `pkg/kubelet/kuberuntime`).
    pub restart_count: u32,
    /// The container's name (`io.kubernetes.container.name`).
    pub container_name: String,
    /// The pod's namespace (`io.kubernetes.pod.namespace`).
    pub pod_namespace: String,
}

/// The container's ID, host PID and pod UID.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CriProcess {
    /// The runtime's container ID (no `containerd://` prefix).
    pub container_id: String,
    /// Host PID of the container's init process (0 when not running).
    pub pid: u32,
    /// The pod's UID (`io.kubernetes.pod.uid`).
    pub pod_uid: String,
}

/// A container's facts ([`CriContainer`]) from the raw CRI answer: `container_id`, `pid`
/// (negative as 0), `pod_uid`, `pod_name`, `attempt` (the restart count), `container_name` and
/// `pod_namespace`; a string absent is empty, a number absent 0.
///
/// Errors: [`DeriveError`] when `raw` is no object or one of those fields has another type.
pub fn cri_container(raw: &Value) -> Result<CriContainer, DeriveError> {
    if !raw.is_object() {
        return Err(err("", "a CRI container (the tool's ContainerIdentity)"));
    }
    let text = |p: &str| string(raw, p).map(Option::unwrap_or_default);
    Ok(CriContainer {
        identity: CriProcess {
            container_id: text("/container_id")?,
            pid: count(raw, "/pid")?.unwrap_or(0),
            pod_uid: text("/pod_uid")?,
        },
        pod_name: text("/pod_name")?,
        restart_count: count(raw, "/attempt")?.unwrap_or(0),
        container_name: text("/container_name")?,
        pod_namespace: text("/pod_namespace")?,
    })
}

/// Where each field of [`cri_container`]'s facts comes from (fact fields dotted). A fact that
/// records only the process, its pod and its restart count (lab C's `ReplicaProcess`) is held
/// to the first five ([`CRI_PROCESS_SOURCES`]).
pub const CRI_CONTAINER_SOURCES: &[Source] = &[
    ("identity.container_id", "container_id"),
    ("identity.pid", "pid"),
    ("identity.pod_uid", "pod_uid"),
    ("pod_name", "pod_name"),
    ("restart_count", "attempt"),
    ("container_name", "container_name"),
    ("pod_namespace", "pod_namespace"),
];

/// Where a restart count taken from a CRI container ([`cri_container`]'s `restart_count`, one
/// value: lab C's `target_after.restart_count_before` and `_after`) comes from.
pub const RESTART_COUNT_SOURCES: &[Source] = &[("", "attempt")];

/// [`CRI_CONTAINER_SOURCES`] of a fact that records the process, its pod's name and the
/// restart count, not the container's name and namespace.
pub const CRI_PROCESS_SOURCES: &[Source] = CRI_CONTAINER_SOURCES.split_at(5).0;

/// The boolean at `pointer` (absent or `null`: `None`).
fn boolean(raw: &Value, pointer: &str) -> Result<Option<bool>, DeriveError> {
    match raw.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(err(pointer, "a boolean")),
    }
}

// ---------------------------------------------------------------------------------------------
// Lab C.

/// Lab C act 3's scale to three ([`ScaleUpFacts`]) from the healer's answer to the runner's
/// request (raw `scale-up`, the runner's record of it: `{"sent_at", "answered_at",
/// "replicas_before", "raw"}`, `raw` the `autoscaling/v1` Scale the API server returned):
/// `replicas_before` (the Deployment's `spec.replicas` the healer read before it scaled),
/// `raw.spec.replicas` (the count the API server stored; absent: 0, as the Scale API omits it)
/// and `answered_at` (RFC 3339, verbatim) as `scaled_at`. The attempt's `fault_id` (its
/// directory) and `restore_deadline_at` (the healer's deadline, [`healer_deadline`] of raw
/// `healer-ready`) are not in the answer: the act passes them.
///
/// Errors: [`DeriveError`] when `raw` is no such record (`replicas_before` no int32,
/// `answered_at` no string, `raw` no Scale, `raw.spec.replicas` no int32).
pub fn scale_up(
    raw: &Value,
    fault_id: String,
    restore_deadline_at: String,
) -> Result<ScaleUpFacts, DeriveError> {
    if !raw.is_object() {
        return Err(err("", "the healer's answer to a scale"));
    }
    let before = count(raw, "/replicas_before")?;
    let scale = object_at(raw, "/raw", "autoscaling/v1", "Scale")?;
    let replicas =
        count(scale, "/spec/replicas").map_err(|e| err("/raw/spec/replicas", e.expected))?;
    Ok(ScaleUpFacts {
        fault_id,
        replicas_before: before.ok_or_else(|| err("/replicas_before", "an int32"))?,
        replicas: replicas.unwrap_or(0),
        scaled_at: required_string(raw, "/answered_at")?,
        restore_deadline_at,
    })
}

/// Where each field of [`scale_up`]'s facts comes from.
pub const SCALE_UP_SOURCES: &[Source] = &[
    ("fault_id", ""),
    ("replicas_before", "replicas_before"),
    ("replicas", "raw.spec.replicas"),
    ("scaled_at", "answered_at"),
    ("restore_deadline_at", ""),
];

/// The scale healer's deadline (lab C act 3's `scale.restore_deadline_at`: when it puts the
/// original count back) from its ready answer (raw `healer-ready`, the healer's `HealerReady`:
/// `{"ok", "pid", "armed_at", "deadline_at", …}`): `deadline_at` (RFC 3339, verbatim).
///
/// Errors: [`DeriveError`] when `raw` has no string `deadline_at`.
pub fn healer_deadline(raw: &Value) -> Result<String, DeriveError> {
    required_string(raw, "/deadline_at")
}

/// Where [`healer_deadline`]'s fact (one value) comes from.
pub const HEALER_DEADLINE_SOURCES: &[Source] = &[("", "deadline_at")];

/// `kyverno-svc`'s endpoints ([`EndpointFacts`]) from its EndpointSlices as listed (lab C act
/// 3's raw `endpoint-slices`, and each `endpoint-slices` answer in a freeze's raw
/// `freeze-samples`: a JSON array of `discovery.k8s.io/v1` EndpointSlice objects): each entry
/// of each slice's `endpoints`, its `addresses[0]` (absent: empty), `targetRef.name` (the pod;
/// absent: `None`) and `conditions.ready` (absent: ready, as the EndpointSlice API says), sorted
/// by pod name (slices and entries in the list's order otherwise).
///
/// Errors: [`DeriveError`] when `raw` is no array of EndpointSlices, or a field has another type.
pub fn endpoints(raw: &Value) -> Result<Vec<EndpointFacts>, DeriveError> {
    Ok(located_endpoints(raw)?
        .into_iter()
        .map(|(_, e)| e)
        .collect())
}

/// [`endpoints`], each with where it is in `raw`: `[<slice>].endpoints[<entry>]` (dotted, as
/// [`Source`]'s raw paths).
///
/// Errors: as [`endpoints`].
pub fn located_endpoints(raw: &Value) -> Result<Vec<(String, EndpointFacts)>, DeriveError> {
    if !raw.is_array() {
        return Err(err("", "a list of EndpointSlices"));
    }
    let mut out = Vec::new();
    for (i, _) in array(raw, "")?.iter().enumerate() {
        let slice = object_at(
            raw,
            &format!("/{i}"),
            "discovery.k8s.io/v1",
            "EndpointSlice",
        )?;
        for (j, _) in array(slice, "/endpoints")
            .map_err(|e| err(&format!("/{i}{}", e.pointer), e.expected))?
            .iter()
            .enumerate()
        {
            let at = |p: &str| format!("/{i}/endpoints/{j}/{p}");
            out.push((
                format!("[{i}].endpoints[{j}]"),
                EndpointFacts {
                    address: string(raw, &at("addresses/0"))?.unwrap_or_default(),
                    pod: string(raw, &at("targetRef/name"))?,
                    ready: boolean(raw, &at("conditions/ready"))?.unwrap_or(true),
                },
            ));
        }
    }
    out.sort_by(|(_, a), (_, b)| a.pod.cmp(&b.pod));
    Ok(out)
}

/// Where each field of [`endpoints`]' facts comes from (below the endpoint's entry).
pub const ENDPOINT_SOURCES: &[Source] = &[
    ("address", "addresses[0]"),
    ("pod", "targetRef.name"),
    ("ready", "conditions.ready"),
];

/// One read of the Lease `kyverno` during a freeze ([`LeaseSample`]) from its raw answer (an
/// entry of a freeze's raw `freeze-samples` with `what` = `lease`: `{"what", "at", "lease"}`,
/// `lease` the Lease as read, `null` when there was none): `at` (the time of the read, RFC 3339
/// verbatim) and [`lease`]'s `holder`, `renew_time` and `lease_transitions`; no `error` (a read
/// that failed has no raw answer).
///
/// Errors: [`DeriveError`] when `raw` has no string `at`, or `lease` is no Lease
/// ([`lease`]'s errors, below `/lease`).
pub fn lease_sample(raw: &Value) -> Result<LeaseSample, DeriveError> {
    let at = required_string(raw, "/at")?;
    let below = |e: DeriveError| err(&format!("/lease{}", e.pointer), e.expected);
    let l = lease(raw.get("lease").unwrap_or(&Value::Null), at.clone()).map_err(below)?;
    Ok(LeaseSample {
        at,
        holder: l.holder,
        renew_time: l.renew_time,
        lease_transitions: l.lease_transitions,
        error: None,
    })
}

/// Where each field of [`lease_sample`]'s facts comes from.
pub const LEASE_SAMPLE_SOURCES: &[Source] = &[
    ("at", "at"),
    ("holder", "lease.spec.holderIdentity"),
    ("renew_time", "lease.spec.renewTime"),
    ("lease_transitions", "lease.spec.leaseTransitions"),
    ("error", ""),
];

/// One read of `kyverno-svc`'s endpoints during a freeze ([`EndpointSample`]) from its raw
/// answer (an entry of a freeze's raw `freeze-samples` with `what` = `endpoint-slices`:
/// `{"what", "at", "slices"}`): `at` (RFC 3339 verbatim) and [`endpoints`] of `slices`; no
/// `error` (a read that failed has no raw answer).
///
/// Errors: [`DeriveError`] when `raw` has no string `at`, or `slices` derives no endpoints
/// ([`endpoints`]' errors, below `/slices`).
pub fn endpoint_sample(raw: &Value) -> Result<EndpointSample, DeriveError> {
    let below = |e: DeriveError| err(&format!("/slices{}", e.pointer), e.expected);
    Ok(EndpointSample {
        at: required_string(raw, "/at")?,
        endpoints: endpoints(raw.get("slices").unwrap_or(&Value::Null)).map_err(below)?,
        error: None,
    })
}

/// Where each field of [`endpoint_sample`]'s facts comes from.
pub const ENDPOINT_SAMPLE_SOURCES: &[Source] =
    &[("at", "at"), ("endpoints", "slices"), ("error", "")];

/// Whether a Pod's `status.conditions` has an entry of type `Ready` whose status is `True`.
fn ready(p: &Value) -> Result<bool, DeriveError> {
    let mut ready = false;
    for (i, _) in array(p, "/status/conditions")?.iter().enumerate() {
        let c = format!("/status/conditions/{i}");
        let (kind, status) = (
            string(p, &format!("{c}/type"))?,
            string(p, &format!("{c}/status"))?,
        );
        ready |= kind.as_deref() == Some("Ready") && status.as_deref() == Some("True");
    }
    Ok(ready)
}

/// One of several replicas ([`ReplicaFacts`]) from its Pod object as listed (lab C act 3's raw
/// `pods`, a JSON array of `v1` Pods): [`pod`]'s observation of it (`at`: the time of the
/// read), whether a `status.conditions` entry of type `Ready` is `True`, and `status.podIP`
/// (the address the API server dials; `None` when absent).
///
/// Errors: [`DeriveError`] when `raw` is no Pod or one of those fields has another type.
pub fn replica(raw: &Value, at: String) -> Result<ReplicaFacts, DeriveError> {
    Ok(ReplicaFacts {
        pod: pod(raw, at)?,
        ready: ready(raw)?,
        pod_ip: string(raw, "/status/podIP")?,
    })
}

/// Where `ready` and `pod_ip` of [`replica`]'s facts come from (its `pod`: [`POD_SOURCES`]).
pub const REPLICA_SOURCES: &[Source] = &[
    ("ready", "status.conditions[type=Ready].status"),
    ("pod_ip", "status.podIP"),
];

/// The frozen replica's pod after a freeze settled (lab C's `target_after`, its pod's part):
/// [`pod_after`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PodAfter {
    /// `metadata.uid` (`None`: no pod of that name).
    pub pod_uid_after: Option<String>,
    /// The `kyverno` container's `restartCount`.
    pub restart_count_after: u32,
    /// Whether its `Ready` condition is `True`.
    pub ready_after: bool,
}

/// The index of the pod named `name` in a raw list of pods (`None`: not in it, or no list).
pub fn pod_named(pods: &Value, name: &str) -> Option<usize> {
    let named = |p: &Value| p.pointer("/metadata/name").and_then(Value::as_str) == Some(name);
    pods.as_array()?.iter().position(named)
}

/// The frozen replica's pod after the settle ([`PodAfter`]), from the replicas listed then (raw
/// `pods-after`: a JSON array of `v1` Pod objects) and its pod's name: the pod of that name
/// ([`pod_named`]), its `metadata.uid`, the `restartCount` of its `kyverno` container in
/// `status.containerStatuses` (no such status: 0) and whether a `status.conditions` entry of
/// type `Ready` is `True`. No pod of that name (gone): no UID, not Ready, and the restart count
/// the replica had before the freeze (`restart_count_before`, which the act passes).
///
/// Errors: [`DeriveError`] when `pods` is no array, the pod is no Pod, or one of those fields
/// has another type.
pub fn pod_after(
    pods: &Value,
    name: &str,
    restart_count_before: u32,
) -> Result<PodAfter, DeriveError> {
    if !pods.is_array() {
        return Err(err("", "a list of Pods"));
    }
    let Some(k) = pod_named(pods, name) else {
        return Ok(PodAfter {
            pod_uid_after: None,
            restart_count_after: restart_count_before,
            ready_after: false,
        });
    };
    let p = object_at(pods, &format!("/{k}"), "v1", "Pod")?;
    let at = |e: DeriveError| err(&format!("/{k}{}", e.pointer), e.expected);
    let mut restarts = 0;
    for (i, _) in array(p, "/status/containerStatuses")
        .map_err(at)?
        .iter()
        .enumerate()
    {
        let c = format!("/status/containerStatuses/{i}");
        if string(p, &format!("{c}/name")).map_err(at)?.as_deref() == Some(ADMISSION_CONTAINER) {
            restarts = count(p, &format!("{c}/restartCount"))
                .map_err(at)?
                .unwrap_or(0);
            break;
        }
    }
    let ready = ready(p).map_err(at)?;
    Ok(PodAfter {
        pod_uid_after: string(p, "/metadata/uid").map_err(at)?,
        restart_count_after: restarts,
        ready_after: ready,
    })
}

/// Where each field of [`pod_after`]'s facts comes from (below the pod's entry).
pub const POD_AFTER_SOURCES: &[Source] = &[
    ("pod_uid_after", "metadata.uid"),
    (
        "restart_count_after",
        "status.containerStatuses[name=kyverno].restartCount",
    ),
    ("ready_after", "status.conditions[type=Ready].status"),
];

/// The frozen replica's container after the settle (lab C's `target_after`, its container's
/// part): [`container_after`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ContainerAfter {
    /// The container's ID, host PID and pod UID (`identity_after` less its start time, which
    /// only `/proc` gives).
    pub identity_after: CriProcess,
    /// Its pod's name.
    pub pod: String,
    /// kubelet's restart count of the container: its `attempt`.
    pub restart_count_after: u32,
}

/// The frozen replica's container after the settle ([`ContainerAfter`]) from the runtime's
/// answer (raw `cri-container-after`): [`cri_container`]'s process, pod name and restart count
/// (`attempt`), in `target_after`'s terms.
///
/// Errors: as [`cri_container`].
pub fn container_after(raw: &Value) -> Result<ContainerAfter, DeriveError> {
    let c = cri_container(raw)?;
    Ok(ContainerAfter {
        identity_after: c.identity,
        pod: c.pod_name,
        restart_count_after: c.restart_count,
    })
}

/// Where each field of [`container_after`]'s facts comes from (fact fields dotted).
pub const CONTAINER_AFTER_SOURCES: &[Source] = &[
    ("identity_after.container_id", "container_id"),
    ("identity_after.pid", "pid"),
    ("identity_after.pod_uid", "pod_uid"),
    ("pod", "pod_name"),
    ("restart_count_after", "attempt"),
];

/// Lab C act 7's scale back ([`ScaleBackFacts`]) from the heal's record of act 3's scale
/// attempt (raw `scale-attempt-heal`, the attempt's `heal.json`: `{"attempt", "kind",
/// "command", "by", "at", "action", …}`): `attempt` (the attempt's directory name) as
/// `fault_id`, `action` (`restored`, `already-restored`, …) and `at` (RFC 3339, verbatim).
/// `replicas_before` (the Deployment read before the heal: [`deployment`]'s `replicas` of raw
/// `deployment-before`, [`REPLICAS_SOURCES`]) and `replicas` (the original count written back)
/// are not in the record: the act passes them.
///
/// Errors: [`DeriveError`] when `heal` is no object or `attempt`, `action` or `at` is no string.
pub fn scale_back(
    heal: &Value,
    replicas_before: u32,
    replicas: u32,
) -> Result<ScaleBackFacts, DeriveError> {
    if !heal.is_object() {
        return Err(err("", "a heal record"));
    }
    Ok(ScaleBackFacts {
        fault_id: required_string(heal, "/attempt")?,
        action: required_string(heal, "/action")?,
        replicas_before,
        replicas,
        at: required_string(heal, "/at")?,
    })
}

/// Where each field of [`scale_back`]'s facts comes from.
pub const SCALE_BACK_SOURCES: &[Source] = &[
    ("fault_id", "attempt"),
    ("action", "action"),
    ("replicas_before", ""),
    ("replicas", ""),
    ("at", "at"),
];

/// Where a count of replicas taken from a Deployment ([`deployment`]'s `replicas`, one value:
/// act 7's `scale_back.replicas_before`) comes from.
pub const REPLICAS_SOURCES: &[Source] = &[("", "spec.replicas")];

/// The policy's UID (lab C act 7's `policy_uid`) from the read of the policy (raw `policy`: the
/// Kyverno `ValidatingPolicy` as the API server returned it, or `null` when there was none):
/// `metadata.uid` (`None`: no policy, or none in it; the act records that as empty).
///
/// Errors: [`DeriveError`] when `raw` is neither `null` nor an object, or the UID is no string.
pub fn policy_uid(raw: &Value) -> Result<Option<String>, DeriveError> {
    if raw.is_null() {
        return Ok(None);
    }
    Ok(stored_policy(raw)?.metadata.uid)
}

/// Where [`policy_uid`]'s fact (one value) comes from.
pub const POLICY_UID_SOURCES: &[Source] = &[("", "metadata.uid")];

// ---------------------------------------------------------------------------------------------
// Lab A act 5.

/// Lab A act 5's `scaled_at` (when the API server accepted the scale to 0, RFC 3339 verbatim)
/// from the healer's answer to the runner's scale-down (raw `scale-down`, the runner's
/// `ScaleDownRecord`: `{"sent_at", "answered_at", "replicas_before", "raw"}`, the same record as
/// lab C's `scale-up`): [`scale_up`]'s `scaled_at` of it (`answered_at`), the whole record
/// checked as [`scale_up`] checks it.
///
/// Errors: [`DeriveError`] as [`scale_up`]'s (`answered_at` no string, `raw` no Scale, …).
pub fn scale_down(raw: &Value) -> Result<String, DeriveError> {
    Ok(scale_up(raw, String::new(), String::new())?.scaled_at)
}

/// Where [`scale_down`]'s fact (one value) comes from.
pub const SCALE_DOWN_SOURCES: &[Source] = &[("", "answered_at")];

/// Lab A act 5's recovery watcher ([`WatcherFacts`]) from the scale healer's ready answer (raw
/// `watcher-ready`, the healer's `HealerReady`: `{"ok", "pid", "armed_at", "deadline_at",
/// "observed_replicas", "error"}`): `pid` (absent: `None`), `armed_at` and `deadline_at`
/// ([`healer_deadline`]), RFC 3339 verbatim. What the healer was armed with (`restore_after_sec`,
/// seconds; `original_replicas`) and where its files are (`fault_dir`) are not in the answer: the
/// act passes them.
///
/// Errors: [`DeriveError`] when `raw` is no object, `pid` no int32, or `armed_at` or
/// `deadline_at` no string.
pub fn watcher(
    raw: &Value,
    restore_after_sec: u32,
    original_replicas: u32,
    fault_dir: Option<String>,
) -> Result<WatcherFacts, DeriveError> {
    if !raw.is_object() {
        return Err(err("", "the healer's ready answer"));
    }
    Ok(WatcherFacts {
        pid: count(raw, "/pid")?,
        armed_at: required_string(raw, "/armed_at")?,
        restore_after_sec,
        original_replicas,
        deadline_at: Some(healer_deadline(raw)?),
        fault_dir,
    })
}

/// Where each field of [`watcher`]'s facts comes from.
pub const WATCHER_SOURCES: &[Source] = &[
    ("pid", "pid"),
    ("armed_at", "armed_at"),
    ("restore_after_sec", ""),
    ("original_replicas", ""),
    ("deadline_at", "deadline_at"),
    ("fault_dir", ""),
];

/// Lab A act 5's policy presence ([`PolicyPresence`]) from the read of the policy (raw
/// `policy`: the Kyverno `ValidatingPolicy` as the API server returned it, or `null` when there
/// was none): `exists` (the read returned an object), `uid` ([`policy_uid`]). `at` is the time
/// of the read (RFC 3339 UTC, ms), which the object does not hold.
///
/// Errors: [`DeriveError`] as [`policy_uid`]'s (`raw` neither `null` nor an object, the UID no
/// string).
pub fn policy_presence(raw: &Value, at: String) -> Result<PolicyPresence, DeriveError> {
    Ok(PolicyPresence {
        exists: !raw.is_null(),
        uid: policy_uid(raw)?,
        at,
    })
}

/// Where each field of [`policy_presence`]'s facts comes from (`exists`: whether the record is
/// an object of its `kind` or `null`).
pub const POLICY_PRESENCE_SOURCES: &[Source] =
    &[("exists", "kind"), ("uid", "metadata.uid"), ("at", "")];

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// `v` (an object) as the client serializes an object of `kind` in `api_version`.
    fn of(api_version: &str, kind: &str, mut v: Value) -> Value {
        v["apiVersion"] = json!(api_version);
        v["kind"] = json!(kind);
        v
    }

    fn dep(v: Value) -> Value {
        of("apps/v1", "Deployment", v)
    }

    fn lease_of(v: Value) -> Value {
        of("coordination.k8s.io/v1", "Lease", v)
    }

    fn pod_of(v: Value) -> Value {
        of("v1", "Pod", v)
    }

    /// `got` is the error at `pointer`, where the record should have held `expected`.
    #[track_caller]
    fn refused<T: std::fmt::Debug>(got: Result<T, DeriveError>, pointer: &str, expected: &str) {
        assert_eq!(got.unwrap_err(), err(pointer, expected));
    }

    fn cfg_of(v: Value) -> Value {
        let kind = "ValidatingWebhookConfiguration";
        of("admissionregistration.k8s.io/v1", kind, v)
    }

    #[test]
    fn deployment_applies_the_api_servers_defaults_and_refuses_other_types() {
        let meta = json!({"name": "k", "namespace": "kyverno", "uid": "u"});
        let d = deployment(&dep(json!({"metadata": meta, "spec": {}, "status": {}}))).unwrap();
        assert_eq!((d.replicas, d.ready_replicas), (1, 0));
        let d = json!({"spec": {"replicas": 3}, "status": {"readyReplicas": 2}});
        let d = deployment(&dep(d));
        assert_eq!(d.map(|d| (d.replicas, d.ready_replicas)), Ok((3, 2)));
        let got = deployment(&dep(json!({"spec": {"replicas": "3"}})));
        refused(got, "/spec/replicas", "an int32");
        assert!(deployment(&json!([])).is_err());
        assert!(deployment(&json!({"spec": {"replicas": 3}})).is_err());
        let got = deployment(&of("apps/v1", "StatefulSet", json!({})));
        refused(got, "/kind", "\"Deployment\"");
    }

    #[test]
    fn lease_of_no_lease_names_kyvernos_lease() {
        let l = lease(&Value::Null, "t".into()).unwrap();
        let named = (l.namespace.as_str(), l.name.as_str());
        assert_eq!(named, ("kyverno", "kyverno"));
        assert_eq!(l.holder, None);
        let l = json!({"metadata": {"name": "kyverno", "namespace": "kyverno"},
            "spec": {"holderIdentity": "p", "leaseTransitions": 2,
                "acquireTime": "2026-11-30T19:47:01.123456Z"}});
        let l = lease(&lease_of(l), "t".into()).unwrap();
        assert_eq!(l.holder.as_deref(), Some("p"));
        assert_eq!(l.lease_transitions, Some(2));
        let acquired = l.acquire_time.as_deref();
        assert_eq!(acquired, Some("2026-11-30T19:47:01.123456Z"));
        assert!(lease(&json!("kyverno"), "t".into()).is_err());
    }

    #[test]
    fn pod_sums_its_containers_restarts() {
        let p = json!({"metadata": {"name": "p", "namespace": "n", "uid": "u"},
            "status": {"phase": "Running", "containerStatuses": [
                {"restartCount": 1}, {"restartCount": 2}]}});
        let p = pod(&pod_of(p), "t".into()).unwrap();
        assert_eq!((p.exists, p.restart_count), (true, Some(3)));
        let p = pod(&pod_of(json!({"metadata": {"name": "p"}})), "t".into()).unwrap();
        assert_eq!((p.phase, p.restart_count), (None, None));
        let bad = pod_of(json!({"status": {"containerStatuses": {}}}));
        assert!(pod(&bad, "t".into()).is_err());
    }

    #[test]
    fn registration_is_the_named_webhook_with_the_api_servers_defaults() {
        let cfg = json!({"metadata": {"name": "cfg", "uid": "u"}, "webhooks": [
            {"name": "other", "failurePolicy": "Ignore", "sideEffects": "None"},
            {"name": "vpol", "sideEffects": "NoneOnDryRun", "rules": [],
             "clientConfig": {"service": {"namespace": "kyverno", "name": "kyverno-svc"}}}]});
        let cfg = cfg_of(cfg);
        let w = registration(&cfg, "vpol", "t".into()).unwrap();
        assert_eq!((w.failure_policy.as_str(), w.timeout_seconds), ("Fail", 10));
        assert_eq!(w.service.map(|s| s.port), Some(443));
        assert_eq!((w.rules, w.object_selector), (json!([]), Value::Null));
        assert_eq!(w.configuration_uid.as_deref(), Some("u"));
        assert!(registration(&cfg, "absent", "t".into()).is_err());
        let not_a_list = cfg_of(json!({"webhooks": {}}));
        assert!(registration(&not_a_list, "vpol", "t".into()).is_err());
    }

    #[test]
    fn lab_mark_names_the_configmap_and_its_value() {
        let m = json!({"Ok": {"object": "kube-system/kca-webhook-lab", "uid": "u",
            "data": {"mark": "kca-webhook-lab/v1"}}});
        let m = lab_mark(&m);
        let text = "ConfigMap kube-system/kca-webhook-lab mark=kca-webhook-lab/v1";
        assert_eq!(m, Ok(Some(text.into())));
        assert_eq!(lab_mark(&json!({"Err": "no lab mark"})), Ok(None));
        assert!(lab_mark(&json!({"Ok": {"object": "x", "data": {}}})).is_err());
        assert!(lab_mark(&json!(null)).is_err());
    }

    #[test]
    fn stored_policy_is_its_name_uid_and_spec() {
        let p = json!({"metadata": {"name": "p", "uid": "u", "resourceVersion": "9"},
            "spec": {"failurePolicy": "Fail"}, "status": {}});
        let p = stored_policy(&p).unwrap();
        assert_eq!(p.metadata.name.as_deref(), Some("p"));
        assert_eq!(p.metadata.uid.as_deref(), Some("u"));
        assert_eq!(p.spec, json!({"failurePolicy": "Fail"}));
        let p = stored_policy(&json!({})).unwrap();
        assert_eq!((p.metadata.uid, p.spec), (None, Value::Null));
        assert!(stored_policy(&json!(null)).is_err());
        let got = stored_policy(&json!({"metadata": {"uid": 7}}));
        refused(got, "/metadata/uid", "a string");
    }

    #[test]
    fn cri_container_takes_the_attempt_as_the_restart_count() {
        let c = cri_container(&json!({"container_id": "c", "sandbox_id": "s", "pid": 42,
            "pod_uid": "u", "pod_name": "p", "pod_namespace": "kyverno",
            "container_name": "kyverno", "attempt": 2, "state": "CONTAINER_RUNNING"}))
        .unwrap();
        let (id, n) = (&c.identity, c.restart_count);
        assert_eq!((id.container_id.as_str(), id.pid, n), ("c", 42, 2));
        assert_eq!(cri_container(&json!({"pid": -1})).unwrap().identity.pid, 0);
        let got = cri_container(&json!({"pid": "42"}));
        refused(got, "/pid", "an int32");
        assert!(cri_container(&json!("c")).is_err());
        let last = CRI_PROCESS_SOURCES.last();
        assert_eq!(last, Some(&("restart_count", "attempt")));
    }

    #[test]
    fn scale_up_is_the_healers_answer_and_its_scale() {
        let up = json!({"sent_at": "2026-12-01T23:48:52.391Z", "answered_at": "2026-12-01T23:48:52.397Z",
            "replicas_before": 1, "raw": of("autoscaling/v1", "Scale", json!({"spec": {"replicas": 3}}))});
        let sc = scale_up(&up, "f".into(), "d".into()).unwrap();
        assert_eq!((sc.replicas_before, sc.replicas), (1, 3));
        assert_eq!(sc.scaled_at, "2026-12-01T23:48:52.397Z");
        let passed = (sc.fault_id.as_str(), sc.restore_deadline_at.as_str());
        assert_eq!(passed, ("f", "d"));
        let mut zero = up.clone();
        zero["raw"]["spec"] = json!({});
        assert_eq!(scale_up(&zero, "f".into(), "d".into()).unwrap().replicas, 0);
        let mut bad = up.clone();
        bad["raw"]["spec"]["replicas"] = json!("3");
        let got = scale_up(&bad, "f".into(), "d".into());
        refused(got, "/raw/spec/replicas", "an int32");
        let mut bad = up.clone();
        bad["raw"]["kind"] = json!("Deployment");
        let got = scale_up(&bad, "f".into(), "d".into());
        refused(got, "/raw/kind", "\"Scale\"");
        let mut bad = up;
        bad.as_object_mut().unwrap().remove("answered_at");
        let got = scale_up(&bad, "f".into(), "d".into());
        refused(got, "/answered_at", "a string");
        assert_eq!(
            healer_deadline(&json!({"ok": true, "deadline_at": "t"})),
            Ok("t".into())
        );
        let got = healer_deadline(&json!({"deadline_at": 5}));
        refused(got, "/deadline_at", "a string");
    }

    #[test]
    fn endpoints_are_every_slices_entries_by_pod_with_ready_by_default() {
        let slice = |eps: Value| {
            let kind = ("discovery.k8s.io/v1", "EndpointSlice");
            of(kind.0, kind.1, json!({"endpoints": eps}))
        };
        let b = json!([{"addresses": ["10.0.0.2", "10.0.0.9"], "targetRef": {"name": "p-b"},
            "conditions": {"ready": false}}]);
        let a = json!([{"addresses": ["10.0.0.1"], "targetRef": {"name": "p-a"}, "conditions": {}},
            {"addresses": [], "conditions": {"ready": true}}]);
        let raw = json!([slice(b), slice(a)]);
        let eps = located_endpoints(&raw).unwrap();
        let got: Vec<(&str, &str, Option<&str>, bool)> = (eps.iter())
            .map(|(at, e)| (at.as_str(), e.address.as_str(), e.pod.as_deref(), e.ready))
            .collect();
        let expected = [
            ("[1].endpoints[1]", "", None, true),
            ("[1].endpoints[0]", "10.0.0.1", Some("p-a"), true),
            ("[0].endpoints[0]", "10.0.0.2", Some("p-b"), false),
        ];
        assert_eq!(got, expected);
        assert_eq!(endpoints(&raw).unwrap().len(), 3);
        assert_eq!(endpoints(&json!([])), Ok(vec![]));
        let mut bad = raw.clone();
        bad[1]["endpoints"][0]["conditions"]["ready"] = json!("true");
        let got = endpoints(&bad);
        refused(got, "/1/endpoints/0/conditions/ready", "a boolean");
        let mut bad = raw;
        bad[0]["kind"] = json!("Endpoints");
        let got = endpoints(&bad);
        refused(got, "/0/kind", "\"EndpointSlice\"");
        assert!(endpoints(&json!({"items": []})).is_err());
    }

    #[test]
    fn pod_after_is_the_named_pods_uid_kyverno_restarts_and_readiness() {
        let pods = json!([
            pod_of(json!({"metadata": {"name": "other", "uid": "o"}})),
            pod_of(json!({"metadata": {"name": "p", "uid": "u"}, "status": {
                "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "sidecar", "restartCount": 9}, {"name": "kyverno", "restartCount": 2}]}})),
        ]);
        let after = |a: PodAfter| (a.pod_uid_after, a.restart_count_after, a.ready_after);
        let a = pod_after(&pods, "p", 0).unwrap();
        assert_eq!(after(a), (Some("u".into()), 2, true));
        assert_eq!(pod_named(&pods, "p"), Some(1));
        let other = pod_after(&pods, "other", 5).unwrap();
        assert_eq!((other.restart_count_after, other.ready_after), (0, false));
        let gone = pod_after(&pods, "gone", 5).unwrap();
        assert_eq!(after(gone), (None, 5, false));
        let mut bad = pods.clone();
        bad[1]["status"]["containerStatuses"][1]["restartCount"] = json!("2");
        let at = "/1/status/containerStatuses/1/restartCount";
        refused(pod_after(&bad, "p", 0), at, "an int32");
        let mut bad = pods;
        bad[1]["metadata"]["uid"] = json!(7);
        let got = pod_after(&bad, "p", 0);
        refused(got, "/1/metadata/uid", "a string");
        assert!(pod_after(&json!(null), "p", 0).is_err());
    }

    #[test]
    fn container_after_is_the_cri_answer_in_target_afters_terms() {
        let c = json!({"container_id": "c", "pid": 603, "pod_uid": "u",
            "pod_name": "p", "container_name": "kyverno", "attempt": 1});
        let c = container_after(&c).unwrap();
        let (pid, n) = (c.identity_after.pid, c.restart_count_after);
        assert_eq!((pid, c.pod.as_str(), n), (603, "p", 1));
        assert_eq!(c.identity_after.container_id, "c");
        let got = container_after(&json!({"attempt": "1"}));
        refused(got, "/attempt", "an int32");
    }

    #[test]
    fn scale_back_is_the_heal_records_attempt_action_and_time() {
        let heal = json!({"attempt": "scale-03-x", "kind": "scale", "action": "already-restored",
            "at": "2026-12-01T23:50:43.341Z", "command": "act 7 (scale back)"});
        let b = scale_back(&heal, 3, 1).unwrap();
        let heal = (b.fault_id.as_str(), b.action.as_str(), b.at.as_str());
        let at = "2026-12-01T23:50:43.341Z";
        assert_eq!(heal, ("scale-03-x", "already-restored", at));
        assert_eq!((b.replicas_before, b.replicas), (3, 1));
        let got = scale_back(&json!({"attempt": 3}), 3, 1);
        refused(got, "/attempt", "a string");
        assert!(scale_back(&json!(null), 3, 1).is_err());
    }

    #[test]
    fn policy_uid_is_the_read_policys_uid_or_none() {
        let p = json!({"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy",
            "metadata": {"name": "kca-webhook-label", "uid": "u"}});
        assert_eq!(policy_uid(&p), Ok(Some("u".into())));
        assert_eq!(policy_uid(&Value::Null), Ok(None));
        assert_eq!(policy_uid(&json!({"metadata": {}})), Ok(None));
        let got = policy_uid(&json!({"metadata": {"uid": 7}}));
        refused(got, "/metadata/uid", "a string");
        assert!(policy_uid(&json!("u")).is_err());
    }

    #[test]
    fn scale_down_is_the_answers_time() {
        // Lab A act 5's record (the recorded run's): the Scale the API server returned at 0
        // replicas has an empty spec.
        let down = json!({"sent_at": "2026-11-30T19:48:20.063Z", "answered_at": "2026-11-30T19:48:20.068Z",
            "replicas_before": 1, "raw": of("autoscaling/v1", "Scale", json!({"spec": {}}))});
        assert_eq!(scale_down(&down), Ok("2026-11-30T19:48:20.068Z".into()));
        let mut bad = down.clone();
        bad["answered_at"] = json!(1_764_532_100_068_i64);
        assert_eq!(scale_down(&bad), Err(err("/answered_at", "a string")));
        let mut bad = down;
        bad["replicas_before"] = json!("1");
        assert_eq!(scale_down(&bad), Err(err("/replicas_before", "an int32")));
        assert_eq!(scale_down(&json!(null)).unwrap_err().pointer, "");
    }

    #[test]
    fn watcher_is_the_healers_ready_answer_and_what_it_was_armed_with() {
        let ready = json!({"ok": true, "pid": 4217, "armed_at": "2026-11-30T19:48:20.058Z",
            "deadline_at": "2026-11-30T19:49:15.058Z", "observed_replicas": 1, "error": null});
        let w = watcher(&ready, 55, 1, Some("/w/faults/scale-05".into())).unwrap();
        let (armed, deadline) = (w.armed_at.as_str(), w.deadline_at.as_deref());
        assert_eq!((w.pid, armed), (Some(4217), "2026-11-30T19:48:20.058Z"));
        assert_eq!(deadline, Some("2026-11-30T19:49:15.058Z"));
        let (after, replicas) = (w.restore_after_sec, w.original_replicas);
        assert_eq!((after, replicas), (55, 1));
        assert_eq!(w.fault_dir.as_deref(), Some("/w/faults/scale-05"));
        let mut bad = ready.clone();
        bad["pid"] = json!("4217");
        let got = watcher(&bad, 55, 1, None);
        refused(got, "/pid", "an int32");
        let mut bad = ready.clone();
        bad["armed_at"] = json!(null);
        let got = watcher(&bad, 55, 1, None);
        refused(got, "/armed_at", "a string");
        let mut bad = ready;
        bad["deadline_at"] = json!(55);
        let got = watcher(&bad, 55, 1, None);
        refused(got, "/deadline_at", "a string");
        assert_eq!(watcher(&json!([]), 55, 1, None).unwrap_err().pointer, "");
    }

    #[test]
    fn policy_presence_is_whether_the_read_found_the_policy_and_its_uid() {
        let p = json!({"apiVersion": "policies.kyverno.io/v1", "kind": "ValidatingPolicy",
            "metadata": {"name": "kca-webhook-label", "uid": "a764867b-5e45-4296-8322-19733e9f7b2c"}});
        let found = policy_presence(&p, "t".into()).unwrap();
        assert!(found.exists);
        let uid = found.uid.as_deref();
        assert_eq!(uid, Some("a764867b-5e45-4296-8322-19733e9f7b2c"));
        assert_eq!(found.at, "t");
        let none = policy_presence(&Value::Null, "t".into()).unwrap();
        assert_eq!((none.exists, none.uid), (false, None));
        let mut bad = p;
        bad["metadata"]["uid"] = json!(7);
        let got = policy_presence(&bad, "t".into());
        refused(got, "/metadata/uid", "a string");
    }

    #[test]
    fn freeze_samples_are_their_reads_time_and_answer() {
        let l = json!({"metadata": {"name": "kyverno", "namespace": "kyverno"},
            "spec": {"holderIdentity": "p", "renewTime": "2026-12-01T23:49:30.009607Z", "leaseTransitions": 1}});
        let l = lease_of(l);
        let x = lease_sample(&json!({"what": "lease", "at": "t", "lease": l})).unwrap();
        assert_eq!(
            (
                x.at.as_str(),
                x.holder.as_deref(),
                x.renew_time.as_deref(),
                x.lease_transitions
            ),
            ("t", Some("p"), Some("2026-12-01T23:49:30.009607Z"), Some(1))
        );
        assert_eq!(x.error, None);
        let none = lease_sample(&json!({"what": "lease", "at": "t", "lease": null})).unwrap();
        assert_eq!(none.holder, None);
        let mut bad = l.clone();
        bad["spec"]["leaseTransitions"] = json!("1");
        let got = lease_sample(&json!({"at": "t", "lease": bad}));
        refused(got, "/lease/spec/leaseTransitions", "an int32");
        let got = lease_sample(&json!({"lease": l}));
        refused(got, "/at", "a string");
        let slice = json!({"endpoints": [{"addresses": ["10.0.0.1"], "targetRef": {"name": "p"}}]});
        let slice = of("discovery.k8s.io/v1", "EndpointSlice", slice);
        let e = json!({"what": "endpoint-slices", "at": "t", "slices": [slice]});
        let e = endpoint_sample(&e).unwrap();
        assert_eq!((e.at.as_str(), e.endpoints.len()), ("t", 1));
        let first = &e.endpoints[0];
        assert_eq!((first.address.as_str(), first.ready), ("10.0.0.1", true));
        let got = endpoint_sample(&json!({"at": "t", "slices": {}}));
        refused(got, "/slices", "a list of EndpointSlices");
    }

    #[test]
    fn replica_is_its_pod_readiness_and_address() {
        let p = json!({"metadata": {"name": "p", "namespace": "kyverno", "uid": "u"},
            "status": {"phase": "Running", "podIP": "10.42.0.4",
                "conditions": [{"type": "Ready", "status": "True"}]}});
        let p = pod_of(p);
        let r = replica(&p, "t".into()).unwrap();
        let (name, ip) = (r.pod.name.as_str(), r.pod_ip.as_deref());
        assert_eq!((name, r.ready, ip), ("p", true, Some("10.42.0.4")));
        let mut not_ready = p.clone();
        not_ready["status"]["conditions"][0]["status"] = json!("False");
        not_ready["status"].as_object_mut().unwrap().remove("podIP");
        let r = replica(&not_ready, "t".into()).unwrap();
        assert_eq!((r.ready, r.pod_ip), (false, None));
        let mut bad = p.clone();
        bad["status"]["podIP"] = json!(10);
        let got = replica(&bad, "t".into());
        refused(got, "/status/podIP", "a string");
        let mut bad = p;
        bad["status"]["conditions"] = json!({"Ready": true});
        let got = replica(&bad, "t".into());
        refused(got, "/status/conditions", "an array");
    }

    /// The sorted field names of `s`.
    fn names(s: &[Source]) -> Vec<String> {
        let mut n: Vec<String> = s.iter().map(|(f, _)| (*f).to_owned()).collect();
        n.sort();
        n
    }

    /// The sorted fields of the facts `x`: an object's keys, or with `nested` every leaf of an
    /// object dotted (`identity.pid`; `spec` is one value).
    fn fields(x: impl serde::Serialize, nested: bool) -> Vec<String> {
        let v = serde_json::to_value(x).unwrap();
        let mut out = Vec::new();
        for (k, x) in v.as_object().unwrap() {
            match x.as_object() {
                Some(o) if nested && k != "spec" => {
                    out.extend(o.keys().map(|j| format!("{k}.{j}")))
                }
                _ => out.push(k.clone()),
            }
        }
        out.sort();
        out
    }

    #[test]
    fn every_fact_field_has_its_source() {
        let d = deployment(&dep(json!({}))).unwrap();
        assert_eq!(fields(d, false), names(DEPLOYMENT_SOURCES));
        let l = lease(&Value::Null, "t".into()).unwrap();
        assert_eq!(fields(l, false), names(LEASE_SOURCES));
        let mut p = pod(&pod_of(json!({})), "t".into()).unwrap();
        p.restart_count = Some(0);
        assert_eq!(fields(p, false), names(POD_SOURCES));
        let cfg = cfg_of(json!({"webhooks": [{"name": "w", "clientConfig": {"service": {}}}]}));
        let mut w = registration(&cfg, "w", "t".into()).unwrap();
        w.configuration_uid = Some(String::new());
        w.url = Some(String::new());
        w.match_policy = Some(String::new());
        assert_eq!(fields(w, false), names(REGISTRATION_SOURCES));
        // Nested facts: every leaf, dotted.
        let p = stored_policy(&json!({"metadata": {}})).unwrap();
        assert_eq!(fields(p, true), names(STORED_POLICY_SOURCES));
        let c = cri_container(&json!({})).unwrap();
        assert_eq!(fields(c, true), names(CRI_CONTAINER_SOURCES));
        let c = container_after(&json!({})).unwrap();
        assert_eq!(fields(c, true), names(CONTAINER_AFTER_SOURCES));
        let up = json!({"replicas_before": 1, "answered_at": "t", "raw": of("autoscaling/v1", "Scale", json!({}))});
        let sc = scale_up(&up, "f".into(), "d".into()).unwrap();
        assert_eq!(fields(sc, false), names(SCALE_UP_SOURCES));
        let slice = of(
            "discovery.k8s.io/v1",
            "EndpointSlice",
            json!({"endpoints": [{}]}),
        );
        let e = endpoints(&json!([slice])).unwrap();
        assert_eq!(fields(&e[0], false), names(ENDPOINT_SOURCES));
        let a = pod_after(&json!([]), "p", 0).unwrap();
        assert_eq!(fields(a, false), names(POD_AFTER_SOURCES));
        let b = scale_back(&json!({"attempt": "a", "action": "b", "at": "t"}), 0, 0).unwrap();
        assert_eq!(fields(b, false), names(SCALE_BACK_SOURCES));
        let mut x = lease_sample(&json!({"at": "t", "lease": null})).unwrap();
        x.error = Some(String::new());
        assert_eq!(fields(x, false), names(LEASE_SAMPLE_SOURCES));
        let mut x = endpoint_sample(&json!({"at": "t", "slices": []})).unwrap();
        x.error = Some(String::new());
        assert_eq!(fields(x, false), names(ENDPOINT_SAMPLE_SOURCES));
        let mut r = replica(&pod_of(json!({})), "t".into()).unwrap();
        r.pod_ip = Some(String::new());
        let mut with_pod = names(REPLICA_SOURCES);
        with_pod.push("pod".into());
        with_pod.sort();
        assert_eq!(fields(r, false), with_pod);
        // Facts that are one value: one source, for the fact itself.
        for one in [
            HEALER_DEADLINE_SOURCES,
            REPLICAS_SOURCES,
            POLICY_UID_SOURCES,
        ] {
            assert_eq!(names(one), [""]);
        }
    }
}
