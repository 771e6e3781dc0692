//! kube-controller-manager: allocates the node's pod CIDR, signs service-account tokens' root CA.

use super::{Args, Daemon, DaemonSpec, p, spec};
use crate::cluster::config::{POD_CIDR, Runtime, SERVICE_CIDR};

/// kube-controller-manager in the registry: starts once the API server answers; no probe.
pub const DAEMON: Daemon = Daemon {
    name: "kube-controller-manager",
    programs: &["kube-controller-manager"],
    spec: daemon,
    after: &["kube-apiserver"],
    before_start: None,
    ready: None,
    host_wide: false,
    stop_order: 40,
};

/// kube-controller-manager's flags (v1.35.8).
pub fn args(rt: &Runtime) -> Args {
    let kc = p(rt.kubeconfig("controller-manager"));
    let k = |f: &str| p(rt.pki_file(f));
    Args::from([
        ("kubeconfig", kc.clone()),
        ("authentication-kubeconfig", kc.clone()),
        ("authorization-kubeconfig", kc),
        ("bind-address", "127.0.0.1".into()),
        ("allocate-node-cidrs", "true".into()),
        ("cluster-cidr", POD_CIDR.into()),
        ("node-cidr-mask-size", "24".into()),
        ("service-cluster-ip-range", SERVICE_CIDR.into()),
        ("cluster-signing-cert-file", k("ca.crt")),
        ("cluster-signing-key-file", k("ca.key")),
        ("root-ca-file", k("ca.crt")),
        ("service-account-private-key-file", k("sa.key")),
        ("use-service-account-credentials", "true".into()),
        ("leader-elect", "false".into()),
        ("profiling", "false".into()),
    ])
}

/// The kube-controller-manager daemon.
pub fn daemon(rt: &Runtime) -> DaemonSpec {
    spec(
        rt,
        "kube-controller-manager",
        "kube-controller-manager",
        &args(rt),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn controller_manager_args() {
        let a = args(&crate::cluster::daemons::test_runtime());
        assert_eq!(a["cluster-cidr"], "10.42.0.0/16");
        assert_eq!(a["allocate-node-cidrs"], "true");
        assert_eq!(a["use-service-account-credentials"], "true");
        assert_eq!(a["service-account-private-key-file"], "/s/t/pki/sa.key");
    }
}
