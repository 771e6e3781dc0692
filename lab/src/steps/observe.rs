//! What the acts read back, as facts: a Deployment, a pod, the Lease `kyverno`, the webhook
//! registrations (every lab's acts; lab A's recovery timeline and lab C's replicas).

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Pod;

use crate::cluster::derived;
use crate::cluster::{self, Cluster};
use crate::derive;
use crate::error::LabError;
use crate::facts::a::{DeploymentFacts, LeaseFacts};
use crate::facts::c::ReplicaFacts;
use crate::facts::{self, WebhookFacts};
use crate::labs::common::{ActRecorder, webhook_facts};

/// What identifies the lab policy's webhook in a webhook name (Kyverno names it
/// `vpol.validate.kyverno.svc-{fail,ignore}[-finegrained]-<policy>`; kyverno v1.19.1
/// `pkg/controllers/webhook/validating.go`).
pub const POLICY_WEBHOOK_MARK: &str = cluster::POLICY_NAME;

/// A Deployment's facts, [`derive::deployment`] of the object as the API server sent it (the
/// one mapping the grader recomputes).
///
/// Errors: [`LabError::Kube`] when the object does not serialize or derive.
pub(crate) fn deployment_facts(d: &Deployment) -> Result<DeploymentFacts, LabError> {
    derived(derive::deployment(&cluster::to_json(d)?))
}

/// A pod as seen now ([`crate::probe::pod_observation`], the one mapping of a pod to its facts).
pub(crate) use crate::probe::pod_observation;

/// The names of `pods`, in their order.
pub(crate) fn pod_names(pods: &[Pod]) -> Vec<String> {
    let names = pods.iter().filter_map(|p| p.metadata.name.clone());
    names.collect()
}

/// Whether `p`'s `Ready` condition is `True`.
pub(crate) fn pod_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// One of several replicas as seen now: its pod's facts, whether it is `Ready`, its `podIP`,
/// [`derive::replica`] of the object as the API server sent it (the one mapping the grader
/// recomputes).
///
/// Errors: [`LabError::Kube`] when the pod does not serialize or derive.
pub(crate) fn replica_facts(p: &Pod) -> Result<ReplicaFacts, LabError> {
    derived(derive::replica(&cluster::to_json(p)?, facts::now_rfc3339()))
}

/// The Lease `kyverno` (the leader election of Kyverno's admission controller) as read now,
/// [`derive::lease`] of the object as the API server sent it (`None`: no Lease), read now.
///
/// Errors: [`LabError::Kube`] when the object does not serialize or derive.
pub(crate) fn lease_facts(l: Option<&Lease>) -> Result<LeaseFacts, LabError> {
    derived(derive::lease(&cluster::to_json(&l)?, facts::now_rfc3339()))
}

/// The Lease `kyverno` as the API server sends it now (`None`: no Lease).
pub(crate) async fn leader_lease(cl: &Cluster) -> Result<Option<Lease>, LabError> {
    cl.lease(cluster::KYVERNO_NAMESPACE, cluster::LEADER_LEASE)
        .await
}

/// The Lease `kyverno` read now ([`leader_lease`]), recorded raw as `what`, as facts
/// ([`lease_facts`], derived right after the read).
pub(crate) async fn read_lease(
    cl: &Cluster,
    rec: &mut ActRecorder,
    what: &str,
) -> Result<LeaseFacts, LabError> {
    let raw = leader_lease(cl).await?;
    rec.raw(what, &raw);
    lease_facts(raw.as_ref())
}

/// The ValidatingWebhookConfigurationList exactly as the API server returned it
/// ([`Cluster::webhook_configurations_raw`]).
pub async fn webhook_configurations_raw(cl: &Cluster) -> Result<serde_json::Value, LabError> {
    cl.webhook_configurations_raw().await
}

/// The names of every webhook in a raw ValidatingWebhookConfigurationList, as
/// `configuration/webhook`.
pub fn webhook_names(list: &serde_json::Value) -> Vec<String> {
    fn array(v: Option<&serde_json::Value>) -> impl Iterator<Item = &serde_json::Value> {
        v.and_then(|v| v.as_array()).into_iter().flatten()
    }
    let mut out = Vec::new();
    for item in array(list.get("items")) {
        let cfg = item.pointer("/metadata/name").and_then(|n| n.as_str());
        for wh in array(item.get("webhooks")) {
            if let Some(n) = wh.get("name").and_then(|n| n.as_str()) {
                out.push(format!("{}/{n}", cfg.unwrap_or("")));
            }
        }
    }
    out
}

/// Whether a raw ValidatingWebhookConfigurationList holds a webhook whose name contains the
/// policy's name ([`POLICY_WEBHOOK_MARK`]): the registration of the lab's policy.
pub fn policy_webhook_in(list: &serde_json::Value) -> bool {
    webhook_names(list).iter().any(|n| {
        n.rsplit('/')
            .next()
            .is_some_and(|w| w.contains(POLICY_WEBHOOK_MARK))
    })
}

/// The policy's webhook (name contains [`POLICY_WEBHOOK_MARK`]) as registered now, if any.
pub(crate) async fn policy_webhook(cl: &Cluster) -> Result<Option<WebhookFacts>, LabError> {
    let configs = cl.webhook_configurations().await?;
    for c in &configs {
        for wh in c.webhooks.iter().flatten() {
            if wh.name.contains(POLICY_WEBHOOK_MARK) {
                return Ok(Some(webhook_facts(c, wh)?));
            }
        }
    }
    Ok(None)
}
