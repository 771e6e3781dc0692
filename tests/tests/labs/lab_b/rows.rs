//! Issue 12's lab B fault-attempt rows (`fault_row_*`) on the real embedded cluster of `lab_b`,
//! after its acts (one cluster for the whole binary; with `-- fault_row` only acts 1-4 and the
//! rows run). Each row runs the real `kca-webhook-lab act 5` process, as
//! a student does, in a work directory of its own: a copy of the lab's work directory with the
//! input files and the evidence of acts 1-3 only, under `<artifacts>/rows/<row>/`, where the row
//! runs `act 4` first (the investigation pins the admission controller process as it is now:
//! Kyverno may have restarted since the lab's act 4) and then `act 5`. Act 5 freezes the real Kyverno admission controller for its fixed
//! `resume_after_sec` = 20 (`freeze-plan.json`, `inputs::ResumeAfterSec`; `docs/labs.md` act 4).
//!
//! Act 6 left the lab's policy at failurePolicy Ignore; before a row the test puts the work
//! directory's `policy.json` (act 2's, failurePolicy Fail) back on the same policy and waits for
//! Kyverno's Fail webhook, so act 5's precondition holds again (the test's own set-up, said in the
//! output, never counted as a result).
//!
//! - `fault_row_healer_and_runner_sigkilled_mid_freeze_then_inspect_resumes_kyverno`: the healer
//!   (SIGKILL through a pidfd, start ticks re-checked) and then act 5's runner (our child) die
//!   mid-freeze; Kyverno is still `T`; the student's `inspect` heals first: right after it returns
//!   the pinned process (the plan's PID + start ticks) is not `T`, the attempt's `heal.json`
//!   records `resumed` by `inspect` with the state before `T`, and a dry-run violating request is
//!   then explicitly denied.
//! - `fault_row_two_act_5_in_one_workdir_second_refused_first_undisturbed`: a second `act 5` in the same
//!   work directory while the first one's freeze is live is refused naming the holder (the first
//!   one's pid, `act 5`); the first freeze lasts to its deadline (healer woke by `deadline`), no
//!   heal touched it, and its evidence is `completed`, not `interrupted`.
//! - `fault_row_runner_sigstopped_past_the_deadline_healer_resumes_on_time`: act 5's runner is SIGSTOPped
//!   once its frozen requests are answered (its `05.partial.json` exists) and kept stopped past the
//!   deadline; the healer's own record shows the SIGCONT ≤ `resume_after_sec` + 0.5 s after its
//!   SIGSTOP, Kyverno runs again while the runner is still stopped; continued, the runner records
//!   the healer's resume (ledger `resumed_by` healer, state after not `T`), completes, and
//!   Kyverno is not `T` after it (no SIGSTOP landed after the SIGCONT).
//!
//! Kyverno's liveness probe (chart default: every 30 s, timeout 5 s, failureThreshold 2) fails
//! during a freeze; two freezes in a row can fail it twice and kubelet restarts the container
//! (seen here: act 6's 10 s freeze then the SIGKILL row's 20 s freeze). So a row (and the SIGKILL
//! row of `lab_b.rs`, after act 6) starts its
//! freeze only once kubelet has counted a successful liveness probe of the admission controller
//! since the previous freeze ended (a success resets the failure count; kubelet's
//! `prober_probe_total{probe_type="Liveness",result="successful"}` on its `/metrics/probes`, read
//! through the API server's node proxy: [`liveness_successes`]), at most [`LIVENESS_BOUND`] — in
//! place of a fixed 35 s gap, the probe comes 0-30 s after the freeze — and only once a dry-run
//! violating request is explicitly denied (the webhook answers).
//!
//! A row that fails kills its own runner (through its handle) and runs `kca-webhook-lab heal` in
//! its work directory, so Kyverno is never left stopped for the next row. Timings are printed as
//! `figure:` lines (records, not asserts); the bounds of issue 12 are asserted.

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail, ensure};
use lab::evidence::{ActStatus, Lab, Outcome};
use lab::facts::b::{Act5Facts, Resumer};
use lab::faults::freeze::{AttemptFiles, FreezeLedger, FreezePlan, HealerReport, UndoneBy};
use lab::faults::process::ProcessRef;
use lab::faults::records::read_json;
use lab::workdir::Workdir;
use libtest_mimic::Failed;
use xtask::lab_run::LabRun;

use super::Shared;

/// One row: runs with the lab's finished run (its cluster and work directory).
pub type Row = fn(&LabRun) -> Result<()>;

/// The rows, in the order they run.
pub const ROWS: [(&str, Row); 4] = [
    (
        "fault_row_healer_and_runner_sigkilled_mid_freeze_then_inspect_resumes_kyverno",
        healer_killed_then_inspect,
    ),
    (
        "fault_row_two_act_5_in_one_workdir_second_refused_first_undisturbed",
        two_acts_at_once,
    ),
    (
        "fault_row_runner_sigstopped_past_the_deadline_healer_resumes_on_time",
        runner_stopped_past_deadline,
    ),
    (
        "fault_row_act_6_soon_after_act_5_waits_for_the_liveness_gap",
        act6_soon_after_act5,
    ),
];

/// act 5's freeze (`freeze-plan.json` `resume_after_sec`, fixed at 20 by the input's schema).
const RESUME_AFTER_SEC: u64 = 20;
/// Issue 12's bound while the healer lives: resumed ≤ `resume_after_sec` + 0.5 s.
const RESUME_SLACK: Duration = Duration::from_millis(500);
/// Bound on act 5 reaching its freeze (heal first, checks, investigation, healer ready, SIGSTOP).
const FROZEN_BOUND: Duration = Duration::from_secs(60);
/// Bound on a whole act 5 (20 s freeze, the frozen requests, the deny after resume).
const ACT_BOUND: Duration = Duration::from_secs(150);
/// Bound on waiting for one successful liveness probe of Kyverno after a freeze ended: the chart's
/// `periodSeconds` 30 twice, plus its `timeoutSeconds` 5 and 10 s of slack.
pub const LIVENESS_BOUND: Duration = Duration::from_secs(75);

/// Kubelet's successful liveness probes of the admission controller's `kyverno` container, per pod
/// UID, when the last freeze ended (`None`: they could not be read then).
type Successes = std::collections::BTreeMap<String, f64>;

/// The runner-SIGSTOP row's work dir once its act 5 completed (the next row runs act 6 there).
static COMPLETED_ACT5: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

/// The last freeze's end: when, and [`liveness_successes`] right after it.
static LAST_FREEZE_END: std::sync::Mutex<Option<(Instant, Option<Successes>)>> =
    std::sync::Mutex::new(None);

/// Kubelet's count of successful liveness probes of Kyverno's admission controller (container
/// `kyverno` of the pods `kyverno-admission-controller-*` in namespace `kyverno`), per pod UID:
/// `prober_probe_total{probe_type="Liveness",result="successful"}` from kubelet's
/// `/metrics/probes` (kubelet `pkg/kubelet/prober/prober_manager.go`, `ProberResults`), read
/// through `GET /api/v1/nodes/<node>/proxy/metrics/probes`.
///
/// Errors: the node or the endpoint cannot be read, or it answers other than 200.
pub fn liveness_successes(run: &LabRun) -> Result<Successes> {
    run.block_on(async {
        let cluster = run.env.cluster().await?;
        let node = cluster.node().await?.name;
        let path = format!("/api/v1/nodes/{node}/proxy/metrics/probes");
        let (status, body) = cluster.get_text_raw(&path).await?;
        ensure!(status == 200, "GET {path}: HTTP {status}: {body}");
        let lines: Vec<String> = body.lines().map(str::to_owned).collect();
        let mut out = Successes::new();
        for ((metric, labels), v) in lab::metrics::parse(&lines) {
            let l = |k: &str| labels.get(k).map(String::as_str).unwrap_or_default();
            if metric == "prober_probe_total"
                && l("probe_type") == "Liveness"
                && l("result") == "successful"
                && l("namespace") == lab::cluster::KYVERNO_NAMESPACE
                && l("container") == "kyverno"
                && l("pod").starts_with(lab::cluster::ADMISSION_DEPLOYMENT)
            {
                *out.entry(l("pod_uid").to_owned()).or_default() += v;
            }
        }
        Ok(out)
    })
}

/// Notes that a freeze of Kyverno just ended, with kubelet's liveness successes now (the next row
/// waits for one more: [`before_freeze`]).
pub fn freeze_ended(run: &LabRun) {
    let successes = liveness_successes(run)
        .inspect_err(|e| eprintln!("    set-up: liveness successes after the freeze unread: {e:#}"))
        .ok();
    *LAST_FREEZE_END.lock().unwrap_or_else(|p| p.into_inner()) = Some((Instant::now(), successes));
}

/// After a freeze (none yet: no wait), waits until kubelet has counted one more successful
/// liveness probe of Kyverno's admission controller than right after that freeze (or, when those
/// were not read, than now), bounded by [`LIVENESS_BOUND`]; then until a dry-run violating request
/// is explicitly denied (bounded, 120 s).
pub fn before_freeze(run: &LabRun) -> Result<()> {
    let last = LAST_FREEZE_END
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take();
    if let Some((ended, after_freeze)) = last {
        let base = match after_freeze {
            Some(b) => b,
            None => liveness_successes(run)?,
        };
        let t0 = Instant::now();
        loop {
            let now = liveness_successes(run)?;
            if now
                .iter()
                .any(|(uid, n)| *n > base.get(uid).copied().unwrap_or(0.0))
            {
                break;
            }
            if t0.elapsed() >= LIVENESS_BOUND {
                bail!(
                    "set-up: waited {LIVENESS_BOUND:?} for kubelet to count a successful liveness probe of Kyverno since the last freeze; successes per pod UID then {base:?}, last seen {now:?}"
                );
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        eprintln!(
            "    set-up: a liveness probe of Kyverno passed since the last freeze ({:?} after it ended; waited {:?} here)",
            ended.elapsed(),
            t0.elapsed()
        );
    }
    let t0 = Instant::now();
    let probes = run.block_on(async {
        let cluster = run.env.cluster().await?;
        lab::labs::common::until_explicit_deny(
            &cluster,
            "row-before",
            "kca-webhook-target",
            true,
            Duration::from_secs(120),
            |_, _| {},
        )
        .await
    })?;
    let last = probes.last().context("no probe sent")?;
    ensure!(
        last.outcome == Outcome::ExplicitDeny,
        "set-up: the webhook does not deny a dry-run violating request ({}, {} probes in {:?})",
        last.outcome.as_str(),
        probes.len(),
        t0.elapsed()
    );
    Ok(())
}

/// Runs one row after the acts: refused when an act failed; a failed row does not stop the next
/// rows (each cleans up after itself). When the acts were filtered out (`-- fault_row`, as
/// `ci/fault-table.sh` runs the rows), the first row brings the cluster up and runs acts 1-4 (the
/// preconditions of act 5) itself.
pub fn row_step(state: &Shared, name: &str, row: Row) -> Result<(), Failed> {
    let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(first) = &s.failed {
        return Err(format!("not run: {first} failed earlier").into());
    }
    if s.run.is_none() {
        let prepared = super::setup().and_then(|(c, r)| {
            s.cluster = Some(c);
            for act in 1..=4 {
                let summary = r.act(act)?;
                ensure!(
                    summary.status == ActStatus::Completed,
                    "act {act} ended {:?}",
                    summary.status
                );
            }
            s.run = Some(r);
            Ok(())
        });
        if let Err(e) = prepared {
            s.failed = Some("the rows' acts 1-4".into());
            return Err(format!("{e:#}").into());
        }
    }
    let run = s.run.as_ref().expect("set above");
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| row(run))) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("{name}: {e:#}").into()),
        Err(_) => Err(format!("{name}: panicked").into()),
    }
}

fn figure(row: &str, what: &str, d: Duration) {
    eprintln!("    figure: row {row}: {what} {} ms", d.as_millis());
}

/// A row's work directory and its runners; when dropped without [`RowDir::done`] (the row
/// failed), kills the runners still running (our children, by their handles) and runs
/// `kca-webhook-lab heal` there so no freeze outlives the row.
struct RowDir<'a> {
    run: &'a LabRun,
    dir: PathBuf,
    logs: PathBuf,
    runners: Vec<Child>,
    done: bool,
}

impl<'a> RowDir<'a> {
    /// `<artifacts>/rows/<name>/workdir`: the lab's input files (`*.json` at the work directory's
    /// top) and `evidence/01-03.json`, nothing else; then `act 4` there.
    fn new(run: &'a LabRun, name: &str) -> Result<RowDir<'a>> {
        let base = run.workdir().root().parent().context("workdir parent")?;
        let root = base.join("rows").join(name);
        let dir = root.join("workdir");
        ensure!(!dir.exists(), "{} exists already", dir.display());
        std::fs::create_dir_all(dir.join("evidence"))?;
        for e in std::fs::read_dir(run.workdir().root())? {
            let p = e?.path();
            if p.is_file() && p.extension().is_some_and(|x| x == "json") {
                std::fs::copy(&p, dir.join(p.file_name().context("name")?))?;
            }
        }
        for act in 1..=3u8 {
            std::fs::copy(
                run.workdir().evidence_path(act),
                Workdir::new(&dir).evidence_path(act),
            )?;
        }
        eprintln!("    row work dir {}", dir.display());
        let rd = RowDir {
            run,
            dir,
            logs: root,
            runners: Vec::new(),
            done: false,
        };
        let (st, text) = rd.output(&["act", "4"])?;
        ensure!(st.success(), "act 4 in the row's work dir ({st}):\n{text}");
        Ok(rd)
    }

    /// An earlier row's work dir `dir` (`<row>/workdir`), as it was left.
    fn reuse(run: &'a LabRun, dir: PathBuf) -> Result<RowDir<'a>> {
        let logs = dir.parent().context("row dir")?.to_path_buf();
        ensure!(dir.is_dir(), "{} is gone", dir.display());
        Ok(RowDir {
            run,
            dir,
            logs,
            runners: Vec::new(),
            done: false,
        })
    }

    fn workdir(&self) -> Workdir {
        Workdir::new(&self.dir)
    }

    /// `kca-webhook-lab --lang en --lab b --workdir DIR --kubeconfig … --cri-endpoint … ARGS`.
    fn command(&self, args: &[&str]) -> Result<Command> {
        let env = &self.run.env;
        tests::student_command(
            Lab::B,
            &self.dir,
            env.kubeconfig.as_ref().context("kubeconfig")?,
            env.cri_endpoint.as_ref().context("cri endpoint")?,
            args,
        )
    }

    /// Runs a command to its end; its status and stdout + stderr.
    fn output(&self, args: &[&str]) -> Result<(ExitStatus, String)> {
        tests::run_to_end(
            self.command(args)?,
            &format!("kca-webhook-lab {}", args.join(" ")),
        )
    }

    /// Starts `act 5` in the background, its output in `<row>/act5-N.log`; returns its index.
    fn spawn_act5(&mut self) -> Result<usize> {
        let n = self.runners.len();
        let log = std::fs::File::create(self.logs.join(format!("act5-{n}.log")))?;
        let child = self
            .command(&["act", "5"])?
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting act 5")?;
        self.runners.push(child);
        Ok(n)
    }

    fn runner_pid(&self, i: usize) -> u32 {
        self.runners[i].id()
    }

    fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.logs.join(format!("act5-{i}.log"))).unwrap_or_default()
    }

    /// Waits (bounded) for runner `i` to exit; its status.
    fn wait_runner(&mut self, i: usize, bound: Duration) -> Result<ExitStatus> {
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.runners[i].try_wait()? {
                return Ok(st);
            }
            if t0.elapsed() > bound {
                bail!(
                    "act 5 (pid {}) still running after {bound:?}; its output:\n{}",
                    self.runner_pid(i),
                    self.log(i)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The attempt directory act 5's runner `i` made (`faults/freeze-05-…-<runner pid>`) once its
    /// healer recorded `frozen`, within [`FROZEN_BOUND`].
    fn frozen_attempt(&mut self, i: usize) -> Result<(AttemptFiles, HealerReport)> {
        let suffix = format!("-{}", self.runner_pid(i));
        let faults = self.dir.join("faults");
        let t0 = Instant::now();
        let mut last = String::from("no attempt directory");
        loop {
            let found = std::fs::read_dir(&faults).ok().and_then(|rd| {
                rd.filter_map(|e| e.ok().map(|e| e.path())).find(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("freeze-05-") && n.ends_with(&suffix))
                })
            });
            if let Some(dir) = found {
                let files = AttemptFiles { dir };
                match files.read_report() {
                    Some(r) if r.status == "frozen" => return Ok((files, r)),
                    Some(r) => last = format!("healer.json status {}", r.status),
                    None => last = "no healer.json yet".into(),
                }
            }
            if let Some(st) = self.runners[i].try_wait()? {
                bail!(
                    "act 5 exited ({st}) before its freeze ({last}); its output:\n{}",
                    self.log(i)
                );
            }
            if t0.elapsed() > FROZEN_BOUND {
                bail!("act 5 did not freeze within {FROZEN_BOUND:?} ({last})");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The row passed: nothing to clean up (dropping notes the end of its freeze).
    fn done(mut self) {
        self.done = true;
    }
}

impl Drop for RowDir<'_> {
    fn drop(&mut self) {
        freeze_ended(self.run);
        if self.done {
            return;
        }
        for c in &mut self.runners {
            if matches!(c.try_wait(), Ok(None)) {
                // A stopped runner must be able to die: SIGKILL works on a stopped process.
                let _ = c.kill();
                let _ = c.wait();
            }
        }
        match self.output(&["heal"]) {
            Ok((st, text)) => eprintln!("    row cleanup: kca-webhook-lab heal ({st}):\n{text}"),
            Err(e) => eprintln!("    row cleanup: kca-webhook-lab heal could not run: {e:#}"),
        }
    }
}

/// The act 2 policy (failurePolicy Fail) back on the lab's policy when Kyverno's Fail webhook is
/// not registered (act 6 switched it to Ignore); waits (bounded) for the Fail webhook.
fn ensure_fail_webhook(run: &LabRun) -> Result<()> {
    let name = lab::cluster::fine_grained_webhook_name("Fail", lab::cluster::POLICY_NAME);
    let policy: serde_json::Value =
        serde_json::from_slice(&std::fs::read(run.workdir().root().join("policy.json"))?)?;
    run.block_on(async {
        let cluster = run.env.cluster().await?;
        let is_fail = |w: &Option<(_, k8s_openapi::api::admissionregistration::v1::ValidatingWebhook)>| {
            w.as_ref()
                .is_some_and(|(_, wh)| wh.failure_policy.as_deref() == Some("Fail"))
        };
        if is_fail(&cluster.find_webhook(&name).await?) {
            return Ok(());
        }
        eprintln!("    set-up: the lab's policy back to act 2's policy.json (failurePolicy Fail)");
        cluster.replace_policy_spec(&policy).await?;
        let t0 = Instant::now();
        loop {
            let seen = cluster.find_webhook(&name).await?;
            if is_fail(&seen) {
                eprintln!("    set-up: {name} registered after {:?}", t0.elapsed());
                return Ok(());
            }
            if t0.elapsed() > Duration::from_secs(60) {
                bail!(
                    "Kyverno did not register {name} with failurePolicy Fail within 60 s (last: {:?})",
                    seen.map(|(_, wh)| wh.failure_policy)
                );
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    })
}

/// Kyverno's pinned process (the plan's PID + start ticks): its state, `None` when gone.
fn state(plan: &FreezePlan) -> Option<char> {
    lab::faults::process::state_if_same(plan.target.pid, plan.target.start_time_ticks)
        .ok()
        .flatten()
}

fn plan_of(files: &AttemptFiles) -> Result<FreezePlan> {
    Ok(read_json(&files.plan())?)
}

fn at(t: Option<&str>, what: &str) -> Result<chrono::DateTime<chrono::Utc>> {
    lab::facts::parse_rfc3339(t.unwrap_or_default()).with_context(|| format!("{what}: {t:?}"))
}

/// SIGCONT − SIGSTOP as the healer recorded them; requires it within the bound and the
/// healer woke by its deadline.
fn healer_resume_on_time(r: &HealerReport, row: &str) -> Result<Duration> {
    ensure!(
        r.status == "resumed" && r.woke_by.as_deref() == Some("deadline"),
        "the healer should resume at its deadline: status {} woke by {:?}",
        r.status,
        r.woke_by
    );
    let stop = at(r.stop_sent_at.as_deref(), "healer stop_sent_at")?;
    let cont = at(
        r.resume.as_ref().map(|c| c.sent_at.as_str()),
        "healer resume.sent_at",
    )?;
    let held = (cont - stop).to_std().context("SIGCONT before SIGSTOP")?;
    figure(row, "SIGSTOP → SIGCONT by the healer", held);
    let bound = Duration::from_secs(RESUME_AFTER_SEC) + RESUME_SLACK;
    ensure!(
        held <= bound,
        "the healer resumed {held:?} after its SIGSTOP (bound {bound:?})"
    );
    ensure!(
        held + Duration::from_millis(50) >= Duration::from_secs(RESUME_AFTER_SEC),
        "the healer resumed {held:?} after its SIGSTOP, before its {RESUME_AFTER_SEC} s deadline"
    );
    let late = r.resume_late_ms.context("no resume_late_ms")?;
    ensure!(
        late <= RESUME_SLACK.as_millis() as i64,
        "resume_late_ms {late} > {}",
        RESUME_SLACK.as_millis()
    );
    Ok(held)
}

// ---------------------------------------------------------------------------------------------
// Rows.

fn healer_killed_then_inspect(run: &LabRun) -> Result<()> {
    const ROW: &str = "healer-sigkill";
    ensure_fail_webhook(run)?;
    before_freeze(run)?;
    let mut rd = RowDir::new(run, ROW)?;
    let i = rd.spawn_act5()?;
    let (files, report) = rd.frozen_attempt(i)?;
    let plan = plan_of(&files)?;
    ensure!(
        state(&plan) == Some('T'),
        "Kyverno should be stopped: {:?}",
        state(&plan)
    );
    // The healer first (pidfd, start ticks re-checked), then act 5's runner (our child).
    let healer = report.healer;
    ensure!(
        healer.signal(rustix::process::Signal::KILL)?,
        "the healer was already gone"
    );
    let t0 = Instant::now();
    while healer.is_alive() {
        ensure!(
            t0.elapsed() < Duration::from_secs(5),
            "healer pid {} alive 5 s after SIGKILL",
            healer.pid
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    rd.runners[i].kill()?;
    rd.runners[i].wait()?;
    let killed = Instant::now();
    let stopped_for = at(report.stop_sent_at.as_deref(), "stop_sent_at")?;
    ensure!(
        state(&plan) == Some('T'),
        "nothing may resume Kyverno before the next command (state {:?})",
        state(&plan)
    );
    // The student's next command.
    let (st, text) = rd.output(&["inspect"])?;
    let after_inspect = state(&plan);
    let returned = Instant::now();
    ensure!(st.success(), "inspect failed ({st}):\n{text}");
    figure(
        ROW,
        "inspect (heal first) after the kills",
        returned - killed,
    );
    ensure!(
        matches!(after_inspect, Some(s) if s != 'T' && s != 't'),
        "Kyverno's pinned process (pid {} start ticks {}) right after inspect: {after_inspect:?}",
        plan.target.pid,
        plan.target.start_time_ticks
    );
    let frozen_ms = (chrono::Utc::now() - stopped_for).num_milliseconds();
    eprintln!("    Kyverno stopped {frozen_ms} ms in all (healer deadline {RESUME_AFTER_SEC} s)");
    let heal = lab::faults::heal::read_heal(&files.dir).context("no heal.json in the attempt")?;
    ensure!(
        heal.action == "resumed" && heal.command == "inspect",
        "heal.json should record inspect's resume: {heal:?}"
    );
    ensure!(
        heal.resume.as_ref().and_then(|c| c.state_before) == Some('T'),
        "heal.json should keep the state before (T): {:?}",
        heal.resume
    );
    ensure!(
        text.contains("healing earlier faults"),
        "inspect should say it healed:\n{text}"
    );
    // The webhook works again: a dry-run violating request is explicitly denied.
    let t1 = Instant::now();
    let probes = run.block_on(async {
        let cluster = run.env.cluster().await?;
        lab::labs::common::until_explicit_deny(
            &cluster,
            "row-healer-sigkill",
            "kca-webhook-target",
            true,
            Duration::from_secs(60),
            |r, s| eprintln!("    after inspect ({s}s): {}", r.outcome.as_str()),
        )
        .await
    })?;
    let last = probes.last().context("no probe sent")?;
    ensure!(
        last.outcome == Outcome::ExplicitDeny,
        "dry-run violating request after inspect: {}",
        last.outcome.as_str()
    );
    figure(ROW, "explicit deny after inspect", t1.elapsed());
    rd.done();
    Ok(())
}

fn two_acts_at_once(run: &LabRun) -> Result<()> {
    const ROW: &str = "two-acts";
    ensure_fail_webhook(run)?;
    before_freeze(run)?;
    let mut rd = RowDir::new(run, ROW)?;
    let first = rd.spawn_act5()?;
    let (files, _) = rd.frozen_attempt(first)?;
    let plan = plan_of(&files)?;
    let first_pid = rd.runner_pid(first);
    // The second act 5 in the same work directory, while the first one's freeze is live.
    let t0 = Instant::now();
    let (st, text) = rd.output(&["act", "5"])?;
    figure(ROW, "second act 5 refused after", t0.elapsed());
    ensure!(!st.success(), "the second act 5 should be refused:\n{text}");
    ensure!(
        text.contains("is in use by")
            && text.contains(&format!("pid {first_pid} "))
            && text.contains("running act 5"),
        "the refusal should name the holder (pid {first_pid}, act 5):\n{text}"
    );
    // It changed nothing of the first attempt.
    let report = files.read_report().context("healer.json")?;
    ensure!(
        report.status == "frozen" && state(&plan) == Some('T'),
        "the first freeze should still be on: healer {} state {:?}",
        report.status,
        state(&plan)
    );
    ensure!(
        !files.heal().exists(),
        "nothing may heal the first, live attempt"
    );
    let attempts = std::fs::read_dir(rd.dir.join("faults"))?.count();
    ensure!(attempts == 1, "{attempts} attempt directories, expected 1");
    // The first runs to its end.
    let st = rd.wait_runner(first, ACT_BOUND)?;
    ensure!(st.success(), "the first act 5 ({st}):\n{}", rd.log(first));
    let report = files.read_report().context("healer.json")?;
    healer_resume_on_time(&report, ROW)?;
    let ev = rd.workdir().read_evidence(5)?;
    ensure!(
        ev.evidence.status == ActStatus::Completed,
        "the first act 5's evidence is {:?}, not completed",
        ev.evidence.status
    );
    let f: Act5Facts = serde_json::from_value(ev.evidence.facts)?;
    ensure!(
        f.freeze.resumed_by == Resumer::Watchdog && f.freeze.state_after != "T",
        "the first act 5's facts: resumed by {:?}, state after {}",
        f.freeze.resumed_by,
        f.freeze.state_after
    );
    ensure!(
        state(&plan).is_some_and(|s| s != 'T'),
        "Kyverno after: {:?}",
        state(&plan)
    );
    rd.done();
    Ok(())
}

fn runner_stopped_past_deadline(run: &LabRun) -> Result<()> {
    const ROW: &str = "runner-sigstop";
    ensure_fail_webhook(run)?;
    before_freeze(run)?;
    let mut rd = RowDir::new(run, ROW)?;
    let i = rd.spawn_act5()?;
    let (files, _) = rd.frozen_attempt(i)?;
    let plan = plan_of(&files)?;
    // Stop the runner once its frozen requests are answered (it saved its progress), so the lab's
    // facts are the usual ones; it stays stopped past the healer's deadline.
    let partial = rd.workdir().partial_path(5);
    let t0 = Instant::now();
    while !partial.exists() {
        ensure!(
            t0.elapsed() < Duration::from_secs(15),
            "act 5 saved no progress ({}) within 15 s",
            partial.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let runner = ProcessRef::of(rd.runner_pid(i) as i32).context("runner gone")?;
    ensure!(runner.signal(rustix::process::Signal::STOP)?, "runner gone");
    // The healer resumes by itself, the runner still stopped.
    let t1 = Instant::now();
    let report = loop {
        if let Some(r) = files.read_report().filter(|r| r.status != "frozen") {
            break r;
        }
        ensure!(
            t1.elapsed() < Duration::from_secs(RESUME_AFTER_SEC + 5),
            "the healer did not resume within {} s of the runner's SIGSTOP",
            RESUME_AFTER_SEC + 5
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let running = state(&plan);
    let runner_state = lab::faults::process::state_if_same(runner.pid, runner.start_time_ticks)?;
    healer_resume_on_time(&report, ROW)?;
    ensure!(
        matches!(running, Some(s) if s != 'T' && s != 't'),
        "Kyverno after the healer's resume: {running:?}"
    );
    ensure!(
        runner_state == Some('T'),
        "the runner should still be stopped at the healer's resume: {runner_state:?}"
    );
    // Past the deadline, then continue the runner.
    std::thread::sleep(Duration::from_millis(500));
    ensure!(runner.signal(rustix::process::Signal::CONT)?, "runner gone");
    let st = rd.wait_runner(i, ACT_BOUND)?;
    ensure!(st.success(), "act 5 after SIGCONT ({st}):\n{}", rd.log(i));
    let after = state(&plan);
    ensure!(
        matches!(after, Some(s) if s != 'T' && s != 't'),
        "Kyverno after the continued runner ended: {after:?} (a SIGSTOP after the SIGCONT?)"
    );
    let ledger: FreezeLedger = read_json(&files.ledger())?;
    ensure!(
        ledger.status == "resumed"
            && ledger.resumed_by == Some(UndoneBy::Healer)
            && ledger
                .state_after_resume
                .is_some_and(|s| s != 'T' && s != 't'),
        "the continued runner's ledger should record the healer's resume: {ledger:?}"
    );
    let ev = rd.workdir().read_evidence(5)?;
    ensure!(
        ev.evidence.status == ActStatus::Completed,
        "act 5's evidence is {:?}",
        ev.evidence.status
    );
    let f: Act5Facts = serde_json::from_value(ev.evidence.facts)?;
    ensure!(
        f.freeze.resumed_by == Resumer::Watchdog && f.freeze.state_after != "T",
        "act 5's facts: resumed by {:?}, state after {}",
        f.freeze.resumed_by,
        f.freeze.state_after
    );
    *COMPLETED_ACT5.lock().unwrap_or_else(|p| p.into_inner()) = Some(rd.dir.clone());
    rd.done();
    Ok(())
}

/// A student starts act 6 a few seconds after act 5 ended: one liveness probe of Kyverno could
/// fail in each freeze (`rules::b::liveness_wait`), so act 6 waits before its freeze and records
/// `liveness-gap`; Kyverno's process is the same one afterwards (kubelet did not restart it) and
/// act 6 passes its grader. Runs in the runner-SIGSTOP row's work dir, 8 s after its resume.
fn act6_soon_after_act5(run: &LabRun) -> Result<()> {
    const ROW: &str = "act6-liveness-gap";
    let dir = COMPLETED_ACT5
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone()
        .context("needs the runner-SIGSTOP row's completed act 5 (it failed or did not run)")?;
    let rd = RowDir::reuse(run, dir)?;
    // Act 6's inputs: copied with the others when the acts ran in the lab's work dir; written
    // for it when only the rows run (`-- fault_row`: acts 1-4).
    let spec = lab::acts::spec(Lab::B, 6).context("act 6 in the registry")?;
    if spec
        .inputs
        .iter()
        .any(|f| !rd.dir.join(f.file_name()).exists())
    {
        for p in run.write_inputs(6)? {
            std::fs::copy(&p, rd.dir.join(p.file_name().context("input name")?))?;
        }
    }
    let f5: Act5Facts = serde_json::from_value(rd.workdir().read_evidence(5)?.evidence.facts)?;
    let resumed = at(Some(&f5.freeze.resumed_at), "act 5 resumed_at")?;
    let start = resumed + chrono::Duration::seconds(8);
    let left = (start - chrono::Utc::now()).to_std().unwrap_or_default();
    eprintln!("    act 6 starts {left:?} from now, 8 s after act 5's resume");
    std::thread::sleep(left);
    let (st, text) = rd.output(&["act", "6"])?;
    freeze_ended(run);
    ensure!(st.success(), "act 6 ({st}):\n{text}");
    let ev = rd.workdir().read_evidence(6)?;
    let gap = ev
        .evidence
        .raw
        .iter()
        .find(|r| r["what"] == "liveness-gap")
        .with_context(|| format!("act 6 recorded no liveness-gap wait; its output:\n{text}"))?;
    let waited = Duration::from_millis(gap["data"]["waited_ms"].as_u64().context("waited_ms")?);
    figure(ROW, "act 6 waited before its freeze", waited);
    ensure!(
        waited > Duration::from_secs(5) && waited < Duration::from_secs(27),
        "a start 8 s after a 20 s freeze waits until about 27 s after it: {gap}"
    );
    let pid = f5.freeze.identity.pid as i32;
    let ticks = f5.freeze.identity.pid_start_time_ticks;
    let now = lab::faults::process::state_if_same(pid, ticks)?;
    ensure!(
        matches!(now, Some(s) if s != 'T' && s != 't'),
        "act 5's Kyverno process (pid {pid}) after act 6: {now:?} (None: restarted)"
    );
    let g = lab::grade::grade(
        Lab::B,
        6,
        &lab::grade::GradeInput::load(&rd.workdir(), Lab::B),
    );
    ensure!(
        g.passed(),
        "{}",
        lab::messages::findings(lab::text::Lang::En, &g)
    );
    rd.done();
    Ok(())
}
