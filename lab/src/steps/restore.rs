//! [`acts::Step::Restore`](crate::acts::Step::Restore): a scale attempt healed (its healer
//! stood down, the original count written back on a live read, [`scale_back`]) and the bounded
//! wait for the original count of Ready replicas ([`wait_original_count`]).

use std::cell::RefCell;

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingWebhook, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;

use crate::cluster::{self, Cluster};
use crate::derive;
use crate::error::LabError;
use crate::facts;
use crate::facts::c::{Act3Facts, ScaleBackFacts};
use crate::faults::heal;
use crate::inputs;
use crate::labs::common::{ActRecorder, Env, Ui, log_change, wait_each_second};
use crate::messages::act as m;
use crate::steps::observe::{leader_lease, lease_facts, pod_ready};
use crate::wait::Check;
use lab_core::rules::c::SCALE_BACK_BOUND;

/// Act 3's scale attempt healed (its healer
/// stood down, the original count written back on a live read), read back from the attempt's
/// heal record. Records the Deployment before, the heal's summary and record; the facts are
/// [`derive::scale_back`] of the record, with the Deployment's replicas before
/// ([`derive::deployment`] of its record) and the original count written back.
///
/// Errors: [`LabError::FaultRefused`] when the heal did not close act 3's attempt.
pub(crate) async fn scale_back(
    env: &Env,
    cl: &Cluster,
    rec: &mut ActRecorder,
    a3: &Act3Facts,
) -> Result<ScaleBackFacts, LabError> {
    let dep_before = cluster::to_json(&cl.admission_deployment().await?)?;
    rec.raw("deployment-before", &dep_before);
    let replicas_before = cluster::derived(derive::deployment(&dep_before))?.replicas;
    env.ui.step(m::SCALING_BACK);
    let summary = heal::heal_workdir(&env.workdir, Some(cl), heal::SCALE_BACK_COMMAND).await;
    rec.raw("scale-back-heal", &summary.healed);
    if !summary.errors.is_empty() {
        rec.raw("scale-back-errors", &summary.errors);
    }
    let dir = crate::faults::attempt::faults_root(env.workdir.root()).join(&a3.scale.fault_id);
    let (errors, live) = (&summary.errors, &summary.live);
    let open: Vec<String> = errors.iter().chain(live).cloned().collect();
    let record = heal::read_heal(&dir).ok_or_else(|| LabError::FaultRefused {
        reason: format!(
            "act 3's scale attempt {} was not closed by the heal: {}",
            a3.scale.fault_id,
            open.join("; ")
        ),
    })?;
    let record = cluster::to_json(&record)?;
    rec.raw("scale-attempt-heal", &record);
    let original = inputs::OriginalReplicas::VALUE;
    cluster::derived(derive::scale_back(&record, replicas_before, original))
}

/// The policy's webhook as registered: its configuration and the webhook.
pub(crate) type Registered = (ValidatingWebhookConfiguration, ValidatingWebhook);

/// Waits (bounded, [`SCALE_BACK_BOUND`]) until the Deployment asks for the
/// original count, that many live replicas are `Ready` (the others gone), one of them holds the
/// Lease (a leader scaled away keeps naming itself until the Lease expires, 12 s, and another
/// takes it), and the policy's Ignore webhook is registered. Every change of state is kept raw
/// (`scale-back-wait`).
pub(crate) async fn wait_original_count(
    cl: &Cluster,
    ui: &Ui,
    rec: &mut ActRecorder,
) -> Result<(Vec<Pod>, Deployment, Registered), LabError> {
    let n = inputs::OriginalReplicas::VALUE as usize;
    let name = cluster::fine_grained_webhook_name("Ignore", cluster::POLICY_NAME);
    let changes = RefCell::new(Vec::<serde_json::Value>::new());
    let check = || async {
        let dep = cl.admission_deployment().await?;
        let all = cl.admission_pods().await?;
        let up = |p: &&Pod| p.metadata.deletion_timestamp.is_none();
        let live: Vec<Pod> = all.iter().filter(up).cloned().collect();
        let ready = live.iter().filter(|p| pod_ready(p)).count();
        let webhook = cl.find_webhook(&name).await?;
        let lease = leader_lease(cl).await?;
        let holder = lease_facts(lease.as_ref())?.holder;
        let holds = |p: &Pod| p.metadata.name.is_some() && p.metadata.name == holder;
        let leads = live.iter().any(holds);
        let wanted = dep.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1) as usize;
        let state = serde_json::json!({
            "spec_replicas": wanted, "pods_listed": all.len(), "pods_live": live.len(),
            "pods_ready": ready, "registration": webhook.is_some(), "lease_holder": holder,
        });
        log_change(&mut changes.borrow_mut(), state, &facts::now_rfc3339());
        let registration = webhook.as_ref().map_or("absent", |_| "present");
        let text = format!(
            "spec.replicas {wanted}, pods {} ({} live, {ready} Ready), registration {registration}, Lease {}",
            all.len(),
            live.len(),
            holder.as_deref().unwrap_or("?")
        );
        Ok::<_, LabError>(match webhook {
            Some(w) if wanted == n && all.len() == n && live.len() == n && ready == n && leads => {
                Check::Done((live, dep, w))
            }
            _ => Check::NotYet(text),
        })
    };
    let what = format!("{n} Ready admission-controller replica(s) and the Ignore registration");
    let got = wait_each_second(ui, what, SCALE_BACK_BOUND, m::waiting_scale_back, check).await;
    rec.raw("scale-back-wait", changes.into_inner());
    got
}
