//! PID namespace mapping: from a PID as a container's runtime reports it to the host PID a pidfd
//! must be opened on.
//!
//! On the embedded backend and on k3s installed on a host, containerd runs in the host's PID
//! namespace, so the PID that CRI reports (`info.pid`) is a host PID. With k3s inside a Docker
//! container (the `k3s` backend), containerd runs in the container's PID namespace and reports PIDs
//! of that namespace (proc(5): `/proc/<pid>/status` `NSpid` lists a process's PID in each nested
//! PID namespace). This module maps such a PID to the host PID by reading the host's `/proc`:
//!
//! - `/proc/<pid>/cgroup` names the container's cgroup (Docker puts the container ID in the path
//!   of every process of the container and of every cgroup nested under it, e.g.
//!   `…/docker-<id>.scope/kubepods/…` on cgroup v2 with a private cgroup namespace);
//! - `/proc/<pid>/status` `NSpid:` lists the process's PID in each PID namespace it is in, from
//!   the host's (first) to its own (last) (proc(5)).
//!
//! A process of the container's own PID namespace has `NSpid` of length `L + 1`, where `L` is
//! the level of that namespace (1 for a container started from the host). A pod's process inside
//! it sits one level deeper (`[host, in-container, 1]`), so the PID the container's containerd
//! reports is `NSpid[L]`, not the last element. [`host_pid`] finds `L` as the shortest `NSpid`
//! among the container's processes (its init's) and returns the one process whose `NSpid[L]` is
//! the reported PID.
//!
//! [`cri_pid_to_host`] is what the freeze calls: identity unless [`NODE_CONTAINER_ENV`] names the
//! container the node runs in (the `k3s` backend sets it).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::LabError;

/// Environment variable naming the container (Docker container ID, 64 hex digits) whose PID
/// namespace the node's container runtime runs in. Unset: CRI's PIDs are host PIDs.
pub const NODE_CONTAINER_ENV: &str = "KCA_NODE_CONTAINER_ID";

/// One process found by [`host_pid`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mapped {
    /// The host PID (`NSpid[0]`).
    pub host_pid: i32,
    /// The PID in the container's namespace that was asked for.
    pub container_pid: i32,
    /// Level of the container's PID namespace (0 = the host's own).
    pub level: usize,
    /// The process's full `NSpid` line.
    pub nspid: Vec<i32>,
    /// The `/proc/<pid>/cgroup` line that names the container.
    pub cgroup_line: String,
}

fn not_found(what: String) -> LabError {
    LabError::NotAvailable { what }
}

/// Each readable process of the host: (host PID, NSpid, cgroup text). Processes that vanish while
/// being read are skipped.
fn scan() -> Result<Vec<(i32, Vec<i32>, String)>, LabError> {
    let all = procfs::process::all_processes().map_err(|e| LabError::Io {
        path: PathBuf::from("/proc"),
        source: std::io::Error::other(e.to_string()),
    })?;
    let mut out = Vec::new();
    for p in all.flatten() {
        let pid = p.pid();
        let Ok(status) = p.status() else { continue };
        let Some(nspid) = status.nspid else { continue };
        let path = format!("/proc/{pid}/cgroup");
        let Ok(cgroup) =
            crate::files::read_regular(std::path::Path::new(&path), crate::files::PROC_BOUND)
        else {
            continue;
        };
        let cgroup = String::from_utf8_lossy(&cgroup).into_owned();
        out.push((pid, nspid, cgroup));
    }
    Ok(out)
}

/// Maps `container_pid` (a PID in the PID namespace of container `container_id`) to the host PID.
///
/// `container_id` is matched as a substring of `/proc/<pid>/cgroup` (a full Docker ID is 64 hex
/// digits, so a match is the container or a cgroup nested under it).
///
/// Errors: [`LabError::NotAvailable`] when no process is in a cgroup of that container (not
/// running, not this host, or cgroup v1 where a nested kubelet puts pods outside the container's
/// cgroup), when no process of it has that PID at the container's level, or when more than one
/// has (then the namespace cannot be told apart and nothing is guessed).
pub fn host_pid(container_id: &str, container_pid: i32) -> Result<Mapped, LabError> {
    if container_id.len() < 12 {
        return Err(not_found(format!(
            "a container ID of at least 12 characters to match cgroups with (found {container_id:?})"
        )));
    }
    let members: Vec<_> = scan()?
        .into_iter()
        .filter(|(_, _, cg)| cg.contains(container_id))
        .collect();
    let Some(level) = members
        .iter()
        .map(|(_, ns, _)| ns.len().saturating_sub(1))
        .min()
    else {
        return Err(not_found(format!(
            "a process in a cgroup of container {container_id} on this host (/proc/*/cgroup)"
        )));
    };
    let found: Vec<_> = members
        .into_iter()
        .filter(|(_, ns, _)| ns.get(level) == Some(&container_pid))
        .collect();
    match &found[..] {
        [(pid, nspid, cg)] => Ok(Mapped {
            host_pid: *pid,
            container_pid,
            level,
            nspid: nspid.clone(),
            cgroup_line: cg
                .lines()
                .find(|l| l.contains(container_id))
                .unwrap_or_default()
                .to_owned(),
        }),
        [] => Err(not_found(format!(
            "a process of container {container_id} with PID {container_pid} in its PID namespace (level {level}, NSpid[{level}])"
        ))),
        many => Err(not_found(format!(
            "a single process of container {container_id} with PID {container_pid} at level {level}: found host PIDs {:?}",
            many.iter().map(|(p, _, _)| *p).collect::<Vec<_>>()
        ))),
    }
}

static NODE_CONTAINER: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Names, for this process, the container the node runs in (xtask's k3s backend); the first call
/// wins. Safe while other threads run, unlike setting [`NODE_CONTAINER_ENV`] (`set_var`).
pub fn set_node_container(container_id: &str) {
    let _ = NODE_CONTAINER.set(container_id.to_owned());
}

/// The host PID for a PID reported by the node's CRI: `cri_pid` itself when no node container
/// is named (embedded, k3s on the host), else [`host_pid`] in the container named by
/// [`set_node_container`] or, failing that, by [`NODE_CONTAINER_ENV`].
pub fn cri_pid_to_host(cri_pid: i32) -> Result<i32, LabError> {
    let id = NODE_CONTAINER
        .get()
        .cloned()
        .or_else(|| std::env::var(NODE_CONTAINER_ENV).ok())
        .filter(|id| !id.is_empty());
    match id {
        Some(id) => host_pid(&id, cri_pid).map(|m| m.host_pid),
        None => Ok(cri_pid),
    }
}

#[cfg(test)]
mod tests {
    //! On a real nested PID namespace made here with util-linux `unshare` (needs root: a PID
    //! namespace and a cgroup of our own stand in for the container).
    use super::*;
    use crate::wait::{Check, Wait};
    use std::io::{BufRead, BufReader};
    use std::process::{Child, Command, Stdio};
    use std::time::Duration;

    /// A cgroup standing in for a container's: created, and removed with its processes at drop.
    struct Fixture {
        child: Child,
        cgroup: PathBuf,
        marker: String,
        /// PIDs as the namespace's init shell saw them: `sleep 1001`, and the inner `unshare`.
        a: i32,
        b: i32,
    }

    fn cgroup_parent() -> PathBuf {
        let root = PathBuf::from("/sys/fs/cgroup");
        if root.join("cgroup.controllers").exists() {
            return root; // cgroup v2
        }
        for h in ["pids", "cpu,cpuacct", "cpu", "memory", "systemd"] {
            if root.join(h).join("cgroup.procs").exists() {
                return root.join(h);
            }
        }
        panic!("no writable cgroup hierarchy found under /sys/fs/cgroup");
    }

    impl Fixture {
        fn start() -> Fixture {
            assert!(
                rustix::process::geteuid().is_root(),
                "the PID mapping test needs root (a PID namespace and a cgroup of its own); run it as root"
            );
            let marker = format!("kca-pidmap-test-{:016x}", rand::random::<u64>());
            let cgroup = cgroup_parent().join(&marker);
            std::fs::create_dir(&cgroup).expect("creating the test cgroup");
            // As with a container, only the namespace's processes are in the cgroup: its init moves
            // itself in (a PID written to cgroup.procs is read in the writer's PID namespace).
            let inner = format!(
                "echo $$ > {}/cgroup.procs && {{ sleep 1001 & echo A=$!; unshare --pid --fork --kill-child sleep 1002 & echo B=$!; wait; }}",
                cgroup.display()
            );
            let script =
                format!("exec unshare --pid --fork --kill-child --mount-proc sh -c '{inner}'");
            let mut child = Command::new("sh")
                .args(["-c", &script])
                .stdout(Stdio::piped())
                .spawn()
                .expect("spawning unshare");
            let mut out = BufReader::new(child.stdout.take().expect("stdout"));
            let (mut a, mut b) = (0, 0);
            for _ in 0..2 {
                let mut line = String::new();
                out.read_line(&mut line)
                    .expect("reading the shell's output");
                match line.trim().split_once('=') {
                    Some(("A", v)) => a = v.parse().expect("A pid"),
                    Some(("B", v)) => b = v.parse().expect("B pid"),
                    _ => panic!("unexpected line {line:?}"),
                }
            }
            // Let the doubly nested sleep exist before scanning.
            let _ = Wait::new(
                "four processes in the test cgroup",
                Duration::from_secs(5),
                Duration::from_millis(20),
            )
            .blocking(
                || -> Result<Check<(), usize>, std::convert::Infallible> {
                    let n = std::fs::read_to_string(cgroup.join("cgroup.procs"))
                        .unwrap_or_default()
                        .lines()
                        .count();
                    Ok(if n >= 4 {
                        Check::Done(())
                    } else {
                        Check::NotYet(n)
                    })
                },
                |_, _| {},
            );
            Fixture {
                child,
                cgroup,
                marker,
                a,
                b,
            }
        }
    }

    impl Drop for Fixture {
        fn drop(&mut self) {
            // unshare --kill-child: killing our child kills the namespace's init, which ends the namespace.
            let _ = self.child.kill();
            let _ = self.child.wait();
            let _ = Wait::new(
                "the test cgroup to be removable",
                Duration::from_secs(5),
                Duration::from_millis(20),
            )
            .blocking(
                || -> Result<Check<(), String>, std::convert::Infallible> {
                    Ok(match std::fs::remove_dir(&self.cgroup) {
                        Ok(()) => Check::Done(()),
                        Err(e) => Check::NotYet(e.to_string()),
                    })
                },
                |_, _| {},
            );
        }
    }

    fn cmdline(pid: i32) -> String {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| {
                String::from_utf8_lossy(&b)
                    .replace('\0', " ")
                    .trim()
                    .to_owned()
            })
            .unwrap_or_default()
    }

    #[test]
    fn maps_pids_of_a_real_nested_pid_namespace() {
        let f = Fixture::start();
        assert!(f.a > 1 && f.b > 1, "pids seen inside: {} {}", f.a, f.b);

        // The init of the namespace (PID 1 there) is the shell, not the doubly nested `sleep 1002`
        // whose last NSpid element is also 1.
        let init = host_pid(&f.marker, 1).expect("mapping PID 1");
        assert_eq!(init.level, 1);
        assert_eq!(init.nspid.len(), 2);
        assert!(
            cmdline(init.host_pid).starts_with("sh -c"),
            "{}",
            cmdline(init.host_pid)
        );

        let a = host_pid(&f.marker, f.a).expect("mapping sleep 1001");
        assert_eq!(cmdline(a.host_pid), "sleep 1001");
        assert_eq!(a.nspid, vec![a.host_pid, f.a]);
        assert_ne!(
            a.host_pid, f.a,
            "a nested namespace's PID differs from the host's"
        );
        assert!(a.cgroup_line.contains(&f.marker));
        // The namespace's own /proc (mounted by --mount-proc, reached through its init's root)
        // names the same program under the PID the shell printed: an independent view.
        let inside = std::fs::read(format!("/proc/{}/root/proc/{}/cmdline", init.host_pid, f.a))
            .expect("reading the namespace's own /proc");
        assert_eq!(
            String::from_utf8_lossy(&inside).replace('\0', " ").trim(),
            "sleep 1001"
        );

        let b = host_pid(&f.marker, f.b).expect("mapping the inner unshare");
        assert!(
            cmdline(b.host_pid).starts_with("unshare"),
            "{}",
            cmdline(b.host_pid)
        );

        // Unknown PID and unknown container: errors that say what was looked for.
        let e = host_pid(&f.marker, 999_999).unwrap_err().to_string();
        assert!(e.contains("999999"), "{e}");
        let e = host_pid("kca-pidmap-test-no-such-cgroup", f.a)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no-such-cgroup"), "{e}");
    }

    #[test]
    fn unset_environment_means_host_pids() {
        if std::env::var_os(NODE_CONTAINER_ENV).is_none() {
            assert_eq!(cri_pid_to_host(4242).unwrap(), 4242);
        }
    }
}
