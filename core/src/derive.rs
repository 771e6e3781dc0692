//! Facts derived from raw records: for each kind of raw record an act writes a fact from, the one
//! pure function that maps the record to the fact. The act (`lab`) calls it to write the fact and
//! the grader (`grade/derived.rs`) calls it again on the act's raw record, so the mapping is
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

use crate::facts::a::{DeploymentFacts, LeaseFacts};
use crate::facts::{PodObservation, ServiceRef, WebhookFacts};
use crate::rules::common::{KYVERNO_NAMESPACE, LEADER_LEASE};

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
/// not in the raw object (the time of the read).
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
    if !raw.is_object() {
        return Err(err("", format!("a {kind} object")));
    }
    for (pointer, want) in [("/apiVersion", api_version), ("/kind", kind)] {
        if raw.pointer(pointer).and_then(Value::as_str) != Some(want) {
            return Err(err(pointer, format!("{want:?}")));
        }
    }
    Ok(raw)
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
    let hooks = match cfg.get("webhooks") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(a)) => a.as_slice(),
        Some(_) => return Err(err("/webhooks", "an array")),
    };
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

/// [`CRI_CONTAINER_SOURCES`] of a fact that records the process, its pod's name and the
/// restart count, not the container's name and namespace.
pub const CRI_PROCESS_SOURCES: &[Source] = CRI_CONTAINER_SOURCES.split_at(5).0;

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

    fn cfg_of(v: Value) -> Value {
        of(
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
            v,
        )
    }

    #[test]
    fn deployment_applies_the_api_servers_defaults_and_refuses_other_types() {
        let meta = json!({"name": "k", "namespace": "kyverno", "uid": "u"});
        let d = deployment(&dep(json!({"metadata": meta, "spec": {}, "status": {}}))).unwrap();
        assert_eq!((d.replicas, d.ready_replicas), (1, 0));
        let d = deployment(&dep(
            json!({"spec": {"replicas": 3}, "status": {"readyReplicas": 2}}),
        ));
        assert_eq!(d.map(|d| (d.replicas, d.ready_replicas)), Ok((3, 2)));
        assert_eq!(
            deployment(&dep(json!({"spec": {"replicas": "3"}}))).unwrap_err(),
            err("/spec/replicas", "an int32")
        );
        assert!(deployment(&json!([])).is_err());
        assert!(deployment(&json!({"spec": {"replicas": 3}})).is_err());
        assert_eq!(
            deployment(&of("apps/v1", "StatefulSet", json!({}))).unwrap_err(),
            err("/kind", "\"Deployment\"")
        );
    }

    #[test]
    fn lease_of_no_lease_names_kyvernos_lease() {
        let l = lease(&Value::Null, "t".into()).unwrap();
        assert_eq!(
            (l.namespace.as_str(), l.name.as_str()),
            ("kyverno", "kyverno")
        );
        assert_eq!(l.holder, None);
        let l = lease(
            &lease_of(
                json!({"metadata": {"name": "kyverno", "namespace": "kyverno"},
                "spec": {"holderIdentity": "p", "leaseTransitions": 2,
                    "acquireTime": "2026-11-30T19:47:01.123456Z"}}),
            ),
            "t".into(),
        )
        .unwrap();
        assert_eq!(l.holder.as_deref(), Some("p"));
        assert_eq!(l.lease_transitions, Some(2));
        assert_eq!(
            l.acquire_time.as_deref(),
            Some("2026-11-30T19:47:01.123456Z")
        );
        assert!(lease(&json!("kyverno"), "t".into()).is_err());
    }

    #[test]
    fn pod_sums_its_containers_restarts() {
        let p = pod(
            &pod_of(
                json!({"metadata": {"name": "p", "namespace": "n", "uid": "u"},
                "status": {"phase": "Running", "containerStatuses": [
                    {"restartCount": 1}, {"restartCount": 2}]}}),
            ),
            "t".into(),
        )
        .unwrap();
        assert_eq!((p.exists, p.restart_count), (true, Some(3)));
        let p = pod(&pod_of(json!({"metadata": {"name": "p"}})), "t".into()).unwrap();
        assert_eq!((p.phase, p.restart_count), (None, None));
        let bad = pod_of(json!({"status": {"containerStatuses": {}}}));
        assert!(pod(&bad, "t".into()).is_err());
    }

    #[test]
    fn registration_is_the_named_webhook_with_the_api_servers_defaults() {
        let cfg = cfg_of(
            json!({"metadata": {"name": "cfg", "uid": "u"}, "webhooks": [
            {"name": "other", "failurePolicy": "Ignore", "sideEffects": "None"},
            {"name": "vpol", "sideEffects": "NoneOnDryRun", "rules": [],
             "clientConfig": {"service": {"namespace": "kyverno", "name": "kyverno-svc"}}}]}),
        );
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
        let m = lab_mark(
            &json!({"Ok": {"object": "kube-system/kca-webhook-lab", "uid": "u",
            "data": {"mark": "kca-webhook-lab/v1"}}}),
        );
        assert_eq!(
            m,
            Ok(Some(
                "ConfigMap kube-system/kca-webhook-lab mark=kca-webhook-lab/v1".into()
            ))
        );
        assert_eq!(lab_mark(&json!({"Err": "no lab mark"})), Ok(None));
        assert!(lab_mark(&json!({"Ok": {"object": "x", "data": {}}})).is_err());
        assert!(lab_mark(&json!(null)).is_err());
    }

    #[test]
    fn stored_policy_is_its_name_uid_and_spec() {
        let p = stored_policy(
            &json!({"metadata": {"name": "p", "uid": "u", "resourceVersion": "9"},
            "spec": {"failurePolicy": "Fail"}, "status": {}}),
        )
        .unwrap();
        assert_eq!(p.metadata.name.as_deref(), Some("p"));
        assert_eq!(p.metadata.uid.as_deref(), Some("u"));
        assert_eq!(p.spec, json!({"failurePolicy": "Fail"}));
        let p = stored_policy(&json!({})).unwrap();
        assert_eq!((p.metadata.uid, p.spec), (None, Value::Null));
        assert!(stored_policy(&json!(null)).is_err());
        assert_eq!(
            stored_policy(&json!({"metadata": {"uid": 7}})).unwrap_err(),
            err("/metadata/uid", "a string")
        );
    }

    #[test]
    fn cri_container_takes_the_attempt_as_the_restart_count() {
        let c = cri_container(&json!({"container_id": "c", "sandbox_id": "s", "pid": 42,
            "pod_uid": "u", "pod_name": "p", "pod_namespace": "kyverno",
            "container_name": "kyverno", "attempt": 2, "state": "CONTAINER_RUNNING"}))
        .unwrap();
        assert_eq!(
            (
                c.identity.container_id.as_str(),
                c.identity.pid,
                c.restart_count
            ),
            ("c", 42, 2)
        );
        assert_eq!(cri_container(&json!({"pid": -1})).unwrap().identity.pid, 0);
        assert_eq!(
            cri_container(&json!({"pid": "42"})).unwrap_err(),
            err("/pid", "an int32")
        );
        assert!(cri_container(&json!("c")).is_err());
        assert_eq!(
            CRI_PROCESS_SOURCES.last(),
            Some(&("restart_count", "attempt"))
        );
    }

    #[test]
    fn every_fact_field_has_its_source() {
        let fields = |v: Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
        let names = |s: &[Source]| -> Vec<String> {
            let mut n: Vec<String> = s.iter().map(|(f, _)| (*f).to_owned()).collect();
            n.sort();
            n
        };
        let d = deployment(&dep(json!({}))).unwrap();
        assert_eq!(
            fields(serde_json::to_value(d).unwrap()),
            names(DEPLOYMENT_SOURCES)
        );
        let l = lease(&Value::Null, "t".into()).unwrap();
        assert_eq!(
            fields(serde_json::to_value(l).unwrap()),
            names(LEASE_SOURCES)
        );
        let mut p = pod(&pod_of(json!({})), "t".into()).unwrap();
        p.restart_count = Some(0);
        assert_eq!(fields(serde_json::to_value(p).unwrap()), names(POD_SOURCES));
        let cfg = cfg_of(json!({"webhooks": [{"name": "w", "clientConfig": {"service": {}}}]}));
        let mut w = registration(&cfg, "w", "t".into()).unwrap();
        w.configuration_uid = Some(String::new());
        w.url = Some(String::new());
        w.match_policy = Some(String::new());
        assert_eq!(
            fields(serde_json::to_value(w).unwrap()),
            names(REGISTRATION_SOURCES)
        );
        // Nested facts: every leaf, dotted.
        let leaves = |v: Value| -> Vec<String> {
            let mut out = Vec::new();
            for (k, x) in v.as_object().unwrap() {
                match x.as_object() {
                    Some(o) if k != "spec" => out.extend(o.keys().map(|j| format!("{k}.{j}"))),
                    _ => out.push(k.clone()),
                }
            }
            out.sort();
            out
        };
        let p = stored_policy(&json!({"metadata": {}})).unwrap();
        assert_eq!(
            leaves(serde_json::to_value(p).unwrap()),
            names(STORED_POLICY_SOURCES)
        );
        let c = cri_container(&json!({})).unwrap();
        assert_eq!(
            leaves(serde_json::to_value(c).unwrap()),
            names(CRI_CONTAINER_SOURCES)
        );
    }
}
