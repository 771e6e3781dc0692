//! A SIGKILLed `cluster up` leaves the host changed (kubelet has written its host sysctls, the
//! namespace, mounts and cgroups exist); the next `up` of the same name clears the remains and
//! puts the sysctls back, and after its `down` the host is exactly as before the first `up`
//! ([`tests::host::snapshot`]: sysctls, mounts, cgroups, namespaces, links, iptables, files).
//!
//! The `up` to kill runs in a child process (this test binary again, with
//! `KCA_HOST_RESTORE_CHILD_UP=<name>`), killed the moment kubelet's sysctl values are seen on the
//! host, before `up` itself restores them; then every daemon it recorded is SIGKILLed, as when a
//! CI job or a terminal ends.
//!
//! Second test: two clusters `sib` and `sib-2` (no Kyverno) run side by side, `sib-2` with a
//! Running pod; `down --name sib` (the CLI's `down_by_name`) leaves `sib-2` whole: its daemons,
//! its containers and shims (same PIDs and start times), its namespace (same inode), its veth, and
//! its pod (still Running, no restart). Then `sib-2` goes down and the host is as before.
//!
//! Needs Linux and root; fails (never skips) otherwise.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use libtest_mimic::{Arguments, Trial};
use xtask::cluster::config::default_state_root;
use xtask::cluster::record::ClusterRecord;
use xtask::cluster::{Cluster, UpOptions, sysctl};

const CHILD_ENV: &str = "KCA_HOST_RESTORE_CHILD_UP";
const NAME: &str = "sigkill";

fn main() {
    if let Ok(name) = std::env::var(CHILD_ENV) {
        let mut o = UpOptions::new(&name);
        o.kyverno = false;
        match Cluster::up(o) {
            Ok(_) => std::process::exit(0),
            Err(e) => {
                eprintln!("child up failed: {e:#}");
                std::process::exit(1)
            }
        }
    }
    let args = Arguments::from_args();
    let trials = vec![
        Trial::test(
            "sigkilled_up_is_cleared_and_restored_by_the_next_up",
            || run().map_err(|e| format!("{e:#}").into()),
        ),
        Trial::test("down_of_one_cluster_leaves_its_sibling_whole", || {
            siblings().map_err(|e| format!("{e:#}").into())
        }),
    ];
    libtest_mimic::run(&args, trials).exit();
}

/// SIGKILLs a recorded daemon through a pidfd after checking its start time.
fn crash(p: &xtask::cluster::process::ProcRecord) -> Result<()> {
    use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};
    let Some(pid) = Pid::from_raw(p.pid) else {
        bail!("invalid pid {}", p.pid)
    };
    let Ok(fd) = pidfd_open(pid, PidfdFlags::empty()) else {
        return Ok(());
    };
    if p.alive() {
        pidfd_send_signal(&fd, Signal::KILL).with_context(|| format!("SIGKILL {}", p.name))?;
    }
    Ok(())
}

/// Tears a cluster down when dropped.
struct DownOnDrop(Option<Cluster>);

impl Drop for DownOnDrop {
    fn drop(&mut self) {
        if let Some(c) = self.0.take()
            && let Err(e) = c.down()
        {
            eprintln!("   teardown of cluster {} failed: {e:#}", c.name());
        }
    }
}

fn run() -> Result<()> {
    xtask::cluster::host::require_root().context("cluster tests need a real cluster")?;
    let root = default_state_root();
    let _lock = tests::ClusterLock::acquire(&root)?;
    let before = tests::host::snapshot()?;
    let state_dir = root.join(NAME);

    let mut child = Command::new(std::env::current_exe().context("this test's binary")?)
        .env(CHILD_ENV, NAME)
        .spawn()
        .context("starting the child up")?;
    // Wait for kubelet's sysctl values on the host (kubelet started, `up` not yet restored).
    let t = Instant::now();
    let mut last = String::from("no record yet");
    let rec = loop {
        if let Some(status) = child.try_wait()? {
            bail!(
                "the child up ended ({status}) before kubelet wrote the host sysctls; last: {last}"
            );
        }
        if t.elapsed() > Duration::from_secs(300) {
            let _ = child.kill();
            let _ = child.wait();
            bail!("kubelet's host sysctls not seen within 300s; last: {last}");
        }
        if let Ok(Some(rec)) = ClusterRecord::load(&state_dir) {
            let changed: Vec<&sysctl::SavedSysctl> = rec
                .host_sysctls
                .iter()
                .filter(|s| s.before != s.node_value)
                .collect();
            let written = !changed.is_empty()
                && changed.iter().all(|s| {
                    sysctl::read(&s.key).ok().flatten().as_deref() == Some(s.node_value.as_str())
                });
            if written && rec.processes.iter().any(|p| p.name == "kubelet") {
                break rec;
            }
            last = format!(
                "{} processes recorded, sysctls {:?}",
                rec.processes.len(),
                rec.host_sysctls
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    child.kill().context("SIGKILL of the child up")?;
    let status = child.wait()?;
    eprintln!(
        "   child up killed ({status}) after {:.1}s",
        t.elapsed().as_secs_f64()
    );
    let changed = tests::host::differences(&before, &tests::host::snapshot()?);
    ensure!(
        changed.iter().any(|d| d.starts_with("sysctl ")),
        "the killed up left no sysctl changed, so this test cannot show their restore: {changed:?}"
    );
    eprintln!(
        "   the crash left {} differences, e.g. {:?}",
        changed.len(),
        changed.first()
    );
    // Every daemon the record names dies too; reread it for the ones started since.
    let rec = ClusterRecord::load(&state_dir)?.unwrap_or(rec);
    for p in &rec.processes {
        crash(p)?;
    }
    let t = Instant::now();
    while rec.processes.iter().any(|p| p.alive()) {
        ensure!(
            t.elapsed().as_secs() < 10,
            "daemons still alive 10s after SIGKILL"
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let mut o = UpOptions::new(NAME);
    o.kyverno = false;
    let second = Cluster::up(o).context("the next up after the crash")?;
    let mut guard = DownOnDrop(Some(second.clone()));
    let during = tests::host::snapshot()?;
    ensure!(
        during.sysctls == before.sysctls,
        "host sysctls with the second cluster up differ from before the first:\nbefore {:?}\nnow    {:?}",
        before.sysctls,
        during.sysctls
    );
    guard.0 = None;
    second.down().context("down of the second cluster")?;
    let left = tests::host::leftovers(second.record(), &before)?;
    ensure!(
        left.is_empty(),
        "after a SIGKILLed up, the next up and down, these differ from before:\n{}",
        left.join("\n")
    );
    Ok(())
}

/// Creates pod `name` (pause) in `default` and waits until it is Running; returns its UID.
fn running_pod(kubeconfig: &std::path::Path, name: &str) -> Result<String> {
    use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
    use kube::api::{Api, PostParams};
    let rt = tokio::runtime::Runtime::new().context("starting tokio")?;
    rt.block_on(async {
        let c = xtask::cluster::ready::client(kubeconfig).await?;
        let sas: Api<ServiceAccount> = Api::namespaced(c.clone(), "default");
        let pods: Api<Pod> = Api::namespaced(c, "default");
        let t = Instant::now();
        while sas.get_opt("default").await?.is_none() {
            ensure!(t.elapsed().as_secs() < 60, "no default ServiceAccount after 60s");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "pause", "image": xtask::cluster::config::PAUSE_IMAGE}]}
        }))?;
        pods.create(&PostParams::default(), &pod)
            .await
            .with_context(|| format!("creating pod {name}"))?;
        let t = Instant::now();
        loop {
            let p = pods.get(name).await?;
            if p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running") {
                return Ok(p.metadata.uid.unwrap_or_default());
            }
            ensure!(t.elapsed().as_secs() < 120, "pod {name} not Running after 120s");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
}

/// (phase, restart count, uid) of pod `name` in `default`.
fn pod_state(kubeconfig: &std::path::Path, name: &str) -> Result<(String, i32, String)> {
    use k8s_openapi::api::core::v1::Pod;
    use kube::api::Api;
    let rt = tokio::runtime::Runtime::new().context("starting tokio")?;
    rt.block_on(async {
        let c = xtask::cluster::ready::client(kubeconfig).await?;
        let p = Api::<Pod>::namespaced(c, "default").get(name).await?;
        let st = p.status.unwrap_or_default();
        let restarts = st
            .container_statuses
            .unwrap_or_default()
            .iter()
            .map(|c| c.restart_count)
            .sum();
        Ok((
            st.phase.unwrap_or_default(),
            restarts,
            p.metadata.uid.unwrap_or_default(),
        ))
    })
}

fn siblings() -> Result<()> {
    use xtask::cluster::process::proc_stat;
    xtask::cluster::host::require_root().context("cluster tests need a real cluster")?;
    let root = default_state_root();
    let _lock = tests::ClusterLock::acquire(&root)?;
    let before = tests::host::snapshot()?;
    let mut o = UpOptions::new("sib");
    o.kyverno = false;
    let sib = Cluster::up(o).context("up of sib")?;
    let mut guard_sib = DownOnDrop(Some(sib.clone()));
    let mut o = UpOptions::new("sib-2");
    o.kyverno = false;
    let sib2 = Cluster::up(o).context("up of sib-2")?;
    let mut guard_sib2 = DownOnDrop(Some(sib2.clone()));
    let rec2 = sib2.record().clone();
    let uid = running_pod(&rec2.kubeconfig(), "whole")?;
    let strays: Vec<(i32, u64)> = xtask::cluster::teardown::stray_pids(&rec2)
        .iter()
        .filter_map(|(pid, _)| proc_stat(*pid).map(|(_, st)| (*pid, st)))
        .collect();
    ensure!(
        !strays.is_empty(),
        "sib-2 has no container or shim process: the check is blind"
    );
    let inode = xtask::cluster::netns::inode(&rec2.netns);
    ensure!(inode.is_some(), "sib-2 has no network namespace");

    guard_sib.0 = None;
    let report = xtask::cluster::down_by_name("sib", &root)?.context("down found no sib")?;
    eprintln!("   down --name sib: {} actions", report.done.len());

    let mut broken = Vec::new();
    for p in &rec2.processes {
        if !p.alive() {
            broken.push(format!(
                "daemon {} (pid {}) of sib-2 is gone",
                p.name, p.pid
            ));
        }
    }
    for (pid, st) in &strays {
        if proc_stat(*pid).is_none_or(|(state, s)| s != *st || state == 'Z') {
            broken.push(format!("container or shim process {pid} of sib-2 is gone"));
        }
    }
    if xtask::cluster::netns::inode(&rec2.netns) != inode {
        broken.push(format!(
            "network namespace {} changed or is gone",
            rec2.netns
        ));
    }
    if xtask::cluster::netns::ifindex(&rec2.net.host_veth()) != rec2.host_veth_ifindex {
        broken.push(format!("veth {} changed or is gone", rec2.net.host_veth()));
    }
    // Give a killed container time to be noticed and restarted by kubelet before judging the pod.
    std::thread::sleep(Duration::from_secs(5));
    let (phase, restarts, uid_now) = pod_state(&rec2.kubeconfig(), "whole")?;
    if phase != "Running" || restarts != 0 || uid_now != uid {
        broken.push(format!(
            "pod whole of sib-2: phase {phase}, {restarts} restarts, uid {uid_now} (was {uid})"
        ));
    }
    ensure!(
        broken.is_empty(),
        "down --name sib touched sib-2:\n{}",
        broken.join("\n")
    );

    guard_sib2.0 = None;
    sib2.down().context("down of sib-2")?;
    let mut left = tests::host::leftovers(&rec2, &before)?;
    left.extend(tests::host::leftovers(sib.record(), &before)?);
    left.sort();
    left.dedup();
    ensure!(
        left.is_empty(),
        "after both clusters went down, these differ from before:\n{}",
        left.join("\n")
    );
    Ok(())
}
