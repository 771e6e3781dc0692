//! kube-scheduler.

use super::{Args, Daemon, DaemonSpec, p, spec};
use crate::cluster::config::Runtime;

/// kube-scheduler in the registry: starts once the API server answers; no readiness probe.
pub const DAEMON: Daemon = Daemon {
    name: "kube-scheduler",
    programs: &["kube-scheduler"],
    spec: daemon,
    after: &["kube-apiserver"],
    before_start: None,
    ready: None,
    host_wide: false,
    stop_order: 30,
};

/// kube-scheduler's flags (v1.35.8).
pub fn args(rt: &Runtime) -> Args {
    let kc = p(rt.kubeconfig("scheduler"));
    Args::from([
        ("kubeconfig", kc.clone()),
        ("authentication-kubeconfig", kc.clone()),
        ("authorization-kubeconfig", kc),
        ("bind-address", "127.0.0.1".into()),
        ("leader-elect", "false".into()),
        ("profiling", "false".into()),
    ])
}

/// The kube-scheduler daemon.
pub fn daemon(rt: &Runtime) -> DaemonSpec {
    spec(rt, "kube-scheduler", "kube-scheduler", &args(rt))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn scheduler_args() {
        let a = args(&crate::cluster::daemons::test_runtime());
        assert_eq!(a["kubeconfig"], "/s/t/kubeconfig/scheduler.kubeconfig");
        assert_eq!(a["leader-elect"], "false");
    }
}
