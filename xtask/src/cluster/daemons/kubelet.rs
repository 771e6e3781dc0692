//! kubelet: a KubeletConfiguration file plus the few flags that have no config field.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;
use serde_json::json;

use super::{Args, Daemon, DaemonSpec, FAST_TICK, Readiness, STOP_BEFORE_PODS, p, spec};
use crate::cluster::config::Runtime;
use crate::cluster::host::HostFacts;
use crate::cluster::record::ClusterRecord;
use crate::cluster::{ready, sysctl};

/// kubelet in the registry: starts once the API server answers and containerd is ready (its
/// images imported); ready when its Node is `Ready` (the probe's value is the Node's UID). The
/// host sysctls it writes at its start are recorded before and put back once it is ready
/// ([`crate::cluster::sysctl`]). Stops first: it would restart containers.
pub const DAEMON: Daemon = Daemon {
    name: "kubelet",
    programs: &["kubelet"],
    spec: daemon,
    after: &["kube-apiserver", "containerd"],
    before_start: Some(record_host_sysctls),
    ready: Some(Readiness {
        what: |rt| format!("node {} Ready", rt.node_name),
        probe: node_ready,
        tick: FAST_TICK,
        timing: Some("node_ready_ms"),
        on_ready: Some(node_is_ready),
    }),
    host_wide: true,
    stop_order: STOP_BEFORE_PODS - 10,
};

/// kubelet writes host sysctls when it starts (`sysctl` module docs): record them first.
fn record_host_sysctls(_: &Runtime, record: &mut ClusterRecord) -> Result<()> {
    record.host_sysctls = sysctl::record()?;
    record.save()
}

/// GET the Node: Ok(its UID) when its `Ready` condition is `True`, else the condition seen.
fn node_ready(rt: &Runtime) -> Result<String> {
    let admin = rt.kubeconfig("admin");
    let node_name = rt.node_name.clone();
    ready::block_on(async {
        let c = ready::client(&admin).await?;
        let node = Api::<Node>::all(c)
            .get(&node_name)
            .await
            .with_context(|| format!("GET node {node_name}"))?;
        let ready = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
            .map(|c| (c.status.clone(), c.message.clone().unwrap_or_default()));
        match ready {
            Some((s, _)) if s == "True" => Ok(node.metadata.uid.unwrap_or_default()),
            Some((s, m)) => bail!("Ready={s}: {m}"),
            None => bail!("no Ready condition yet"),
        }
    })?
}

/// The Node's UID into the record, then the host sysctls kubelet wrote put back.
fn node_is_ready(record: &mut ClusterRecord, uid: &str, started: Instant) -> Result<()> {
    record.node_uid = Some(uid.to_string());
    record.save()?;
    restore_sysctls_after_kubelet_start(record, started)?;
    record.save()
}

/// Once kubelet has written its host sysctls (every recorded value it changes reads kubelet's
/// value; bounded by 60 s), puts the host's values back: kubelet reads them only at its start
/// (`sysctl` module docs). When the wait runs out the values are left to `down`, and a warning
/// names the values last seen.
///
/// Adds `kubelet_sysctls_seen_ms` (when kubelet's values were seen, only if it changed any) and
/// `host_sysctls_restored_ms` to the record's timings.
fn restore_sysctls_after_kubelet_start(
    record: &mut ClusterRecord,
    started: Instant,
) -> Result<()> {
    let pending = |saved: &[sysctl::SavedSysctl]| -> Vec<String> {
        saved
            .iter()
            .filter(|s| s.before != s.node_value)
            .filter_map(|s| {
                let now = sysctl::read(&s.key).ok().flatten().unwrap_or_default();
                (now != s.node_value)
                    .then(|| format!("{}={} (kubelet sets {})", s.key, now, s.node_value))
            })
            .collect()
    };
    let seen = lab::wait::Wait::new(
        "kubelet's host sysctls",
        Duration::from_secs(60),
        Duration::from_millis(200),
    )
    .blocking(
        || -> Result<lab::wait::Check<(), Vec<String>>, std::convert::Infallible> {
            let left = pending(&record.host_sysctls);
            Ok(if left.is_empty() {
                lab::wait::Check::Done(())
            } else {
                lab::wait::Check::NotYet(left)
            })
        },
        |_, _| {},
    );
    match seen {
        Ok(()) => {
            if record.host_sysctls.iter().any(|s| s.before != s.node_value) {
                record
                    .timings_ms
                    .insert("kubelet_sysctls_seen_ms".into(), since_ms(started));
            }
        }
        Err(lab::wait::WaitError::TimedOut(t)) => {
            crate::status_line!(
                "   warning: kubelet has not written these host sysctls {}s after the node became Ready: {}; `down` restores what it finds changed",
                t.bound.as_secs(),
                t.last.join(", ")
            );
            return Ok(());
        }
        Err(lab::wait::WaitError::Failed(never)) => match never {},
    }
    let mut errors = Vec::new();
    for r in sysctl::restore(&record.host_sysctls) {
        match r {
            Ok(sysctl::Restored::PutBack { key, from, to }) => {
                crate::status_line!("   host sysctl {key}: kubelet set {from}, put back {to}")
            }
            Ok(sysctl::Restored::LeftAlone { key, now }) => crate::status_line!(
                "   host sysctl {key} is {now}, neither the recorded value nor kubelet's: left alone"
            ),
            Ok(sysctl::Restored::Unchanged) => {}
            Err(e) => errors.push(format!("{e:#}")),
        }
    }
    if !errors.is_empty() {
        bail!(
            "restoring host sysctls after kubelet's start: {}",
            errors.join("; ")
        );
    }
    record
        .timings_ms
        .insert("host_sysctls_restored_ms".into(), since_ms(started));
    Ok(())
}

/// Milliseconds since `started` (the record's timings).
fn since_ms(started: Instant) -> u64 {
    started.elapsed().as_millis() as u64
}

/// kubelet's flags (v1.35.8).
pub fn args(rt: &Runtime) -> Args {
    Args::from([
        ("config", p(rt.path("kubelet-config.yaml"))),
        ("kubeconfig", p(rt.kubeconfig("kubelet"))),
        ("root-dir", p(rt.kubelet_root())),
        ("node-ip", rt.net.node_ip().to_string()),
        ("hostname-override", rt.node_name.clone()),
    ])
}

/// The kubelet daemon.
pub fn daemon(rt: &Runtime) -> DaemonSpec {
    spec(rt, "kubelet", "kubelet", &args(rt))
}

/// The KubeletConfiguration (kubelet.config.k8s.io/v1beta1).
///
/// - `cgroupDriver: cgroupfs` (no systemd here), `cgroupRoot: /kca-<name>` so two clusters' kubelets
///   never manage each other's pod cgroups;
/// - `failCgroupV1: false` only when the host is on cgroup v1: kubelet 1.35 refuses v1 otherwise
///   (`docs/embedded-node.md`, pitfall 2; KubeletConfiguration v1beta1 `failCgroupV1`);
/// - webhook authentication and authorization, client CA = the cluster CA;
/// - eviction thresholds relaxed and image GC effectively off: the node shares a busy disk and
///   its images cannot be pulled again;
/// - pod logs under the state dir.
pub fn config(rt: &Runtime, host: &HostFacts) -> serde_json::Value {
    let mut v = json!({
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "authentication": {
            "anonymous": {"enabled": false},
            "webhook": {"enabled": true},
            "x509": {"clientCAFile": p(rt.pki_file("ca.crt"))},
        },
        "authorization": {"mode": "Webhook"},
        "cgroupDriver": "cgroupfs",
        "cgroupRoot": rt.cgroup_root,
        "containerRuntimeEndpoint": rt.cri_endpoint(),
        "address": rt.net.node_ip().to_string(),
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": 10248,
        "readOnlyPort": 0,
        "tlsCertFile": p(rt.pki_file("kubelet-serving.crt")),
        "tlsPrivateKeyFile": p(rt.pki_file("kubelet-serving.key")),
        "clusterDomain": "cluster.local",
        "failSwapOn": false,
        "podLogsDir": p(rt.path("pod-logs")),
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "nodefs.inodesFree": "1%",
            "imagefs.available": "1%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": false,
        "resolvConf": "/etc/resolv.conf",
    });
    if host.cgroup_v1 {
        v["failCgroupV1"] = json!(false);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_v1_switch_only_on_v1() {
        let rt = crate::cluster::daemons::test_runtime();
        let v1 = config(
            &rt,
            &HostFacts {
                cap_sys_resource: false,
                cgroup_v1: true,
            },
        );
        assert_eq!(v1["failCgroupV1"], false);
        let v2 = config(
            &rt,
            &HostFacts {
                cap_sys_resource: false,
                cgroup_v1: false,
            },
        );
        assert!(v2.get("failCgroupV1").is_none());
        assert_eq!(v1["cgroupDriver"], "cgroupfs");
        assert_eq!(
            v1["containerRuntimeEndpoint"],
            "unix:///s/t/containerd/containerd.sock"
        );
        assert_eq!(v1["authentication"]["webhook"]["enabled"], true);
        let a = args(&rt);
        assert_eq!(a["node-ip"], "10.44.0.2");
        assert_eq!(a["hostname-override"], "kca-t");
    }
}
