//! Lab A's fault-attempt rows (issue 12) on the shared lab A cluster (`lab_a.rs`; formerly the
//! `lab_a_fault_rows` binary with a cluster of its own, and `scale_watcher_sigkill` with another):
//!
//! - `watcher_killed_then_inspect`: a work dir holding lab A's acts 1-4 (a copy of the lab A
//!   run's, taken when its act 4 passed; the row runs acts 1-4 itself when those acts were filtered
//!   out); act 5 as the student runs it (its own `kca-webhook-lab act 5` process, which exits and
//!   hands the fault to act 6, leaving the admission controller at 0 replicas); the recovery
//!   watcher, still alive after its runner exited, is SIGKILLed before its deadline; then the
//!   student's `kca-webhook-lab inspect` heals first: the replicas are back to the original 1, the
//!   attempt's `heal.json` records `restored` with the API answer, and act 6 then completes.
//! - `runner_stopped_past_deadline`: a runner (this binary re-executed, using `ScaleFault` as act 5
//!   does) scales to 0 and is SIGSTOPped; the watcher alone restores within 56 s of arming (the
//!   runner's ledger has no restore then); continued, the runner's restore finds the replicas
//!   already restored, records it in its ledger, and names the watcher as the restorer.
//! - `disk_full`: the work dir is a 512 KiB tmpfs the test mounts on a directory it made
//!   (unmounted after, also on failure); it is filled after the scale-down; the runner's restore
//!   still restores, and its error says the ledger could not be written; the watcher, SIGTERMed,
//!   exits without panicking on the full disk; once space is freed, `kca-webhook-lab heal` finds
//!   the replicas restored and records it.
//!
//! Each row starts at 1 replica and leaves 1 replica. Timings (time until healed) are printed as
//! `figure:` lines; the bounds are asserted (watcher restore ≤ 56 s after arming; the heal
//! by the next command).

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use lab::evidence::{ActStatus, Lab};
use lab::faults::attempt::ProcessRef;
use lab::faults::scale::{self, FaultDir, LedgerEvent, RestoreOutcome, Restorer, WatcherAction};
use tests::LabCluster;
use xtask::lab_run::LabRun;

/// The runner mode's first argument (`--scale-runner KUBECONFIG WORKDIR DEPLOYMENT_UID`).
pub const RUNNER_FLAG: &str = "--scale-runner";
const RESTORE_AFTER_SEC: u64 = 55;
/// The bound: replicas restored within 56 s of arming while the watcher lives.
const RESTORE_BOUND: Duration = Duration::from_secs(56);
/// Prefix of the scratch directories the rows make under the state root.
const SCRATCH_PREFIX: &str = "a-rows";

// ---------------------------------------------------------------------------------------------
// The runner: this binary with `--scale-runner KUBECONFIG WORKDIR DEPLOYMENT_UID`.

/// Arms the watcher (55 s) and scales to 0 as act 5 does, prints `scaled-down {json}`, then for
/// each stdin line `restore` restores as the runner and prints `restore-ok {outcome}` or
/// `restore-err {text}`, then `restored-by {json}`. Exits at the end of stdin. Returns the exit
/// code.
pub fn runner_main(args: &[String]) -> i32 {
    tests::scale_runner_main(args, RESTORE_AFTER_SEC, |mut fault| async move {
        for line in std::io::stdin().lines() {
            if line? != "restore" {
                continue;
            }
            match fault.restore(Restorer::Runner).await {
                Ok(o) => println!("restore-ok {}", serde_json::to_string(&o)?),
                Err(e) => println!("restore-err {e}"),
            }
            let by = fault.restored_by().map_err(anyhow::Error::msg)?;
            println!("restored-by {}", serde_json::to_string(&by)?);
        }
        Ok(())
    })
}

/// A running runner: its stdin, its stdout lines, killed (SIGKILL through its handle) and reaped
/// when dropped still running.
struct Runner {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl Runner {
    fn start(cluster: &LabCluster, workdir: &Path, uid: &str) -> Result<Runner> {
        let mut child = Command::new(std::env::current_exe()?)
            .arg(RUNNER_FLAG)
            .arg(cluster.kubeconfig())
            .arg(workdir)
            .arg(uid)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("starting the runner")?;
        let stdout = child.stdout.take().context("runner stdout")?;
        let stdin = child.stdin.take();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Runner {
            child,
            stdin,
            lines,
        })
    }

    /// The next line starting with `prefix` (its rest), within `bound`.
    fn expect(&self, prefix: &str, bound: Duration) -> Result<String> {
        let t0 = Instant::now();
        loop {
            let left = bound.saturating_sub(t0.elapsed());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    if let Some(rest) = l.strip_prefix(prefix) {
                        return Ok(rest.trim_start().to_owned());
                    }
                }
                Err(_) => bail!("the runner said no `{prefix}` line within {bound:?}"),
            }
        }
    }

    fn send(&mut self, line: &str) -> Result<()> {
        let stdin = self.stdin.as_mut().context("runner stdin closed")?;
        writeln!(stdin, "{line}")?;
        stdin.flush()?;
        Ok(())
    }

    /// SIGSTOP / SIGCONT through a pidfd (our unreaped child: its PID is still its own).
    fn signal(&self, sig: rustix::process::Signal) -> Result<()> {
        let p = ProcessRef::of(self.child.id() as i32).context("runner has no /proc entry")?;
        ensure!(p.signal(sig)?, "the runner was already gone");
        Ok(())
    }

    /// Closes stdin and waits (bounded) for the exit status.
    fn finish(mut self, bound: Duration) -> Result<std::process::ExitStatus> {
        drop(self.stdin.take());
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait()? {
                return Ok(st);
            }
            if t0.elapsed() > bound {
                bail!("the runner did not exit within {bound:?} after its stdin closed");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Runner {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Cluster helpers.

/// The test's own view of the admission controller Deployment (its own client, not the lab's).
pub struct Api {
    rt: tokio::runtime::Runtime,
    deployments: kube::Api<k8s_openapi::api::apps::v1::Deployment>,
}

impl Api {
    /// A client from the cluster's kubeconfig.
    pub fn new(cluster: &LabCluster) -> Result<Api> {
        let rt = tokio::runtime::Runtime::new()?;
        // The test observes with its own client, not through the lab's code.
        let client = rt.block_on(xtask::cluster::ready::client(&cluster.kubeconfig()))?;
        Ok(Api {
            rt,
            deployments: kube::Api::namespaced(client, scale::NAMESPACE),
        })
    }

    /// `spec.replicas` of the admission controller's scale (autoscaling/v1 omits 0).
    fn replicas(&self) -> Result<i32> {
        let s = self
            .rt
            .block_on(self.deployments.get_scale(scale::DEPLOYMENT))?;
        Ok(s.spec.and_then(|s| s.replicas).unwrap_or(0))
    }

    /// Sets the replicas back to 1 when they are not; returns what they were then.
    pub fn reset_replicas(&self) -> Result<Option<i32>> {
        let r = self.replicas()?;
        if r == 1 {
            return Ok(None);
        }
        let patch = serde_json::json!({"spec": {"replicas": 1}});
        self.rt.block_on(self.deployments.patch_scale(
            scale::DEPLOYMENT,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        ))?;
        Ok(Some(r))
    }

    fn uid(&self) -> Result<String> {
        let d = self.rt.block_on(self.deployments.get(scale::DEPLOYMENT))?;
        d.metadata.uid.context("deployment without uid")
    }

    /// Polls until the replicas are `want`; returns when that was seen.
    fn wait_replicas(&self, want: i32, bound: Duration) -> Result<Instant> {
        let t0 = Instant::now();
        loop {
            let r = self.replicas()?;
            if r == want {
                return Ok(Instant::now());
            }
            if t0.elapsed() > bound {
                bail!("replicas {r}, not {want}, after {bound:?}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn scratch(name: &str) -> Result<PathBuf> {
    let dir = xtask::cluster::config::default_state_root().join(format!(
        "{SCRATCH_PREFIX}-{name}-{}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%3fZ")
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// The watcher's record once it finished (not `waiting`), within `bound`.
fn watcher_final(dir: &FaultDir, bound: Duration) -> Result<scale::WatcherRecord> {
    let t0 = Instant::now();
    loop {
        if let Some(w) = dir.read_watcher()?
            && w.action != WatcherAction::Waiting
        {
            return Ok(w);
        }
        if t0.elapsed() > bound {
            bail!("the watcher wrote no final record within {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn watcher_ref(dir: &FaultDir) -> Result<ProcessRef> {
    let w = dir.read_watcher()?.context("no watcher.json")?;
    Ok(ProcessRef {
        pid: w.pid as i32,
        start_ticks: w
            .pid_start_ticks
            .context("watcher.json without start ticks")?,
    })
}

fn wait_gone(p: &ProcessRef, bound: Duration) -> Result<()> {
    let t0 = Instant::now();
    while p.is_alive() {
        if t0.elapsed() > bound {
            bail!("pid {} still alive after {bound:?}", p.pid);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// Runs `kca-webhook-lab --lang en --lab a --workdir WORKDIR --kubeconfig … --cri-endpoint …
/// ARGS` as a student would; returns its status and stdout + stderr.
fn lab_command(
    cluster: &LabCluster,
    workdir: &Path,
    args: &[&str],
) -> Result<(std::process::ExitStatus, String)> {
    let cmd = tests::student_command(
        Lab::A,
        workdir,
        &cluster.kubeconfig(),
        Path::new(cluster.cri_endpoint().trim_start_matches("unix://")),
        args,
    )?;
    tests::run_to_end(cmd, &format!("kca-webhook-lab {}", args.join(" ")))
}

fn figure(row: &str, what: &str, d: Duration) {
    eprintln!("    figure: row {row}: {what} {} ms", d.as_millis());
}

// ---------------------------------------------------------------------------------------------
// Rows.

/// Where lab A's acts 1-4 come from for [`watcher_killed_then_inspect`].
pub enum Acts1To4 {
    /// A copy of the lab A run's work dir made right after its act 4 passed.
    Copied(PathBuf),
    /// Not run in this process (filtered out): the row runs them itself in `workdir`.
    RunHere(PathBuf),
}

/// Copies the work dir `from` (inputs, evidence) into `to` (created; must not exist), leaving
/// out the work-dir lock file. Errors name the file.
pub fn copy_workdir(from: &Path, to: &Path) -> Result<()> {
    ensure!(!to.exists(), "{} exists already", to.display());
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry?;
        let rel = entry.path().strip_prefix(from)?;
        if rel.as_os_str() == lab::faults::attempt::WORKDIR_LOCK {
            continue;
        }
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest)
                .with_context(|| format!("creating {}", dest.display()))?;
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &dest).with_context(|| {
                format!("copying {} to {}", entry.path().display(), dest.display())
            })?;
        }
    }
    Ok(())
}

/// The watcher-SIGKILL row (see the module docs).
pub fn watcher_killed_then_inspect(cluster: &LabCluster, acts: Acts1To4) -> Result<()> {
    let api = Api::new(cluster)?;
    ensure!(api.replicas()? == 1, "row needs 1 replica to start");
    let workdir = match &acts {
        Acts1To4::Copied(w) | Acts1To4::RunHere(w) => w.clone(),
    };
    let run = LabRun::new(
        Lab::A,
        &workdir,
        &cluster.kubeconfig(),
        &cluster.cri_endpoint(),
    )?;
    if let Acts1To4::RunHere(_) = acts {
        for act in 1..=4 {
            let s = run.act(act)?;
            ensure!(s.status == ActStatus::Completed, "act {act} {:?}", s.status);
        }
    }
    // Act 5 as the student runs it: its own process, which exits when the act completes (a heal
    // leaves alone an attempt whose runner still lives).
    run.write_inputs(5)?;
    let (status, text) = lab_command(cluster, &workdir, &["act", "5"])?;
    ensure!(status.success(), "act 5 failed: {status}\n{text}");
    let f5: lab::facts::a::Act5Facts =
        serde_json::from_value(run.workdir().read_evidence(5)?.evidence.facts)?;
    let dir = FaultDir(PathBuf::from(
        f5.watcher
            .fault_dir
            .clone()
            .context("act 5 names no fault dir")?,
    ));
    ensure!(api.replicas()? == 0, "act 5 should hand over at 0 replicas");
    let deadline = lab::facts::parse_rfc3339(f5.watcher.deadline_at.as_deref().unwrap_or_default())
        .context("watcher deadline")?;
    let left = (deadline - chrono::Utc::now()).to_std().unwrap_or_default();
    ensure!(
        left > Duration::from_secs(10),
        "acts 1-5 left only {left:?} before the watcher's deadline: the row needs the fault live"
    );
    // SIGKILL the watcher (pidfd, start ticks re-checked) mid-fault.
    let watcher = watcher_ref(&dir)?;
    ensure!(
        watcher.signal(rustix::process::Signal::KILL)?,
        "watcher already gone"
    );
    let killed = Instant::now();
    wait_gone(&watcher, Duration::from_secs(5))?;
    ensure!(
        api.replicas()? == 0,
        "nothing may restore before the next command"
    );
    // The student's next command: inspect.
    let (status, text) = lab_command(cluster, &workdir, &["inspect"])?;
    ensure!(status.success(), "inspect failed: {status}\n{text}");
    let restored = api.wait_replicas(1, Duration::from_secs(5))?;
    figure(
        "watcher-sigkill",
        "replicas 1 again after the kill",
        restored - killed,
    );
    let heal = lab::faults::heal::read_heal(&dir.0).context("no heal.json in the attempt")?;
    ensure!(
        heal.action == "restored" && heal.command == "inspect",
        "heal.json should record inspect's restore: {heal:?}"
    );
    ensure!(
        matches!(heal.restore, Some(RestoreOutcome::Restored { .. })),
        "heal.json should keep the API's answer: {:?}",
        heal.restore
    );
    ensure!(
        text.contains("healing earlier faults"),
        "inspect should say it healed:\n{text}"
    );
    // Act 6 is then allowed and completes.
    let s6 = run.act(6)?;
    ensure!(s6.status == ActStatus::Completed, "act 6 {:?}", s6.status);
    Ok(())
}

/// The runner-SIGSTOP row (see the module docs).
pub fn runner_stopped_past_deadline(cluster: &LabCluster) -> Result<()> {
    let api = Api::new(cluster)?;
    ensure!(api.replicas()? == 1, "row needs 1 replica to start");
    let work = scratch("sigstop")?;
    let mut r = Runner::start(cluster, &work, &api.uid()?)?;
    let info: serde_json::Value =
        serde_json::from_str(&r.expect("scaled-down", Duration::from_secs(90))?)?;
    r.signal(rustix::process::Signal::STOP)?;
    // autoscaling/v1 omits `replicas: 0`; `replicas()` reads that as 0.
    ensure!(
        api.replicas()? == 0,
        "after the scale-down the replicas should be 0"
    );
    let armed_at = lab::facts::parse_rfc3339(info["armed_at"].as_str().unwrap_or_default())
        .context("armed_at")?;
    let dir = FaultDir(PathBuf::from(
        info["fault_dir"].as_str().context("fault_dir")?,
    ));
    api.wait_replicas(1, Duration::from_secs(90))?;
    let seen = chrono::Utc::now();
    let w = watcher_final(&dir, Duration::from_secs(10))?;
    ensure!(
        w.action == WatcherAction::Restored && w.woke_by.as_deref() == Some("deadline"),
        "the watcher should restore at its deadline: {w:?}"
    );
    let restored_at = lab::facts::parse_rfc3339(w.restored_at.as_deref().unwrap_or_default())
        .context("watcher restored_at")?;
    let after = (restored_at - armed_at).to_std().unwrap_or_default();
    figure("runner-sigstop", "watcher restored after arming", after);
    ensure!(
        after <= RESTORE_BOUND,
        "restored {after:?} after arming (> 56 s)"
    );
    ensure!(
        (seen - armed_at).to_std().unwrap_or_default() <= RESTORE_BOUND + Duration::from_secs(1),
        "the API showed the restore only at {seen}"
    );
    // The restore was the watcher's alone: the stopped runner's ledger records none yet.
    ensure!(
        dir.read_ledger()?.last(LedgerEvent::Restored).is_none(),
        "the stopped runner cannot have restored anything, but its ledger says it did"
    );
    // The runner, continued, records what it finds.
    r.signal(rustix::process::Signal::CONT)?;
    r.send("restore")?;
    let ok = r.expect("restore-", Duration::from_secs(30))?;
    ensure!(
        ok.starts_with("ok ") && ok.contains("already-restored"),
        "the continued runner should find the replicas already restored: {ok}"
    );
    let by = r.expect("restored-by", Duration::from_secs(5))?;
    ensure!(
        by.contains("watcher"),
        "restored by the watcher, runner says {by}"
    );
    let st = r.finish(Duration::from_secs(10))?;
    ensure!(st.success(), "runner exit {st}");
    let ledger = dir.read_ledger()?;
    let last = ledger
        .last(LedgerEvent::Restored)
        .context("the runner's ledger has no restored entry")?;
    ensure!(
        last.by == Some(Restorer::Runner)
            && last.detail.get("result").and_then(|v| v.as_str()) == Some("already-restored"),
        "ledger's restored entry: {last:?}"
    );
    ensure!(api.replicas()? == 1, "replicas changed after the row");
    Ok(())
}

/// A 512 KiB tmpfs mounted on a directory this test made; unmounted and removed when dropped.
struct SmallTmpfs(PathBuf);

impl SmallTmpfs {
    fn mount(dir: &Path) -> Result<SmallTmpfs> {
        std::fs::create_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
        if let Err(e) = nix::mount::mount(
            Some("tmpfs"),
            dir,
            Some("tmpfs"),
            nix::mount::MsFlags::MS_NOSUID | nix::mount::MsFlags::MS_NODEV,
            Some("size=512k,mode=0700"),
        ) {
            let _ = std::fs::remove_dir(dir);
            bail!("mounting a tmpfs on {}: {e}", dir.display());
        }
        Ok(SmallTmpfs(dir.to_path_buf()))
    }

    fn fill(&self) -> Result<()> {
        let mut f = std::fs::File::create(self.0.join("fill"))?;
        let block = vec![0u8; 64 * 1024];
        while f.write_all(&block).is_ok() {}
        ensure!(
            std::fs::write(self.0.join("probe"), b"x").is_err(),
            "the tmpfs is not full"
        );
        Ok(())
    }

    fn free(&self) -> Result<()> {
        std::fs::remove_file(self.0.join("fill"))?;
        Ok(())
    }
}

impl Drop for SmallTmpfs {
    fn drop(&mut self) {
        if let Err(e) = nix::mount::umount2(&self.0, nix::mount::MntFlags::MNT_DETACH) {
            eprintln!("   unmounting {} failed: {e}", self.0.display());
        }
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// The disk-full row (see the module docs).
pub fn disk_full(cluster: &LabCluster) -> Result<()> {
    let api = Api::new(cluster)?;
    ensure!(api.replicas()? == 1, "row needs 1 replica to start");
    let base = scratch("diskfull")?;
    let fs = SmallTmpfs::mount(&base.join("tmpfs"))?;
    let work = fs.0.join("w");
    std::fs::create_dir(&work)?;
    let mut r = Runner::start(cluster, &work, &api.uid()?)?;
    let info: serde_json::Value =
        serde_json::from_str(&r.expect("scaled-down", Duration::from_secs(90))?)?;
    let dir = FaultDir(PathBuf::from(
        info["fault_dir"].as_str().context("fault_dir")?,
    ));
    let watcher = watcher_ref(&dir)?;
    ensure!(api.replicas()? == 0, "scaled to 0");
    fs.fill()?;
    let t0 = Instant::now();
    r.send("restore")?;
    let said = r.expect("restore-", Duration::from_secs(30))?;
    let restored = api.wait_replicas(1, Duration::from_secs(10))?;
    figure(
        "disk-full",
        "replicas 1 again after the runner's restore",
        restored - t0,
    );
    ensure!(
        said.starts_with("err ")
            && said.contains("could not be written")
            && said.contains("Restored"),
        "the runner should restore, then say its ledger could not be written: {said}"
    );
    let st = r.finish(Duration::from_secs(10))?;
    ensure!(st.success(), "runner exit {st}");
    // The watcher on the full disk: SIGTERM heals first (already restored) and it exits.
    ensure!(
        watcher.signal(rustix::process::Signal::TERM)?,
        "the watcher was gone before its deadline"
    );
    wait_gone(&watcher, Duration::from_secs(15))?;
    let log = std::fs::read_to_string(dir.watcher_log()).unwrap_or_default();
    ensure!(!log.contains("panicked"), "the watcher panicked:\n{log}");
    ensure!(
        api.replicas()? == 1,
        "replicas changed after the watcher's exit"
    );
    // Space back: the next command records what it found.
    fs.free()?;
    let (status, text) = lab_command(cluster, &work, &["heal"])?;
    ensure!(
        status.success(),
        "heal after freeing space: {status}\n{text}"
    );
    let heal = lab::faults::heal::read_heal(&dir.0).context("no heal.json")?;
    ensure!(
        heal.action == "already-restored",
        "heal should find the replicas already restored: {heal:?}"
    );
    drop(fs);
    let _ = std::fs::remove_dir(&base);
    Ok(())
}
