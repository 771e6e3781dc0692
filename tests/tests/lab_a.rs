//! Lab A end to end on a fresh embedded cluster: one test per act, in order, on one cluster.
//!
//! The cluster comes from the same code as `cargo xtask cluster up` (`tests::LabCluster`), the
//! reference inputs and the acts from the same code as `cargo xtask lab run`
//! (`xtask::lab_run::LabRun`). An act that fails makes every later act FAIL with "not run: act N
//! failed" (never pass, never silently skip). Each act's test asserts the facts the lab is about
//! and that its grade passes:
//! - act 5: on Kyverno v1.19.1 scaling the admission controller to 0 removes the policy's webhook
//!   registration (recorded as `registration-absent`), the violating request in the target
//!   namespace is stored, the control request is stored, the policy keeps its UID, the act-3 pod
//!   survives;
//! - act 6: the six recovery steps are all confirmed, each with its own timestamp, in order; the
//!   pod admitted during the scale-down is still there; the dry-run probes stored nothing;
//! - act 7: a server-side dry-run is validated (good admitted and echoed, bad explicitly denied)
//!   and stores nothing.
//!
//! Timings (recovery timestamps, leader takeover) are printed and appended to
//! `<state root>/figures.jsonl`, not asserted.

use std::sync::{Arc, Mutex};

use lab::evidence::{ActStatus, Lab, Outcome};
use lab::facts::a::{Act4Facts, Act5Facts, Act6Facts, Act7Facts, StepStatus};
use lab::facts::{Act2Facts, Act3Facts, Act8Facts};
use libtest_mimic::{Arguments, Failed, Trial};
use tests::LabCluster;
use tests::acts::{
    act1_matches_the_live_cluster, act2_registers_the_fail_webhook, ensure, existing_survives,
    expect,
};
use xtask::lab_run::LabRun;

const CLUSTER_NAME: &str = "test-lab-a";

type State = tests::OrderedLab;

type Shared = Arc<Mutex<State>>;

fn main() {
    let mut args = Arguments::from_args();
    args.test_threads = Some(1);
    let state: Shared = Arc::default();
    let mut trials = Vec::new();
    let names = [
        "act_1_scope_matches_the_live_cluster",
        "act_2_policy_registers_a_fail_webhook",
        "act_3_baseline_good_stored_bad_denied",
        "act_4_investigation_changes_nothing",
        "act_5_scale_to_zero_removes_the_registration_and_admits_the_request",
        "act_6_recovery_timeline_lease_then_registration_then_deny",
        "act_7_server_dry_run_validates_without_storing",
        "act_8_report_agrees_with_the_evidence",
    ];
    for (i, name) in names.iter().enumerate() {
        let act = i as u8 + 1;
        let st = state.clone();
        trials.push(Trial::test(*name, move || {
            step(&st, &format!("act {act}"), |run| act_test(run, act))
        }));
    }
    let st = state.clone();
    trials.push(Trial::test("grade_all_passes", move || {
        step(&st, "grade all", grade_all)
    }));
    let conclusion = libtest_mimic::run(&args, trials);
    let mut s = state.lock().unwrap_or_else(|p| p.into_inner());
    // Keep what was observed, passed or failed: inputs, evidence, fault files, grades, webhooks,
    // component logs (beside the work dir, which is already outside the cluster's state dir).
    if let (Some(run), Some(c)) = (&s.run, &s.cluster)
        && let Some(dir) = run.workdir().root().parent()
    {
        let saved = xtask::lab_run::save_artifacts(run, dir)
            .and_then(|_| xtask::lab_run::collect_cluster_logs(&c.state_dir(), dir));
        match saved {
            Ok(()) => eprintln!("lab a test artifacts: {}", dir.display()),
            Err(e) => eprintln!("saving artifacts to {} failed: {e:#}", dir.display()),
        }
    }
    s.run = None;
    if let Some(c) = s.cluster.take()
        && let Err(e) = c.down()
    {
        eprintln!("teardown of {CLUSTER_NAME} failed: {e:#}");
        std::process::exit(101);
    }
    drop(s);
    conclusion.exit();
}

/// Runs one ordered step (see [`tests::ordered_step`]), setting the cluster up on first use.
fn step(
    state: &Shared,
    what: &str,
    f: impl FnOnce(&LabRun) -> Result<(), Failed>,
) -> Result<(), Failed> {
    tests::ordered_step(state, what, setup, f)
}

fn setup() -> anyhow::Result<(LabCluster, LabRun)> {
    xtask::lab_run::ensure_lab_binary()?;
    let cluster = LabCluster::fresh(CLUSTER_NAME)?;
    // Outside the cluster's state directory, so the evidence outlives the teardown.
    let workdir =
        xtask::lab_run::artifacts_dir(&format!("test-{}", xtask::lab_run::run_id()), Lab::A)
            .join("workdir");
    let mut run = LabRun::new(
        Lab::A,
        &workdir,
        &cluster.kubeconfig(),
        &cluster.cri_endpoint(),
    )?;
    run.env.audit = cluster.audit();
    eprintln!(
        "    cluster {CLUSTER_NAME} up in {:.0}s; workdir {}",
        cluster.up_secs(),
        workdir.display()
    );
    Ok((cluster, run))
}

fn facts_of(run: &LabRun, act: u8) -> Result<serde_json::Value, Failed> {
    Ok(run.workdir().read_evidence(act)?.evidence.facts)
}

/// Act `act`'s facts as the typed struct the act wrote.
macro_rules! facts {
    ($run:expr, $act:expr) => {
        serde_json::from_value(facts_of($run, $act)?)
    };
}

/// What act 4 must leave as it found it: the admission controller Deployment's resourceVersion
/// and generation, its pods' UIDs and restart counts, and the leader Lease's holder (the Lease's
/// own resourceVersion moves with every renewal, so only the holder is compared).
fn admission_state(run: &LabRun) -> Result<serde_json::Value, Failed> {
    run.block_on(async {
        let cl = run.env.cluster().await?;
        let dep = cl.admission_deployment().await?;
        let pods = cl.admission_pods().await?;
        let lease = cl
            .lease(lab::cluster::KYVERNO_NAMESPACE, lab::cluster::LEADER_LEASE)
            .await?;
        Ok::<_, lab::error::LabError>(serde_json::json!({
            "deployment": [dep.metadata.resource_version, dep.metadata.generation],
            "pods": pods.iter().map(|p| {
                let restarts: Vec<i32> = p.status.iter()
                    .flat_map(|s| s.container_statuses.iter().flatten())
                    .map(|c| c.restart_count).collect();
                (p.metadata.uid.clone(), restarts)
            }).collect::<Vec<_>>(),
            "lease_holder": lease.and_then(|l| l.spec).and_then(|s| s.holder_identity),
        }))
    })
    .map_err(|e| Failed::from(format!("reading the admission controller's state: {e}")))
}

fn act_test(run: &LabRun, act: u8) -> Result<(), Failed> {
    let before = if act == 4 {
        Some(admission_state(run)?)
    } else {
        None
    };
    let summary = run.act(act).map_err(|e| Failed::from(format!("{e:#}")))?;
    if let Some(before) = before {
        let after = admission_state(run)?;
        ensure(
            before == after,
            &format!("act 4 changes nothing: before {before}, after {after}"),
        )?;
    }
    for l in &summary.lines {
        eprintln!("    {l}");
    }
    if summary.status != ActStatus::Completed {
        return Err(format!("act {act} ended {:?}", summary.status).into());
    }
    match act {
        1 => act1_matches_the_live_cluster(run, &facts!(run, 1)?)?,
        2 => act2_registers_the_fail_webhook(run, &facts!(run, 2)?)?,
        3 => {
            let f: Act3Facts = facts!(run, 3)?;
            expect(&f.good, Outcome::Stored, "act 3 good")?;
            expect(&f.bad, Outcome::ExplicitDeny, "act 3 bad")?;
            ensure(
                f.existing.phase.as_deref() == Some("Running"),
                "act 3 existing pod Running",
            )?;
        }
        4 => {
            let f: Act4Facts = facts!(run, 4)?;
            ensure(f.deployment.replicas == 1, "act 4: deployment at 1 replica")?;
            ensure(
                f.pods.len() == 1 && f.pods[0].uid.is_some(),
                &format!("act 4: one controller pod with a UID, saw {:?}", f.pods),
            )?;
            ensure(
                f.lease
                    .holder
                    .as_deref()
                    .is_some_and(|h| h.starts_with(&f.pods[0].name)),
                &format!(
                    "act 4: the Lease is held by the controller pod {} (holder {:?})",
                    f.pods[0].name, f.lease.holder
                ),
            )?;
        }
        5 => act5_facts(run)?,
        6 => act6_facts(run)?,
        7 => {
            let f: Act7Facts = facts!(run, 7)?;
            expect(&f.good, Outcome::DryRunAdmitted, "act 7 good dry-run")?;
            ensure(
                f.good.dry_run && !f.good.get.exists,
                "act 7 good: dry-run, GET finds nothing",
            )?;
            ensure(
                f.good_response.kind == "Pod"
                    && f.good_response.name == f.good.name
                    && f.good_response.namespace == f.good.namespace
                    && f.good_response.labels == f.good.labels,
                &format!(
                    "act 7 good: the response echoes kind Pod, name, namespace and labels: {:?}",
                    f.good_response
                ),
            )?;
            expect(&f.bad, Outcome::ExplicitDeny, "act 7 bad dry-run")?;
            ensure(
                f.bad
                    .message
                    .as_deref()
                    .is_some_and(|m| m.contains("KCA_ENVIRONMENT_REQUIRED")),
                "act 7 bad: the deny carries the policy's marker",
            )?;
            ensure(
                f.side_effects == "NoneOnDryRun" || f.side_effects == "None",
                &format!(
                    "act 7: sideEffects lets dry-run reach the webhook ({})",
                    f.side_effects
                ),
            )?;
            eprintln!(
                "    webhook {} sideEffects {}",
                f.webhook_name, f.side_effects
            );
        }
        8 => {
            let f: Act8Facts = facts!(run, 8)?;
            let bad: Vec<_> = f.checks.iter().filter(|c| !c.agrees).collect();
            ensure(f.checks.len() >= 9, "act 8 checks every report field")?;
            ensure(
                bad.is_empty(),
                &format!("every report check agrees: {bad:?}"),
            )?;
        }
        _ => return Err(format!("act {act} has no checks in this test").into()),
    }
    let g = run.grade(act);
    if !g.passed() {
        return Err(format!(
            "grade {act}: {} checks, findings: {}",
            g.checks,
            g.findings
                .iter()
                .map(|f| format!("{} {}: {}", f.code.as_str(), f.subject, f.detail))
                .collect::<Vec<_>>()
                .join("; ")
        )
        .into());
    }
    Ok(())
}

fn act5_facts(run: &LabRun) -> Result<(), Failed> {
    let f: Act5Facts = facts!(run, 5)?;
    let f2: Act2Facts = facts!(run, 2)?;
    let t = |s: &str| lab::facts::parse_rfc3339(s);
    ensure(
        t(&f.watcher.armed_at).is_some() && t(&f.watcher.armed_at) < t(&f.scaled_at),
        &format!(
            "the watcher armed ({}) before the scale ({})",
            f.watcher.armed_at, f.scaled_at
        ),
    )?;
    ensure(
        f.pods_gone_at.is_some(),
        "the controller pods were gone before observing",
    )?;
    ensure(
        f.policy.exists
            && f.policy.uid.is_some()
            && f.policy.uid.as_deref()
                == f2.policy.pointer("/metadata/uid").and_then(|u| u.as_str()),
        "the policy still exists with act 2's UID",
    )?;
    ensure(
        f.webhook_configurations.get("items").is_some(),
        "the raw ValidatingWebhookConfigurationList is kept",
    )?;
    // Kyverno v1.19.1 deletes its webhook configurations when its Deployment has 0 replicas.
    ensure(
        !f.policy_webhook_present,
        "on Kyverno v1.19.1 the policy's webhook registration is absent after the scale to 0",
    )?;
    expect(
        &f.target_bad,
        Outcome::Stored,
        "violating request in the target namespace",
    )?;
    ensure(
        f.target_bad.get.uid.is_some(),
        "the admitted violating pod has a UID",
    )?;
    expect(
        &f.control,
        Outcome::Stored,
        "request in the control namespace",
    )?;
    existing_survives(run, &f.existing)?;
    // The fault's ledger and the watcher's record are on disk.
    let dir =
        lab::faults::scale::FaultDir(f.watcher.fault_dir.clone().ok_or("no fault_dir")?.into());
    let ledger = dir.read_ledger()?;
    ensure(
        ledger
            .last(lab::faults::scale::LedgerEvent::WatcherArmed)
            .is_some()
            && ledger
                .last(lab::faults::scale::LedgerEvent::ScaledDown)
                .is_some(),
        "the ledger has the watcher armed and the scale-down",
    )?;
    eprintln!(
        "    figures: armed {} → scaled {} → pods gone {}; registration present: {}; target bad {} ({} ms), control {} ({} ms)",
        f.watcher.armed_at,
        f.scaled_at,
        f.pods_gone_at.as_deref().unwrap_or("-"),
        f.policy_webhook_present,
        f.target_bad.outcome.as_str(),
        f.target_bad.elapsed_ms,
        f.control.outcome.as_str(),
        f.control.elapsed_ms
    );
    Ok(())
}

fn act6_facts(run: &LabRun) -> Result<(), Failed> {
    let f: Act6Facts = facts!(run, 6)?;
    let f5: Act5Facts = facts!(run, 5)?;
    let steps = [
        ("replicas restored", &f.replicas_restored),
        ("new pod created", &f.pod_created),
        ("pod Running", &f.pod_running),
        ("Lease held by the new pod", &f.lease_acquired),
        ("webhook registered again", &f.webhook_registered),
        ("first explicit deny", &f.first_explicit_deny),
    ];
    for (label, s) in &steps {
        eprintln!(
            "    {label}: {} {}",
            s.at.as_deref().unwrap_or("-"),
            match s.status {
                StepStatus::Confirmed => String::new(),
                StepStatus::NotConfirmed => format!("(not-confirmed; last seen {:?})", s.last_seen),
            }
        );
    }
    for (label, s) in &steps {
        ensure(
            s.status == StepStatus::Confirmed && s.at.is_some(),
            &format!("{label} confirmed"),
        )?;
    }
    ensure(
        lab::labs::a::timeline_in_order(&f),
        "the six recovery timestamps are in order",
    )?;
    ensure(
        f.restored_by.is_some(),
        "who restored the replicas is recorded",
    )?;
    let new = f.new_pod.as_ref().ok_or("no new pod recorded")?;
    let a4: Act4Facts = facts!(run, 4)?;
    ensure(
        a4.pods.iter().all(|p| p.uid != new.uid),
        "the new controller pod has a new UID",
    )?;
    ensure(
        f.lease_holder
            .as_deref()
            .is_some_and(|h| h.starts_with(&new.name)),
        "the Lease names the new pod",
    )?;
    ensure(
        f.deny_probes.iter().all(|r| r.dry_run && !r.get.exists),
        "every recovery probe was a dry-run and stored nothing",
    )?;
    let admitted = f
        .admitted_during_scale_down
        .as_ref()
        .ok_or("act 5's admitted pod not read")?;
    ensure(
        admitted.exists && admitted.uid.is_some() && admitted.uid == f5.target_bad.get.uid,
        "the violating pod admitted during the scale-down is still there (same UID)",
    )?;
    existing_survives(run, f.existing.as_ref().ok_or("existing pod not read")?)?;
    // The runner restored: the watcher sees that in the ledger, checks the live scale and
    // finishes (already restored) instead of waiting for its deadline.
    let dir =
        lab::faults::scale::FaultDir(f5.watcher.fault_dir.clone().ok_or("no fault_dir")?.into());
    let mut watcher = None;
    for _ in 0..100 {
        if let Some(w) = dir.read_watcher()?
            && w.action != lab::faults::scale::WatcherAction::Waiting
        {
            watcher = Some(w);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let watcher = watcher.ok_or("the watcher did not finish within 10 s of act 6")?;
    eprintln!(
        "    watcher finished: {:?} (woke by {:?} at {:?})",
        watcher.action, watcher.woke_by, watcher.finished_at
    );
    if f.restored_by == Some(lab::facts::a::Restorer::Runner) {
        ensure(
            watcher.action == lab::faults::scale::WatcherAction::AlreadyRestored,
            &format!(
                "the watcher found the runner's restore, recorded {:?}",
                watcher.action
            ),
        )?;
    }
    eprintln!(
        "    figures: restored by {:?}; leader takeover {} ms after Running, {} ms after the restore; {} dry-run probes",
        f.restored_by,
        f.leader_takeover_ms
            .map(|v| v.to_string())
            .unwrap_or_default(),
        f.lease_after_restore_ms
            .map(|v| v.to_string())
            .unwrap_or_default(),
        f.deny_probes.len()
    );
    let figure = serde_json::json!({
        "figure": "lab-a-recovery-timeline",
        "at": lab::facts::now_rfc3339(),
        "replicas_restored": f.replicas_restored.at,
        "restored_by": f.restored_by,
        "pod_created": f.pod_created.at,
        "pod_running": f.pod_running.at,
        "lease_acquired": f.lease_acquired.at,
        "webhook_registered": f.webhook_registered.at,
        "first_explicit_deny": f.first_explicit_deny.at,
        "leader_takeover_ms": f.leader_takeover_ms,
        "lease_after_restore_ms": f.lease_after_restore_ms,
    });
    let _ = tests::record_figure(&xtask::cluster::config::default_state_root(), figure);
    Ok(())
}

fn grade_all(run: &LabRun) -> Result<(), Failed> {
    tests::acts::grade_all(run, Lab::A)
}
