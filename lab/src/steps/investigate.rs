//! [`acts::Step::Investigate`](crate::acts::Step::Investigate): the admission controller's pod
//! (API), its `kyverno` container (CRI) and its process (`/proc`), for the one replica
//! ([`investigate`]) or a named one of several ([`replica_now`]); and the checks before any fault
//! ([`check_fault_preconditions`]).

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

use crate::acts::Target;
use crate::cluster::{self, Cluster};
use crate::cri::CriClient;
use crate::error::LabError;
use crate::facts::a::LeaseFacts;
use crate::facts::b::ProcessIdentity;
use crate::labs::common::{ActRecorder, expect_same};
use crate::steps::observe::{leader_lease, lease_facts, pod_names, read_lease};

/// The controller's main container name in its pod.
pub(crate) const CONTAINER: &str = "kyverno";

/// The admission controller process as found now: the pod (API), the container (CRI) and the
/// process (`/proc`).
#[derive(Debug, Clone, PartialEq)]
pub struct Investigation {
    /// Pod name.
    pub pod_name: String,
    /// The process identity.
    pub identity: ProcessIdentity,
    /// Restart count of the `kyverno` container (pod status).
    pub restart_count: u32,
    /// kubelet's restart attempt of the container (CRI `metadata.attempt`).
    pub attempt: u32,
    /// `/proc/PID/stat` state letter.
    pub state: char,
    /// The CRI answer, verbatim-ish (typed).
    pub container: crate::cri::ContainerIdentity,
}

/// Finds the admission controller process: exactly one running pod of the Deployment (API),
/// its `kyverno` container through CRI (checked against the pod status's `containerID`), the
/// host PID, and its state and start time from `/proc`.
pub async fn investigate(
    cluster: &Cluster,
    cri: &mut CriClient,
) -> Result<Investigation, LabError> {
    let pods = running_replicas(cluster).await?;
    let running = pods.len().to_string();
    expect_same("running admission-controller pods", "1", &running)?;
    investigate_pod(&pods[0], cri).await
}

/// [`investigate`] for one given pod of the admission controller (lab C reads each replica's):
/// its `kyverno` container through CRI (checked against the pod status's `containerID`), the
/// host PID, and its state and start time from `/proc`.
pub async fn investigate_pod(
    pod: &k8s_openapi::api::core::v1::Pod,
    cri: &mut CriClient,
) -> Result<Investigation, LabError> {
    let pod_uid = pod.metadata.uid.clone().unwrap_or_default();
    let status = kyverno_status(pod);
    let mut container = cri.find_admission_container(Some(&pod_uid)).await?;
    // The k3s backend's node runs in a container: its CRI reports PIDs of that container's PID
    // namespace; map to the host PID the pidfd needs (identity elsewhere; see crate::pidmap).
    container.pid = crate::pidmap::cri_pid_to_host(container.pid)?;
    if let Some(api_id) = status.and_then(|s| s.container_id.as_deref()) {
        let api_id = api_id.split_once("://").map(|(_, id)| id).unwrap_or(api_id);
        if api_id != container.container_id {
            return Err(LabError::ClusterMismatch {
                what: "admission-controller container id (pod status vs CRI)".into(),
                expected: api_id.to_owned(),
                found: container.container_id.clone(),
            });
        }
    }
    let stat = crate::faults::process::read_stat(container.pid)?.ok_or_else(|| {
        LabError::FaultRefused {
            reason: format!("process {} reported by CRI is gone", container.pid),
        }
    })?;
    // The process as CRI names it: [`crate::derive::cri_container`] of the answer the acts
    // record (`cri-container*`), the mapping the grader recomputes; the start time is `/proc`'s.
    let cri = cluster::derived(crate::derive::cri_container(&cluster::to_json(&container)?))?;
    Ok(Investigation {
        pod_name: pod.metadata.name.clone().unwrap_or_default(),
        identity: ProcessIdentity {
            pid: cri.identity.pid,
            pid_start_time_ticks: stat.start_time_ticks,
            container_id: cri.identity.container_id,
            pod_uid: cri.identity.pod_uid,
        },
        restart_count: status.map(|s| s.restart_count.max(0) as u32).unwrap_or(0),
        attempt: container.attempt,
        state: stat.state,
        container,
    })
}

/// Checks, before any fault: the lab mark, and the plan's node and deployment UIDs against the
/// live ones. Returns the mark.
pub(crate) async fn check_fault_preconditions(
    cluster: &Cluster,
    (node_uid, deployment_uid): (&str, &str),
) -> Result<cluster::LabMark, LabError> {
    let mark = cluster.lab_mark().await?;
    let node = cluster.node().await?;
    let what = "node uid (freeze-plan.json $.node_uid)";
    expect_same(what, node_uid, &node.uid)?;
    let dep = cluster.admission_deployment().await?;
    let dep_uid = dep.metadata.uid.unwrap_or_default();
    let what = "deployment uid (freeze-plan.json $.deployment_uid)";
    expect_same(what, deployment_uid, &dep_uid)?;
    Ok(mark)
}

/// The `kyverno` container's restart count in the admission-controller pod with UID `pod_uid`,
/// read from the API (`None` when that pod is gone).
pub(crate) async fn api_restart_count(
    cluster: &Cluster,
    pod_uid: &str,
) -> Result<Option<u32>, LabError> {
    let pods = cluster.admission_pods().await?;
    let same = |p: &&Pod| p.metadata.uid.as_deref() == Some(pod_uid);
    let status = pods.iter().find(same).and_then(kyverno_status);
    Ok(status.map(|c| c.restart_count.max(0) as u32))
}

/// The `kyverno` container's status in pod `p` (`None`: not reported).
pub(crate) fn kyverno_status(p: &Pod) -> Option<&ContainerStatus> {
    let statuses = p.status.as_ref()?.container_statuses.as_ref()?;
    statuses.iter().find(|c| c.name == CONTAINER)
}

/// The admission controller's live pods (not terminating).
pub(crate) async fn live_replicas(cl: &Cluster) -> Result<Vec<Pod>, LabError> {
    Ok(cl
        .admission_pods()
        .await?
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .collect())
}

/// The admission controller's live pods ([`live_replicas`]) that are `Running`.
pub(crate) async fn running_replicas(cl: &Cluster) -> Result<Vec<Pod>, LabError> {
    let running = |p: &Pod| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
    let live = live_replicas(cl).await?;
    Ok(live.into_iter().filter(running).collect())
}

/// The live admission-controller pod named `pod`, investigated through CRI and `/proc`
/// ([`investigate_pod`]).
///
/// Errors: [`LabError::ClusterMismatch`] naming the live pods when none is named `pod`.
pub(crate) async fn replica_now(
    cl: &Cluster,
    cri: &mut crate::cri::CriClient,
    pod: &str,
) -> Result<Investigation, LabError> {
    let pods = live_replicas(cl).await?;
    let absent = || LabError::ClusterMismatch {
        what: "the admission-controller pod to freeze".into(),
        expected: pod.to_owned(),
        found: pod_names(&pods).join(", "),
    };
    let same = |p: &&Pod| p.metadata.name.as_deref() == Some(pod);
    let named = pods.iter().find(same);
    investigate_pod(named.ok_or_else(absent)?, cri).await
}

/// The follower act 6 of lab C freezes ([`Target::Follower`](crate::acts::Target::Follower)):
/// the first replica, by pod name, that the Lease `kyverno` does not name now, read as
/// [`replica_now`] does. The Lease read is recorded as `lease-before`. Returns the Lease's facts
/// and the follower.
///
/// Errors: [`LabError::ClusterMismatch`] when every live replica is the holder; the reads' errors.
pub(crate) async fn follower_now(
    cl: &Cluster,
    cri: &mut CriClient,
    rec: &mut ActRecorder,
) -> Result<(LeaseFacts, Investigation), LabError> {
    let lease = read_lease(cl, rec, "lease-before").await?;
    let mut names = pod_names(&live_replicas(cl).await?);
    names.retain(|n| Some(n) != lease.holder.as_ref());
    names.sort();
    let none = || LabError::ClusterMismatch {
        what: "a replica the Lease kyverno does not name".into(),
        expected: "at least one follower".into(),
        found: "none".into(),
    };
    let follower = names.into_iter().next().ok_or_else(none)?;
    let inv = replica_now(cl, cri, &follower).await?;
    Ok((lease, inv))
}

/// The replica a freeze act stops now, by the registry's [`Target`] (`Investigate { target }`):
/// the one replica ([`investigate`]), the Lease's holder ([`replica_now`]; the Lease read first,
/// recorded as `lease-before`, must still name `act4`'s pod) or a follower ([`follower_now`]).
/// With `act4` (act 5: the process act 4 investigated, `(pod name, identity)`), the process
/// found must be that one. Returns the Lease read (none for the one replica) and the process.
///
/// Errors: [`LabError::FaultRefused`] when the leader moved or the process changed since act 4;
/// the reads' errors.
pub(crate) async fn target_now(
    cl: &Cluster,
    cri: &mut CriClient,
    rec: &mut ActRecorder,
    target: Target,
    act4: Option<(&str, &ProcessIdentity)>,
) -> Result<(Option<LeaseFacts>, Investigation), LabError> {
    // Said when the process act 4 found is gone (several replicas: the scale stays until healed).
    let heal = " (heal first: it puts the original replica count back)";
    let (what, heal) = match target {
        Target::One => ("the admission controller process", ""),
        Target::Leader => ("the leader's process", heal),
        Target::Follower => ("the follower's process", heal),
    };
    let (lease, inv) = match target {
        Target::One => (None, investigate(cl, cri).await?),
        Target::Follower => {
            let (lease, inv) = follower_now(cl, cri, rec).await?;
            (Some(lease), inv)
        }
        Target::Leader => {
            let raw_lease = leader_lease(cl).await?;
            let lease = lease_facts(raw_lease.as_ref())?;
            let leader = act4.map(|(pod, _)| pod.to_owned());
            let leader = leader.or_else(|| lease.holder.clone()).unwrap_or_default();
            if lease.holder.as_deref() != Some(leader.as_str()) {
                return Err(LabError::FaultRefused {
                    reason: format!(
                        "the Lease kyverno is held by {:?}, act 4 found the leader {leader}; act 4 cannot be run again in this work directory: reproduce in a fresh lab{heal}",
                        lease.holder
                    ),
                });
            }
            rec.raw("lease-before", &raw_lease);
            (Some(lease), replica_now(cl, cri, &leader).await?)
        }
    };
    if let Some((pod, before)) = act4.filter(|(_, id)| **id != inv.identity) {
        let now = &inv.identity;
        return Err(LabError::FaultRefused {
            reason: format!(
                "{what} changed since act 4 (act 4: pod {pod} container {} pid {} starttime {}; now: pod {} container {} pid {} starttime {}); reproduce in a fresh lab{heal}",
                before.container_id,
                before.pid,
                before.pid_start_time_ticks,
                inv.pod_name,
                now.container_id,
                now.pid,
                now.pid_start_time_ticks
            ),
        });
    }
    Ok((lease, inv))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The status read is the `kyverno` container's (its restart count), not another container's.
    #[test]
    fn kyverno_status_is_the_kyverno_containers() {
        let status = |name: &str, n: i32| {
            serde_json::json!({"name": name, "restartCount": n, "ready": true,
                "image": "i", "imageID": "i"})
        };
        let statuses = [status("sidecar", 7), status(CONTAINER, 2)];
        let pod = serde_json::json!({"status": {"containerStatuses": statuses}});
        let pod: Pod = serde_json::from_value(pod).unwrap();
        assert_eq!(kyverno_status(&pod).map(|c| c.restart_count), Some(2));
        assert!(kyverno_status(&Pod::default()).is_none());
    }
}
