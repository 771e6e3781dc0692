//! kube-apiserver, advertising the node IP, with an audit log of the lab's requests.
//!
//! The audit log is `<state>/audit/audit.log` (`0600`, JSON lines, `blocking` mode, 16 MB × 1
//! backup) under the policy `<state>/audit/policy.yaml` ([`audit_policy`]: the lab namespaces'
//! pods, ValidatingPolicies and webhook configurations at Metadata, the rest None). Both go with
//! the state dir; `cargo xtask lab run` copies the log to `<artifacts>/logs/kube-apiserver-audit.log`.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};

use anyhow::{Context, Result};

use super::{Args, Daemon, DaemonSpec, FAST_TICK, Readiness, p, spec};
use crate::cluster::config::{APISERVER_PORT, KINE_PORT, Runtime, SERVICE_CIDR};
use crate::cluster::ready;

/// kube-apiserver in the registry: starts once kine answers, after its audit files are written;
/// ready when `/readyz` answers 200 (Helm starts then, beside kubelet).
pub const DAEMON: Daemon = Daemon {
    name: "kube-apiserver",
    programs: &["kube-apiserver"],
    spec: daemon,
    after: &["kine"],
    before_start: Some(|rt, _| write_audit_files(rt)),
    ready: Some(Readiness {
        what: |_| "kube-apiserver /readyz".into(),
        probe: readyz,
        tick: FAST_TICK,
        timing: Some("apiserver_ready_ms"),
        on_ready: None,
    }),
    host_wide: false,
    stop_order: 50,
};

/// GET `/readyz` with the admin kubeconfig; its body when it answers 200.
fn readyz(rt: &Runtime) -> Result<String> {
    let admin = rt.kubeconfig("admin");
    ready::block_on(async {
        let c = ready::client(&admin).await?;
        ready::get_text(&c, "/readyz").await
    })?
}

/// `--audit-log-maxsize`: megabytes before the log is rotated (bounded; a lab run writes well
/// under 1 MB at Metadata level).
pub const AUDIT_LOG_MAXSIZE_MB: u32 = 16;
/// `--audit-log-maxbackup`: rotated files kept beside the log (in the state dir too).
pub const AUDIT_LOG_MAXBACKUP: u32 = 1;

/// Service-account token issuer (the in-cluster name of the apiserver, as kubeadm and k3s set it).
pub const SERVICE_ACCOUNT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// kube-apiserver's flags (v1.35.8).
pub fn args(rt: &Runtime) -> Args {
    let k = |f: &str| p(rt.pki_file(f));
    Args::from([
        ("advertise-address", rt.net.node_ip().to_string()),
        ("allow-privileged", "true".into()),
        ("authorization-mode", "Node,RBAC".into()),
        ("bind-address", "0.0.0.0".into()),
        ("secure-port", APISERVER_PORT.to_string()),
        ("client-ca-file", k("ca.crt")),
        ("tls-cert-file", k("apiserver.crt")),
        ("tls-private-key-file", k("apiserver.key")),
        ("etcd-servers", format!("http://127.0.0.1:{KINE_PORT}")),
        ("storage-backend", "etcd3".into()),
        ("service-cluster-ip-range", SERVICE_CIDR.into()),
        ("service-account-issuer", SERVICE_ACCOUNT_ISSUER.into()),
        ("api-audiences", SERVICE_ACCOUNT_ISSUER.into()),
        ("service-account-key-file", k("sa.pub")),
        ("service-account-signing-key-file", k("sa.key")),
        (
            "kubelet-client-certificate",
            k("apiserver-kubelet-client.crt"),
        ),
        ("kubelet-client-key", k("apiserver-kubelet-client.key")),
        ("kubelet-certificate-authority", k("ca.crt")),
        ("kubelet-preferred-address-types", "InternalIP".into()),
        // k3s sets this: webhooks and APIServices are called at their EndpointSlice address
        // (kube-aggregator `NewEndpointServiceResolver`), not through the ClusterIP.
        ("enable-aggregator-routing", "true".into()),
        ("profiling", "false".into()),
        ("anonymous-auth", "true".into()),
        // The audit log the lab reads (`lab::audit`): JSON lines, `blocking` (the log backend's
        // default, set explicitly: the event is written in the request's own goroutine, before
        // the handler returns; kube-apiserver flag docs, "--audit-log-mode ... Default:
        // blocking"), size-bounded, under the state dir.
        ("audit-policy-file", p(rt.audit_policy())),
        ("audit-log-path", p(rt.audit_log())),
        ("audit-log-format", "json".into()),
        ("audit-log-mode", "blocking".into()),
        ("audit-log-maxsize", AUDIT_LOG_MAXSIZE_MB.to_string()),
        ("audit-log-maxbackup", AUDIT_LOG_MAXBACKUP.to_string()),
    ])
}

/// The audit Policy (`audit.k8s.io/v1`): `Metadata` for pods in the lab's two namespaces (the
/// probes' requests: verb, objectRef, responseStatus and the admission annotations such as
/// `failed-open.validating.webhook.admission.k8s.io/round_0_index_<i>`), for the lab's policy
/// objects (Kyverno `validatingpolicies.policies.kyverno.io`) and for the webhook configurations;
/// `None` for everything else. `RequestReceived` is omitted (the lab holds `ResponseComplete`).
/// Rules are first-match (Kubernetes "Auditing", audit policy).
pub fn audit_policy() -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": ["RequestReceived"],
        "rules": [
            {
                "level": "Metadata",
                "resources": [{"group": "", "resources": ["pods"]}],
                "namespaces": [
                    lab::rules::common::TARGET_NAMESPACE,
                    lab::rules::common::CONTROL_NAMESPACE
                ]
            },
            {
                "level": "Metadata",
                "resources": [
                    {"group": "policies.kyverno.io", "resources": ["validatingpolicies"]},
                    {
                        "group": "admissionregistration.k8s.io",
                        "resources": [
                            "validatingwebhookconfigurations",
                            "mutatingwebhookconfigurations"
                        ]
                    }
                ]
            },
            {"level": "None"}
        ]
    })
}

/// Writes the audit policy (`0600`) and creates the empty audit log (`0600`) in `<state>/audit` (`0700`)
/// before kube-apiserver starts, so the log never exists with a wider mode. Both go with the
/// state dir at `down`.
pub fn write_audit_files(rt: &Runtime) -> Result<()> {
    let dir = rt.audit_dir();
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(&dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("chmod 0700 {}", dir.display()))?;
    let yaml = serde_yaml_ng::to_string(&audit_policy()).context("rendering the audit policy")?;
    let policy = rt.audit_policy();
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .mode(0o600)
        .open(&policy)
        .and_then(|mut f| f.write_all(yaml.as_bytes()))
        .with_context(|| format!("writing {}", policy.display()))?;
    let log = rt.audit_log();
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log)
        .with_context(|| format!("creating {}", log.display()))?;
    f.flush()
        .with_context(|| format!("creating {}", log.display()))?;
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("chmod 0600 {}", log.display()))
}

/// The kube-apiserver daemon.
pub fn daemon(rt: &Runtime) -> DaemonSpec {
    spec(rt, "kube-apiserver", "kube-apiserver", &args(rt))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn apiserver_args() {
        let a = args(&crate::cluster::daemons::test_runtime());
        assert_eq!(a["advertise-address"], "10.44.0.2");
        assert_eq!(a["authorization-mode"], "Node,RBAC");
        assert_eq!(a["enable-aggregator-routing"], "true");
        assert_eq!(a["service-cluster-ip-range"], "10.43.0.0/16");
        assert_eq!(a["etcd-servers"], "http://127.0.0.1:2379");
        assert_eq!(a["service-account-key-file"], "/s/t/pki/sa.pub");
        assert!(
            !a.contains_key("enable-admission-plugins"),
            "admission plugins stay at their defaults"
        );
        assert_eq!(a["audit-log-path"], "/s/t/audit/audit.log");
        assert_eq!(a["audit-policy-file"], "/s/t/audit/policy.yaml");
        assert_eq!(a["audit-log-mode"], "blocking");
        assert_eq!(a["audit-log-maxsize"], "16");
    }

    #[test]
    fn audit_policy_logs_lab_pods_and_policy_objects_only() {
        let p = audit_policy();
        let rules = p["rules"].as_array().unwrap();
        assert_eq!(p["apiVersion"], "audit.k8s.io/v1");
        assert_eq!(rules.len(), 3);
        assert_eq!(rules[0]["resources"][0]["resources"][0], "pods");
        assert_eq!(rules[0]["namespaces"][0], "kca-webhook-target");
        assert_eq!(
            rules[2],
            serde_json::json!({"level": "None"}),
            "the rest is None"
        );
        // Renders to YAML that reads back to the same document.
        let yaml = serde_yaml_ng::to_string(&p).unwrap();
        let back: serde_json::Value = serde_yaml_ng::from_str(&yaml).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn audit_files_are_private() {
        let d = tempfile::tempdir().unwrap();
        let mut rt = crate::cluster::daemons::test_runtime();
        rt.state_dir = d.path().to_path_buf();
        write_audit_files(&rt).unwrap();
        let mode =
            |p: std::path::PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(rt.audit_dir()), 0o700);
        assert_eq!(mode(rt.audit_log()), 0o600);
        assert_eq!(mode(rt.audit_policy()), 0o600);
        assert_eq!(std::fs::metadata(rt.audit_log()).unwrap().len(), 0);
    }
}
