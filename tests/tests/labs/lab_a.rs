//! Lab A's cluster tests, on ONE fresh embedded cluster shared by every row (issue 16: this lane
//! replaces four binaries that each started a cluster: `lab_a`, `cluster_smoke`,
//! `lab_a_fault_rows` and `scale_watcher_sigkill`). A lane of the `labs` binary
//! (`tests::lanes`): the rows run in this fixed order, each starting from the state the previous
//! one left, beside the other labs' lanes, and the cluster is torn down at the end, also when a
//! row fails or panics; SIGINT/SIGTERM/SIGHUP tear it down through the fixture
//! (`tests::LabCluster`).
//!
//! 1. `smoke_…` (`lab_a/smoke.rs`): lab B's policy registers Kyverno's webhook and the admission
//!    chain stores or denies pods, through the test's own client; the policy and pods are deleted
//!    again and their registration is gone before lab A starts. Then a second `up` of the running
//!    cluster is refused and tears nothing down.
//! 2. `act_1_…` to `act_8_…`, `grade_all_passes`: lab A end to end with the reference inputs and
//!    acts of `cargo xtask lab run` (`xtask::lab_run::LabRun`). An act that fails makes every later
//!    act FAIL with "not run: act N failed" (never pass, never silently skip). Each act's test
//!    asserts the facts the lab is about and that its grade passes:
//!    - act 5: on Kyverno v1.19.1 scaling the admission controller to 0 removes the policy's
//!      webhook registration (recorded as `registration-absent`), the violating request in the
//!      target namespace is stored, the control request is stored, the policy keeps its UID, the
//!      act-3 pod survives;
//!    - act 6: the six recovery steps are all confirmed, each with its own timestamp, in order; the
//!      pod admitted during the scale-down is still there; the dry-run probes stored nothing; the
//!      runner restored and the watcher found it `already-restored`;
//!    - act 7: a server-side dry-run is validated (good admitted and echoed, bad explicitly denied)
//!      and stores nothing.
//!
//!    When act 4 passes, its work dir (acts 1-4) is copied for row 3.
//! 3. `fault_row_…` (`lab_a/fault_rows.rs`, issue 12's lab A rows, each driving the real
//!    `kca-webhook-lab` processes): watcher SIGKILLed mid-fault then `inspect` heals (on the copy
//!    of acts 1-4: act 5 and act 6 again, so acts 1-4 are not run twice), act 5 SIGSTOPped past the
//!    deadline, disk full (the last two in work dirs of their own with acts 1-3 copied from that
//!    copy and act 4 run again). Each starts and ends at 1 replica; a
//!    row that fails has the replicas put back to 1 by the test (said on stderr) so the next row
//!    can run. `cargo test -p tests --test labs -- lab_a::fault_row` runs only these (then the watcher
//!    row runs acts 1-4 itself); `ci/fault-table.sh` does that N times.
//!
//! Lab A's forced act 2 failure (`lab_a/forced_failure.rs`) runs in the audit lane, on that
//! lane's cluster, beside these rows (`audit.rs`).
//!
//! At the end: lab A's artifacts are saved, the cluster's logs are collected,
//! the cluster is torn down, and one figure (up time, the
//! stack's peak memory over the whole binary, down time) goes to `<state root>/figures.jsonl` next
//! to the recovery timeline's; figures are printed, never asserted.

#[path = "lab_a/fault_rows.rs"]
mod fault_rows;
#[path = "lab_a/forced_failure.rs"]
pub mod forced_failure;
#[path = "lab_a/smoke.rs"]
mod smoke;

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use lab::evidence::{ActStatus, Lab, Outcome};
use lab::facts::a::{Act4Facts, Act5Facts, Act6Facts, Act7Facts, StepStatus};
use lab::facts::{Act2Facts, Act3Facts, Act8Facts};
use libtest_mimic::Failed;
use tests::acts::{
    act1_matches_the_live_cluster, act2_registers_the_fail_webhook, ensure, existing_survives,
    expect,
};
use tests::lanes::Lane;
use tests::{LabCluster, MemorySampler};
use xtask::lab_run::LabRun;

const CLUSTER_NAME: &str = "test-a-shared";

/// Everything the rows share, behind one mutex (the rows run one at a time).
struct State {
    /// The cluster, once up.
    cluster: Option<LabCluster>,
    /// Set when bringing the cluster up failed: every row then fails with it.
    setup_failed: Option<String>,
    /// Samples the stack's memory from before `up` to the teardown (embedded backend).
    sampler: Option<MemorySampler>,
    /// Lab A's run (acts 1-8), made on the first act.
    run: Option<LabRun>,
    /// The first lab A step that failed; later acts are not run.
    lab_failed: Option<String>,
    /// The copy of lab A's work dir taken when act 4 passed (for the watcher-SIGKILL row).
    after_act_4: Option<PathBuf>,
    /// Lab A's artifacts were saved (before the diagnostics row changes the cluster).
    saved: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    cluster: None,
    setup_failed: None,
    sampler: None,
    run: None,
    lab_failed: None,
    after_act_4: None,
    saved: false,
});

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// `target/lab-artifacts/test-<run id>/a/` (one run id per test process).
fn artifacts() -> PathBuf {
    xtask::lab_run::artifacts_dir(run_id(), Lab::A)
}

fn run_id() -> &'static str {
    static RUN_ID: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    RUN_ID.get_or_init(|| format!("test-{}", xtask::lab_run::run_id()))
}

/// The work dir of the watcher-SIGKILL row, which the other fault rows copy acts 1-3 from (their
/// own work dirs are beside it): `target/lab-artifacts/test-<run id>-rows/a/workdir`.
fn rows_workdir() -> PathBuf {
    xtask::lab_run::artifacts_dir(&format!("{}-rows", run_id()), Lab::A).join("workdir")
}

/// The work dir the fault rows start from, and whether it is the copy taken when the lab's act 4
/// passed (else the rows run the acts they need there themselves: the lab's acts were filtered
/// out). Errors: lab A failed before its act 4.
fn rows_source() -> Result<(PathBuf, bool), Failed> {
    let s = state();
    match (&s.after_act_4, &s.lab_failed) {
        (Some(w), _) => Ok((w.clone(), true)),
        (None, Some(f)) => Err(Failed::from(format!(
            "not run: lab A's {f} failed before act 4's work dir existed"
        ))),
        (None, None) => Ok((rows_workdir(), false)),
    }
}

/// Lab A's lane of the `labs` binary (the rows of this file's header, in that order); its end is
/// [`end`].
pub fn lane() -> Lane {
    let mut lane = Lane::new("lab_a", Box::new(end));
    lane.row(
        "smoke_policy_registers_the_webhook_and_pods_are_stored_or_denied",
        || {
            row(|c| {
                let rt = tokio::runtime::Runtime::new()?;
                let r = rt.block_on(smoke::scenario(c));
                // Whatever the scenario got to: lab A's act 2 needs the policy gone.
                let cleaned = rt.block_on(smoke::cleanup(c));
                match (r, cleaned) {
                    (Ok(()), c) => c,
                    (Err(e), Ok(())) => Err(e),
                    (Err(e), Err(c)) => Err(e.context(format!("and the cleanup failed: {c:#}"))),
                }
            })
        },
    );
    lane.row(
        "smoke_a_second_up_of_the_running_cluster_is_refused_and_tears_nothing_down",
        || {
            row(|c| {
                let rt = tokio::runtime::Runtime::new()?;
                smoke::refused_up_leaves_the_running_cluster(c, &rt)
            })
        },
    );
    // One ordered step per act of the registry, under the act's test name.
    for spec in lab::acts::of(Lab::A) {
        let act = spec.number;
        lane.row(spec.test_name, move || {
            step(&format!("act {act}"), |run| act_test(run, act))
        });
    }
    lane.row("grade_all_passes", || step("grade all", grade_all));
    lane.row(
        "fault_row_watcher_sigkilled_mid_fault_then_inspect_heals_and_act_6_runs",
        || {
            let acts = match rows_source()? {
                (w, true) => fault_rows::Acts1To4::Copied(w),
                (w, false) => fault_rows::Acts1To4::RunHere(w),
            };
            row(move |c| fault_rows::watcher_killed_then_inspect(c, acts))
        },
    );
    lane.row(
        "fault_row_runner_sigstopped_past_the_deadline_watcher_restores_runner_records_it",
        || {
            let (source, _) = rows_source()?;
            row(move |c| fault_rows::runner_stopped_past_deadline(c, &source))
        },
    );
    lane.row(
        "fault_row_runner_sigstopped_before_its_request_past_the_deadline_nothing_scaled",
        || {
            let (source, _) = rows_source()?;
            row(move |c| fault_rows::runner_stopped_before_request(c, &source))
        },
    );
    lane.row(
        "fault_row_disk_full_mid_fault_restore_not_blocked_record_failure_said",
        || {
            let (source, _) = rows_source()?;
            row(move |c| fault_rows::disk_full(c, &source))
        },
    );
    lane
}

/// Lab A's end: its artifacts and the cluster's logs kept, the figure recorded (up time, the
/// stack's peak memory, down time), the cluster torn down.
///
/// # Errors
/// The teardown failed.
fn end() -> Result<(), String> {
    let mut s = state();
    save_lab_a_artifacts(&mut s);
    // The daemons' logs (and the audit log) of the whole lane, beside lab A's artifacts.
    if let (Some(_), Some(c)) = (&s.run, &s.cluster) {
        let dir = artifacts();
        if let Err(e) = xtask::lab_run::collect_cluster_logs(&c.state_dir(), &dir) {
            eprintln!(
                "collecting the cluster's logs to {} failed: {e:#}",
                dir.display()
            );
        }
    }
    s.run = None;
    let peak = s.sampler.take().map(MemorySampler::finish);
    let Some(c) = s.cluster.take() else {
        return Ok(());
    };
    let embedded = figures_before_down(&c);
    let up_secs = c.up_secs();
    let t = Instant::now();
    let down = c.down();
    let down_secs = t.elapsed().as_secs_f64();
    if let Some(timings) = embedded {
        let (peak, procs) = peak.unwrap_or((0, 0));
        let _ = tests::record_figure(
            &xtask::cluster::config::default_state_root(),
            serde_json::json!({
                "test": "lab_a",
                "at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                "up_secs": up_secs,
                "timings_ms": timings,
                "peak_rss_bytes": peak,
                "peak_rss_processes": procs,
                "down_secs": down_secs,
            }),
        );
    }
    down.map(drop)
        .map_err(|e| format!("teardown of {CLUSTER_NAME} failed: {e:#}"))
}

/// Keeps what lab A observed, passed or failed, once: inputs, evidence, fault files, grades, the
/// webhooks, Kyverno's logs (beside the work dir, which is already outside the cluster's state dir).
fn save_lab_a_artifacts(s: &mut State) {
    if s.saved {
        return;
    }
    if let Some(run) = &s.run {
        let dir = artifacts();
        match xtask::lab_run::save_artifacts(run, &dir) {
            Ok(_) => eprintln!("lab a test artifacts: {}", dir.display()),
            Err(e) => eprintln!("saving artifacts to {} failed: {e:#}", dir.display()),
        }
        s.saved = true;
    }
}

/// The embedded cluster's recorded `up` step timings (None on another backend).
fn figures_before_down(c: &LabCluster) -> Option<serde_json::Value> {
    let embedded =
        xtask::backend::Backend::from_env().is_ok_and(|b| b == xtask::backend::Backend::Embedded);
    embedded.then(|| serde_json::json!(c.cluster().record().timings_ms))
}

/// The shared cluster, brought up on first use (with the memory sampler started before `up`).
fn cluster(s: &mut State) -> Result<&LabCluster, Failed> {
    if let Some(e) = &s.setup_failed {
        return Err(format!("not run: the cluster did not come up: {e}").into());
    }
    if s.cluster.is_none() {
        let up = xtask::lab_run::ensure_lab_binary().and_then(|_| {
            let root = xtask::cluster::config::default_state_root();
            s.sampler = Some(MemorySampler::start(
                &root.join(CLUSTER_NAME),
                Duration::from_secs(1),
            ));
            LabCluster::fresh(CLUSTER_NAME)
        });
        match up {
            Ok(c) => {
                eprintln!("    cluster {CLUSTER_NAME} up in {:.0}s", c.up_secs());
                s.cluster = Some(c);
            }
            Err(e) => {
                s.setup_failed = Some(format!("{e:#}"));
                return Err(format!("{e:#}").into());
            }
        }
    }
    Ok(s.cluster.as_ref().expect("set above"))
}

/// `f`'s panic as a failure.
fn no_panic<T>(f: impl FnOnce() -> Result<T, Failed>) -> Result<T, Failed> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(Failed::from(format!(
            "panicked: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default()
        ))),
    }
}

/// After a failed step: the admission controller back to 1 replica when it is not (the test's own
/// cleanup, said on stderr, never counted as a heal), so the next row can start.
fn reset_after_failure(c: &LabCluster) {
    match fault_rows::Api::new(c).and_then(|api| api.reset_replicas()) {
        Ok(Some(r)) => eprintln!("    step failed with {r} replicas left: reset to 1 by the test"),
        Ok(None) => {}
        Err(e) => eprintln!("    could not reset the replicas after a failed step: {e:#}"),
    }
}

/// Runs one row that needs only the cluster; a failure resets the replicas.
fn row(f: impl FnOnce(&LabCluster) -> anyhow::Result<()>) -> Result<(), Failed> {
    let mut s = state();
    let c = cluster(&mut s)?;
    let r = no_panic(|| f(c).map_err(|e| Failed::from(format!("{e:#}"))));
    if r.is_err() {
        reset_after_failure(c);
    }
    r
}

/// Runs one ordered lab A step: refuses with "not run: X failed earlier" when an earlier step
/// failed, makes the run on first use, turns a panic into a failure, records a failure so that the
/// later steps refuse too, and copies the work dir for the fault rows once act 4 passed.
fn step(what: &str, f: impl FnOnce(&LabRun) -> Result<(), Failed>) -> Result<(), Failed> {
    let mut guard = state();
    let s = &mut *guard;
    if let Some(first) = &s.lab_failed {
        return Err(format!("not run: {first} failed earlier").into());
    }
    let r = step_in(s, what, f);
    if r.is_err() {
        s.lab_failed = Some(what.to_owned());
        if let Some(c) = &s.cluster {
            reset_after_failure(c);
        }
    }
    r
}

fn step_in(
    s: &mut State,
    what: &str,
    f: impl FnOnce(&LabRun) -> Result<(), Failed>,
) -> Result<(), Failed> {
    cluster(s)?;
    if s.run.is_none() {
        let c = s.cluster.as_ref().expect("up above");
        s.run = Some(new_run(c).map_err(|e| Failed::from(format!("{e:#}")))?);
    }
    let run = s.run.as_ref().expect("set above");
    no_panic(|| f(run))?;
    if what == "act 4" {
        let to = rows_workdir();
        fault_rows::copy_workdir(run.workdir().root(), &to)
            .map_err(|e| Failed::from(format!("copying the work dir after act 4: {e:#}")))?;
        s.after_act_4 = Some(to);
    }
    Ok(())
}

fn new_run(cluster: &LabCluster) -> anyhow::Result<LabRun> {
    // Outside the cluster's state directory, so the evidence outlives the teardown.
    let workdir = artifacts().join("workdir");
    let mut run = LabRun::new(
        Lab::A,
        &workdir,
        &cluster.kubeconfig(),
        &cluster.cri_endpoint(),
    )?;
    run.env.audit = cluster.audit();
    eprintln!("    lab a workdir {}", workdir.display());
    Ok(run)
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
        // An act without checks of its own here is held to its grader alone (below).
        _ => {}
    }
    tests::acts::graded(run, act)
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
    let dir = lab::faults::scale::AttemptFiles {
        dir: f.watcher.fault_dir.clone().ok_or("no fault_dir")?.into(),
    };
    let ledger = dir.read_scale_ledger()?;
    ensure(
        ledger
            .last(lab::faults::scale::LedgerEvent::HealerArmed)
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
    let dir = lab::faults::scale::AttemptFiles {
        dir: f5.watcher.fault_dir.clone().ok_or("no fault_dir")?.into(),
    };
    let mut watcher = None;
    for _ in 0..100 {
        if let Some(w) = dir.read_scale_report()?
            && w.action != lab::faults::scale::HealerAction::Waiting
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
            watcher.action == lab::faults::scale::HealerAction::AlreadyRestored,
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
