//! [`acts::Step::Settle`](crate::acts::Step::Settle): after a freeze's first explicit deny, the
//! frozen replica as it is now: the one replica's container through CRI ([`container_after`]),
//! or, of several, a bounded wait for all to be Ready again and the target's pod, process and
//! Lease ([`target_after`]).

use std::cell::RefCell;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;

use crate::cluster::{self, Cluster};
use crate::cri::CriClient;
use crate::derive;
use crate::error::LabError;
use crate::facts;
use crate::facts::a::LeaseFacts;
use crate::facts::b::ProcessIdentity;
use crate::facts::c::TargetAfter;
use crate::labs::common::{ActRecorder, Ui, log_change, wait_each_second};
use crate::messages::act as m;
use crate::steps::investigate::{
    Investigation, api_restart_count, investigate, investigate_pod, kyverno_status, live_replicas,
};
use crate::steps::observe::{leader_lease, lease_facts, pod_ready, read_lease};
use crate::steps::samples::endpoints;
use crate::wait::{Check, Wait, WaitError};
use lab_core::rules::c::{SETTLE_BOUND, SETTLE_NOT_BEFORE};

/// The one replica's container as it is after the resume (CRI), retried briefly: a restarted
/// container may still be starting. The restart count comes from the API (the pod of `inv`, or
/// its successor) when CRI does not answer. Records `cri-container-after` (or its error).
/// Returns the identity after (`None`: not seen) and the restart count.
pub(crate) async fn container_after(
    cluster: &Cluster,
    cri: &mut CriClient,
    rec: &mut ActRecorder,
    inv: &Investigation,
) -> Result<(Option<ProcessIdentity>, u32), LabError> {
    let cri = tokio::sync::Mutex::new(cri);
    let check = || async {
        let mut cri = cri.lock().await;
        Ok::<_, std::convert::Infallible>(match investigate(cluster, &mut cri).await {
            Ok(a) => Check::Done(a),
            Err(e) => Check::NotYet(e),
        })
    };
    let what = "the admission controller's container through CRI";
    let (bound, every) = (Duration::from_secs(5), Duration::from_secs(1));
    let wait = Wait::new(what, bound, every);
    let after = wait.run(check, |_, _| {}, tokio::time::sleep).await;
    let after = after.map_err(|e| match e {
        // The last error: what the record keeps when the container never answered.
        WaitError::TimedOut(t) => t.last,
        WaitError::Failed(never) => match never {},
    });
    match after {
        Ok(a) => {
            rec.raw("cri-container-after", &a.container);
            Ok((Some(a.identity.clone()), a.restart_count))
        }
        Err(e) => {
            rec.raw("cri-container-after-error", e.to_string());
            let count = api_restart_count(cluster, &inv.identity.pod_uid).await?;
            Ok((None, count.unwrap_or(inv.restart_count)))
        }
    }
}

/// The `kyverno` container's restart count, `Ready` and UID of the pod named `name` (`None`:
/// gone).
fn pod_state(pods: &[Pod], name: &str) -> Option<(u32, bool, Option<String>)> {
    let named = |p: &&Pod| p.metadata.name.as_deref() == Some(name);
    let p = pods.iter().find(named)?;
    let restarts = kyverno_status(p).map_or(0, |c| c.restart_count.max(0) as u32);
    Some((restarts, pod_ready(p), p.metadata.uid.clone()))
}

/// After the first explicit deny: waits (bounded, [`SETTLE_BOUND`]) until
/// every replica is `Ready` and a ready endpoint, the Lease names one of them, and no earlier
/// than the Lease's duration plus its retry after the resume (a replica that lost leadership
/// exits within its renew deadline, Kyverno v1.19 `cmd/kyverno/main.go`; kubelet then restarts
/// it), seen on two reads in a row. Every change of state is kept raw (`settle-wait`). Returns
/// the replicas and the milliseconds waited.
async fn settle_after_resume(
    cl: &Cluster,
    ui: &Ui,
    rec: &mut ActRecorder,
    target: &str,
    (resumed_at, n): (&str, usize),
) -> Result<(Vec<Pod>, u64), LabError> {
    let after = chrono::Duration::from_std(SETTLE_NOT_BEFORE).unwrap_or_default();
    let not_before = facts::parse_rfc3339(resumed_at).map(|r| r + after);
    let not_before = not_before.unwrap_or_else(chrono::Utc::now);
    let changes = RefCell::new(Vec::<serde_json::Value>::new());
    let steady = RefCell::new(0u32);
    let start = std::time::Instant::now();
    let check = || async {
        let pods = live_replicas(cl).await?;
        let (eps, _) = endpoints(cl).await?;
        let lease = leader_lease(cl).await?;
        let holder = lease_facts(lease.as_ref())?.holder;
        let ready = pods.iter().filter(|p| pod_ready(p)).count();
        let ready_eps = eps.iter().filter(|e| e.ready).count();
        let target_state = pod_state(&pods, target);
        let holds = |p: &Pod| p.metadata.name.is_some() && p.metadata.name == holder;
        let holder_is_replica = pods.iter().any(holds);
        let late_enough = chrono::Utc::now() >= not_before;
        let ok = pods.len() == n && ready == n && ready_eps == n && holder_is_replica;
        let state = serde_json::json!({
            "pods_listed": pods.len(), "pods_ready": ready, "endpoints_ready": ready_eps,
            "lease_holder": holder, "target_restart_count": target_state.as_ref().map(|t| t.0),
            "target_ready": target_state.as_ref().map(|t| t.1),
        });
        log_change(&mut changes.borrow_mut(), state, &facts::now_rfc3339());
        let mut steady = steady.borrow_mut();
        *steady = if ok { *steady + 1 } else { 0 };
        let text = format!(
            "pods {ready}/{n} Ready, endpoints {ready_eps}/{n} ready, Lease {}, {target} restarts {}",
            holder.as_deref().unwrap_or("?"),
            target_state.map_or("gone".into(), |t| t.0.to_string())
        );
        Ok::<_, LabError>(if ok && *steady >= 2 && late_enough {
            Check::Done(pods)
        } else {
            Check::NotYet(text)
        })
    };
    let what = format!("{n} Ready replicas and ready endpoints after the freeze of {target}");
    let got = wait_each_second(ui, what, SETTLE_BOUND, m::waiting_settle, check).await;
    rec.raw("settle-wait", changes.into_inner());
    Ok((got?, start.elapsed().as_millis() as u64))
}

/// The frozen replica of several after the resume (`resumed_at`, RFC 3339; `replicas`: how many
/// must be Ready, act 3's): the bounded wait for the replicas to settle ([`settle_after_resume`]),
/// the target's pod, process (CRI, `/proc`), restarts and readiness, then the Lease. Records
/// `pods-after` (the pod's UID, restart count and readiness after: [`derive::pod_after`] of it),
/// `cri-container-after` (or its error) and `lease-after`.
pub(crate) async fn target_after(
    cl: &Cluster,
    ui: &Ui,
    cri: &mut CriClient,
    rec: &mut ActRecorder,
    inv: &Investigation,
    (resumed_at, replicas): (&str, usize),
) -> Result<(TargetAfter, LeaseFacts), LabError> {
    let resumed = (resumed_at, replicas);
    let (pods, waited_ms) = settle_after_resume(cl, ui, rec, &inv.pod_name, resumed).await?;
    let settled_at = facts::now_rfc3339();
    let raw_pods = cluster::to_json(&pods)?;
    rec.raw("pods-after", &raw_pods);
    let named = |p: &&Pod| p.metadata.name.as_deref() == Some(inv.pod_name.as_str());
    let target_pod = pods.iter().find(named);
    let identity_after = match target_pod {
        Some(p) => match investigate_pod(p, cri).await {
            Ok(a) => {
                rec.raw("cri-container-after", &a.container);
                Some(a.identity)
            }
            Err(e) => {
                rec.raw("cri-container-after-error", e.to_string());
                None
            }
        },
        None => None,
    };
    let after = derive::pod_after(&raw_pods, &inv.pod_name, inv.restart_count);
    let after = cluster::derived(after)?;
    let lease_after = read_lease(cl, rec, "lease-after").await?;
    let target = TargetAfter {
        pod: inv.pod_name.clone(),
        pod_uid_before: inv.identity.pod_uid.clone(),
        pod_uid_after: after.pod_uid_after,
        restart_count_before: inv.restart_count,
        restart_count_after: after.restart_count_after,
        ready_after: after.ready_after,
        identity_after,
        holds_lease_after: lease_after.holder.as_deref() == Some(inv.pod_name.as_str()),
        settled_at,
        waited_ms,
    };
    Ok((target, lease_after))
}
