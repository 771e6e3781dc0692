//! Request probes: one pod create (real or server-side dry-run) with a fresh unique name, its
//! answer kept verbatim, a separate GET by name, then the classification.
//!
//! Every probe pod runs the pause image, which the node already holds (`imagePullPolicy:
//! IfNotPresent`): a probe never waits for a registry. "Good" pods carry the label
//! `environment: lab` that the lab's policy requires; "bad" pods carry no labels at all.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::classify::{answer_fields, classify};
use crate::cluster::{Cluster, RawAnswer, now_rfc3339};
use crate::error::LabError;
use crate::evidence::{GetResult, RequestRecord};
use crate::facts::PodObservation;
use k8s_openapi::api::core::v1::Pod;

/// The image of every probe pod (Kubernetes' own pause image; the node's sandbox image).
pub const PAUSE_IMAGE: &str = "registry.k8s.io/pause:3.10.1";
pub use crate::rules::common::GOOD_LABEL;
/// What makes a deny the lab policy's verdict (Kyverno: `Policy kca-webhook-label failed:
/// KCA_ENVIRONMENT_REQUIRED`).
pub const MARKERS: &crate::classify::PolicyVerdict<'static> = &crate::classify::LAB_POLICY;

/// What kind of pod to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodKind {
    /// Carries `environment: lab`: satisfies the policy.
    Good,
    /// No labels: violates the policy.
    Bad,
}

/// A fresh DNS-1123 pod name: `kca-<purpose>-<HHMMSS>-<6 hex>` (at most 63 characters;
/// `purpose` is lowercased and cut to fit). The random part makes a collision (and so an
/// `already-exists` answer) practically impossible.
pub fn unique_name(purpose: &str) -> String {
    let clean: String = purpose
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let clean = clean.trim_matches('-');
    let clean = &clean[..clean.len().min(38)];
    let stamp = chrono::Utc::now().format("%H%M%S");
    let rnd: u32 = rand::random::<u32>() & 0x00ff_ffff;
    format!("kca-{clean}-{stamp}-{rnd:06x}")
}

/// The labels of a pod of `kind`.
pub fn labels_for(kind: PodKind) -> BTreeMap<String, String> {
    match kind {
        PodKind::Good => BTreeMap::from([(GOOD_LABEL.0.to_owned(), GOOD_LABEL.1.to_owned())]),
        PodKind::Bad => BTreeMap::new(),
    }
}

/// The pod manifest a probe sends: one pause container, never pulled, no service-account token,
/// terminated at once when deleted.
pub fn pod_manifest(
    name: &str,
    namespace: &str,
    labels: &BTreeMap<String, String>,
) -> serde_json::Value {
    let mut metadata = serde_json::json!({"name": name, "namespace": namespace});
    if !labels.is_empty() {
        metadata["labels"] = serde_json::to_value(labels).unwrap_or_default();
    }
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {
            "containers": [{
                "name": "pause",
                "image": PAUSE_IMAGE,
                "imagePullPolicy": "IfNotPresent"
            }],
            "automountServiceAccountToken": false,
            "enableServiceLinks": false,
            "terminationGracePeriodSeconds": 0
        }
    })
}

/// Sends one pod create of `kind` named [`unique_name`]`(purpose)` in `namespace` (server-side
/// dry-run when `dry_run`), GETs it by name, classifies the answer with [`MARKERS`], and returns
/// the record with the raw body verbatim.
///
/// Errors: only when the API server gave no HTTP answer (the record could not be made).
pub async fn send_pod(
    cluster: &Cluster,
    purpose: &str,
    namespace: &str,
    kind: PodKind,
    dry_run: bool,
) -> Result<RequestRecord, LabError> {
    let name = unique_name(purpose);
    let labels = labels_for(kind);
    let manifest = pod_manifest(&name, namespace, &labels);
    let answer = cluster
        .create_pod_raw(namespace, &manifest, dry_run)
        .await?;
    let get = get_result(cluster, namespace, &name).await?;
    Ok(record(name, namespace, labels, dry_run, answer, get))
}

/// Builds the record from the verbatim answer and the GET (pure).
pub fn record(
    name: String,
    namespace: &str,
    labels: BTreeMap<String, String>,
    dry_run: bool,
    answer: RawAnswer,
    get: GetResult,
) -> RequestRecord {
    let (reason, message) = answer_fields(answer.http_status, &answer.body);
    let outcome = classify(
        answer.http_status,
        reason.as_deref(),
        message.as_deref(),
        &get,
        dry_run,
        MARKERS,
    );
    RequestRecord {
        name,
        namespace: namespace.to_owned(),
        labels,
        dry_run,
        sent_at: answer.sent_at,
        answered_at: answer.answered_at,
        elapsed_ms: answer.elapsed_ms,
        http_status: answer.http_status,
        reason,
        message,
        outcome,
        get,
        raw_response: answer.body,
    }
}

/// GETs pod `name` and reduces the answer to [`GetResult`] (404 → not found).
///
/// Errors: an answer other than 200 or 404 (the GET itself failed: nothing can be said).
pub async fn get_result(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<GetResult, LabError> {
    let a = cluster.get_pod_raw(namespace, name).await?;
    match a.http_status {
        200 => Ok(GetResult {
            exists: true,
            uid: a
                .body
                .pointer("/metadata/uid")
                .and_then(|v| v.as_str())
                .map(str::to_owned),
            phase: a
                .body
                .pointer("/status/phase")
                .and_then(|v| v.as_str())
                .map(str::to_owned),
            at: a.answered_at,
        }),
        404 => Ok(GetResult {
            exists: false,
            uid: None,
            phase: None,
            at: a.answered_at,
        }),
        other => Err(LabError::Kube(format!(
            "GET pod {namespace}/{name} answered {other}: {}",
            a.body.get("message").and_then(|m| m.as_str()).unwrap_or("")
        ))),
    }
}

/// Reads a pod now: exists, UID, phase, restart count.
pub async fn observe_pod(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
) -> Result<PodObservation, LabError> {
    let pod = cluster.pod(namespace, name).await?;
    let at = now_rfc3339();
    Ok(match pod {
        None => PodObservation {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            exists: false,
            uid: None,
            phase: None,
            restart_count: None,
            at,
        },
        Some(p) => PodObservation {
            name: name.to_owned(),
            namespace: namespace.to_owned(),
            at,
            ..pod_observation(&p)?
        },
    })
}

/// A pod as seen now: name, UID, phase and the sum of its containers' restart counts,
/// [`crate::derive::pod`] of the object as the API server sent it (the one mapping the grader
/// recomputes).
///
/// Errors: [`LabError::Kube`] when the object does not serialize or derive.
pub(crate) fn pod_observation(p: &Pod) -> Result<PodObservation, LabError> {
    crate::cluster::derived(crate::derive::pod(
        &crate::cluster::to_json(p)?,
        now_rfc3339(),
    ))
}

/// Waits until pod `name` is `Running` or gone, bounded by `bound`, through a watch on it
/// (kube-runtime's `await_condition`, [`Cluster::await_pod`]: an object condition, so no polling),
/// calling `progress(elapsed_secs, phase)` about once a second with the phase the watch saw last.
/// Returns the observation at the end (one GET: Running, gone, or the last state when the bound
/// ran out), whatever its phase: the caller decides (a bound that runs out is not an error here).
pub async fn wait_running(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    bound: Duration,
    mut progress: impl FnMut(u64, Option<&str>),
) -> Result<PodObservation, LabError> {
    let t0 = std::time::Instant::now();
    // The phase of the last event the watch saw, for the progress line.
    let phase = std::sync::Mutex::new(None::<String>);
    let phase_of = |p: &k8s_openapi::api::core::v1::Pod| p.status.as_ref()?.phase.clone();
    let watch = cluster.await_pod(namespace, name, |p| {
        let seen = p.and_then(phase_of);
        let done = p.is_none() || seen.as_deref() == Some("Running");
        *phase.lock().unwrap_or_else(|e| e.into_inner()) = seen;
        done
    });
    let mut watch = std::pin::pin!(watch);
    let mut deadline = std::pin::pin!(tokio::time::sleep(bound));
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.tick().await; // the first tick is immediate
    loop {
        tokio::select! {
            r = &mut watch => {
                r?;
                break;
            }
            _ = &mut deadline => break,
            _ = tick.tick() => {
                let seen = phase.lock().unwrap_or_else(|e| e.into_inner()).clone();
                progress(t0.elapsed().as_secs(), seen.as_deref());
            }
        }
    }
    observe_pod(cluster, namespace, name).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::Outcome;

    #[test]
    fn names_are_unique_and_valid() {
        let a = unique_name("B5 Fail/Good");
        let b = unique_name("B5 Fail/Good");
        assert_ne!(a, b);
        assert!(a.starts_with("kca-b5-fail-good-"), "{a}");
        assert!(a.len() <= 63);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "{a}"
        );
        let long = unique_name(&"x".repeat(100));
        assert!(long.len() <= 63, "{long}");
    }

    #[test]
    fn manifest_never_pulls_and_bad_pods_have_no_labels() {
        let m = pod_manifest("p", "ns", &labels_for(PodKind::Bad));
        assert_eq!(m["spec"]["containers"][0]["image"], PAUSE_IMAGE);
        assert_eq!(
            m["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
        assert!(m["metadata"].get("labels").is_none());
        let g = pod_manifest("p", "ns", &labels_for(PodKind::Good));
        assert_eq!(g["metadata"]["labels"]["environment"], "lab");
    }

    fn answer(status: u16, body: serde_json::Value, elapsed_ms: u64) -> RawAnswer {
        RawAnswer {
            http_status: status,
            body,
            sent_at: "2026-11-29T14:00:00.000Z".into(),
            answered_at: "2026-11-29T14:00:03.061Z".into(),
            elapsed_ms,
        }
    }

    #[test]
    fn a_timeout_answer_is_kept_verbatim_and_classified() {
        let msg = "Internal error occurred: failed calling webhook \"vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label\": failed to call webhook: Post \"https://kyverno-svc.kyverno.svc:443/vpol/kca-webhook-label?timeout=3s\": context deadline exceeded";
        let body = serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": msg, "reason": "InternalError", "code": 500});
        let get = GetResult {
            exists: false,
            uid: None,
            phase: None,
            at: "2026-11-29T14:00:03.070Z".into(),
        };
        let r = record(
            "kca-x".into(),
            "kca-webhook-target",
            BTreeMap::new(),
            false,
            answer(500, body.clone(), 3061),
            get,
        );
        assert_eq!(r.outcome, Outcome::WebhookTimeout);
        assert_eq!(r.reason.as_deref(), Some("InternalError"));
        assert_eq!(r.message.as_deref(), Some(msg));
        assert_eq!(r.raw_response, body);
        assert_eq!(r.elapsed_ms, 3061);
    }

    #[test]
    fn a_deny_without_reason_keeps_reason_empty() {
        let msg = "admission webhook \"vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label\" denied the request: Policy kca-webhook-label failed: KCA_ENVIRONMENT_REQUIRED";
        let body = serde_json::json!({"kind": "Status", "status": "Failure", "message": msg, "reason": "", "code": 400});
        let get = GetResult {
            exists: false,
            uid: None,
            phase: None,
            at: "t".into(),
        };
        let r = record(
            "kca-x".into(),
            "kca-webhook-target",
            BTreeMap::new(),
            false,
            answer(400, body, 40),
            get,
        );
        assert_eq!(r.outcome, Outcome::ExplicitDeny);
        assert_eq!(r.reason, None);
    }

    #[test]
    fn a_201_is_stored_only_with_a_uid_from_the_get() {
        let body = serde_json::json!({"kind": "Pod", "metadata": {"name": "kca-x", "uid": "u1"}});
        let found = GetResult {
            exists: true,
            uid: Some("u1".into()),
            phase: Some("Pending".into()),
            at: "t".into(),
        };
        let r = record(
            "kca-x".into(),
            "ns",
            BTreeMap::new(),
            false,
            answer(201, body.clone(), 60),
            found,
        );
        assert_eq!(r.outcome, Outcome::Stored);
        assert_eq!(r.message, None);
        let missing = GetResult {
            exists: false,
            uid: None,
            phase: None,
            at: "t".into(),
        };
        let r = record(
            "kca-x".into(),
            "ns",
            BTreeMap::new(),
            false,
            answer(201, body, 60),
            missing,
        );
        assert_ne!(r.outcome, Outcome::Stored);
    }
}
