//! `down` leaves nothing behind: after a fresh cluster with Kyverno running is torn down, no
//! process of the cluster, no mount under its state dir, no cgroup, no network namespace, no veth,
//! no host iptables rule mentioning its addresses, and no new file or directory outside the state
//! dir remain. Before `down`, the same probes must see the cluster (so none of them is vacuous).
//!
//! Needs Linux and root; fails (never skips) otherwise.

use std::collections::BTreeSet;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use serde_json::json;
use tests::{LabCluster, record_figure};
use xtask::cluster::config::default_state_root;
use xtask::cluster::host::cgroup_mounts;
use xtask::cluster::netns;
use xtask::cluster::record::ClusterRecord;
use xtask::cluster::teardown::{cgroup_dirs, container_log_links, mounts_under, stray_pids};

/// Paths where Kubernetes node programs put files by default; none may appear because of a cluster.
const WATCHED_PATHS: &[&str] = &[
    "/var/lib/kubelet",
    "/var/log/pods",
    "/var/log/containers",
    "/run/containerd",
    "/var/run/containerd",
    "/var/lib/containerd",
    "/var/lib/cni",
    "/etc/cni",
    "/opt/cni",
    "/opt/containerd",
    "/var/run/nri",
    "/etc/nri",
    "/etc/kubernetes",
    "/var/run/kubernetes",
    "/root/.kube",
    "/root/.cache/helm",
    "/root/.config/helm",
];

/// What the host looks like outside the state dir.
#[derive(Debug, PartialEq, Eq)]
struct HostSnapshot {
    netns: BTreeSet<String>,
    links: BTreeSet<String>,
    iptables: BTreeSet<String>,
    paths: BTreeSet<String>,
    mounts: BTreeSet<String>,
    cgroup_top: BTreeSet<String>,
    run_dirs: BTreeSet<String>,
}

/// Entries of directories where a node's programs put sockets and state by default.
fn run_dir_entries() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for d in [
        "/run/containerd",
        "/run/containerd/s",
        "/run/containerd/runc",
        "/run/netns",
        "/var/lib/cni",
        "/var/log/containers",
    ] {
        if let Ok(rd) = std::fs::read_dir(d) {
            out.extend(rd.flatten().map(|e| e.path().display().to_string()));
        }
    }
    out
}

fn lines(cmd: &str, args: &[&str]) -> BTreeSet<String> {
    Command::new(cmd)
        .args(args)
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn snapshot() -> Result<HostSnapshot> {
    let links = lines("ip", &["-o", "link", "show"])
        .into_iter()
        .filter_map(|l| {
            l.split(':')
                .nth(1)
                .map(|n| n.trim().split('@').next().unwrap_or("").to_string())
        })
        .collect();
    // Host iptables, both backends, without counters; lines that could only come from a cluster.
    let mut iptables = BTreeSet::new();
    for bin in ["iptables-nft-save", "iptables-legacy-save"] {
        for l in lines(bin, &[]) {
            if l.starts_with('#') || l.starts_with('*') || l == "COMMIT" {
                continue;
            }
            let l = l.split(" [").next().unwrap_or(&l).to_string();
            iptables.insert(format!("{bin}: {l}"));
        }
    }
    let paths = WATCHED_PATHS
        .iter()
        .filter(|p| std::path::Path::new(p).exists())
        .map(|p| p.to_string())
        .collect();
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")
        .context("reading mountinfo")?
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4).map(str::to_string))
        .collect();
    let mut cgroup_top = BTreeSet::new();
    for m in cgroup_mounts()? {
        for e in std::fs::read_dir(&m)
            .with_context(|| format!("reading {}", m.display()))?
            .flatten()
        {
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                cgroup_top.insert(e.path().display().to_string());
            }
        }
    }
    Ok(HostSnapshot {
        netns: lines("ip", &["netns", "list"]),
        links,
        iptables,
        paths,
        mounts,
        cgroup_top,
        run_dirs: run_dir_entries(),
    })
}

fn diff(label: &str, before: &BTreeSet<String>, after: &BTreeSet<String>, out: &mut Vec<String>) {
    for x in after.difference(before) {
        out.push(format!("{label}: new {x}"));
    }
}

/// Processes whose command line or cwd refers to the state dir.
fn processes_mentioning(state_dir: &std::path::Path) -> Vec<String> {
    let s = state_dir.display().to_string();
    let me = std::process::id() as i32;
    procfs::process::all_processes()
        .map(|ps| {
            ps.flatten()
                .filter(|p| p.pid != me)
                .filter_map(|p| {
                    let cmd = p.cmdline().ok()?.join(" ");
                    (cmd.contains(&s)).then(|| format!("{} {}", p.pid, cmd))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Everything of cluster `rec` that remains, compared with the host snapshot taken before `up`.
fn leftovers(rec: &ClusterRecord, before: &HostSnapshot) -> Result<Vec<String>> {
    let mut left = Vec::new();
    for p in &rec.processes {
        if p.alive() {
            left.push(format!("process {} (pid {}) still runs", p.name, p.pid));
        }
    }
    for (pid, cmd) in stray_pids(rec) {
        left.push(format!("container or shim process {pid}: {cmd}"));
    }
    for p in processes_mentioning(&rec.state_dir) {
        left.push(format!("process mentioning the state dir: {p}"));
    }
    for m in mounts_under(&rec.state_dir) {
        left.push(format!("mount {}", m.display()));
    }
    for d in cgroup_dirs(&rec.cgroup_root) {
        left.push(format!("cgroup {}", d.display()));
    }
    for m in cgroup_mounts()? {
        if m.join("kubepods").exists() {
            left.push(format!("cgroup {}", m.join("kubepods").display()));
        }
    }
    if netns::exists(&rec.netns) {
        left.push(format!("network namespace {}", rec.netns));
    }
    if std::path::Path::new("/sys/class/net")
        .join(rec.net.host_veth())
        .exists()
    {
        left.push(format!("veth {}", rec.net.host_veth()));
    }
    for l in container_log_links(&rec.state_dir) {
        left.push(format!("log symlink {}", l.display()));
    }
    let after = snapshot()?;
    diff("netns", &before.netns, &after.netns, &mut left);
    diff("link", &before.links, &after.links, &mut left);
    diff(
        "host iptables",
        &before.iptables,
        &after.iptables,
        &mut left,
    );
    diff("path", &before.paths, &after.paths, &mut left);
    diff("mount", &before.mounts, &after.mounts, &mut left);
    diff("cgroup", &before.cgroup_top, &after.cgroup_top, &mut left);
    let node_ip = rec.net.node_ip().to_string();
    for l in &after.iptables {
        if l.contains(&node_ip)
            || l.contains("10.42.")
            || l.contains("10.43.")
            || l.contains(&rec.netns)
        {
            left.push(format!("host iptables rule mentions the cluster: {l}"));
        }
    }
    diff(
        "run dir entry",
        &before.run_dirs,
        &after.run_dirs,
        &mut left,
    );
    Ok(left)
}

#[test]
fn cluster_down_leaves_nothing() -> Result<()> {
    xtask::cluster::host::require_root().context("cluster tests need a real cluster")?;
    // The lock first: the snapshot must not include another test's running cluster.
    let lock = tests::ClusterLock::acquire(&default_state_root())?;
    let before = snapshot()?;
    let cluster = LabCluster::fresh_locked(xtask::cluster::UpOptions::new("teardown"), lock)?;
    let rec: ClusterRecord = cluster.cluster().record().clone();

    // The probes see the running cluster.
    ensure!(
        !mounts_under(&rec.state_dir).is_empty(),
        "no mount under the state dir while up: the mount probe is blind"
    );
    ensure!(
        !cgroup_dirs(&rec.cgroup_root).is_empty(),
        "no cgroup while up: the cgroup probe is blind"
    );
    ensure!(
        !stray_pids(&rec).is_empty(),
        "no container or shim process while up: the process probe is blind"
    );
    ensure!(netns::exists(&rec.netns), "no network namespace while up");
    ensure!(
        std::path::Path::new("/sys/class/net")
            .join(rec.net.host_veth())
            .exists(),
        "no host veth while up"
    );
    let during = snapshot()?;
    ensure!(
        during.netns.iter().any(|n| n.starts_with(&rec.netns)),
        "ip netns list lacks {}",
        rec.netns
    );

    let t = Instant::now();
    let report = cluster.down().context("cluster down")?;
    let down_secs = t.elapsed().as_secs_f64();
    eprintln!(
        "   down took {down_secs:.1}s, {} actions",
        report.done.len()
    );

    let left = leftovers(&rec, &before)?;
    record_figure(
        &default_state_root(),
        json!({
            "test": "cluster_down_leaves_nothing",
            "at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "down_secs": down_secs,
            "down_actions": report.done.len(),
            "timings_ms": rec.timings_ms,
        }),
    )?;
    ensure!(
        left.is_empty(),
        "after down these remain:\n{}",
        left.join("\n")
    );
    Ok(())
}

/// Tears a cluster down when dropped (for tests that drive `Cluster` directly).
struct DownOnDrop(Option<xtask::cluster::Cluster>);

impl Drop for DownOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.take()
            && let Err(e) = c.down()
        {
            eprintln!("   teardown of cluster {} failed: {e:#}", c.name());
        }
    }
}

/// SIGKILLs a recorded daemon through a pidfd after checking its start time (what a killed
/// terminal or the end of a CI job does to `cluster up`'s daemons).
fn crash(p: &xtask::cluster::process::ProcRecord) -> Result<()> {
    use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};
    let pid = Pid::from_raw(p.pid).context("pid")?;
    let fd =
        pidfd_open(pid, PidfdFlags::empty()).with_context(|| format!("pidfd_open {}", p.pid))?;
    ensure!(
        p.alive(),
        "{} (pid {}) is not the process we started",
        p.name,
        p.pid
    );
    pidfd_send_signal(&fd, Signal::KILL).with_context(|| format!("SIGKILL {}", p.name))?;
    Ok(())
}

#[test]
fn dead_cluster_remains_are_cleared_by_up() -> Result<()> {
    use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
    use kube::api::{Api, PostParams};
    use xtask::cluster::{Cluster, UpOptions};

    xtask::cluster::host::require_root().context("cluster tests need a real cluster")?;
    let root = default_state_root();
    let _lock = tests::ClusterLock::acquire(&root)?;
    let before = snapshot()?;
    let mut opts = UpOptions::new("crash");
    opts.kyverno = false;
    let first = Cluster::up(opts.clone())?;
    let rec = first.record().clone();
    let mut guard = DownOnDrop(Some(first));

    // A running pod, so the remains include a shim, a container, mounts and pod cgroups.
    let kc = rec.kubeconfig();
    let rt = tokio::runtime::Runtime::new().context("starting tokio")?;
    rt.block_on(async {
        let c = xtask::cluster::ready::client(&kc).await?;
        let sas: Api<ServiceAccount> = Api::namespaced(c.clone(), "default");
        let pods: Api<Pod> = Api::namespaced(c, "default");
        let t = Instant::now();
        while sas.get_opt("default").await?.is_none() {
            ensure!(t.elapsed().as_secs() < 60, "no default ServiceAccount after 60s");
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        let pod: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "survivor"},
            "spec": {"automountServiceAccountToken": true, "containers": [{"name": "pause", "image": xtask::cluster::config::PAUSE_IMAGE}]}
        }))?;
        pods.create(&PostParams::default(), &pod).await.context("creating pod survivor")?;
        let t = Instant::now();
        loop {
            let p = pods.get("survivor").await?;
            if p.status.and_then(|s| s.phase).as_deref() == Some("Running") {
                break;
            }
            ensure!(t.elapsed().as_secs() < 120, "pod survivor not Running after 120s");
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        anyhow::Ok(())
    })?;

    // Crash: every daemon SIGKILLed, no `down`.
    for p in &rec.processes {
        crash(p)?;
    }
    let t = Instant::now();
    while rec.processes.iter().any(|p| p.alive()) {
        ensure!(
            t.elapsed().as_secs() < 10,
            "daemons still alive 10s after SIGKILL"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let survivors = stray_pids(&rec);
    ensure!(
        !survivors.is_empty(),
        "no container or shim survived the daemons: the crash left nothing to clear"
    );
    ensure!(
        !mounts_under(&rec.state_dir).is_empty(),
        "no mount survived the daemons"
    );
    ensure!(
        netns::exists(&rec.netns),
        "the network namespace should survive the daemons"
    );
    let survivor_ids: Vec<(i32, u64)> = survivors
        .iter()
        .filter_map(|(pid, _)| xtask::cluster::process::proc_stat(*pid).map(|(_, st)| (*pid, st)))
        .collect();
    eprintln!(
        "   after the crash: {} container/shim processes, mounts and the namespace remain",
        survivors.len()
    );

    // `up` of the same name recognises the remains, clears them, and starts a fresh cluster.
    let second = Cluster::up(opts)?;
    guard.0 = Some(second.clone());
    ensure!(
        second.record().node_uid != rec.node_uid,
        "the second cluster has the old node UID: not a fresh cluster"
    );
    for (pid, st) in survivor_ids {
        ensure!(
            xtask::cluster::process::proc_stat(pid)
                .is_none_or(|(state, s)| s != st || state == 'Z'),
            "process {pid} of the dead cluster still runs after up"
        );
    }
    guard.0 = None;
    second.down().context("down of the second cluster")?;
    let left = leftovers(second.record(), &before)?;
    ensure!(
        left.is_empty(),
        "after clearing a dead cluster and down these remain:\n{}",
        left.join("\n")
    );
    Ok(())
}
