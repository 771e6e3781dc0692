//! kube-proxy in iptables mode, inside the node's network namespace.

use super::{Args, DaemonSpec, p, spec};
use crate::cluster::config::{POD_CIDR, Runtime};

/// kube-proxy's flags (v1.35.8).
pub fn args(rt: &Runtime) -> Args {
    Args::from([
        ("kubeconfig", p(rt.kubeconfig("kube-proxy"))),
        ("proxy-mode", "iptables".into()),
        ("cluster-cidr", POD_CIDR.into()),
        ("hostname-override", rt.node_name.clone()),
        // 0 = leave the kernel's conntrack settings alone (kind does the same): the node is a
        // network namespace, and nf_conntrack_max is not writable from one.
        ("conntrack-max-per-core", "0".into()),
        ("conntrack-tcp-timeout-established", "0s".into()),
        ("conntrack-tcp-timeout-close-wait", "0s".into()),
        ("metrics-bind-address", "127.0.0.1:10249".into()),
        ("healthz-bind-address", "127.0.0.1:10256".into()),
        ("profiling", "false".into()),
    ])
}

/// The kube-proxy daemon.
pub fn daemon(rt: &Runtime) -> DaemonSpec {
    spec(rt, "kube-proxy", "kube-proxy", &args(rt))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn kube_proxy_args() {
        let a = args(&crate::cluster::daemons::test_runtime());
        assert_eq!(a["proxy-mode"], "iptables");
        assert_eq!(a["cluster-cidr"], "10.42.0.0/16");
        assert_eq!(a["hostname-override"], "kca-t");
    }
}
