//! `kca-webhook-lab audit` on a fresh embedded cluster (real kube-apiserver, real Kyverno), one
//! cluster for every step, in order (a lane of the `labs` binary, `tests::lanes`), each running the real binary (`audit -o json`, and the
//! table in both languages) against the cluster's kubeconfig:
//!
//! 1. before lab B's act 2: Kyverno's own registrations, not the lab's webhook;
//! 2. after acts 1 and 2: the lab's webhook (`…-finegrained-kca-webhook-label`) with failurePolicy
//!    Fail, timeoutSeconds 3, ready endpoints behind `kyverno/kyverno-svc`, intercepting none of
//!    kube-system, Nodes, Leases, CSRs, a worst-case wait of at least its 3 s, no finding on it;
//! 3. the admission controller scaled to 0 (the test scales it and always restores it): Kyverno
//!    removes its registrations, and the audit shows the lab's webhook absent (a Fail webhook
//!    still registered with 0 ready endpoints on the way is `fail-no-ready-endpoints`, noted when
//!    seen); after the restore the webhook comes back with ready endpoints;
//! 4. a ValidatingWebhookConfiguration the test breaks on purpose (a Fail webhook on Nodes and
//!    CSRs behind a Service that does not exist; an Ignore webhook with a 30 s timeout and an
//!    opt-out objectSelector, selecting no namespace there is): exactly the four findings on it,
//!    exit code 3; deleted, none of them is left;
//! 5. a ValidatingAdmissionPolicy and two bindings the test breaks on purpose (a Fail policy with
//!    a ConfigMap paramKind, bound Audit-only to a ConfigMap that does not exist, matching no
//!    namespace there is; a binding naming a policy that does not exist): exactly their three
//!    findings (`fail-params-missing`, `audit-only-actions`, `binding-policy-missing`), the
//!    policies listed from `admissionregistration.k8s.io/v1`, MutatingAdmissionPolicy said to be
//!    not served (v1beta1, off by default on v1.35), in the table too; deleted, none is left.
//!
//! Every exit code is checked against the findings (0 none, 3 some).
//!
//! Then, on the same cluster, lab A's forced act 2 failure (`lab_a/forced_failure.rs`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use lab::evidence::Lab;
use lab::policy_audit::PolicyFindingCode;
use lab::webhook_audit::{AuditReport, Backend, FindingCode, WebhookRow};
use libtest_mimic::Failed;
use serde_json::json;
use tests::LabCluster;
use tests::acts::ensure;
use tests::lanes::Lane;
use xtask::lab_run::LabRun;

const CLUSTER_NAME: &str = "test-audit";
/// The lab's webhook, as Kyverno 1.19 names it for the policy under Fail.
const LAB_WEBHOOK: &str = "vpol.validate.kyverno.svc-fail-finegrained-kca-webhook-label";
/// The configuration the test breaks on purpose.
const BROKEN: &str = "kca-audit-broken";
/// How long Kyverno may take to remove or restore its registrations.
const REGISTRATION_BOUND: Duration = Duration::from_secs(180);

type Shared = Arc<Mutex<tests::OrderedLab>>;

/// One ordered step on the shared cluster.
type Step = fn(&LabRun) -> Result<(), Failed>;

/// The audit lane of the `labs` binary: the five steps above in order on one cluster; its end
/// tears the cluster down.
pub fn lane() -> Lane {
    let state: Shared = Arc::default();
    let st = state.clone();
    let mut lane = Lane::new(
        "audit",
        Box::new(move || {
            let mut s = st.lock().unwrap_or_else(|p| p.into_inner());
            s.run = None;
            match s.cluster.take() {
                Some(c) => c
                    .down()
                    .map(drop)
                    .map_err(|e| format!("teardown of {CLUSTER_NAME} failed: {e:#}")),
                None => Ok(()),
            }
        }),
    );
    let steps: [(&'static str, Step); 5] = [
        ("audit_before_the_lab_registers_its_webhook", before_act2),
        ("audit_after_act_2_shows_the_lab_webhook", after_act2),
        ("audit_with_the_controller_scaled_to_0", scaled_to_zero),
        (
            "audit_finds_a_registration_broken_on_purpose",
            broken_on_purpose,
        ),
        (
            "audit_finds_admission_policy_bindings_broken_on_purpose",
            broken_policy_bindings,
        ),
    ];
    for (name, f) in steps {
        let st = state.clone();
        lane.row(name, move || tests::ordered_step(&st, name, setup, f));
    }
    // Lab A's forced act 2 failure on this lane's cluster (module docs).
    let st = state.clone();
    let name = "diagnostics_act_2_on_a_controller_scaled_to_0_leaves_diagnostics_naming_the_cause";
    lane.row(name, move || {
        tests::ordered_step_on(&st, name, setup, |c, _| {
            crate::lab_a::forced_failure::act_2_fails_on_a_cluster_scaled_to_0(c)
                .map_err(|e| Failed::from(format!("{e:#}")))
        })
    });
    lane
}

fn setup() -> anyhow::Result<(LabCluster, LabRun)> {
    tests::ensure_lab_binary()?;
    let cluster = LabCluster::fresh(CLUSTER_NAME)?;
    // Beside the labs' own lanes under target/lab-artifacts, never a leftover in /tmp.
    let workdir = tests::ordered_artifacts(Lab::B)
        .with_file_name("audit")
        .join("workdir");
    let mut run = LabRun::new(
        Lab::B,
        &workdir,
        &cluster.kubeconfig(),
        &cluster.cri_endpoint(),
    )?;
    run.env.audit = cluster.audit();
    Ok((cluster, run))
}

/// The kubeconfig the run uses.
fn kubeconfig(run: &LabRun) -> PathBuf {
    run.env
        .kubeconfig
        .clone()
        .expect("the lab run has a kubeconfig")
}

/// Runs `kca-webhook-lab [--lang en] audit ARGS` against the cluster: (exit code, stdout, stderr).
fn audit_cli(run: &LabRun, lang_en: bool, args: &[&str]) -> Result<(i32, String, String), Failed> {
    let mut c = std::process::Command::new(tests::ensure_lab_binary()?);
    if lang_en {
        c.args(["--lang", "en"]);
    }
    c.arg("--kubeconfig")
        .arg(kubeconfig(run))
        .arg("audit")
        .args(args)
        .stdin(std::process::Stdio::null());
    let out = c.output()?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

/// `audit -o json`, parsed; its exit code must say whether there are findings.
fn audit_json(run: &LabRun) -> Result<AuditReport, Failed> {
    let (code, out, err) = audit_cli(run, true, &["-o", "json"])?;
    let report: AuditReport = serde_json::from_str(&out)
        .map_err(|e| format!("audit -o json (exit {code}) is not the report: {e}\n{out}{err}"))?;
    let want = if report.has_findings() { 3 } else { 0 };
    ensure(
        code == want,
        &format!(
            "audit exits {want} for {} webhook and {} policy findings (exit {code}; stderr {err})",
            report.findings.len(),
            report.admission_policies.findings.len()
        ),
    )?;
    Ok(report)
}

fn lab_webhook(report: &AuditReport) -> Option<&WebhookRow> {
    report.webhooks.iter().find(|w| w.webhook == LAB_WEBHOOK)
}

fn ready(w: &WebhookRow) -> Option<u64> {
    match &w.backend {
        Backend::Service {
            ready_endpoints, ..
        } => *ready_endpoints,
        _ => None,
    }
}

fn before_act2(run: &LabRun) -> Result<(), Failed> {
    let report = audit_json(run)?;
    ensure(
        lab_webhook(&report).is_none(),
        "before act 2 the lab's webhook is not registered",
    )?;
    ensure(
        report
            .webhooks
            .iter()
            .any(|w| w.configuration.starts_with("kyverno-")),
        &format!(
            "Kyverno's own registrations are listed: {:?}",
            names(&report)
        ),
    )?;
    eprintln!(
        "    before act 2: {} webhooks, findings {:?}",
        report.webhooks.len(),
        codes(&report, None)
    );
    Ok(())
}

fn after_act2(run: &LabRun) -> Result<(), Failed> {
    for act in [1, 2] {
        run.act(act).map_err(|e| format!("act {act}: {e:#}"))?;
    }
    let report = audit_json(run)?;
    let w = lab_webhook(&report)
        .ok_or_else(|| format!("after act 2, {LAB_WEBHOOK} is listed: {:?}", names(&report)))?;
    ensure(
        w.failure_policy == "Fail" && w.timeout_seconds == 3,
        &format!(
            "Fail, 3 s (seen {} {}s)",
            w.failure_policy, w.timeout_seconds
        ),
    )?;
    ensure(
        ready(w).is_some_and(|n| n >= 1),
        &format!("ready endpoints behind kyverno-svc (seen {:?})", w.backend),
    )?;
    ensure(
        !w.intercepts.kube_system && !w.intercepts.bootstrap(),
        &format!("intercepts nothing restart-critical: {:?}", w.intercepts),
    )?;
    let wait = w
        .worst_wait
        .as_ref()
        .ok_or("the lab's webhook is called for some request")?;
    ensure(
        wait.seconds >= 3 && wait.request.contains("kca-webhook-target"),
        &format!("worst wait ≥ 3 s in the target namespace: {wait:?}"),
    )?;
    ensure(
        !report.findings.iter().any(|f| f.webhook == LAB_WEBHOOK),
        &format!(
            "no finding on the healthy lab webhook: {:?}",
            report.findings
        ),
    )?;
    // The table, in both languages, names it with its facts.
    let (_, en, _) = audit_cli(run, true, &[])?;
    ensure(
        en.contains(LAB_WEBHOOK) && en.contains("WORST-WAIT") && en.contains("3s"),
        &format!("the English table lists the webhook:\n{en}"),
    )?;
    let (_, ja, _) = audit_cli(run, false, &[])?;
    ensure(
        ja.contains(LAB_WEBHOOK) && ja.contains("最悪の待ち時間"),
        &format!("the Japanese table lists the webhook:\n{ja}"),
    )?;
    eprintln!("    after act 2 (table, en):\n{en}");
    Ok(())
}

/// Scales the admission controller to `replicas` (the Deployment's scale subresource).
fn scale(run: &LabRun, replicas: i32) -> Result<(), Failed> {
    run.block_on(async {
        let client = xtask::cluster::ready::client(&kubeconfig(run)).await?;
        Api::<Deployment>::namespaced(client, lab::cluster::KYVERNO_NAMESPACE)
            .patch_scale(
                lab::cluster::ADMISSION_DEPLOYMENT,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": replicas}})),
            )
            .await?;
        anyhow::Ok(())
    })
    .map_err(|e| {
        Failed::from(format!(
            "scaling the admission controller to {replicas}: {e:#}"
        ))
    })
}

/// Audits every 2 s until `done` holds, up to [`REGISTRATION_BOUND`]; every report seen is given
/// to `seen`. Returns the report that held.
fn audit_until(
    run: &LabRun,
    what: &str,
    mut seen: impl FnMut(&AuditReport),
    done: impl Fn(&AuditReport) -> bool,
) -> Result<AuditReport, Failed> {
    let t0 = Instant::now();
    loop {
        let r = audit_json(run)?;
        seen(&r);
        if done(&r) {
            eprintln!("    {what}: after {:.1} s", t0.elapsed().as_secs_f64());
            return Ok(r);
        }
        if t0.elapsed() > REGISTRATION_BOUND {
            return Err(format!(
                "waited {} s for {what}; last audit: {:?}",
                REGISTRATION_BOUND.as_secs(),
                names(&r)
            )
            .into());
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

fn scaled_to_zero(run: &LabRun) -> Result<(), Failed> {
    scale(run, 0)?;
    let mut no_endpoints_seen = false;
    let gone = audit_until(
        run,
        "the lab's webhook absent with the controller at 0",
        |r| {
            no_endpoints_seen |= r
                .findings
                .iter()
                .any(|f| f.webhook == LAB_WEBHOOK && f.code == FindingCode::FailNoReadyEndpoints)
        },
        |r| lab_webhook(r).is_none(),
    );
    // Restore whatever happened above.
    let restored = scale(run, 1).and_then(|()| {
        audit_until(
            run,
            "the lab's webhook back with ready endpoints",
            |_| {},
            |r| lab_webhook(r).and_then(ready).is_some_and(|n| n >= 1),
        )
    });
    let gone = gone?;
    restored?;
    eprintln!(
        "    at 0 replicas: {} webhooks ({:?}); a Fail webhook with 0 ready endpoints seen on the way: {no_endpoints_seen}",
        gone.webhooks.len(),
        names(&gone)
    );
    Ok(())
}

/// The configuration broken on purpose (module docs).
fn broken_configuration() -> ValidatingWebhookConfiguration {
    serde_json::from_value(json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": BROKEN, "labels": {"kca-webhook-lab/test": "audit"}},
        "webhooks": [
            {
                "name": "fail-on-nodes.audit.kca.test",
                "failurePolicy": "Fail",
                "timeoutSeconds": 5,
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {"namespace": "default", "name": "kca-audit-missing", "port": 443}},
                // CREATE only: the node is registered already and no CSR is made during the test,
                // so nothing of the cluster's own is refused meanwhile.
                "rules": [
                    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["nodes"]},
                    {"apiGroups": ["certificates.k8s.io"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["certificatesigningrequests"]}
                ]
            },
            {
                "name": "ignore-slow.audit.kca.test",
                "failurePolicy": "Ignore",
                "timeoutSeconds": 30,
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "clientConfig": {"service": {"namespace": "default", "name": "kca-audit-missing", "port": 443}},
                "namespaceSelector": {"matchLabels": {"kca-webhook-lab/audit": "no-such-namespace"}},
                "objectSelector": {"matchExpressions": [{"key": "kca-webhook-lab/skip", "operator": "DoesNotExist"}]},
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]
            }
        ]
    }))
    .expect("a valid ValidatingWebhookConfiguration")
}

fn broken_on_purpose(run: &LabRun) -> Result<(), Failed> {
    let api = |run: &LabRun| {
        run.block_on(async {
            let client = xtask::cluster::ready::client(&kubeconfig(run)).await?;
            anyhow::Ok(Api::<ValidatingWebhookConfiguration>::all(client))
        })
    };
    let vwc = api(run).map_err(|e| format!("{e:#}"))?;
    run.block_on(vwc.create(&PostParams::default(), &broken_configuration()))
        .map_err(|e| format!("creating {BROKEN}: {e}"))?;
    let seen = audit_json(run);
    let (_, table, _) = audit_cli(run, true, &[]).unwrap_or_default();
    let deleted = run
        .block_on(vwc.delete(BROKEN, &DeleteParams::default()))
        .map_err(|e| format!("deleting {BROKEN}: {e}"));
    let report = seen?;
    deleted?;
    let found = codes(&report, Some(BROKEN));
    let want = vec![
        (
            "fail-on-nodes.audit.kca.test".to_owned(),
            FindingCode::FailNoReadyEndpoints,
        ),
        (
            "fail-on-nodes.audit.kca.test".to_owned(),
            FindingCode::FailOnBootstrapResources,
        ),
        (
            "ignore-slow.audit.kca.test".to_owned(),
            FindingCode::IgnoreLongTimeout,
        ),
        (
            "ignore-slow.audit.kca.test".to_owned(),
            FindingCode::OptOutObjectSelector,
        ),
    ];
    ensure(
        found == want,
        &format!("the broken configuration's findings: want {want:?}, found {found:?}"),
    )?;
    let nodes = report
        .webhooks
        .iter()
        .find(|w| w.webhook == "fail-on-nodes.audit.kca.test")
        .ok_or("the broken webhook is listed")?;
    ensure(
        nodes.intercepts.nodes && nodes.intercepts.csrs && !nodes.intercepts.leases,
        &format!("intercepts Nodes and CSRs only: {:?}", nodes.intercepts),
    )?;
    ensure(
        ready(nodes) == Some(0),
        &format!(
            "0 ready endpoints behind a missing Service: {:?}",
            nodes.backend
        ),
    )?;
    eprintln!("    broken on purpose (table, en):\n{table}");
    let after = audit_json(run)?;
    ensure(
        codes(&after, Some(BROKEN)).is_empty(),
        "deleted, its findings are gone",
    )
}

fn names(r: &AuditReport) -> Vec<String> {
    r.webhooks
        .iter()
        .map(|w| format!("{}/{}", w.configuration, w.webhook))
        .collect()
}

/// (webhook, code) of the findings, of configuration `config` only when given.
fn codes(r: &AuditReport, config: Option<&str>) -> Vec<(String, FindingCode)> {
    r.findings
        .iter()
        .filter(|f| config.is_none_or(|c| f.configuration == c))
        .map(|f| (f.webhook.clone(), f.code))
        .collect()
}

/// The ValidatingAdmissionPolicy the test breaks on purpose.
const BROKEN_VAP: &str = "kca-audit-vap";

/// Applies (`POST`) or deletes every object of the broken admission policy step, through the
/// API server's generic client (module docs, step 5).
fn policy_objects() -> Vec<(&'static str, serde_json::Value)> {
    let never = json!({"matchLabels": {"kca-webhook-lab/audit": "no-such-namespace"}});
    vec![
        (
            "validatingadmissionpolicies",
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": BROKEN_VAP, "labels": {"kca-webhook-lab/test": "audit"}},
                "spec": {
                    "failurePolicy": "Fail",
                    "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                    "matchConstraints": {
                        "namespaceSelector": never,
                        "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]
                    },
                    "validations": [{"expression": "object.metadata.name != params.data.forbidden"}]
                }
            }),
        ),
        (
            "validatingadmissionpolicybindings",
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": "kca-audit-vap-params-gone", "labels": {"kca-webhook-lab/test": "audit"}},
                "spec": {
                    "policyName": BROKEN_VAP,
                    "validationActions": ["Audit"],
                    "paramRef": {"name": "kca-audit-missing", "namespace": "default", "parameterNotFoundAction": "Deny"}
                }
            }),
        ),
        (
            "validatingadmissionpolicybindings",
            json!({
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": "ValidatingAdmissionPolicyBinding",
                "metadata": {"name": "kca-audit-vap-orphan", "labels": {"kca-webhook-lab/test": "audit"}},
                "spec": {"policyName": "kca-audit-no-such-policy", "validationActions": ["Deny"]}
            }),
        ),
    ]
}

/// `POST` (create) or `DELETE` of the step's objects; every delete is tried.
fn policy_request(run: &LabRun, create: bool) -> Result<(), Failed> {
    let base = "/apis/admissionregistration.k8s.io/v1";
    run.block_on(async {
        let client = xtask::cluster::ready::client(&kubeconfig(run)).await?;
        let mut errors = Vec::new();
        for (resource, obj) in policy_objects() {
            let name = obj["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let req = if create {
                http::Request::post(format!("{base}/{resource}"))
                    .header("content-type", "application/json")
                    .body(serde_json::to_vec(&obj)?)?
            } else {
                http::Request::delete(format!("{base}/{resource}/{name}")).body(Vec::new())?
            };
            if let Err(e) = client.request_text(req).await {
                errors.push(format!(
                    "{} {resource}/{name}: {e}",
                    if create { "POST" } else { "DELETE" }
                ));
            }
        }
        anyhow::ensure!(errors.is_empty(), "{}", errors.join("; "));
        anyhow::Ok(())
    })
    .map_err(|e| Failed::from(format!("{e:#}")))
}

fn broken_policy_bindings(run: &LabRun) -> Result<(), Failed> {
    let created = policy_request(run, true);
    let seen = created.and_then(|()| audit_json(run));
    let (_, table, _) = audit_cli(run, true, &[]).unwrap_or_default();
    let deleted = policy_request(run, false);
    let report = seen?;
    deleted?;
    let ours = |r: &AuditReport| -> Vec<(String, PolicyFindingCode)> {
        r.admission_policies
            .findings
            .iter()
            .filter(|f| f.binding.starts_with("kca-audit-vap"))
            .map(|f| (f.binding.clone(), f.code))
            .collect()
    };
    let want = vec![
        (
            "kca-audit-vap-orphan".to_owned(),
            PolicyFindingCode::BindingPolicyMissing,
        ),
        (
            "kca-audit-vap-params-gone".to_owned(),
            PolicyFindingCode::FailParamsMissing,
        ),
        (
            "kca-audit-vap-params-gone".to_owned(),
            PolicyFindingCode::AuditOnlyActions,
        ),
    ];
    let found = ours(&report);
    ensure(
        found == want,
        &format!("the broken bindings' findings: want {want:?}, found {found:?}"),
    )?;
    let p = &report.admission_policies;
    ensure(
        p.validating.served.as_deref() == Some("v1")
            && p.validating
                .policies
                .iter()
                .any(|x| x.name == BROKEN_VAP && x.failure_policy == "Fail"),
        &format!("the policy is listed from v1: {:?}", p.validating),
    )?;
    ensure(
        p.mutating.served.is_none(),
        &format!(
            "MutatingAdmissionPolicy is not served on v1.35 by default: {:?}",
            p.mutating
        ),
    )?;
    ensure(
        table.contains("MutatingAdmissionPolicy: not served by this API server")
            && table.contains("[fail-params-missing] validating binding kca-audit-vap-params-gone"),
        &format!("the table says both:\n{table}"),
    )?;
    eprintln!("    admission policies broken on purpose (table, en):\n{table}");
    let after = audit_json(run)?;
    ensure(ours(&after).is_empty(), "deleted, their findings are gone")
}
