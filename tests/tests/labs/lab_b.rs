//! Lab B end to end on a fresh embedded cluster: one test per act, in order, on one cluster (a lane
//! of the `labs` binary, `tests::lanes`).
//!
//! The cluster comes from the same code as `cargo xtask cluster up` (`tests::LabCluster`), the
//! reference inputs and the acts from the same code as `cargo xtask lab run`
//! (`xtask::lab_run::LabRun`). An act that fails makes every later act FAIL with "not run: act N
//! failed" (never pass, never silently skip). Each act's test also asserts the facts the lab is
//! about (timeouts, stored or not, the surviving pod) and that its grade passes.
//!
//! Then a test kills a runner with SIGKILL in the middle of a freeze of Kyverno's real process
//! and checks that the healer resumes it within `resume_after_sec` + 1 s. The runner is this
//! `labs` binary re-executed with `KCA_TEST_LAB_B_RUNNER` set ([`runner_child`]).
//!
//! Last come issue 12's fault-attempt rows on the same cluster ([`rows`]), each with the real
//! `kca-webhook-lab act 5` process freezing the real Kyverno in a work directory of its own.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lab::evidence::{ActStatus, Lab, Outcome};
use lab::facts::b::{Act4Facts, Act5Facts, Act6Facts, Act7Facts, FreezeRun};
use lab::facts::{Act1Facts, Act2Facts, Act3Facts, Act8Facts};
use lab::faults::freeze::{self, FreezeTarget};
use libtest_mimic::Failed;
use tests::LabCluster;
use tests::acts::{
    act1_matches_the_live_cluster, act2_registers_the_fail_webhook, ensure, existing_survives,
    expect,
};
use tests::lanes::Lane;
use xtask::lab_run::LabRun;

const RUNNER_ENV: &str = "KCA_TEST_LAB_B_RUNNER";
const CLUSTER_NAME: &str = "test-lab-b";

type State = tests::OrderedLab;

type Shared = Arc<Mutex<State>>;

#[path = "lab_b/rows.rs"]
mod rows;

/// Lab B's runner child (the SIGKILL row re-executes this binary with [`RUNNER_ENV`] set): its
/// exit code, or `None` in the test process itself.
pub fn runner_child() -> Option<i32> {
    std::env::var(RUNNER_ENV).ok().map(|spec| runner(&spec))
}

/// Lab B's lane of the `labs` binary: one ordered step per act of the registry, the whole grade,
/// Kyverno's logs, the runner's SIGKILL, then the fault rows; its end keeps the artifacts and
/// tears the cluster down.
pub fn lane() -> Lane {
    let state: Shared = Arc::default();
    let st = state.clone();
    let mut lane = Lane::new(
        "lab_b",
        Box::new(move || tests::end_ordered(&st, "lab b", CLUSTER_NAME, &artifacts())),
    );
    for spec in lab::acts::of(Lab::B) {
        let act = spec.number;
        let st = state.clone();
        lane.row(spec.test_name, move || {
            step(&st, &format!("act {act}"), |run| act_test(run, act))
        });
    }
    let st = state.clone();
    lane.row("grade_all_passes", move || {
        step(&st, "grade all", grade_all)
    });
    let st = state.clone();
    lane.row("the_run_keeps_kyverno_s_own_logs", move || {
        step(&st, "kyverno logs", kyverno_logs_kept)
    });
    let st = state.clone();
    lane.row(
        "sigkill_of_the_runner_mid_freeze_still_resumes_kyverno",
        move || step(&st, "sigkill", sigkill_runner),
    );
    for (name, f) in rows::ROWS {
        let st = state.clone();
        lane.row(name, move || rows::row_step(&st, name, f));
    }
    lane
}

/// Runs one ordered step (see [`tests::ordered_step`]), setting the cluster up on first use.
fn step(
    state: &Shared,
    what: &str,
    f: impl FnOnce(&LabRun) -> Result<(), Failed>,
) -> Result<(), Failed> {
    tests::ordered_step(state, what, setup, f)
}

/// `target/lab-artifacts/test-<run id>/b/` (one run id per test process).
fn artifacts() -> PathBuf {
    tests::ordered_artifacts(Lab::B)
}

fn setup() -> anyhow::Result<(LabCluster, LabRun)> {
    tests::ordered_setup(Lab::B, CLUSTER_NAME, &artifacts())
}

/// Act 4 against the node read again by the test (procfs, not the lab's own reader): the pod is
/// the live admission controller pod, the process's `/proc/<pid>/stat` start time is the one
/// recorded, it is not stopped, and its cgroup names the recorded CRI container.
fn investigation_names_the_live_process(run: &LabRun, f: &Act4Facts) -> Result<(), Failed> {
    let pods = run
        .block_on(async { run.env.cluster().await?.admission_pods().await })
        .map_err(|e| Failed::from(format!("act 4: listing the admission pods: {e}")))?;
    ensure(
        pods.iter().any(|p| {
            p.metadata.name.as_deref() == Some(&f.pod_name)
                && p.metadata.uid.as_deref() == Some(&f.identity.pod_uid)
        }),
        &format!(
            "act 4: pod {} ({}) is a live admission controller pod",
            f.pod_name, f.identity.pod_uid
        ),
    )?;
    let proc = procfs::process::Process::new(f.identity.pid as i32)
        .map_err(|e| Failed::from(format!("act 4: /proc/{}: {e}", f.identity.pid)))?;
    let stat = proc
        .stat()
        .map_err(|e| Failed::from(format!("act 4: /proc/{}/stat: {e}", f.identity.pid)))?;
    ensure(
        stat.starttime == f.identity.pid_start_time_ticks,
        &format!(
            "act 4: pid {} start time {} is the recorded {}",
            f.identity.pid, stat.starttime, f.identity.pid_start_time_ticks
        ),
    )?;
    ensure(
        stat.state != 'T' && f.process_state != "T",
        &format!(
            "act 4: not stopped (live {}, recorded {})",
            stat.state, f.process_state
        ),
    )?;
    let cgroup = std::fs::read_to_string(format!("/proc/{}/cgroup", f.identity.pid))?;
    ensure(
        cgroup.contains(&f.identity.container_id),
        &format!(
            "act 4: /proc/{}/cgroup names container {}",
            f.identity.pid, f.identity.container_id
        ),
    )
}

/// The artifacts keep Kyverno's own logs (`kyverno-logs/`, written by `save_artifacts`): after
/// the acts, the admission controller's log is there and not empty.
fn kyverno_logs_kept(run: &LabRun) -> Result<(), Failed> {
    let dir = tempfile::tempdir()?;
    let (written, failed) = run
        .save_kyverno_logs(dir.path())
        .map_err(|e| Failed::from(format!("{e:#}")))?;
    ensure(
        failed.is_empty(),
        &format!("unreadable Kyverno logs: {failed:?}"),
    )?;
    let admission = written
        .iter()
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("kyverno-admission-controller-"))
        })
        .ok_or_else(|| format!("no admission controller log among {written:?}"))?;
    let text = std::fs::read_to_string(admission)?;
    ensure(
        text.lines().count() > 10,
        &format!("{} has {} lines", admission.display(), text.lines().count()),
    )
}

fn act_test(run: &LabRun, act: u8) -> Result<(), Failed> {
    let summary = run.act(act);
    if act == 6 {
        // Act 6's freeze is over: the SIGKILL row's freeze waits for a liveness success after it.
        rows::freeze_ended(run);
    }
    let summary = summary.map_err(|e| Failed::from(format!("{e:#}")))?;
    for l in &summary.lines {
        eprintln!("    {l}");
    }
    if summary.status != ActStatus::Completed {
        return Err(format!("act {act} ended {:?}", summary.status).into());
    }
    let ev = run.workdir().read_evidence(act)?;
    let facts = ev.evidence.facts.clone();
    match act {
        1 => act1_matches_the_live_cluster(run, &serde_json::from_value::<Act1Facts>(facts)?)?,
        2 => act2_registers_the_fail_webhook(run, &serde_json::from_value::<Act2Facts>(facts)?)?,
        4 => {
            let f: Act4Facts = serde_json::from_value(facts)?;
            investigation_names_the_live_process(run, &f)?;
        }
        3 => {
            let f: Act3Facts = serde_json::from_value(facts)?;
            expect(&f.good, Outcome::Stored, "act 3 good")?;
            expect(&f.bad, Outcome::ExplicitDeny, "act 3 bad")?;
            ensure(
                f.existing.phase.as_deref() == Some("Running"),
                "act 3 existing pod Running",
            )?;
        }
        5 => {
            let f: Act5Facts = serde_json::from_value(facts)?;
            freeze_facts(&f, false, run)?;
        }
        6 => {
            let f: Act6Facts = serde_json::from_value(facts)?;
            expect(
                &f.healthy_bad,
                Outcome::ExplicitDeny,
                "act 6 healthy bad under Ignore",
            )?;
            ensure(
                f.webhook.name == "vpol.validate.kyverno.svc-ignore-finegrained-kca-webhook-label"
                    && f.webhook.failure_policy == "Ignore",
                "act 6 webhook renamed to the ignore one with failurePolicy Ignore",
            )?;
            ensure(
                f.policy.pointer("/metadata/uid").and_then(|v| v.as_str())
                    == Some(f.policy_uid_before.as_str()),
                "act 6 same policy uid",
            )?;
            freeze_facts(&f.run, true, run)?;
        }
        7 => {
            let f: Act7Facts = serde_json::from_value(facts)?;
            expect(
                &f.healthy_bad,
                Outcome::ExplicitDeny,
                "act 7 new violating request",
            )?;
            existing_survives(run, &f.existing)?;
        }
        8 => {
            let f: Act8Facts = serde_json::from_value(facts)?;
            let bad: Vec<_> = f.checks.iter().filter(|c| !c.agrees).collect();
            ensure(
                bad.is_empty(),
                &format!("every report check agrees: {bad:?}"),
            )?;
        }
        // An act without checks of its own here is held to its grader alone (below).
        _ => {}
    }
    tests::acts::graded(run, act)
}

/// The facts the lab is about, for one freeze (Fail: timeouts, not stored; Ignore: stored after
/// the timeout; control stored; a deny after resume; the existing pod survives).
fn freeze_facts(f: &FreezeRun, ignore: bool, run: &LabRun) -> Result<(), Failed> {
    ensure(
        f.registration_present_during_freeze,
        "registration present during the freeze",
    )?;
    ensure(
        f.freeze.state_during.as_deref() == Some("T"),
        "process state T during the freeze",
    )?;
    ensure(
        f.freeze.state_after != "T",
        "process not stopped after resume",
    )?;
    for (label, r) in [
        ("target good", &f.target_good),
        ("target bad", &f.target_bad),
    ] {
        if ignore {
            expect(r, Outcome::Stored, label)?;
        } else {
            expect(r, Outcome::WebhookTimeout, label)?;
            ensure(!r.get.exists, &format!("{label} not stored"))?;
        }
        ensure(
            r.elapsed_ms >= 3000,
            &format!("{label} answered after ≥ 3 s (took {} ms)", r.elapsed_ms),
        )?;
    }
    expect(&f.control, Outcome::Stored, "control")?;
    let deny = f
        .first_explicit_deny
        .as_ref()
        .ok_or("no explicit deny after resume")?;
    expect(
        deny,
        Outcome::ExplicitDeny,
        "first request denied after resume",
    )?;
    existing_survives(run, &f.existing)?;
    eprintln!(
        "    figures: timeouts {} ms / {} ms, frozen {} → resumed {} by {:?}, restarts {} → {}, first deny {} ms after resume ({} requests)",
        f.target_good.elapsed_ms,
        f.target_bad.elapsed_ms,
        f.freeze.frozen_at,
        f.freeze.resumed_at,
        f.freeze.resumed_by,
        f.restart_count_before,
        f.restart_count_after,
        f.first_deny_after_resume_ms
            .map(|m| m.to_string())
            .unwrap_or_default(),
        f.after_resume.len()
    );
    Ok(())
}

fn grade_all(run: &LabRun) -> Result<(), Failed> {
    tests::acts::grade_all(run, Lab::B)
}

/// Runner mode: `KUBECONFIG CRI FAULT_DIR RESUME_AFTER`: checks the lab mark, finds Kyverno's
/// admission process, freezes it (healer started), prints `frozen PID STARTTIME`, then sleeps until
/// killed.
fn runner(spec: &str) -> i32 {
    let parts: Vec<&str> = spec.split_whitespace().collect();
    let [kubeconfig, cri, dir, after] = parts[..] else {
        eprintln!("runner: bad spec {spec:?}");
        return 2;
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("runner: {e}");
            return 1;
        }
    };
    let found = rt.block_on(async {
        let cluster = lab::cluster::Cluster::connect(Some(Path::new(kubeconfig))).await?;
        cluster.lab_mark().await?;
        let mut c = lab::cri::CriClient::connect(Path::new(cri)).await?;
        lab::labs::b::investigate(&cluster, &mut c).await
    });
    let inv = match found {
        Ok(i) => i,
        Err(e) => {
            eprintln!("runner: {e}");
            return 1;
        }
    };
    let target = FreezeTarget {
        act: 5,
        container_id: inv.identity.container_id.clone(),
        pod_uid: inv.identity.pod_uid.clone(),
        pid: inv.identity.pid as i32,
        start_time_ticks: inv.identity.pid_start_time_ticks,
        resume_after_sec: after.parse().unwrap_or(20),
    };
    let program = match lab::faults::attempt::lab_program() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("runner: {e}");
            return 1;
        }
    };
    match freeze::freeze(&program, Path::new(dir), &target) {
        Ok(fz) => {
            println!("frozen {} {}", target.pid, target.start_time_ticks);
            std::thread::sleep(Duration::from_secs(600));
            drop(fz);
            0
        }
        Err(e) => {
            eprintln!("runner: {e}");
            1
        }
    }
}

fn sigkill_runner(run: &LabRun) -> Result<(), Failed> {
    // Act 6's 10 s freeze ended a few seconds ago: without a gap, Kyverno's liveness probe can
    // fail once in each freeze and kubelet kills the container mid-row (the row then sees the
    // pinned process gone, not resumed; seen: a restart 4 s after this freeze ended). Act 6's
    // test noted the end of its freeze (`rows::freeze_ended`).
    rows::before_freeze(run).map_err(|e| format!("{e:#}"))?;
    let resume_after = 20u64;
    let dir: PathBuf = run.workdir().root().join("faults-sigkill-test");
    std::fs::create_dir_all(&dir)?;
    let kubeconfig = run.env.kubeconfig.clone().ok_or("kubeconfig")?;
    let cri = run.env.cri_endpoint.clone().ok_or("cri endpoint")?;
    let mut child = Command::new(std::env::current_exe()?)
        .env(
            RUNNER_ENV,
            format!(
                "{} {} {} {resume_after}",
                kubeconfig.display(),
                cri.display(),
                dir.display()
            ),
        )
        .stdout(Stdio::piped())
        .spawn()?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().ok_or("runner stdout")?).read_line(&mut line)?;
    let frozen = Instant::now();
    let words: Vec<&str> = line.split_whitespace().collect();
    let (pid, start) = match words[..] {
        ["frozen", pid, start] => (pid.parse::<i32>()?, start.parse::<u64>()?),
        _ => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("runner said {line:?}").into());
        }
    };
    let state = || {
        lab::faults::process::state_if_same(pid, start)
            .ok()
            .flatten()
    };
    if state() != Some('T') {
        return Err(format!(
            "Kyverno's process state after the runner's SIGSTOP: {:?}",
            state()
        )
        .into());
    }
    std::thread::sleep(Duration::from_secs(2));
    // SIGKILL the runner (our own child, through its handle) mid-freeze.
    child.kill()?;
    child.wait()?;
    let killed_at = frozen.elapsed();
    while state() == Some('T') {
        if frozen.elapsed() > Duration::from_secs(resume_after + 5) {
            return Err(format!(
                "Kyverno still stopped {:?} after the freeze",
                frozen.elapsed()
            )
            .into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let resumed_after = frozen.elapsed();
    rows::freeze_ended(run);
    if state().is_none() {
        return Err(format!(
            "Kyverno's pinned process (pid {pid}, start {start}) is gone {resumed_after:?} into the freeze: killed, not resumed (kubelet's liveness restart?)"
        )
        .into());
    }
    eprintln!(
        "    runner SIGKILLed {killed_at:?} into the freeze; Kyverno resumed {resumed_after:?} after it (resume_after_sec {resume_after}), state now {:?}",
        state()
    );
    if resumed_after > Duration::from_secs(resume_after + 1) {
        return Err(
            format!("resumed after {resumed_after:?}, later than resume_after_sec + 1 s").into(),
        );
    }
    if resumed_after < Duration::from_secs(resume_after) - Duration::from_millis(500) {
        return Err(
            format!("resumed after {resumed_after:?}, before the healer's deadline").into(),
        );
    }
    // The lab is healthy again: a violating dry-run is explicitly denied (bounded wait).
    let env = &run.env;
    let probes = run.block_on(async {
        let cluster = env.cluster().await?;
        lab::labs::common::until_explicit_deny(
            &cluster,
            "sigkill-after",
            "kca-webhook-target",
            true,
            Duration::from_secs(180),
            |r, s| eprintln!("    after resume ({s}s): {}", r.outcome.as_str()),
        )
        .await
    })?;
    let last = probes.last().ok_or("no probe sent")?;
    expect(
        last,
        Outcome::ExplicitDeny,
        "dry-run violating request after the healer's resume",
    )
}
