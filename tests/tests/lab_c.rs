//! Lab C, acts 1-4 (the acts built so far, issue 28), end to end on a fresh embedded cluster: one
//! test per act of the registry, in order, on one cluster (as `lab_b.rs`). An act that fails
//! makes every later step FAIL with "not run: act N failed" (never pass, never skip).
//!
//! Each act's test asserts the facts the lab is about (act 3: three Ready replicas, each a ready
//! endpoint, the Lease held by one of them, every violating pod of the parallel waves an explicit
//! deny; act 4: the leader is the Lease's holder, each replica's process is live and not stopped)
//! and that its grade passes. The last step is the heal of an abandoned lab: `heal` puts the
//! original replica count back (three replicas are left after act 3) and closes the attempt.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lab::evidence::{ActStatus, Lab, Outcome};
use lab::facts::Act1Facts;
use lab::facts::Act2Facts;
use lab::facts::c::{Act3Facts, Act4Facts, ReplicaProcess};
use libtest_mimic::{Arguments, Failed, Trial};
use tests::LabCluster;
use tests::acts::{act1_matches_the_live_cluster, act2_registers_the_fail_webhook, ensure, expect};
use xtask::lab_run::LabRun;

const CLUSTER_NAME: &str = "test-lab-c";

type Shared = Arc<Mutex<tests::OrderedLab>>;

fn main() {
    let mut args = Arguments::from_args();
    args.test_threads = Some(1);
    let state: Shared = Arc::default();
    let mut trials = Vec::new();
    for spec in lab::acts::of(Lab::C) {
        let act = spec.number;
        let st = state.clone();
        trials.push(Trial::test(spec.test_name, move || {
            step(&st, &format!("act {act}"), |run| act_test(run, act))
        }));
    }
    let st = state.clone();
    trials.push(Trial::test("grade_all_passes", move || {
        step(&st, "grade all", |run| tests::acts::grade_all(run, Lab::C))
    }));
    let st = state.clone();
    trials.push(Trial::test(
        "heal_of_an_abandoned_lab_puts_back_one_replica",
        move || step(&st, "heal", heal_puts_back_the_original_count),
    ));
    let conclusion = libtest_mimic::run(&args, trials);
    // Whatever failed, no healer outlives the test: heal the work dir (a no-op after the heal step).
    if let Some(run) = &state.lock().unwrap_or_else(|p| p.into_inner()).run
        && let Err(e) = run.heal()
    {
        eprintln!("heal before teardown failed: {e:#}");
    }
    tests::finish_ordered(&state, "lab c", CLUSTER_NAME, &artifacts(), conclusion);
}

fn step(
    state: &Shared,
    what: &str,
    f: impl FnOnce(&LabRun) -> Result<(), Failed>,
) -> Result<(), Failed> {
    tests::ordered_step(state, what, setup, f)
}

/// `target/lab-artifacts/test-<run id>/c/`.
fn artifacts() -> PathBuf {
    tests::ordered_artifacts(Lab::C)
}

fn setup() -> anyhow::Result<(LabCluster, LabRun)> {
    tests::ordered_setup(Lab::C, CLUSTER_NAME, &artifacts())
}

fn act_test(run: &LabRun, act: u8) -> Result<(), Failed> {
    let summary = run.act(act).map_err(|e| Failed::from(format!("{e:#}")))?;
    for l in &summary.lines {
        eprintln!("    {l}");
    }
    if summary.status != ActStatus::Completed {
        return Err(format!("act {act} ended {:?}", summary.status).into());
    }
    let facts = run.workdir().read_evidence(act)?.evidence.facts;
    match act {
        1 => act1_matches_the_live_cluster(run, &serde_json::from_value::<Act1Facts>(facts)?)?,
        2 => act2_registers_the_fail_webhook(run, &serde_json::from_value::<Act2Facts>(facts)?)?,
        3 => three_replicas_and_a_healthy_baseline(&serde_json::from_value(facts)?)?,
        4 => leader_and_followers_are_live(&serde_json::from_value(facts)?)?,
        _ => {}
    }
    tests::acts::graded(run, act)
}

/// Act 3: three Ready replicas, each a ready endpoint, the Lease held by one of them, every
/// violating pod of the waves explicitly denied, good and control stored. Prints which replica
/// served how many pod requests (observed, not asserted: the spread is what the lab measures).
fn three_replicas_and_a_healthy_baseline(f: &Act3Facts) -> Result<(), Failed> {
    ensure(
        f.replicas.len() == 3 && f.replicas.iter().all(|r| r.ready),
        "act 3: three Ready replicas",
    )?;
    ensure(
        f.endpoints.iter().filter(|e| e.ready).count() == 3,
        "act 3: three ready endpoints of kyverno-svc",
    )?;
    let holder = f.lease.holder.as_deref().unwrap_or("");
    ensure(
        f.replicas.iter().any(|r| r.pod.name == holder),
        &format!("act 3: the Lease holder {holder:?} is a replica"),
    )?;
    for (i, r) in f.bad.iter().enumerate() {
        expect(r, Outcome::ExplicitDeny, &format!("act 3 wave request {i}"))?;
    }
    expect(&f.good, Outcome::Stored, "act 3 good")?;
    expect(&f.control, Outcome::Stored, "act 3 control")?;
    let spread: Vec<String> = f
        .replica_requests
        .iter()
        .map(|r| match (r.before, r.after) {
            (Some(b), Some(a)) => format!("{} +{}", r.pod, a.saturating_sub(b)),
            _ => format!("{} ?", r.pod),
        })
        .collect();
    eprintln!(
        "    figures: ready after {} ms; Lease holder {holder}, leaseTransitions {:?}; pod requests per replica: {}",
        f.wait.waited_ms,
        f.lease.lease_transitions,
        spread.join(", ")
    );
    Ok(())
}

/// Act 4: the leader is the Lease's holder; each replica's process is alive with the recorded
/// start time (read again here from `/proc`, not through the lab's reader) and not stopped.
fn leader_and_followers_are_live(f: &Act4Facts) -> Result<(), Failed> {
    ensure(
        f.lease.holder.as_deref() == Some(f.leader.pod_name.as_str()),
        "act 4: the leader is the Lease's holder",
    )?;
    ensure(f.followers.len() == 2, "act 4: two followers")?;
    let all: Vec<&ReplicaProcess> = std::iter::once(&f.leader).chain(&f.followers).collect();
    for p in all {
        let stat = procfs::process::Process::new(p.identity.pid as i32)
            .and_then(|proc| proc.stat())
            .map_err(|e| Failed::from(format!("act 4: /proc/{}/stat: {e}", p.identity.pid)))?;
        ensure(
            stat.starttime == p.identity.pid_start_time_ticks && stat.state != 'T',
            &format!(
                "act 4: {} pid {} is live with start time {} (recorded {}), not stopped ({})",
                p.pod_name,
                p.identity.pid,
                stat.starttime,
                p.identity.pid_start_time_ticks,
                stat.state
            ),
        )?;
    }
    Ok(())
}

/// `heal` (the student abandoning lab C after act 4) stands the healer down, which puts the
/// original replica count back; the attempt is closed with a `heal.json`; the Deployment is read
/// at one replica, and within a bound only one pod is left.
fn heal_puts_back_the_original_count(run: &LabRun) -> Result<(), Failed> {
    let summary = run
        .block_on(lab::labs::heal(&run.env))
        .map_err(|e| Failed::from(format!("heal: {e}")))?;
    for l in summary.lines() {
        eprintln!("    {l}");
    }
    let replicas = run
        .block_on(async {
            let c = run.env.cluster().await?;
            lab::faults::scale::read_scale(&c).await
        })
        .map_err(|e| Failed::from(format!("reading the scale: {e}")))?
        .and_then(|s| s.spec)
        .and_then(|s| s.replicas);
    ensure(
        replicas == Some(1),
        &format!("heal put spec.replicas back to 1 (found {replicas:?})"),
    )?;
    let attempts = lab::faults::heal::attempts(run.workdir().root())
        .map_err(|e| Failed::from(format!("{e}")))?;
    ensure(
        !attempts.is_empty()
            && attempts
                .iter()
                .all(|(_, dir)| lab::faults::heal::read_heal(dir).is_some()),
        &format!("every attempt closed by the heal (heal.json): {attempts:?}"),
    )?;
    let start = Instant::now();
    loop {
        let pods = run
            .block_on(async { run.env.cluster().await?.admission_pods().await })
            .map_err(|e| Failed::from(format!("{e}")))?;
        let live = pods
            .iter()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .count();
        if live == 1 {
            eprintln!(
                "    figures: one admission pod not terminating {} ms after the heal",
                start.elapsed().as_millis()
            );
            return Ok(());
        }
        if start.elapsed() > Duration::from_secs(120) {
            return Err(format!("{live} admission pods 120 s after the heal").into());
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}
