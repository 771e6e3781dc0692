//! kube-proxy in iptables mode, inside the node's network namespace.

use anyhow::Result;

use super::{Args, Daemon, DaemonSpec, Readiness, TICK, p, spec};
use crate::cluster::config::{POD_CIDR, Runtime};
use crate::cluster::{netns, ready};

/// kube-proxy's health endpoint (`healthz-bind-address`), inside the node's network namespace.
const HEALTHZ: &str = "127.0.0.1:10256";

/// kube-proxy in the registry: starts after kubelet (registry order) once the API server
/// answers; ready when its healthz port accepts a connection.
pub const DAEMON: Daemon = Daemon {
    name: "kube-proxy",
    programs: &["kube-proxy"],
    spec: daemon,
    after: &["kube-apiserver"],
    before_start: None,
    ready: Some(Readiness {
        what: |_| format!("kube-proxy healthz ({HEALTHZ} in the node namespace)"),
        probe: healthz,
        tick: TICK,
        timing: None,
        on_ready: None,
    }),
    host_wide: false,
    stop_order: 10,
};

/// A TCP connect to kube-proxy's healthz port inside the node's network namespace.
fn healthz(rt: &Runtime) -> Result<String> {
    netns::in_netns(&rt.netns, || ready::tcp(HEALTHZ))?;
    Ok(String::new())
}

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
        ("healthz-bind-address", HEALTHZ.into()),
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
