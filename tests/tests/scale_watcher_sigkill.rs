//! The scale-down fault heals without its runner: a runner process arms the recovery watcher,
//! scales `kyverno/kyverno-admission-controller` to 0 on a real embedded cluster, and is killed
//! with SIGKILL right after the scale-down; the detached watcher must still restore the original
//! replicas within 56 s of arming (`restore_after_sec` = 55, lab A act 5).
//!
//! Custom harness (`harness = false`): the same binary is also the runner. Started with
//! `--scale-runner KUBECONFIG WORKDIR DEPLOYMENT_UID`, it uses the library exactly as act 5 does
//! ([`lab::faults::scale::ScaleFault::arm`], then `scale_down`), prints one `scaled-down` line and
//! waits to be killed.

use std::io::{BufRead as _, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use lab::faults::scale::{self, WatcherAction};
use libtest_mimic::{Arguments, Failed, Trial};

const RESTORE_AFTER_SEC: u64 = 55;
/// The bound the issue sets: restored within 56 s of arming.
const RESTORE_BOUND: Duration = Duration::from_secs(56);

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("--scale-runner") {
        std::process::exit(runner_main(&argv[2..]));
    }
    let args = Arguments::from_args();
    let trials = vec![Trial::test(
        "sigkill_after_scale_down_watcher_restores_within_56s",
        || sigkill_test().map_err(|e| Failed::from(format!("{e:#}"))),
    )];
    libtest_mimic::run(&args, trials).exit();
}

/// The runner mode: arm, scale down, say so, then wait (at most 10 minutes) to be killed.
fn runner_main(args: &[String]) -> i32 {
    tests::scale_runner_main(args, RESTORE_AFTER_SEC, |_fault| async {
        tokio::time::sleep(Duration::from_secs(600)).await;
        Ok(())
    })
}

fn sigkill_test() -> Result<()> {
    let lab_bin = tests::ensure_lab_binary()?;
    let env = tests::LabCluster::fresh("scale-sigkill")?;
    let kubeconfig = env.kubeconfig();
    // The fault directory (plan, ledger, watcher record and log) is kept for inspection.
    let workdir = xtask::cluster::config::default_state_root().join(format!(
        "scale-sigkill-workdir-{}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S")
    ));
    std::fs::create_dir_all(&workdir).with_context(|| format!("creating {}", workdir.display()))?;

    let rt = tokio::runtime::Runtime::new().context("starting tokio")?;
    // The test observes the Deployment with its own client, not through the lab's code.
    let client = rt.block_on(xtask::cluster::ready::client(&kubeconfig))?;
    let deployments: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
        kube::Api::namespaced(client.clone(), scale::NAMESPACE);
    let dep = rt
        .block_on(deployments.get(scale::DEPLOYMENT))
        .context("reading the admission controller deployment")?;
    let uid = dep.metadata.uid.clone().context("deployment without uid")?;
    ensure!(
        dep.spec.as_ref().and_then(|s| s.replicas) == Some(1),
        "the fresh cluster's admission controller should have 1 replica, has {:?}",
        dep.spec.as_ref().and_then(|s| s.replicas)
    );

    // The runner: this binary in runner mode, a separate process we can SIGKILL.
    let exe = std::env::current_exe().context("current_exe")?;
    let mut runner = Command::new(&exe)
        .arg("--scale-runner")
        .arg(&kubeconfig)
        .arg(&workdir)
        .arg(&uid)
        .env(lab::faults::freeze::LAB_BIN_ENV, &lab_bin)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting the runner")?;
    let stdout = runner.stdout.take().context("runner stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.strip_prefix("scaled-down ") {
                let _ = tx.send(rest.to_string());
                break;
            }
        }
    });
    let line = match rx.recv_timeout(Duration::from_secs(90)) {
        Ok(l) => l,
        Err(_) => {
            let _ = runner.kill();
            let _ = runner.wait();
            bail!("the runner did not report the scale-down within 90 s");
        }
    };
    // SIGKILL right after the scale-down (std's Child::kill sends SIGKILL to our own unreaped child).
    runner.kill().context("SIGKILL to the runner")?;
    let killed_at = lab::facts::now_rfc3339();
    let status = runner.wait().context("reaping the runner")?;
    ensure!(
        !status.success(),
        "the runner was not killed (it exited with {status})"
    );
    let info: serde_json::Value = serde_json::from_str(&line).context("runner's line")?;
    let fault_dir = PathBuf::from(info["fault_dir"].as_str().context("fault_dir")?);
    let armed_at = lab::facts::parse_rfc3339(info["armed_at"].as_str().unwrap_or_default())
        .context("armed_at")?;
    eprintln!(
        "runner killed at {killed_at}; fault {}",
        fault_dir.display()
    );

    // Replicas are 0 now (the runner did scale) …
    let scale_now = rt.block_on(deployments.get_scale(scale::DEPLOYMENT))?;
    // autoscaling/v1 ScaleSpec omits `replicas: 0` (omitempty), hence the default.
    ensure!(
        scale_now
            .spec
            .as_ref()
            .and_then(|s| s.replicas)
            .unwrap_or(0)
            == 0,
        "after the scale-down the replicas should be 0, are {:?}",
        scale_now.spec.as_ref().and_then(|s| s.replicas)
    );

    // … and come back without the runner.
    let start = Instant::now();
    let mut seen_restored_at = None;
    while start.elapsed() < Duration::from_secs(90) {
        let s = rt.block_on(deployments.get_scale(scale::DEPLOYMENT))?;
        if s.spec.as_ref().and_then(|s| s.replicas) == Some(1) {
            seen_restored_at = Some(chrono::Utc::now());
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let seen_restored_at =
        seen_restored_at.context("the replicas were not restored within 90 s")?;

    // Wait for the watcher to write its final record (it writes right after its restore).
    let dir = scale::FaultDir(fault_dir);
    let mut record = None;
    for _ in 0..50 {
        if let Some(w) = dir.read_watcher()?
            && w.action != WatcherAction::Waiting
        {
            record = Some(w);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let record = record.context("the watcher wrote no final record")?;
    let ledger = dir.read_ledger()?;
    eprintln!(
        "watcher: {:?}, armed {}, deadline {}, restored {:?}; replicas seen back at {}",
        record.action,
        record.armed_at,
        record.deadline_at,
        record.restored_at,
        seen_restored_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    );
    ensure!(
        record.action == WatcherAction::Restored,
        "the watcher should have restored the replicas, recorded {:?} ({:?})",
        record.action,
        record.error
    );
    ensure!(
        ledger.last(scale::LedgerEvent::Restored).is_none(),
        "the killed runner cannot have restored anything, but the ledger says it did"
    );
    let restored_at = lab::facts::parse_rfc3339(record.restored_at.as_deref().unwrap_or_default())
        .context("watcher restored_at")?;
    let after_arm = (restored_at - armed_at).to_std().unwrap_or_default();
    eprintln!(
        "restored {:.3} s after arming (bound {} s)",
        after_arm.as_secs_f64(),
        RESTORE_BOUND.as_secs()
    );
    ensure!(
        after_arm <= RESTORE_BOUND,
        "restored {:.3} s after arming, more than {} s",
        after_arm.as_secs_f64(),
        RESTORE_BOUND.as_secs()
    );
    ensure!(
        (seen_restored_at - armed_at).to_std().unwrap_or_default()
            <= RESTORE_BOUND + Duration::from_secs(1),
        "the API server showed the restore only at {seen_restored_at}"
    );
    Ok(())
}
