//! `down` leaves nothing behind: after a fresh cluster with Kyverno running is torn down, no
//! process of the cluster, no mount under its state dir, no cgroup, no network namespace, no veth,
//! no host iptables rule mentioning its addresses, no new or removed file or directory outside the
//! state dir, and no changed host sysctl remain ([`tests::host`]). Before `down`, the probes
//! must see the cluster (mounts, cgroups, processes, netns, the veth in the link probe, the netns
//! in the `/run` probe, the node's secrets in the permission walk), so none of them is vacuous;
//! the host iptables probe cannot see the node (its rules live in the node's own netns), so its
//! commands must at least succeed: a probe that fails is an error, never an empty set.
//!
//! While the cluster runs (issue 13): kubelet's host sysctls are already back to the host's values;
//! the state dir is 0700 and keys, kine's database and `cluster.json` are 0600; and `down` leaves
//! alone what is not the cluster's: a decoy process that looks like a containerd shim of cluster
//! `teardown-2` survives, and a bind mount of a scratch host directory inside the state dir makes
//! `down` stop with a message (the scratch files survive), after which a second `down` finishes.
//!
//! Needs Linux and root; fails (never skips) otherwise.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use serde_json::json;
use tests::host::{leftovers, snapshot};
use tests::{LabCluster, record_figure};
use xtask::cluster::config::default_state_root;
use xtask::cluster::netns;
use xtask::cluster::record::ClusterRecord;
use xtask::cluster::teardown::{cgroup_dirs, mounts_under, stray_pids};

/// Files under the state dir that hold secrets (private keys, every Secret of the cluster in
/// kine's database, the record): each must be 0600 or stricter.
fn is_secret(p: &Path) -> bool {
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.ends_with(".key") || name.starts_with("state.db") || name == "cluster.json"
}

/// Walks every file and directory the node wrote under `state_dir` on its filesystem (mounted
/// volumes and container root filesystems are other filesystems, not walked): the state dir is
/// 0700, every secret ([`is_secret`]) 0600 or stricter, and nothing is world-writable but sticky
/// directories (an image's `/tmp`), sockets, and kubelet's pod volumes and termination-message
/// files under `kubelet/pods/`. Returns (entries walked, secrets seen).
fn check_permissions(state_dir: &Path) -> Result<(usize, Vec<String>)> {
    use std::os::unix::fs::FileTypeExt;
    let mode = std::fs::metadata(state_dir)?.permissions().mode() & 0o7777;
    ensure!(
        mode == 0o700,
        "state dir {} has mode {mode:o}, expected 700",
        state_dir.display()
    );
    let (mut n, mut secrets, mut bad) = (0usize, Vec::new(), Vec::new());
    for e in walkdir::WalkDir::new(state_dir).same_file_system(true) {
        let Ok(e) = e else { continue };
        let Ok(meta) = e.path().symlink_metadata() else {
            continue;
        };
        n += 1;
        let mode = meta.permissions().mode();
        let ft = meta.file_type();
        if ft.is_symlink() {
            continue;
        }
        if is_secret(e.path()) && ft.is_file() {
            secrets.push(e.path().display().to_string());
            if mode & 0o077 != 0 {
                bad.push(format!(
                    "{} is {:o}, expected 600",
                    e.path().display(),
                    mode & 0o7777
                ));
            }
        }
        let sticky_dir = ft.is_dir() && mode & 0o1000 != 0;
        // kubelet makes emptyDir volumes 0777 and termination-message files 0666 so that any
        // container user can write them; only containers reach them (the state dir is 0700).
        let pod_dir = e
            .path()
            .strip_prefix(state_dir)
            .is_ok_and(|r| r.starts_with("kubelet/pods"));
        if mode & 0o002 != 0 && !sticky_dir && !ft.is_socket() && !pod_dir {
            bad.push(format!(
                "{} is world-writable ({:o})",
                e.path().display(),
                mode & 0o7777
            ));
        }
    }
    ensure!(
        bad.is_empty(),
        "file modes under {}:\n{}",
        state_dir.display(),
        bad.join("\n")
    );
    Ok((n, secrets))
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
    ensure!(
        during.links.contains(&rec.net.host_veth()),
        "the link probe does not see the host veth {} while up (saw {:?}): it is blind",
        rec.net.host_veth(),
        during.links
    );
    ensure!(
        during
            .run_dirs
            .iter()
            .any(|d| d.ends_with(&format!("/run/netns/{}", rec.netns))),
        "the /run probe does not see /run/netns/{} while up: it is blind",
        rec.netns
    );

    // kubelet's host sysctls: recorded before it started, changed by it, and put back already.
    ensure!(
        rec.host_sysctls.len() == xtask::cluster::sysctl::KUBELET_TUNABLES.len(),
        "the record holds {} of kubelet's {} host sysctls",
        rec.host_sysctls.len(),
        xtask::cluster::sysctl::KUBELET_TUNABLES.len()
    );
    ensure!(
        rec.host_sysctls.iter().any(|s| s.before != s.node_value),
        "this host already has every value kubelet sets ({:?}): the test cannot show that they are restored",
        rec.host_sysctls
    );
    ensure!(
        rec.timings_ms.contains_key("kubelet_sysctls_seen_ms"),
        "up never saw kubelet write its host sysctls (timings {:?})",
        rec.timings_ms
    );
    ensure!(
        during.sysctls == before.sysctls,
        "host sysctls while the cluster runs differ from before up:\nbefore {:?}\nnow    {:?}",
        before.sysctls,
        during.sysctls
    );

    // Permissions of everything the node wrote under its state dir.
    let (walked, secrets) = check_permissions(&rec.state_dir)?;
    ensure!(
        secrets.iter().any(|s| s.ends_with("kine/state.db"))
            && secrets.iter().any(|s| s.ends_with("ca.key")),
        "the permission walk saw no kine/state.db or ca.key (saw {secrets:?}): it is blind"
    );
    eprintln!(
        "   permissions: {walked} entries walked, {} secrets 0600",
        secrets.len()
    );

    // A decoy that looks like a containerd shim of cluster teardown-2 (whose state dir path starts
    // with this cluster's): `down` must leave it alone. `read` is a shell builtin: no grandchild.
    let sibling_sock = rec
        .state_dir
        .with_file_name(format!("{}-2", rec.name))
        .join("containerd/containerd.sock");
    let mut decoy = std::process::Command::new("sh")
        .arg0("/usr/local/bin/containerd-shim-runc-v2")
        .args(["-c", "read x", "-address"])
        .arg(&sibling_sock)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .context("starting the decoy shim")?;

    // A bind mount of a scratch host directory left inside the state dir.
    let scratch = tempfile::tempdir().context("scratch dir")?;
    std::fs::write(scratch.path().join("keep"), "host data").context("writing scratch file")?;
    let bind = rec.state_dir.join("scratch-bind");
    std::fs::create_dir_all(&bind)?;
    nix::mount::mount(
        Some(scratch.path()),
        &bind,
        None::<&str>,
        nix::mount::MsFlags::MS_BIND,
        None::<&str>,
    )
    .with_context(|| {
        format!(
            "bind-mounting {} at {}",
            scratch.path().display(),
            bind.display()
        )
    })?;
    let handle = cluster.cluster().clone();
    let first = handle.down();
    let refused = match &first {
        Ok(_) => None,
        Err(e) => Some(format!("{e:#}")),
    };
    let scratch_kept = std::fs::read_to_string(scratch.path().join("keep")).ok();
    if !mounts_under(&bind).is_empty() {
        nix::mount::umount2(&bind, nix::mount::MntFlags::empty())
            .with_context(|| format!("unmounting the scratch bind {}", bind.display()))?;
    }
    ensure!(
        scratch_kept.as_deref() == Some("host data"),
        "the scratch file behind the bind mount is gone or changed after down: {scratch_kept:?}"
    );
    let refused =
        refused.context("down succeeded with a host directory bind-mounted in the state dir")?;
    ensure!(
        refused.contains("not by the cluster") && refused.contains(&bind.display().to_string()),
        "down failed, but not by naming the foreign mount {}: {refused}",
        bind.display()
    );
    ensure!(
        ClusterRecord::file(&rec.state_dir).exists(),
        "the record was removed although down stopped at the foreign mount"
    );

    let t = Instant::now();
    let report = cluster
        .down()
        .context("cluster down (second, after the scratch bind was removed)")?;
    let down_secs = t.elapsed().as_secs_f64();
    eprintln!(
        "   down took {down_secs:.1}s, {} actions",
        report.done.len()
    );

    let decoy_alive = decoy.try_wait().context("checking the decoy")?.is_none();
    let _ = decoy.kill();
    let _ = decoy.wait();
    ensure!(
        decoy_alive,
        "down killed the decoy shim of cluster {}-2",
        rec.name
    );

    let left = leftovers(&rec, &before)?;
    record_figure(
        &default_state_root(),
        json!({
            "test": "cluster_down_leaves_nothing",
            "at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "down_secs": down_secs,
            "down_actions": report.done.len(),
            "permission_walk_entries": walked,
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
