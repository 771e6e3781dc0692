//! Lab A's fault-attempt rows (issue 12) on the shared lab A cluster (`lab_a.rs`; formerly the
//! `lab_a_fault_rows` binary with a cluster of its own, and `scale_watcher_sigkill` with another).
//! Every row drives the real `kca-webhook-lab` processes a student runs (`act 4`, `act 5`,
//! `act 6`, `inspect`, `heal`), never a harness of its own around the fault code:
//!
//! - `watcher_killed_then_inspect`: a work dir holding lab A's acts 1-4 (a copy of the lab A
//!   run's, taken when its act 4 passed; the row runs acts 1-4 itself when those acts were filtered
//!   out); act 5 as the student runs it (its own `kca-webhook-lab act 5` process, which exits and
//!   hands the fault to act 6, leaving the admission controller at 0 replicas); the recovery
//!   watcher, still alive after its runner exited, is SIGKILLed before its deadline; then the
//!   student's `kca-webhook-lab inspect` heals first: the replicas are back to the original 1, the
//!   attempt's `heal.json` records `restored` with the API answer, and act 6 then completes.
//! - `runner_stopped_past_deadline`: in a row work dir of its own ([`RowDir`]), the real
//!   `kca-webhook-lab act 5` is SIGSTOPped right after its scale-down (its first saved progress),
//!   while it waits for the controller's pods to be gone, and kept stopped: the watcher alone
//!   restores within 56 s of arming (the ledger has no restore then, the runner is still `T`);
//!   continued 0.5 s later, act 5 sees the replicas are no longer 0, stops at once (no second
//!   scale-down), its own restore finds the replicas already restored and records that in the
//!   ledger, and its `interrupted` evidence names the watcher as the restorer.
//! - `runner_stopped_before_request`: in a row work dir of its own, the real `act 5` is started
//!   with its watcher program behind a gate ([`WatcherGate`], a shell script named by
//!   `KCA_WEBHOOK_LAB_BIN`), SIGSTOPped while it waits for the watcher's ready answer, i.e. before
//!   its scale-down request, and kept stopped past the watcher's deadline: the watcher (which now
//!   owns the scale-down) arms, is asked nothing, finds 1 replica at its deadline and exits; the
//!   replicas, sampled every 0.5 s, never leave 1. Continued, act 5 reads the ready answer, writes
//!   `scaling-down`, and its request meets the exited watcher (EPIPE): it fails saying nothing was
//!   scaled, its own restore finds the replicas already restored, the ledger has no `scaled-down`,
//!   its `interrupted` evidence no `scale-down`, and the replicas are 1.
//! - `disk_full`: the row work dir is on a 1 MiB tmpfs the test mounts on a directory it made
//!   (unmounted and removed after, also on failure); `act 4` and `act 5` run there (act 5 hands the
//!   fault over at 0 replicas), then the tmpfs is filled and the student's `act 6` runs: it
//!   restores the replicas (before the watcher's deadline: the watcher is still waiting), then
//!   fails saying the ledger could not be written; the watcher, SIGTERMed, exits without
//!   panicking on the full disk; once space is freed, `kca-webhook-lab heal` finds the replicas
//!   restored and records it.
//!
//! Each row starts at 1 replica and leaves 1 replica. Timings (time until healed) are printed as
//! `figure:` lines; the bounds are asserted (watcher restore ≤ 56 s after arming; the heal
//! by the next command).

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use lab::evidence::{ActStatus, Lab};
use lab::faults::process::ProcessRef;
use lab::faults::scale::{self, AttemptFiles, HealerAction, LedgerEvent, RestoreOutcome, UndoneBy};
use lab::workdir::Workdir;
use tests::LabCluster;
use xtask::lab_run::LabRun;

/// The bound: replicas restored within 56 s of arming while the watcher lives.
const RESTORE_BOUND: Duration = Duration::from_secs(56);
/// The disk-full row's tmpfs (mount option, and in words): room for lab A's inputs and acts 1-5's
/// evidence (about 0.3 MB with act 5's progress files), nothing more.
const TMPFS_SIZE_OPTION: &str = "size=1m,mode=0700";
/// Bound on act 5 reaching its scale-down (heal first, checks, watcher ready, scale).
const SCALED_BOUND: Duration = Duration::from_secs(90);
/// Bound on a whole act (5 or 6) once continued or started.
const ACT_BOUND: Duration = Duration::from_secs(150);

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

/// The watcher's record once it finished (not `waiting`), within `bound`.
fn watcher_final(dir: &AttemptFiles, bound: Duration) -> Result<scale::HealerReport> {
    let t0 = Instant::now();
    loop {
        if let Some(w) = dir.read_scale_report()?
            && w.action != HealerAction::Waiting
        {
            return Ok(w);
        }
        if t0.elapsed() > bound {
            bail!("the watcher wrote no final record within {bound:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn watcher_ref(dir: &AttemptFiles) -> Result<ProcessRef> {
    let w = dir.read_scale_report()?.context("no healer.json")?;
    Ok(ProcessRef {
        pid: w.pid as i32,
        start_time_ticks: w
            .start_time_ticks
            .context("healer.json without start ticks")?,
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

/// Runs lab A's acts `1..=upto` that have no evidence yet in `dir` (in this process, as `cargo
/// xtask lab run` does), so the rows can start when the lab's own acts were filtered out.
pub fn ensure_acts(cluster: &LabCluster, dir: &Path, upto: u8) -> Result<()> {
    let run = LabRun::new(Lab::A, dir, &cluster.kubeconfig(), &cluster.cri_endpoint())?;
    for act in 1..=upto {
        if run.workdir().evidence_path(act).exists() {
            continue;
        }
        let s = run.act(act)?;
        ensure!(s.status == ActStatus::Completed, "act {act} {:?}", s.status);
    }
    Ok(())
}

/// One row's own work directory and the `act 5` it runs in the background. Made from `source`
/// (a work dir holding lab A's acts 1-3): the input files (`*.json` at its top) and
/// `evidence/01-03.json` are copied, then `act 4` runs there as a student runs it (the
/// investigation pins the admission controller as it is now: an earlier row's restore replaced
/// its pod). When dropped without [`RowDir::done`] (the row failed), kills its `act 5` if still
/// running (our child, by its handle; SIGKILL also ends a stopped process) and runs
/// `kca-webhook-lab heal` there, so no scale-down outlives the row.
struct RowDir<'a> {
    cluster: &'a LabCluster,
    run: LabRun,
    dir: PathBuf,
    logs: PathBuf,
    act5: Option<Child>,
    done: bool,
}

impl<'a> RowDir<'a> {
    /// The row's work dir `dir` (must not exist), its act logs in `logs` (created).
    fn new(cluster: &'a LabCluster, source: &Path, logs: &Path, dir: &Path) -> Result<RowDir<'a>> {
        ensure!(!dir.exists(), "{} exists already", dir.display());
        std::fs::create_dir_all(logs).with_context(|| format!("creating {}", logs.display()))?;
        std::fs::create_dir_all(dir.join("evidence"))
            .with_context(|| format!("creating {}", dir.display()))?;
        for e in std::fs::read_dir(source)? {
            let p = e?.path();
            if p.is_file() && p.extension().is_some_and(|x| x == "json") {
                std::fs::copy(&p, dir.join(p.file_name().context("name")?))
                    .with_context(|| format!("copying {}", p.display()))?;
            }
        }
        for act in 1..=3u8 {
            let from = Workdir::new(source).evidence_path(act);
            std::fs::copy(&from, Workdir::new(dir).evidence_path(act))
                .with_context(|| format!("copying {}", from.display()))?;
        }
        eprintln!("    row work dir {}", dir.display());
        let run = LabRun::new(Lab::A, dir, &cluster.kubeconfig(), &cluster.cri_endpoint())?;
        let rd = RowDir {
            cluster,
            run,
            dir: dir.to_path_buf(),
            logs: logs.to_path_buf(),
            act5: None,
            done: false,
        };
        rd.run.write_inputs(4)?;
        let (st, text) = rd.output(&["act", "4"])?;
        ensure!(st.success(), "act 4 in the row's work dir ({st}):\n{text}");
        rd.run.write_inputs(5)?;
        Ok(rd)
    }

    fn workdir(&self) -> &Workdir {
        self.run.workdir()
    }

    /// Runs `kca-webhook-lab ARGS` in the row's work dir to its end: status, stdout + stderr.
    fn output(&self, args: &[&str]) -> Result<(ExitStatus, String)> {
        lab_command(self.cluster, &self.dir, args)
    }

    /// Starts `act 5` in the background, its output in `<logs>/act5.log`.
    fn spawn_act5(&mut self) -> Result<u32> {
        self.spawn_act5_env(&[])
    }

    /// [`RowDir::spawn_act5`] with extra environment variables.
    fn spawn_act5_env(&mut self, env: &[(&str, &std::ffi::OsStr)]) -> Result<u32> {
        let log = std::fs::File::create(self.logs.join("act5.log"))?;
        let mut cmd = tests::student_command(
            Lab::A,
            &self.dir,
            &self.cluster.kubeconfig(),
            Path::new(self.cluster.cri_endpoint().trim_start_matches("unix://")),
            &["act", "5"],
        )?;
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting act 5")?;
        let pid = child.id();
        self.act5 = Some(child);
        Ok(pid)
    }

    fn act5_log(&self) -> String {
        std::fs::read_to_string(self.logs.join("act5.log")).unwrap_or_default()
    }

    /// Whether the background `act 5` has exited (its status then).
    fn act5_exited(&mut self) -> Result<Option<ExitStatus>> {
        Ok(self.act5.as_mut().context("no act 5 started")?.try_wait()?)
    }

    /// Waits (bounded) for the background `act 5` to exit; its status.
    fn wait_act5(&mut self, bound: Duration) -> Result<ExitStatus> {
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.act5_exited()? {
                return Ok(st);
            }
            if t0.elapsed() > bound {
                bail!(
                    "act 5 still running after {bound:?}; its output:\n{}",
                    self.act5_log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The row passed: nothing to clean up.
    fn done(mut self) {
        self.done = true;
    }
}

impl Drop for RowDir<'_> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Some(c) = &mut self.act5
            && matches!(c.try_wait(), Ok(None))
        {
            let _ = c.kill();
            let _ = c.wait();
        }
        match self.output(&["heal"]) {
            Ok((st, text)) => eprintln!("    row cleanup: kca-webhook-lab heal ({st}):\n{text}"),
            Err(e) => eprintln!("    row cleanup: kca-webhook-lab heal could not run: {e:#}"),
        }
    }
}

/// `<parent of source>/<row>`: where a row keeps its work dir and logs, beside the source work dir
/// (both under the test's artifacts).
fn row_base(source: &Path, row: &str) -> Result<PathBuf> {
    Ok(source
        .parent()
        .context("the source work dir has no parent")?
        .join(row))
}

/// Act 5's facts (typed) from its final or partial evidence file `path`.
fn act5_facts_at(path: &Path) -> Result<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_slice(
        &std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
    )
    .with_context(|| format!("parsing {}", path.display()))?;
    Ok(v["facts"].clone())
}

fn at(t: Option<&str>, what: &str) -> Result<chrono::DateTime<chrono::Utc>> {
    lab::facts::parse_rfc3339(t.unwrap_or_default()).with_context(|| format!("{what}: {t:?}"))
}

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
        ensure_acts(cluster, &workdir, 4)?;
    }
    // Act 5 as the student runs it: its own process, which exits when the act completes (a heal
    // leaves alone an attempt whose runner still lives).
    run.write_inputs(5)?;
    let (status, text) = lab_command(cluster, &workdir, &["act", "5"])?;
    ensure!(status.success(), "act 5 failed: {status}\n{text}");
    let f5: lab::facts::a::Act5Facts =
        serde_json::from_value(run.workdir().read_evidence(5)?.evidence.facts)?;
    let dir = AttemptFiles {
        dir: PathBuf::from(
            f5.watcher
                .fault_dir
                .clone()
                .context("act 5 names no fault dir")?,
        ),
    };
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
    let heal = lab::faults::heal::read_heal(&dir.dir).context("no heal.json in the attempt")?;
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
pub fn runner_stopped_past_deadline(cluster: &LabCluster, source: &Path) -> Result<()> {
    const ROW: &str = "runner-sigstop";
    let api = Api::new(cluster)?;
    ensure!(api.replicas()? == 1, "row needs 1 replica to start");
    ensure_acts(cluster, source, 3)?;
    let base = row_base(source, ROW)?;
    let mut rd = RowDir::new(cluster, source, &base, &base.join("workdir"))?;
    let pid = rd.spawn_act5()?;
    // Act 5 saves its first progress right after the API server accepted the scale to 0; it then
    // waits for the controller's pods to be gone (about a second). Stop it there.
    let partial = rd.workdir().partial_path(5);
    let t0 = Instant::now();
    while !partial.exists() {
        if let Some(st) = rd.act5_exited()? {
            bail!(
                "act 5 exited ({st}) before its scale-down:\n{}",
                rd.act5_log()
            );
        }
        ensure!(
            t0.elapsed() < SCALED_BOUND,
            "act 5 saved no progress ({}) within {SCALED_BOUND:?}",
            partial.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let runner = ProcessRef::of(pid as i32).context("act 5 gone")?;
    ensure!(runner.signal(rustix::process::Signal::STOP)?, "act 5 gone");
    let facts = act5_facts_at(&partial)?;
    ensure!(
        facts.get("scaled_at").is_some() && facts.get("policy").is_none(),
        "act 5 should be stopped between its scale-down and its pods gone; its progress: {facts}"
    );
    ensure!(
        api.replicas()? == 0,
        "after the scale-down the replicas should be 0"
    );
    let armed_at = at(facts["watcher"]["armed_at"].as_str(), "watcher.armed_at")?;
    let dir = AttemptFiles {
        dir: PathBuf::from(
            facts["watcher"]["fault_dir"]
                .as_str()
                .context("watcher.fault_dir")?,
        ),
    };
    // The watcher alone restores, the runner still stopped.
    api.wait_replicas(1, Duration::from_secs(90))?;
    let seen = chrono::Utc::now();
    let w = watcher_final(&dir, Duration::from_secs(10))?;
    ensure!(
        w.action == HealerAction::Restored && w.woke_by.as_deref() == Some("deadline"),
        "the watcher should restore at its deadline: {w:?}"
    );
    let restored_at = at(w.restored_at.as_deref(), "watcher restored_at")?;
    let after = (restored_at - armed_at).to_std().unwrap_or_default();
    figure(ROW, "watcher restored after arming", after);
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
        dir.read_scale_ledger()?
            .last(LedgerEvent::Restored)
            .is_none(),
        "the stopped runner cannot have restored anything, but its ledger says it did"
    );
    let state = lab::faults::process::state_if_same(runner.pid, runner.start_time_ticks)?;
    ensure!(
        state == Some('T'),
        "act 5 should still be stopped at the watcher's restore: {state:?}"
    );
    // Past the deadline, then continue the runner: it sees the scale-down is over and stops.
    std::thread::sleep(Duration::from_millis(500));
    ensure!(runner.signal(rustix::process::Signal::CONT)?, "act 5 gone");
    let st = rd.wait_act5(ACT_BOUND)?;
    let log = rd.act5_log();
    ensure!(
        !st.success(),
        "act 5 continued after its fault was over should not complete:\n{log}"
    );
    ensure!(
        log.contains("while act 5 waited for its pods to be gone")
            && log.contains("restored by the healer"),
        "act 5 should say the healer restored the replicas while it waited:\n{log}"
    );
    ensure!(
        api.replicas()? == 1,
        "the continued act 5 changed the replicas"
    );
    let ledger = dir.read_scale_ledger()?;
    ensure!(
        ledger
            .entries
            .iter()
            .filter(|e| e.event == LedgerEvent::ScalingDown)
            .count()
            == 1,
        "one scale-down only: {ledger:?}"
    );
    let last = ledger
        .last(LedgerEvent::Restored)
        .context("the runner's ledger has no restored entry")?;
    ensure!(
        last.by == Some(UndoneBy::Runner)
            && last.detail.get("result").and_then(|v| v.as_str()) == Some("already-restored"),
        "ledger's restored entry: {last:?}"
    );
    let ev = rd.workdir().read_evidence(5)?;
    ensure!(
        ev.evidence.status == ActStatus::Interrupted,
        "act 5's evidence is {:?}, not interrupted",
        ev.evidence.status
    );
    let why = ev.evidence.interruption.clone().unwrap_or_default();
    ensure!(
        why.contains("restored by the healer"),
        "act 5's evidence should name the healer as the restorer: {why}"
    );
    let restore = ev
        .evidence
        .raw
        .iter()
        .find(|r| r["what"] == "runner-restore")
        .context("act 5's evidence has no runner-restore")?;
    ensure!(
        restore["data"]["Ok"]["result"] == "already-restored",
        "act 5's own restore should find the replicas already restored: {restore}"
    );
    ensure!(api.replicas()? == 1, "replicas changed after the row");
    rd.done();
    Ok(())
}

/// A gate in front of the healer, so the test can stop act 5's runner at a known point
/// before its scale-down request (the product has no hook for it): act 5 is started with
/// `KCA_WEBHOOK_LAB_BIN` naming a shell script the test wrote, which act 5 runs as its watcher
/// program. The script creates `started`, waits for a line on the FIFO `go`, then `exec`s the real
/// `kca-webhook-lab` with the watcher's arguments, keeping its pipes to the runner. Between
/// `started` and `go` the runner is waiting for the watcher's ready answer.
struct WatcherGate {
    dir: PathBuf,
}

impl WatcherGate {
    /// Writes the script and the FIFO into `dir` (created).
    fn new(dir: &Path) -> Result<WatcherGate> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let gate = WatcherGate {
            dir: dir.to_path_buf(),
        };
        nix::unistd::mkfifo(&gate.dir.join("go"), nix::sys::stat::Mode::S_IRWXU)
            .with_context(|| format!("mkfifo {}", gate.dir.join("go").display()))?;
        let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', "'\\''"));
        let script = format!(
            "#!/bin/sh\n# lab_a fault row gate: say the watcher starts, wait for the test's go, run it.\n: > {started}\nread line < {go}\nexec {bin} \"$@\"\n",
            started = quote(&gate.dir.join("started")),
            go = quote(&gate.dir.join("go")),
            bin = quote(&tests::ensure_lab_binary()?),
        );
        let path = gate.script();
        std::fs::write(&path, script).with_context(|| format!("writing {}", path.display()))?;
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        Ok(gate)
    }

    fn script(&self) -> PathBuf {
        self.dir.join("watcher-gate.sh")
    }

    /// Waits (bounded) until the script runs; `exited` says whether act 5 has ended meanwhile.
    fn wait_started(
        &self,
        bound: Duration,
        mut exited: impl FnMut() -> Result<Option<ExitStatus>>,
    ) -> Result<()> {
        let t0 = Instant::now();
        while !self.dir.join("started").exists() {
            if let Some(st) = exited()? {
                bail!("act 5 exited ({st}) before it started its watcher");
            }
            ensure!(
                t0.elapsed() < bound,
                "act 5 started no watcher (no {}) within {bound:?}",
                self.dir.join("started").display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// Lets the script run the real watcher (bounded: the script must be reading the FIFO).
    fn go(&self) -> Result<()> {
        let path = self.dir.join("go");
        let t0 = Instant::now();
        let mut f = loop {
            // Non-blocking: ENXIO while the script has not opened the FIFO for reading yet.
            match std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(nix::libc::O_NONBLOCK)
                .open(&path)
            {
                Ok(f) => break f,
                Err(e) => {
                    ensure!(
                        t0.elapsed() < Duration::from_secs(10),
                        "the gate script did not open {} for reading within 10 s: {e}",
                        path.display()
                    );
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        };
        f.write_all(b"go\n")
            .with_context(|| format!("writing to {}", path.display()))?;
        Ok(())
    }
}

/// The attempt directory `faults/scale-*` that appears in `workdir` (bounded).
fn wait_fault_dir(workdir: &Path, bound: Duration) -> Result<AttemptFiles> {
    let root = lab::faults::attempt::faults_root(workdir);
    let t0 = Instant::now();
    loop {
        if let Ok(entries) = std::fs::read_dir(&root) {
            for e in entries.flatten() {
                let p = e.path();
                if p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("scale-"))
                {
                    return Ok(AttemptFiles { dir: p });
                }
            }
        }
        ensure!(
            t0.elapsed() < bound,
            "no scale attempt under {} within {bound:?}",
            root.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The runner-stopped-before-its-request row (issue 12's last race, see the module docs).
pub fn runner_stopped_before_request(cluster: &LabCluster, source: &Path) -> Result<()> {
    const ROW: &str = "runner-stopped-before-request";
    let api = Api::new(cluster)?;
    ensure!(api.replicas()? == 1, "row needs 1 replica to start");
    ensure_acts(cluster, source, 3)?;
    let base = row_base(source, ROW)?;
    let mut rd = RowDir::new(cluster, source, &base, &base.join("workdir"))?;
    let gate = WatcherGate::new(&base.join("gate"))?;
    let pid =
        rd.spawn_act5_env(&[(lab::faults::attempt::LAB_BIN_ENV, gate.script().as_os_str())])?;
    gate.wait_started(SCALED_BOUND, || rd.act5_exited())?;
    // The runner waits for its watcher's ready answer: stop it there, then let the watcher arm.
    let runner = ProcessRef::of(pid as i32).context("act 5 gone")?;
    ensure!(runner.signal(rustix::process::Signal::STOP)?, "act 5 gone");
    let stopped = Instant::now();
    gate.go()?;
    let dir = wait_fault_dir(rd.workdir().root(), Duration::from_secs(10))?;
    // The watcher arms, waits for a request that does not come, and at its deadline finds the
    // replicas as they were; sampled meanwhile, they never leave 1.
    let t0 = Instant::now();
    let w = loop {
        ensure!(
            api.replicas()? == 1,
            "the replicas left 1 while the runner was stopped before its request"
        );
        if let Some(w) = dir.read_scale_report()?
            && !matches!(w.action, HealerAction::Waiting)
        {
            break w;
        }
        ensure!(
            t0.elapsed() < Duration::from_secs(90),
            "the watcher did not finish within 90 s"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    ensure!(
        w.action == HealerAction::AlreadyRestored
            && w.woke_by.as_deref() == Some("deadline")
            && w.scale_down.is_none(),
        "the watcher should find nothing to do at its deadline, no scale-down asked: {w:?}"
    );
    wait_gone(&watcher_ref(&dir)?, Duration::from_secs(10))?;
    let state = lab::faults::process::state_if_same(runner.pid, runner.start_time_ticks)?;
    ensure!(
        state == Some('T'),
        "act 5 should still be stopped after its watcher's deadline: {state:?}"
    );
    ensure!(runner.signal(rustix::process::Signal::CONT)?, "act 5 gone");
    figure(ROW, "runner stopped for", stopped.elapsed());
    let st = rd.wait_act5(ACT_BOUND)?;
    let log = rd.act5_log();
    ensure!(
        !st.success(),
        "act 5 continued after its watcher's deadline should not complete:\n{log}"
    );
    ensure!(
        log.contains("could not reach the healer") && log.contains("nothing was scaled"),
        "act 5 should say its request found the healer gone and nothing was scaled:\n{log}"
    );
    ensure!(
        api.replicas()? == 1,
        "the continued act 5 changed the replicas"
    );
    let ledger = dir.read_scale_ledger()?;
    ensure!(
        ledger.last(LedgerEvent::HealerArmed).is_some()
            && ledger.last(LedgerEvent::ScalingDown).is_some()
            && ledger.last(LedgerEvent::ScaledDown).is_none(),
        "the ledger should show the request (scaling-down) and no scale-down: {ledger:?}"
    );
    let last = ledger
        .last(LedgerEvent::Restored)
        .context("the runner's ledger has no restored entry")?;
    ensure!(
        last.by == Some(UndoneBy::Runner)
            && last.detail.get("result").and_then(|v| v.as_str()) == Some("already-restored"),
        "the runner's own restore should find nothing to restore: {last:?}"
    );
    let ev = rd.workdir().read_evidence(5)?;
    ensure!(
        ev.evidence.status == ActStatus::Interrupted,
        "act 5's evidence is {:?}, not interrupted",
        ev.evidence.status
    );
    ensure!(
        !ev.evidence.raw.iter().any(|r| r["what"] == "scale-down"),
        "act 5's evidence must not record a scale-down"
    );
    // The next command finds nothing to heal.
    let (status, text) = rd.output(&["heal"])?;
    ensure!(status.success(), "heal after the row: {status}\n{text}");
    ensure!(api.replicas()? == 1, "replicas changed after the row");
    rd.done();
    Ok(())
}

/// A [`TMPFS_SIZE`] tmpfs mounted on a directory this test made; unmounted and removed when
/// dropped (a failing row included).
struct SmallTmpfs(PathBuf);

impl SmallTmpfs {
    fn mount(dir: &Path) -> Result<SmallTmpfs> {
        std::fs::create_dir(dir).with_context(|| format!("creating {}", dir.display()))?;
        if let Err(e) = nix::mount::mount(
            Some("tmpfs"),
            dir,
            Some("tmpfs"),
            nix::mount::MsFlags::MS_NOSUID | nix::mount::MsFlags::MS_NODEV,
            Some(TMPFS_SIZE_OPTION),
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
pub fn disk_full(cluster: &LabCluster, source: &Path) -> Result<()> {
    const ROW: &str = "disk-full";
    let api = Api::new(cluster)?;
    ensure!(api.replicas()? == 1, "row needs 1 replica to start");
    ensure_acts(cluster, source, 3)?;
    let base = row_base(source, ROW)?;
    std::fs::create_dir_all(&base).with_context(|| format!("creating {}", base.display()))?;
    // Declared before the row's work dir: dropped (unmounted) after it, also on failure.
    let fs = SmallTmpfs::mount(&base.join("tmpfs"))?;
    let rd = RowDir::new(cluster, source, &base, &fs.0.join("w"))?;
    let (st, text) = rd.output(&["act", "5"])?;
    ensure!(st.success(), "act 5 failed: {st}\n{text}");
    let f5: lab::facts::a::Act5Facts =
        serde_json::from_value(rd.workdir().read_evidence(5)?.evidence.facts)?;
    let dir = AttemptFiles {
        dir: PathBuf::from(
            f5.watcher
                .fault_dir
                .clone()
                .context("act 5 names no fault dir")?,
        ),
    };
    ensure!(api.replicas()? == 0, "act 5 should hand over at 0 replicas");
    let deadline = at(f5.watcher.deadline_at.as_deref(), "watcher deadline")?;
    let left = (deadline - chrono::Utc::now()).to_std().unwrap_or_default();
    ensure!(
        left > Duration::from_secs(10),
        "act 5 left only {left:?} before the watcher's deadline: the row needs the fault live"
    );
    let watcher = watcher_ref(&dir)?;
    fs.fill()?;
    // The student's act 6 on the full disk: its restore comes first.
    let t0 = Instant::now();
    let (st, text) = rd.output(&["act", "6"])?;
    let took = t0.elapsed();
    let replicas = api.replicas()?;
    let w = dir.read_scale_report()?.context("no healer.json")?;
    let watcher_alive = watcher.is_alive();
    figure(
        ROW,
        "act 6 on the full disk returned, replicas restored, after",
        took,
    );
    let tail: Vec<&str> = text.lines().rev().take(2).collect();
    eprintln!(
        "    act 6 on the full disk ({st}), last lines: {}",
        tail.into_iter().rev().collect::<Vec<_>>().join(" | ")
    );
    ensure!(
        replicas == 1,
        "act 6 should have restored the replicas before it returned: {replicas}\n{text}"
    );
    ensure!(
        watcher_alive && w.action == HealerAction::Waiting,
        "the restore must be act 6's: the watcher should still be waiting (alive {watcher_alive}, {:?})",
        w.action
    );
    ensure!(!st.success(), "act 6 on a full disk should fail:\n{text}");
    ensure!(
        text.contains("could not be written") && text.contains("Restored"),
        "act 6 should restore, then say its ledger could not be written:\n{text}"
    );
    // The watcher on the full disk: SIGTERM heals first (already restored) and it exits.
    ensure!(
        watcher.signal(rustix::process::Signal::TERM)?,
        "the watcher was gone before its deadline"
    );
    wait_gone(&watcher, Duration::from_secs(15))?;
    let log = std::fs::read_to_string(dir.log()).unwrap_or_default();
    ensure!(!log.contains("panicked"), "the watcher panicked:\n{log}");
    ensure!(
        api.replicas()? == 1,
        "replicas changed after the watcher's exit"
    );
    // Space back: the next command records what it found.
    fs.free()?;
    let (status, text) = rd.output(&["heal"])?;
    ensure!(
        status.success(),
        "heal after freeing space: {status}\n{text}"
    );
    let heal = lab::faults::heal::read_heal(&dir.dir).context("no heal.json")?;
    ensure!(
        heal.action == "already-restored",
        "heal should find the replicas already restored: {heal:?}"
    );
    rd.done();
    drop(fs);
    Ok(())
}
