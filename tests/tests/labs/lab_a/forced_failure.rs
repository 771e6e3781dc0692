//! A forced failure leaves diagnostics that name the real cause (issue 14 item 3), as the last row
//! of the audit lane (`audit.rs`), on that lane's cluster once its steps have put it back
//! (formerly the last row of lab A's lane, and before that half of the `diagnostics` binary): it
//! needs a cluster with Kyverno and nothing of lab A's own rows, and there it runs beside lab A's
//! fault rows rather than after them (docs/tests.md).
//!
//! The cluster's policy (`kca-webhook-label`, the name every lab uses) is deleted first (and its
//! registration is gone), so the row's act 2 makes the policy as on a fresh cluster. Then lab A is
//! driven by the same code as `cargo xtask lab run`
//! (`xtask::lab_run::drive_with`) in a work dir of its own; before act 2 the test scales Kyverno's
//! admission controller to 0 (on the lab-marked cluster only, and waits until its pods are gone).
//! Act 2 then cannot see its policy's webhook registered and fails; the test asserts that
//! `<artifacts>/diagnostics/` holds the summary, events, Kyverno's controller state and pods,
//! webhook configurations, node conditions and the daemons' log tails; that they name the cause
//! (replicas 0, no ready endpoints behind `kyverno-svc`, registration absent; the scale-down
//! event seen since this row's scale); that the error and the run summary print the directory;
//! that `report.html` shows the three lines; and that the student tool's `act 2` on the same
//! cluster prints the lines and writes its own directory. The replicas are put back to 1
//! afterwards.
//!
//! Both act 2 runs wait [`REGISTRATION_BOUND`] for the registration, not the default 90 s: the
//! product's own knob (`lab run`'s `Drive::registration_bound`, the student tool's
//! `--registration-bound`). With the controller at 0 the registration cannot appear however long
//! the act waits, so a shorter bound proves the same failure path; the test checks that the wait
//! which ran out is the registration's and lasted at least the bound, and that the student's
//! progress lines count to the bound given.
//!
//! The collection time is printed and appended to `<state root>/figures.jsonl`, not asserted.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use lab::evidence::Lab;
use tests::LabCluster;
use xtask::lab_run::{self, LabRun};

/// Bound of the wait until the admission controller's pods are gone after the scale to 0.
const PODS_GONE_BOUND: Duration = Duration::from_secs(120);

/// Act 2's registration bound in this row (both paths), instead of the default 90 s.
const REGISTRATION_BOUND: Duration = Duration::from_secs(15);

fn scale(run: &LabRun, replicas: i32) -> Result<()> {
    run.block_on(async {
        let cl = run.env.cluster().await?;
        // Faults only on a lab-marked cluster.
        cl.lab_mark().await?;
        // The test injects the failure with its own client, not through the lab's code.
        let kubeconfig = run.env.kubeconfig.clone().context("the run has a kubeconfig")?;
        let client = xtask::cluster::ready::client(&kubeconfig).await?;
        let api: Api<Deployment> = Api::namespaced(client, lab::cluster::KYVERNO_NAMESPACE);
        api.patch(
            lab::cluster::ADMISSION_DEPLOYMENT,
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"replicas": replicas}})),
        )
        .await
        .context("patching the admission controller's replicas")?;
        if replicas == 0 {
            let t0 = Instant::now();
            loop {
                let pods = cl.admission_pods().await?;
                if pods.is_empty() {
                    break;
                }
                if t0.elapsed() >= PODS_GONE_BOUND {
                    bail!(
                        "waited {} s for the admission controller's pods to be gone; last seen: {:?}",
                        PODS_GONE_BOUND.as_secs(),
                        pods.iter().map(|p| p.metadata.name.clone()).collect::<Vec<_>>()
                    );
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
        anyhow::Ok(())
    })
}

/// The row (see the module docs). Starts from any lab A state at 1 replica; leaves 1 replica and
/// the row's own policy (the cluster is torn down next).
pub fn act_2_fails_on_a_cluster_scaled_to_0(c: &LabCluster) -> Result<()> {
    // The row's act 2 makes the policy itself: lab A's (same name) goes first, with its
    // registration, so the only thing missing when act 2 runs is the controller.
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(super::smoke::delete_policy_and_wait(c, &[]))?;
    let artifacts = lab_run::artifacts_dir(&format!("test-diag-{}", lab_run::run_id()), Lab::A);
    // Second resolution: an Event's lastTimestamp is whole seconds.
    let forced_from = chrono::Utc::now() - chrono::Duration::seconds(1);
    let t0 = Instant::now();
    let report = lab_run::drive_with(
        lab_run::Drive {
            lab: Lab::A,
            kubeconfig: &c.kubeconfig(),
            cri_endpoint: &c.cri_endpoint(),
            audit: c.audit(),
            artifacts: &artifacts,
            daemon_logs: Some(c.state_dir().join("logs")),
            registration_bound: REGISTRATION_BOUND,
        },
        &|run, act| if act == 2 { scale(run, 0) } else { Ok(()) },
    )?;
    let took = t0.elapsed().as_secs_f64();
    // The student tool on the same failed cluster (before the heal).
    let student = student_act_2(&c.kubeconfig(), &artifacts);
    // Self-healing: the controller is put back whatever the assertions say.
    let healed = {
        let run = LabRun::new(
            Lab::A,
            &artifacts.join("heal-workdir"),
            &c.kubeconfig(),
            &c.cri_endpoint(),
        )?;
        scale(&run, 1)
    };
    let checked = check(&report, &artifacts, forced_from);
    eprintln!("{}", report.summary());
    tests::record_figure(
        &xtask::cluster::config::default_state_root(),
        serde_json::json!({"test": "diagnostics", "acts_and_collection_s": took}),
    )?;
    healed?;
    checked?;
    student
}

/// Runs the student tool's `act 2` (`--lang en`) in a fresh work
/// directory holding lab A's act-1 evidence and inputs: the policy exists already from the failed
/// run and the controller is at 0, so the act fails on the cluster; it must print the three lines
/// and the directory, and write `<workdir>/diagnostics/act-02/`.
fn student_act_2(kubeconfig: &std::path::Path, artifacts: &std::path::Path) -> Result<()> {
    let bin = xtask::lab_run::ensure_lab_binary()?;
    // English only: each run waits out act 2's registration bound again (the Japanese words are
    // the same code path with the other text of `lab::messages`, checked in the lab crate).
    for (lang, header) in [(
        "en",
        "the act failed on the cluster; the most telling lines:",
    )] {
        let wd = artifacts.join(format!("student-{lang}"));
        std::fs::create_dir_all(wd.join("evidence"))?;
        let src = artifacts.join("workdir");
        std::fs::copy(src.join("evidence/01.json"), wd.join("evidence/01.json"))?;
        for f in ["scope.json", "policy.json"] {
            std::fs::copy(src.join(f), wd.join(f))?;
        }
        let out = std::process::Command::new(&bin)
            .args(["--lab", "a", "--lang", lang, "--registration-bound"])
            .arg(REGISTRATION_BOUND.as_secs().to_string())
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--workdir")
            .arg(&wd)
            .args(["act", "2"])
            .output()?;
        let err = String::from_utf8_lossy(&out.stderr);
        eprintln!("student act 2 ({lang}):\n{err}");
        ensure!(out.status.code() == Some(1), "exit {:?}", out.status.code());
        let dir = wd.join("diagnostics/act-02");
        ensure!(err.contains(header), "header in {lang}");
        ensure!(
            err.contains(&dir.display().to_string()),
            "the directory is printed"
        );
        ensure!(
            err.contains("replicas 0 (ready 0"),
            "the controller line is printed"
        );
        // The knob reached the wait: its progress lines count to the bound given.
        let counted = format!("s/{}s)", REGISTRATION_BOUND.as_secs());
        ensure!(
            err.contains(&counted),
            "the progress lines count to --registration-bound ({counted:?})"
        );
        let s = lab::diagnostics::read_summary(&dir).context("student summary.json")?;
        ensure!(
            s.failed_step == "lab a act 2" && s.collector_failures.is_empty(),
            "{s:?}"
        );
        registration_wait_ran_out(&s)?;
        ensure!(dir.join("events.txt").is_file() && dir.join("webhooks.json").is_file());
    }
    Ok(())
}

/// The wait that ran out is act 2's registration wait (`webhook …`, last state: no such webhook),
/// and it lasted at least [`REGISTRATION_BOUND`] and less than the default bound.
fn registration_wait_ran_out(s: &lab::diagnostics::Summary) -> Result<()> {
    let w = s
        .wait
        .as_ref()
        .context("summary.json names the wait that ran out")?;
    ensure!(
        w.what.starts_with("webhook ") && w.last_state.starts_with("no webhook "),
        "the registration wait ran out: {w:?}"
    );
    ensure!(
        w.waited_ms >= REGISTRATION_BOUND.as_millis() as u64,
        "the wait lasted its bound: {w:?}"
    );
    // The knob reached the wait: the default bound (90 s) would have waited at least that long
    // (the margin, 75 s, is not a timing race: a wait overruns its bound by one check).
    ensure!(
        w.waited_ms < lab::labs::common::REGISTRATION_BOUND.as_millis() as u64,
        "the wait used the row's bound, not the default: {w:?}"
    );
    Ok(())
}

fn check(
    report: &lab_run::RunReport,
    artifacts: &std::path::Path,
    forced_from: chrono::DateTime<chrono::Utc>,
) -> Result<()> {
    let diag = artifacts.join("diagnostics");
    // Act 1 passed, act 2 failed and its error names the directory.
    ensure!(
        report.acts.len() == 2 && report.acts[0].1.is_ok(),
        "expected act 1 ok and act 2 failed, got {:?}",
        report.acts
    );
    let err = report.acts[1].1.as_ref().err().context("act 2 must fail")?;
    ensure!(
        err.contains(&format!("(diagnostics: {})", diag.display())),
        "the act's error names the diagnostics directory: {err}"
    );
    ensure!(
        report.diagnostics.as_deref() == Some(diag.as_path()),
        "RunReport.diagnostics = {:?}",
        report.diagnostics
    );
    ensure!(
        report
            .summary()
            .contains(&format!("diagnostics: {}", diag.display())),
        "the run summary prints where the diagnostics are"
    );
    for f in [
        "summary.json",
        "summary.txt",
        "observations.json",
        "events.json",
        "events.txt",
        "kyverno-controller.json",
        "kyverno-pods.json",
        "kyverno-deployments.json",
        "kyverno-svc-endpointslices.json",
        "webhooks.json",
        "nodes.json",
        "nodes.txt",
        "daemons/kube-apiserver.log",
        "daemons/kubelet.log",
    ] {
        let p = diag.join(f);
        ensure!(
            p.is_file() && p.metadata()?.len() > 0,
            "{} missing or empty",
            p.display()
        );
    }
    let summary = lab::diagnostics::read_summary(&diag).context("summary.json")?;
    eprintln!("summary: {summary:#?}");
    ensure!(
        summary.failed_step == "lab a act 2",
        "failed step {}",
        summary.failed_step
    );
    ensure!(
        summary.collector_failures.is_empty(),
        "collection steps failed: {:?}",
        summary.collector_failures
    );
    ensure!(
        summary.telling.len() >= 2,
        "at least two telling lines: {:?}",
        summary.telling
    );
    registration_wait_ran_out(&summary)?;
    let all = summary.telling.join("\n");
    for cause in [
        "replicas 0 (ready 0",
        "kyverno-svc: no ready endpoints",
        "registration absent",
    ] {
        ensure!(
            all.contains(cause),
            "the telling lines name {cause:?}: {all}"
        );
    }
    // The controller state file says the same, as data.
    let ctl: lab::diagnostics::ControllerState = serde_json::from_str(&std::fs::read_to_string(
        diag.join("kyverno-controller.json"),
    )?)?;
    ensure!(
        ctl.deployment.as_ref().map(|d| d.spec) == Some(0)
            && ctl.pods.is_empty()
            && ctl.ready_endpoints == Some(0)
            && ctl.lab_webhooks.as_deref() == Some(&[][..]),
        "kyverno-controller.json: {ctl:?}"
    );
    // The Deployment controller's own account of the scale to 0 is among the events, in the text
    // and as data; on this shared cluster lab A's act 5 and the fault rows scaled to 0 before, so
    // the event must have been seen again since this row's scale (its newest time).
    let events = std::fs::read_to_string(diag.join("events.txt"))?;
    ensure!(
        events.lines().any(|l| l.contains("ScalingReplicaSet")
            && l.contains("kyverno-admission-controller")
            && l.contains("to 0")),
        "events.txt shows the scale-down:\n{events}"
    );
    let listed: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(diag.join("events.json"))?)?;
    let newest = |e: &serde_json::Value| {
        [
            "/lastTimestamp",
            "/eventTime",
            "/series/lastObservedTime",
            "/firstTimestamp",
        ]
        .iter()
        .filter_map(|p| e.pointer(p).and_then(|v| v.as_str()))
        .filter_map(lab::facts::parse_rfc3339)
        .max()
    };
    ensure!(
        listed.iter().any(|e| e["reason"] == "ScalingReplicaSet"
            && e["message"]
                .as_str()
                .is_some_and(|m| m.contains("kyverno-admission-controller") && m.contains("to 0"))
            && newest(e).is_some_and(|t| t >= forced_from)),
        "events.json has a scale-down of the admission controller seen at or after {forced_from}"
    );
    // The report page shows the diagnostics.
    lab_run::report::write_lab_pages(artifacts, Lab::A)?;
    let page = std::fs::read_to_string(artifacts.join("report.html"))?;
    ensure!(
        page.contains("data-diagnostics=\"lab a act 2\"")
            && page.contains("href=\"diagnostics/summary.txt\"")
            && page.contains("registration absent"),
        "report.html shows the diagnostics"
    );
    Ok(())
}
