//! `down`: stop everything the cluster started and remove what it left on the host; idempotent,
//! keeps going after errors and reports them all.
//!
//! Order (`../shared/research/embedded-node.md`, "Tearing down without leftovers"): kubelet first
//! (it would restart containers), pod sandboxes through CRI, any container or shim still in the
//! cluster's cgroups, kube-proxy and containerd, the control plane and kine; then kubelet's
//! mounts (deepest first), the cluster's cgroups (deepest first), kubelet's log symlinks in
//! /var/log/containers, and the network namespace with the veth pair.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use super::host::cgroup_mounts;
use super::netns;
use super::process::{ProcRecord, Stopped, proc_stat, stop};
use super::record::ClusterRecord;

/// What `down` did and what failed.
#[derive(Debug, Default)]
pub struct Report {
    /// Human-readable lines, one per action taken.
    pub done: Vec<String>,
    /// Errors, one per failed action; `down` carried on after each.
    pub errors: Vec<String>,
}

impl Report {
    fn note(&mut self, s: impl Into<String>) {
        let s = s.into();
        eprintln!("   {s}");
        self.done.push(s);
    }
    fn fail(&mut self, e: anyhow::Error) {
        let s = format!("{e:#}");
        eprintln!("   error: {s}");
        self.errors.push(s);
    }
}

fn stop_one(report: &mut Report, rec: &ProcRecord, grace: Duration) {
    match stop(rec, grace) {
        Ok(Stopped::AlreadyGone) => {}
        Ok(Stopped::Terminated) => report.note(format!("stopped {} (pid {})", rec.name, rec.pid)),
        Ok(Stopped::Killed) => report.note(format!(
            "killed {} (pid {}) after {}s",
            rec.name,
            rec.pid,
            grace.as_secs()
        )),
        Err(e) => report.fail(e.context(format!("stopping {}", rec.name))),
    }
}

/// PIDs of processes that belong to the cluster although we did not start them directly:
/// containers (their cgroup path lies under the cluster's cgroup root) and containerd shims
/// (their command line names the cluster's containerd socket or state dir).
pub fn stray_pids(rec: &ClusterRecord) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    let state = rec.state_dir.display().to_string();
    let cg = format!("{}/", rec.cgroup_root);
    let me = std::process::id() as i32;
    let Ok(procs) = procfs::process::all_processes() else {
        return out;
    };
    for p in procs.flatten() {
        if p.pid == me {
            continue;
        }
        let cmdline = p.cmdline().unwrap_or_default().join(" ");
        let in_cgroup = std::fs::read_to_string(format!("/proc/{}/cgroup", p.pid))
            .map(|s| {
                s.lines().any(|l| {
                    l.split(':')
                        .nth(2)
                        .is_some_and(|path| path.starts_with(&cg))
                })
            })
            .unwrap_or(false);
        let shim = cmdline.contains("containerd-shim") && cmdline.contains(&state);
        if in_cgroup || shim {
            out.push((p.pid, cmdline));
        }
    }
    out
}

fn kill_strays(report: &mut Report, rec: &ClusterRecord) {
    for round in 0..50 {
        let strays = stray_pids(rec);
        if strays.is_empty() {
            return;
        }
        for (pid, cmd) in &strays {
            let Some((_, st)) = proc_stat(*pid) else {
                continue;
            };
            let pr = ProcRecord {
                name: "stray".into(),
                pid: *pid,
                start_time: st,
                log: String::new(),
                argv: vec![],
            };
            if round == 0 {
                report.note(format!(
                    "killing leftover process {pid}: {}",
                    cmd.chars().take(120).collect::<String>()
                ));
            }
            let Some(p) = rustix::process::Pid::from_raw(*pid) else {
                continue;
            };
            // The pidfd pins the process; the start-time check after opening it makes sure it is
            // still the one found above.
            if let Ok(fd) = rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty())
                && pr.alive()
            {
                let _ = rustix::process::pidfd_send_signal(&fd, rustix::process::Signal::KILL);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    report.fail(anyhow::anyhow!(
        "processes of the cluster still running: {:?}",
        stray_pids(rec)
    ));
}

fn crictl_remove_pods(report: &mut Report, rec: &ClusterRecord) {
    let crictl = rec.bin_dir.join("crictl");
    let endpoint = format!("unix://{}", rec.cri_socket().display());
    let out = Command::new(&crictl)
        .args([
            "--runtime-endpoint",
            &endpoint,
            "--image-endpoint",
            &endpoint,
            "--timeout",
            "30s",
            "rmp",
            "-fa",
        ])
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let n = String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| !l.trim().is_empty())
                .count();
            report.note(format!(
                "removed {n} pod sandboxes through CRI (crictl rmp -fa)"
            ));
        }
        Ok(o) => report.fail(anyhow::anyhow!(
            "crictl rmp -fa failed: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => {
            report.fail(anyhow::Error::from(e).context(format!("running {}", crictl.display())))
        }
    }
}

/// Shim socket paths of the cluster's tasks: containerd keeps them outside our state dir, at
/// `/run/containerd/s/<sha256>` (`pkg/shim.SocketAddress`, derived from the default state dir),
/// and writes each into the task bundle's `bootstrap.json` under our state dir.
pub fn shim_sockets(state_dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let root = state_dir.join("containerd/state/io.containerd.runtime.v2.task");
    let Ok(namespaces) = std::fs::read_dir(&root) else {
        return out;
    };
    for ns in namespaces.flatten() {
        let Ok(tasks) = std::fs::read_dir(ns.path()) else {
            continue;
        };
        for t in tasks.flatten() {
            // containerd 2.x writes `bootstrap.json` ({"address": "unix://…", …}); 1.x wrote `address`.
            let from_json = std::fs::read_to_string(t.path().join("bootstrap.json"))
                .ok()
                .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
                .and_then(|v| v["address"].as_str().map(str::to_string));
            let addr = from_json.or_else(|| std::fs::read_to_string(t.path().join("address")).ok());
            if let Some(p) = addr
                .as_deref()
                .and_then(|a| a.trim().strip_prefix("unix://"))
            {
                out.push(PathBuf::from(p));
            }
        }
    }
    out
}

/// Removes the shim sockets of the cluster's tasks that remain after their shims were killed.
fn remove_shim_sockets(report: &mut Report, rec: &ClusterRecord) {
    for sock in shim_sockets(&rec.state_dir) {
        if sock.starts_with("/run/containerd/s") && sock.exists() {
            match std::fs::remove_file(&sock) {
                Ok(()) => report.note(format!("removed shim socket {}", sock.display())),
                Err(e) => report.fail(anyhow::anyhow!("removing {}: {e}", sock.display())),
            }
        }
    }
}

/// Mount points under `dir`, deepest first.
pub fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let mut out: Vec<PathBuf> = info
        .lines()
        .filter_map(|l| l.split_whitespace().nth(4))
        .map(|mp| PathBuf::from(mp.replace("\\040", " ")))
        .filter(|mp| mp.starts_with(dir))
        .collect();
    out.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    out.dedup();
    out
}

fn unmount_all(report: &mut Report, dir: &Path) {
    // A mount may be stacked several times; repeat until none is left.
    for _ in 0..5 {
        let mounts = mounts_under(dir);
        if mounts.is_empty() {
            return;
        }
        for m in mounts {
            match nix::mount::umount2(&m, nix::mount::MntFlags::empty()) {
                Ok(()) => report.note(format!("unmounted {}", m.display())),
                Err(_) => match nix::mount::umount2(&m, nix::mount::MntFlags::MNT_DETACH) {
                    Ok(()) => report.note(format!("detached {}", m.display())),
                    Err(e) => report.fail(anyhow::anyhow!("unmounting {}: {e}", m.display())),
                },
            }
        }
    }
}

/// Cgroup directories of the cluster in every hierarchy (v1 controllers and unified), existing ones.
pub fn cgroup_dirs(cgroup_root: &str) -> Vec<PathBuf> {
    let rel = cgroup_root.trim_start_matches('/');
    let mut v: Vec<PathBuf> = cgroup_mounts()
        .unwrap_or_default()
        .into_iter()
        .map(|m| m.join(rel))
        .filter(|d| d.is_dir())
        .collect();
    v.sort();
    v.dedup();
    v
}

fn remove_cgroup_tree(dir: &Path) -> Result<usize> {
    let mut n = 0;
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for e in entries.flatten() {
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            n += remove_cgroup_tree(&e.path())?;
        }
    }
    // A cgroup may stay busy for a moment after its last task exited.
    let mut last = None;
    for _ in 0..50 {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(n + 1),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(n),
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(anyhow::anyhow!(
        "removing cgroup {}: {}",
        dir.display(),
        last.map(|e| e.to_string()).unwrap_or_default()
    ))
}

fn remove_cgroups(report: &mut Report, cgroup_root: &str) {
    for dir in cgroup_dirs(cgroup_root) {
        match remove_cgroup_tree(&dir) {
            Ok(n) => report.note(format!("removed {n} cgroups under {}", dir.display())),
            Err(e) => report.fail(e),
        }
    }
}

/// kubelet's symlinks in `/var/log/containers` that point into `state_dir` (kubelet hard-codes that
/// directory; `podLogsDir` only moves the targets).
pub fn container_log_links(state_dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir("/var/log/containers") else {
        return vec![];
    };
    rd.flatten()
        .map(|e| e.path())
        .filter(|p| {
            std::fs::read_link(p)
                .map(|t| t.starts_with(state_dir))
                .unwrap_or(false)
        })
        .collect()
}

/// Whether another cluster under the same state root has a live kubelet.
fn other_kubelet_alive(rec: &ClusterRecord) -> bool {
    let Some(root) = rec.state_dir.parent() else {
        return false;
    };
    let Ok(rd) = std::fs::read_dir(root) else {
        return false;
    };
    rd.flatten()
        .filter(|e| e.path() != rec.state_dir)
        .filter_map(|e| ClusterRecord::load(&e.path()).ok().flatten())
        .any(|r| r.processes.iter().any(|p| p.name == "kubelet" && p.alive()))
}

/// Removes the fixed host paths `up` saw created ([`super::record::HOST_PATHS`]): kubelet's
/// device-plugin socket (only when no other cluster's kubelet runs), then each directory if empty.
fn remove_host_paths(report: &mut Report, rec: &ClusterRecord) {
    if rec.host_paths_created.is_empty() || other_kubelet_alive(rec) {
        return;
    }
    let sock = Path::new("/var/lib/kubelet/device-plugins/kubelet.sock");
    if rec
        .host_paths_created
        .iter()
        .any(|p| p == Path::new("/var/lib/kubelet/device-plugins"))
        && sock.exists()
    {
        match std::fs::remove_file(sock) {
            Ok(()) => report.note(format!("removed {}", sock.display())),
            Err(e) => report.fail(anyhow::anyhow!("removing {}: {e}", sock.display())),
        }
    }
    for p in &rec.host_paths_created {
        match std::fs::remove_dir(p) {
            Ok(()) => report.note(format!("removed {}", p.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => {
                let left: Vec<String> = std::fs::read_dir(p)
                    .map(|rd| {
                        rd.flatten()
                            .map(|e| e.file_name().to_string_lossy().into_owned())
                            .collect()
                    })
                    .unwrap_or_default();
                report.fail(anyhow::anyhow!(
                    "{} is not empty after teardown: {}",
                    p.display(),
                    left.join(", ")
                ));
            }
            Err(e) => report.fail(anyhow::anyhow!("removing {}: {e}", p.display())),
        }
    }
}

/// Tears the cluster down; see the module doc for the order. Never stops at the first error.
pub fn down(rec: &ClusterRecord) -> Report {
    let mut report = Report::default();
    let grace = Duration::from_secs(15);
    fn by_name<'a>(
        rec: &'a ClusterRecord,
        n: &'a str,
    ) -> impl Iterator<Item = &'a ProcRecord> + 'a {
        rec.processes.iter().filter(move |p| p.name == n)
    }
    for p in by_name(rec, "kubelet") {
        stop_one(&mut report, p, grace);
    }
    if by_name(rec, "containerd").any(|p| p.alive()) {
        crictl_remove_pods(&mut report, rec);
    }
    kill_strays(&mut report, rec);
    for name in [
        "kube-proxy",
        "containerd",
        "kube-scheduler",
        "kube-controller-manager",
        "kube-apiserver",
        "kine",
    ] {
        for p in by_name(rec, name) {
            stop_one(&mut report, p, grace);
        }
    }
    // Anything recorded under another name (should not happen), last.
    for p in rec.processes.iter().filter(|p| {
        ![
            "kubelet",
            "kube-proxy",
            "containerd",
            "kube-scheduler",
            "kube-controller-manager",
            "kube-apiserver",
            "kine",
        ]
        .contains(&p.name.as_str())
    }) {
        stop_one(&mut report, p, grace);
    }
    kill_strays(&mut report, rec);
    remove_shim_sockets(&mut report, rec);
    unmount_all(&mut report, &rec.state_dir);
    remove_cgroups(&mut report, &rec.cgroup_root);
    for link in container_log_links(&rec.state_dir) {
        match std::fs::remove_file(&link) {
            Ok(()) => report.note(format!("removed {}", link.display())),
            Err(e) => report.fail(anyhow::anyhow!("removing {}: {e}", link.display())),
        }
    }
    remove_host_paths(&mut report, rec);
    match netns::delete(&rec.netns, &rec.net.host_veth()) {
        Ok(done) => done
            .into_iter()
            .for_each(|d| report.note(format!("deleted {d}"))),
        Err(e) => report.fail(e),
    }
    report
}
