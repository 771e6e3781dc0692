//! Lab C end to end on a fresh embedded cluster: one test per act of the registry, in order, on
//! one cluster (a lane of the `labs` binary, as `lab_b.rs`). An act that fails makes every later step FAIL with "not run: act
//! N failed" (never pass, never skip).
//!
//! Each act's test asserts the facts the lab is about and that its grade passes:
//! - act 3: three Ready replicas, each a ready endpoint, the Lease held by one of them, every
//!   violating pod of the parallel waves an explicit deny;
//! - act 4: the leader is the Lease's holder, each replica's process is live and not stopped;
//! - act 5 (the leader frozen under Fail): every violating pod a `webhook-timeout` (not stored)
//!   or an explicit deny, the control pods stored, the registration present, an explicit deny
//!   after the resume; how many timed out, whether and when the Lease moved and whether the
//!   former leader restarted are printed as figures (observed, not assumed);
//! - act 6 (a follower frozen under Ignore): every violating pod stored (with a UID) or
//!   explicitly denied, the Lease's holder unchanged;
//! - act 7: one Ready replica, an explicit deny, the existing pod the same; the scale attempt
//!   closed and its healer gone;
//! - act 8: every claim of the report agrees.
//!
//! The last step abandons a second lab C on the same cluster after act 3 (a second work dir):
//! `heal` puts the original replica count back and closes the attempt.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lab::evidence::{ActStatus, Lab, Outcome};
use lab::facts::Act1Facts;
use lab::facts::Act2Facts;
use lab::facts::c::{Act3Facts, Act4Facts, Act5Facts, Act6Facts, Act7Facts, ReplicaProcess};
use libtest_mimic::Failed;
use tests::LabCluster;
use tests::acts::{act1_matches_the_live_cluster, act2_registers_the_fail_webhook, ensure, expect};
use tests::lanes::Lane;
use xtask::lab_run::LabRun;

const CLUSTER_NAME: &str = "test-lab-c";

type Shared = Arc<Mutex<tests::OrderedLab>>;

/// Lab C's lane of the `labs` binary: one ordered step per act of the registry, the whole grade,
/// then the heal of an abandoned second lab C; its end heals the work dir (no healer outlives
/// the test, whatever failed), keeps the artifacts and tears the cluster down.
pub fn lane() -> Lane {
    let state: Shared = Arc::default();
    let st = state.clone();
    let mut lane = Lane::new(
        "lab_c",
        Box::new(move || {
            // A no-op after the heal step.
            if let Some(run) = &st.lock().unwrap_or_else(|p| p.into_inner()).run
                && let Err(e) = run.heal()
            {
                eprintln!("heal before teardown failed: {e:#}");
            }
            tests::end_ordered(&st, "lab c", CLUSTER_NAME, &artifacts())
        }),
    );
    for spec in lab::acts::of(Lab::C) {
        let act = spec.number;
        let st = state.clone();
        lane.row(spec.test_name, move || {
            step(&st, &format!("act {act}"), |run| act_test(run, act))
        });
    }
    let st = state.clone();
    lane.row("grade_all_passes", move || {
        step(&st, "grade all", |run| tests::acts::grade_all(run, Lab::C))
    });
    let st = state.clone();
    lane.row(
        "heal_of_a_lab_abandoned_after_act_3_puts_back_one_replica",
        move || step(&st, "heal", abandoned_after_act_3_then_heal),
    );
    lane
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
        5 => leader_freeze_under_fail(&serde_json::from_value(facts)?)?,
        6 => follower_freeze_under_ignore(&serde_json::from_value(facts)?)?,
        7 => scaled_back_and_denied(run, &serde_json::from_value(facts)?)?,
        8 => {
            let f: lab::facts::Act8Facts = serde_json::from_value(facts)?;
            let bad: Vec<_> = f.checks.iter().filter(|c| !c.agrees).collect();
            ensure(
                bad.is_empty(),
                &format!("act 8: every report check agrees: {bad:?}"),
            )?;
        }
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

/// Act 5: the leader was frozen; every violating pod of the waves met the frozen leader
/// (`webhook-timeout`, not stored) or a running replica (explicit deny); the control pods were
/// stored; the registration stayed; an explicit deny came after the resume.
fn leader_freeze_under_fail(f: &Act5Facts) -> Result<(), Failed> {
    ensure(f.target_role == "leader", "act 5 froze the leader")?;
    ensure(
        f.registration_present_during_freeze,
        "act 5: the registration stayed during the freeze",
    )?;
    ensure(f.bad.len() >= 18, "act 5: at least 18 violating pods")?;
    for (i, r) in f.bad.iter().enumerate() {
        ensure(
            matches!(r.outcome, Outcome::WebhookTimeout | Outcome::ExplicitDeny),
            &format!(
                "act 5 wave request {i}: timeout or deny, got {}",
                r.outcome.as_str()
            ),
        )?;
        ensure(
            !r.get.exists,
            &format!("act 5 wave request {i}: not stored (GET finds nothing)"),
        )?;
    }
    for (i, r) in f.control.iter().enumerate() {
        expect(r, Outcome::Stored, &format!("act 5 control {i}"))?;
    }
    ensure(
        f.first_explicit_deny.is_some(),
        "act 5: an explicit deny after the resume",
    )?;
    print_freeze_figures("act 5", f, Outcome::WebhookTimeout);
    Ok(())
}

/// Act 6: a follower was frozen under Ignore; every violating pod was stored (failed open, with a
/// UID read back) or explicitly denied; the Lease's holder did not change.
fn follower_freeze_under_ignore(f: &Act6Facts) -> Result<(), Failed> {
    let run = &f.run;
    ensure(run.target_role == "follower", "act 6 froze a follower")?;
    expect(&f.healthy_bad, Outcome::ExplicitDeny, "act 6 healthy deny")?;
    for (i, r) in run.bad.iter().enumerate() {
        ensure(
            matches!(r.outcome, Outcome::Stored | Outcome::ExplicitDeny),
            &format!(
                "act 6 wave request {i}: stored or deny, got {}",
                r.outcome.as_str()
            ),
        )?;
        if r.outcome == Outcome::Stored {
            ensure(
                r.get.exists && r.get.uid.is_some(),
                &format!("act 6 wave request {i}: stored means read back with a UID"),
            )?;
        }
    }
    ensure(
        run.lease_samples
            .iter()
            .all(|s| s.error.is_some() || s.holder == run.lease_before.holder),
        "act 6: the Lease's holder did not change during a follower's freeze",
    )?;
    print_freeze_figures("act 6", run, Outcome::Stored);
    Ok(())
}

/// Prints a freeze's figures: requests that met the frozen replica, the Lease, the restart.
fn print_freeze_figures(act: &str, f: &lab::facts::c::ReplicaFreezeRun, met: Outcome) {
    let (n_met, denied, other) = lab::rules::c::freeze_counts(f, met);
    let takeover = lab::rules::c::takeover(f).map_or("kept".to_owned(), |(h, at)| {
        format!("taken over by {h} at {at}")
    });
    eprintln!(
        "    figures: {act}: {} {n_met}, explicit-deny {denied}, other {other} of {}; frozen at {}; Lease {takeover}; {} restarts {} -> {}, same uid {}; first deny {:?} ms after the resume",
        met.as_str(),
        f.bad.len(),
        f.freeze.frozen_at,
        f.target_pod,
        f.target_after.restart_count_before,
        f.target_after.restart_count_after,
        f.target_after.pod_uid_after.as_deref() == Some(f.target_after.pod_uid_before.as_str()),
        f.first_deny_after_resume_ms
    );
}

/// Act 7: one Ready replica, an explicit deny, the existing pod the same; act 3's scale attempt is
/// closed (`heal.json`) and its healer no longer runs.
fn scaled_back_and_denied(run: &LabRun, f: &Act7Facts) -> Result<(), Failed> {
    ensure(
        f.replicas.len() == 1 && f.replicas.iter().all(|r| r.ready),
        "act 7: one Ready replica",
    )?;
    expect(&f.healthy_bad, Outcome::ExplicitDeny, "act 7 deny")?;
    let a3: Act3Facts = serde_json::from_value(run.workdir().read_evidence(3)?.evidence.facts)?;
    ensure(
        f.existing.uid.is_some()
            && f.existing.uid == a3.existing.uid
            && f.existing.phase.as_deref() == Some("Running"),
        "act 7: the existing pod keeps act 3's UID and is Running",
    )?;
    let dir = lab::faults::attempt::faults_root(run.workdir().root()).join(&f.scale_back.fault_id);
    ensure(
        lab::faults::heal::read_heal(&dir).is_some(),
        "act 7 closed act 3's scale attempt (heal.json)",
    )?;
    no_scale_healer_runs_for(&dir)
}

/// No process runs `healer-scale --attempt-dir <dir>` (read from `/proc/*/cmdline`).
fn no_scale_healer_runs_for(dir: &std::path::Path) -> Result<(), Failed> {
    let dir = dir.display().to_string();
    for p in procfs::process::all_processes().map_err(|e| Failed::from(e.to_string()))? {
        let Ok(cmd) = p.and_then(|p| p.cmdline()) else {
            continue;
        };
        if cmd
            .iter()
            .any(|a| a == lab::faults::scale::HEALER_SUBCOMMAND)
            && cmd.contains(&dir)
        {
            return Err(format!("a scale healer still runs for {dir}: {cmd:?}").into());
        }
    }
    Ok(())
}

/// A second lab C on the same cluster (its own work dir) is abandoned after act 3: `heal` (the
/// student giving up) stands the healer down, which puts the original replica count back; the
/// attempt is closed with a `heal.json`; the Deployment is read at one replica, and within a
/// bound only one pod is left.
fn abandoned_after_act_3_then_heal(first: &LabRun) -> Result<(), Failed> {
    let workdir = artifacts().join("abandoned-workdir");
    let mut run = LabRun::new(
        Lab::C,
        &workdir,
        first.env.kubeconfig.as_deref().ok_or("no kubeconfig")?,
        &first
            .env
            .cri_endpoint
            .as_deref()
            .ok_or("no CRI endpoint")?
            .display()
            .to_string(),
    )
    .map_err(|e| Failed::from(format!("{e:#}")))?;
    run.env.audit = first.env.audit.clone();
    for act in 1..=3 {
        let s = run.act(act).map_err(|e| Failed::from(format!("{e:#}")))?;
        ensure(
            s.status == ActStatus::Completed,
            &format!("abandoned lab: act {act} completed"),
        )?;
    }
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
