//! What the host looks like outside a cluster's state dir, and what a cluster left behind.
//!
//! [`snapshot`] before `up` and [`leftovers`] after `down` compare: network namespaces, links,
//! host iptables rules (both backends), the paths where node programs put files by default and
//! every file under them, mounts, top-level cgroups, `/run` entries, and the host sysctls kubelet
//! and kube-proxy write or could write ([`xtask::cluster::sysctl::WATCHED`]). Used by the
//! teardown tests; the probes are checked against a running cluster there so none is blind.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use anyhow::{Context, Result};
use xtask::cluster::host::cgroup_mounts;
use xtask::cluster::netns;
use xtask::cluster::record::ClusterRecord;
use xtask::cluster::teardown::{cgroup_dirs, container_log_links, mounts_under, stray_pids};
// Paths where Kubernetes node programs put files by default; none may appear because of a
// cluster (one list, shared with the cgroup v2 guest's snapshot).
use xtask::guest::WATCHED_PATHS;

/// What the host looks like outside the state dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSnapshot {
    /// `ip netns list`.
    pub netns: BTreeSet<String>,
    /// Host link names.
    pub links: BTreeSet<String>,
    /// Host iptables rules (nft and legacy), without counters.
    pub iptables: BTreeSet<String>,
    /// Which of the watched paths (`WATCHED_PATHS`) exist.
    pub paths: BTreeSet<String>,
    /// Every file and directory under [`TREES`] (`path mode`), same filesystem, depth ≤ 6.
    pub trees: BTreeSet<String>,
    /// Mount points.
    pub mounts: BTreeSet<String>,
    /// Top-level cgroup directories of every hierarchy.
    pub cgroup_top: BTreeSet<String>,
    /// Entries of the `/run` directories node programs use.
    pub run_dirs: BTreeSet<String>,
    /// `key → value` of [`xtask::cluster::sysctl::snapshot`].
    pub sysctls: BTreeMap<String, String>,
}

/// Directories whose whole content is compared (kubelet's and CNI's default places).
pub const TREES: &[&str] = &[
    "/var/lib/kubelet",
    "/etc/cni",
    "/opt/cni",
    "/run/containerd",
];

fn tree_entries() -> BTreeSet<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = BTreeSet::new();
    for t in TREES {
        for e in walkdir::WalkDir::new(t)
            .max_depth(6)
            .same_file_system(true)
            .into_iter()
            .flatten()
        {
            let mode = e.metadata().map(|m| m.permissions().mode()).unwrap_or(0);
            out.insert(format!("{} {mode:o}", e.path().display()));
        }
    }
    out
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

/// The output lines of a probe command. A probe that cannot run or exits non-zero is an error,
/// never an empty set (an empty set would compare equal before and after and hide a leftover).
fn lines(cmd: &str, args: &[&str]) -> Result<BTreeSet<String>> {
    let o = Command::new(cmd)
        .args(args)
        .output()
        .with_context(|| format!("running the host probe {cmd} {}", args.join(" ")))?;
    anyhow::ensure!(
        o.status.success(),
        "the host probe {cmd} {} failed ({}): {}",
        args.join(" "),
        o.status,
        String::from_utf8_lossy(&o.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(str::to_string)
        .collect())
}

/// The node's prerequisites, once per process (root on Debian: installed when missing, as
/// `cluster up` does, `xtask::upstream::prereq::check`): the snapshot's probes
/// (`iptables-nft-save`, `iptables-legacy-save`) come with them, and on a fresh machine a test
/// that snapshots the host before its first `up` is the first to need them.
///
/// # Errors
/// The prerequisites are missing and could not be installed (the message names them).
fn probes_installed() -> Result<()> {
    static DONE: std::sync::OnceLock<std::result::Result<(), String>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        xtask::upstream::prereq::check(true)
            .map(drop)
            .map_err(|e| format!("{e:#}"))
    })
    .clone()
    .map_err(|e| anyhow::anyhow!("the host snapshot's probes need the node's prerequisites: {e}"))
}

/// Takes the snapshot (after [`probes_installed`]).
///
/// # Errors
/// A probe cannot run or fails, or its prerequisites cannot be installed.
pub fn snapshot() -> Result<HostSnapshot> {
    probes_installed()?;
    let links = lines("ip", &["-o", "link", "show"])?
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
        for l in lines(bin, &[])? {
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
        netns: lines("ip", &["netns", "list"])?,
        links,
        iptables,
        paths,
        mounts,
        cgroup_top,
        run_dirs: run_dir_entries(),
        trees: tree_entries(),
        sysctls: xtask::cluster::sysctl::snapshot()?,
    })
}

fn diff(label: &str, before: &BTreeSet<String>, after: &BTreeSet<String>, out: &mut Vec<String>) {
    for x in after.difference(before) {
        out.push(format!("{label}: new {x}"));
    }
    for x in before.difference(after) {
        out.push(format!("{label}: gone {x}"));
    }
}

/// Every difference between two snapshots (`sysctl k: v1 -> v2`, `link: new x`, `path: gone y`, …).
pub fn differences(before: &HostSnapshot, after: &HostSnapshot) -> Vec<String> {
    let mut left = Vec::new();
    diff("netns", &before.netns, &after.netns, &mut left);
    diff("link", &before.links, &after.links, &mut left);
    diff(
        "host iptables",
        &before.iptables,
        &after.iptables,
        &mut left,
    );
    diff("path", &before.paths, &after.paths, &mut left);
    diff("file", &before.trees, &after.trees, &mut left);
    diff("mount", &before.mounts, &after.mounts, &mut left);
    diff("cgroup", &before.cgroup_top, &after.cgroup_top, &mut left);
    diff(
        "run dir entry",
        &before.run_dirs,
        &after.run_dirs,
        &mut left,
    );
    let keys: BTreeSet<&String> = before.sysctls.keys().chain(after.sysctls.keys()).collect();
    for k in keys {
        let (b, a) = (before.sysctls.get(k), after.sysctls.get(k));
        if b != a {
            left.push(format!("sysctl {k}: {b:?} -> {a:?}"));
        }
    }
    left
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
pub fn leftovers(rec: &ClusterRecord, before: &HostSnapshot) -> Result<Vec<String>> {
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
    // `down` keeps only the logs and the ownership marker in the state dir.
    if let Ok(rd) = std::fs::read_dir(&rec.state_dir) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n != "logs" && n != xtask::cluster::record::OWNER_FILE {
                left.push(format!("state dir entry {}", e.path().display()));
            }
        }
    }
    let after = snapshot()?;
    left.extend(differences(before, &after));
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
    Ok(left)
}
