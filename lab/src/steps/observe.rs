//! What the acts read back, as facts: a Deployment, a pod, the Lease `kyverno`, the webhook
//! registrations (every lab's acts; lab A's recovery timeline and lab C's replicas).

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;

use crate::cluster::{self, Cluster};
use crate::error::LabError;
use crate::facts::a::{DeploymentFacts, LeaseFacts};
use crate::facts::{self, WebhookFacts};
use crate::labs::common::webhook_facts;

/// What identifies the lab policy's webhook in a webhook name (Kyverno names it
/// `vpol.validate.kyverno.svc-{fail,ignore}[-finegrained]-<policy>`; kyverno v1.19.1
/// `pkg/controllers/webhook/validating.go`).
pub const POLICY_WEBHOOK_MARK: &str = cluster::POLICY_NAME;

/// A Kubernetes time (`MicroTime`, `Time`) as the RFC 3339 string the API server sent.
fn ts<T: serde::Serialize>(x: &Option<T>) -> Option<String> {
    x.as_ref()
        .and_then(|v| serde_json::to_value(v).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
}

/// A Deployment's facts: its name and UID, `spec.replicas` (absent: 1, as the API server
/// defaults it) and `status.readyReplicas` (absent: 0).
pub(crate) fn deployment_facts(d: &Deployment) -> DeploymentFacts {
    DeploymentFacts {
        namespace: d.metadata.namespace.clone().unwrap_or_default(),
        name: d.metadata.name.clone().unwrap_or_default(),
        uid: d.metadata.uid.clone().unwrap_or_default(),
        replicas: d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1).max(0) as u32,
        ready_replicas: d
            .status
            .as_ref()
            .and_then(|s| s.ready_replicas)
            .unwrap_or(0)
            .max(0) as u32,
    }
}

/// A pod as seen now ([`crate::probe::pod_observation`], the one mapping of a pod to its facts).
pub(crate) use crate::probe::pod_observation;

/// The Lease `kyverno` (the leader election of Kyverno's admission controller) as read now:
/// holder, acquire and renew times, duration and transitions (`None`: no Lease).
pub(crate) fn lease_facts(l: Option<&Lease>) -> LeaseFacts {
    let spec = l.and_then(|l| l.spec.as_ref());
    LeaseFacts {
        namespace: cluster::KYVERNO_NAMESPACE.into(),
        name: cluster::LEADER_LEASE.into(),
        holder: spec.and_then(|s| s.holder_identity.clone()),
        acquire_time: spec.and_then(|s| ts(&s.acquire_time)),
        renew_time: spec.and_then(|s| ts(&s.renew_time)),
        lease_duration_seconds: spec
            .and_then(|s| s.lease_duration_seconds)
            .map(|v| v.max(0) as u32),
        lease_transitions: spec
            .and_then(|s| s.lease_transitions)
            .map(|v| v.max(0) as u32),
        at: facts::now_rfc3339(),
    }
}

/// The ValidatingWebhookConfigurationList exactly as the API server returned it
/// ([`Cluster::webhook_configurations_raw`]).
pub async fn webhook_configurations_raw(cl: &Cluster) -> Result<serde_json::Value, LabError> {
    cl.webhook_configurations_raw().await
}

/// The names of every webhook in a raw ValidatingWebhookConfigurationList, as
/// `configuration/webhook`.
pub fn webhook_names(list: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    for item in list
        .get("items")
        .and_then(|i| i.as_array())
        .into_iter()
        .flatten()
    {
        let cfg = item
            .pointer("/metadata/name")
            .and_then(|n| n.as_str())
            .unwrap_or("");
        for wh in item
            .get("webhooks")
            .and_then(|w| w.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(n) = wh.get("name").and_then(|n| n.as_str()) {
                out.push(format!("{cfg}/{n}"));
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
                return Ok(Some(webhook_facts(c, wh)));
            }
        }
    }
    Ok(None)
}
