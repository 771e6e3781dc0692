//! `cluster up` refuses a host where a kubelet, containerd or k3s runs that no record of ours
//! owns. Our kubelet and containerd use fixed host paths ([`super::record::HOST_PATHS`]:
//! `/var/lib/kubelet`, `/run/containerd`, …); a kubelet starting clears
//! `/var/lib/kubelet/device-plugins`, so starting ours beside another one would wipe that one's
//! device-plugin sockets. Only processes in this process's mount namespace count (a kubelet in a
//! container of its own, e.g. kind's, has its own `/var/lib/kubelet`).
//!
//! Ours: a daemon listed (PID + start time, alive) in the `cluster.json` of a cluster under the
//! state root.

use std::collections::HashSet;
use std::path::Path;

use anyhow::{Result, bail};

use super::record::ClusterRecord;

/// Process names (`/proc/PID/comm`) of the daemons that use the fixed host paths.
pub const DAEMONS: &[&str] = &["kubelet", "containerd", "k3s", "k3s-server", "k3s-agent"];

/// A daemon on the host that no record of ours owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Foreign {
    /// Its PID.
    pub pid: i32,
    /// Its name (`/proc/PID/comm`).
    pub name: String,
    /// Its command line (`/proc/PID/cmdline`, spaces between arguments).
    pub cmdline: String,
}

/// Whether a process named `comm` is one of [`DAEMONS`] (exactly: `containerd-shim-runc-v2` is
/// not containerd).
pub fn is_daemon(comm: &str) -> bool {
    DAEMONS.contains(&comm.trim())
}

/// `(pid, start time)` of every live daemon recorded by a cluster under `state_root`.
fn ours(state_root: &Path) -> HashSet<(i32, u64)> {
    let Ok(rd) = std::fs::read_dir(state_root) else {
        return HashSet::new();
    };
    rd.flatten()
        .filter_map(|e| ClusterRecord::load(&e.path()).ok().flatten())
        .flat_map(|r| r.processes)
        .filter(|p| p.alive())
        .map(|p| (p.pid, p.start_time_ticks))
        .collect()
}

fn mount_ns(pid: &str) -> Option<std::path::PathBuf> {
    std::fs::read_link(format!("/proc/{pid}/ns/mnt")).ok()
}

/// The daemons ([`DAEMONS`]) in this mount namespace that no cluster under `state_root` records.
pub fn find(state_root: &Path) -> Vec<Foreign> {
    let mine = ours(state_root);
    let my_ns = mount_ns("self");
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(pid) = name.parse::<i32>() else {
            continue;
        };
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if !is_daemon(&comm) || mount_ns(&name) != my_ns {
            continue;
        }
        let Some((state, start)) = super::record::proc_stat(pid) else {
            continue;
        };
        if state == 'Z' || mine.contains(&(pid, start)) {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| {
                b.split(|c| *c == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        out.push(Foreign {
            pid,
            name: comm.trim().to_owned(),
            cmdline,
        });
    }
    out.sort_by_key(|f| f.pid);
    out
}

/// Refuses, naming each one, when [`find`] finds a daemon no record of ours owns.
///
/// Errors: one line per foreign daemon (pid, name, command line) and what to do.
pub fn refuse_foreign(state_root: &Path) -> Result<()> {
    let found = find(state_root);
    if found.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = found
        .iter()
        .map(|f| format!("pid {} {} ({})", f.pid, f.name, f.cmdline))
        .collect();
    bail!(
        "a kubelet, containerd or k3s that no cluster record of ours owns runs on this host: {}; \
         our kubelet and containerd use the same fixed host paths (/var/lib/kubelet, /run/containerd) \
         and a kubelet starting clears /var/lib/kubelet/device-plugins, so `cluster up` does not start \
         beside it (stop it first, or use --cluster kubeconfig against it)",
        list.join("; ")
    )
}

// The refusal of a running process named `kubelet` is proven in `tests/tests/freeze_healer.rs`
// (`cluster_up_refuses_a_kubelet_no_record_owns`): xtask's own code starts no process outside
// its command helper (`xtask/tests/tidy.rs`).
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn daemons_are_matched_by_their_exact_name() {
        for d in ["kubelet", "containerd\n", "k3s-server", "k3s"] {
            assert!(is_daemon(d), "{d}");
        }
        for other in [
            "containerd-shim-runc-v2",
            "kubectl",
            "sleep",
            "k3s-agentx",
            "",
        ] {
            assert!(!is_daemon(other), "{other}");
        }
    }
}
