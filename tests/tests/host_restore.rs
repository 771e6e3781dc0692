//! A SIGKILLed `cluster up` leaves the host changed (kubelet has written its host sysctls, the
//! namespace, mounts and cgroups exist); the next `up` of the same name clears the remains and
//! puts the sysctls back, and after its `down` the host is exactly as before the first `up`
//! ([`tests::host::snapshot`]: sysctls, mounts, cgroups, namespaces, links, iptables, files).
//!
//! The `up` to kill runs in a child process (this test binary again, with
//! `KCA_HOST_RESTORE_CHILD_UP=<name>`), killed the moment kubelet's sysctl values are seen on the
//! host, before `up` itself restores them; then every daemon it recorded is SIGKILLed, as when a
//! CI job or a terminal ends. Needs Linux and root; fails (never skips) otherwise.

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
    let trials = vec![Trial::test(
        "sigkilled_up_is_cleared_and_restored_by_the_next_up",
        || run().map_err(|e| format!("{e:#}").into()),
    )];
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
