//! `down` leaves nothing behind: after a fresh cluster with Kyverno running is torn down, no
//! process of the cluster, no mount under its state dir, no cgroup, no network namespace, no veth,
//! no host iptables rule mentioning its addresses, and no new file or directory outside the state
//! dir remain. Before `down`, the same probes must see the cluster (so none of them is vacuous).
//!
//! Needs Linux and root; fails (never skips) otherwise.

use std::collections::BTreeSet;
use std::path::PathBuf;
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
}

fn lines(cmd: &str, args: &[&str]) -> BTreeSet<String> {
    Command::new(cmd)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().map(str::to_string).collect())
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
    })
}

fn diff(label: &str, before: &BTreeSet<String>, after: &BTreeSet<String>, out: &mut Vec<String>) {
    for x in after.difference(before) {
        out.push(format!("{label}: new {x}"));
    }
}

/// Processes whose command line or cwd refers to the state dir.
fn processes_mentioning(state_dir: &PathBuf) -> Vec<String> {
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

#[test]
fn cluster_down_leaves_nothing() -> Result<()> {
    let before = snapshot()?;
    let cluster = LabCluster::fresh("teardown")?;
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
    eprintln!("   down took {down_secs:.1}s, {} actions", report.done.len());

    let mut left = Vec::new();
    for p in &rec.processes {
        if p.alive() {
            left.push(format!("process {} (pid {}) still runs", p.name, p.pid));
        }
    }
    for (pid, cmd) in stray_pids(&rec) {
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
    diff("host iptables", &before.iptables, &after.iptables, &mut left);
    diff("path", &before.paths, &after.paths, &mut left);
    diff("mount", &before.mounts, &after.mounts, &mut left);
    diff("cgroup", &before.cgroup_top, &after.cgroup_top, &mut left);
    let node_ip = rec.net.node_ip().to_string();
    for l in &after.iptables {
        if l.contains(&node_ip) || l.contains("10.42.") || l.contains("10.43.") || l.contains(&rec.netns) {
            left.push(format!("host iptables rule mentions the cluster: {l}"));
        }
    }
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
    ensure!(left.is_empty(), "after down these remain:\n{}", left.join("\n"));
    Ok(())
}
