//! One module per upstream daemon: its arguments (and config files) as a pure function of the
//! [`Runtime`], and its [`Daemon`] entry (programs, start gates, readiness probe, stop order).
//!
//! Arguments are built in a `BTreeMap` so the command line is sorted and deterministic (k3s's
//! `GetArgsList`), rendered as `--key=value`, and printed before spawn.
//!
//! [`REGISTRY`] lists the daemons in start order; `Cluster::up` (`bring_up`) starts them by
//! iterating it, the program check reads [`programs`], and teardown stops them in
//! [`stop_order`]. Adding a daemon: a new file here with its `pub const DAEMON: Daemon`, and its
//! module name in the one `registry!` line below (ARCHITECTURE.md, "Adding a daemon").

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;

use super::config::Runtime;
use super::record::ClusterRecord;

/// Declares the daemon modules and [`REGISTRY`] from one list, in start order.
macro_rules! registry {
    ($($m:ident),* $(,)?) => {
        $(pub mod $m;)*
        /// Every daemon of the node, in start order (each starts once its [`Daemon::after`]
        /// gates hold; one whose gates hold at once starts at once, beside the earlier ones).
        pub const REGISTRY: &[Daemon] = &[$($m::DAEMON),*];
    };
}

registry![
    kine,
    containerd,
    apiserver,
    controller_manager,
    scheduler,
    kubelet,
    kube_proxy
];

/// Poll interval of the readiness waits on the critical path (kube-apiserver, the node).
pub const FAST_TICK: Duration = Duration::from_millis(200);
/// Poll interval of the other readiness waits.
pub const TICK: Duration = Duration::from_millis(500);

/// Teardown stops the daemons whose [`Daemon::stop_order`] is below this before the host
/// sysctls are put back and the pod sandboxes are removed through CRI (kubelet: it would
/// restart containers); the others after, in ascending order.
pub const STOP_BEFORE_PODS: u8 = 10;

/// One daemon of the node: how it is built, when it starts, how it is known ready, when it stops.
#[derive(Debug, Clone, Copy)]
pub struct Daemon {
    /// Short name: the pidfile key, log stem and [`DaemonSpec::name`] (`kine`, `kube-apiserver`).
    pub name: &'static str,
    /// Programs it needs in the upstream bin dir (checked before anything starts).
    pub programs: &'static [&'static str],
    /// Its command line, environment and log ([`DaemonSpec`]), a pure function of the runtime.
    pub spec: fn(&Runtime) -> DaemonSpec,
    /// Names of the daemons that must be ready ([`Daemon::ready`] passed) before it starts.
    pub after: &'static [&'static str],
    /// Runs right before it starts (files it reads, host state to record first); None: nothing.
    pub before_start: Option<fn(&Runtime, &mut ClusterRecord) -> Result<()>>,
    /// How it is known ready; None: started is enough.
    pub ready: Option<Readiness>,
    /// Whether its start changes what is host-wide until it is ready (kubelet: the kernel
    /// tunables it writes, recorded before and put back once the node is Ready): `up` then holds
    /// the process's host steps (`cluster::host_steps`) from right before
    /// [`Daemon::before_start`] until [`Readiness::on_ready`] has run.
    pub host_wide: bool,
    /// Teardown's order, ascending; below [`STOP_BEFORE_PODS`]: before the pods are removed.
    pub stop_order: u8,
}

/// A daemon's readiness probe, polled (bounded by `UpOptions::ready_timeout`) on its own thread
/// from the moment it started, so later daemons and Helm start as soon as it passes.
#[derive(Debug, Clone, Copy)]
pub struct Readiness {
    /// What the wait is for, as its progress line and timeout error name it.
    pub what: fn(&Runtime) -> String,
    /// One probe: Ok(value) when ready (the value goes to [`Readiness::on_ready`]), else the
    /// state seen, as an error.
    pub probe: fn(&Runtime) -> Result<String>,
    /// Poll interval ([`FAST_TICK`] or [`TICK`]).
    pub tick: Duration,
    /// The record timing (milliseconds since `up` began) set when it is ready, e.g.
    /// `apiserver_ready_ms`; None: not timed.
    pub timing: Option<&'static str>,
    /// Runs on `up`'s thread once the readiness is collected, with the probe's value (kubelet:
    /// the Node's UID into the record, host sysctls put back); None: nothing.
    pub on_ready: Option<OnReady>,
}

/// [`Readiness::on_ready`]: `(record, the probe's value, when up began)`.
pub type OnReady = fn(&mut ClusterRecord, &str, Instant) -> Result<()>;

/// The upstream programs every daemon needs, in registry order, without repeats.
pub fn programs() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for p in REGISTRY.iter().flat_map(|d| d.programs.iter()) {
        if !out.contains(p) {
            out.push(p);
        }
    }
    out
}

/// Daemon names in the order teardown stops them ([`Daemon::stop_order`], then registry order).
pub fn stop_order() -> Vec<&'static Daemon> {
    let mut v: Vec<&'static Daemon> = REGISTRY.iter().collect();
    v.sort_by_key(|d| d.stop_order);
    v
}

/// The registry entry named `name`.
pub fn by_name(name: &str) -> Option<&'static Daemon> {
    REGISTRY.iter().find(|d| d.name == name)
}

/// A daemon to start: program, arguments, extra environment, log file.
#[derive(Debug, Clone)]
pub struct DaemonSpec {
    /// Short name: also the pidfile key and log file stem (`kine`, `kube-apiserver`, …).
    pub name: &'static str,
    /// Absolute path of the program.
    pub binary: PathBuf,
    /// Rendered arguments, sorted.
    pub args: Vec<String>,
    /// Environment variables set on top of a minimal environment (PATH is always set).
    pub env: Vec<(String, String)>,
    /// Where stdout and stderr go.
    pub log: PathBuf,
    /// File mode creation mask set before exec (None: inherited). kine's is `0o077`, so its
    /// SQLite files (`state.db`, `-wal`, `-shm`: every Secret of the cluster) are `0600`.
    pub umask: Option<u32>,
}

/// Flag name → value, sorted.
pub type Args = BTreeMap<&'static str, String>;

/// Renders `--key=value` pairs in key order.
pub fn render(args: &Args) -> Vec<String> {
    args.iter().map(|(k, v)| format!("--{k}={v}")).collect()
}

/// `PATH` for every daemon: the upstream bin dir first (containerd finds `containerd-shim-runc-v2`
/// and `runc` there), then the system directories (iptables, mount, …).
pub fn daemon_path(rt: &Runtime) -> String {
    format!(
        "{}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        rt.bin_dir.display()
    )
}

/// Builds the spec of one daemon from its argument map, with the running Kubernetes minor's
/// flag changes applied ([`Runtime::flag_changes`]).
pub fn spec(rt: &Runtime, name: &'static str, program: &str, args: &Args) -> DaemonSpec {
    let mut args = args.clone();
    crate::upstream::versions::apply_flag_changes(name, rt.flag_changes, &mut args);
    DaemonSpec {
        name,
        binary: rt.bin(program),
        args: render(&args),
        env: vec![("PATH".into(), daemon_path(rt))],
        log: rt.log(name),
        umask: None,
    }
}

/// `path.display()` as an owned string.
pub fn p(path: PathBuf) -> String {
    path.display().to_string()
}

#[cfg(test)]
pub(crate) fn test_runtime() -> Runtime {
    use super::config::{ClusterConfig, NodeNet};
    let cfg = ClusterConfig {
        name: "t".into(),
        state_root: "/s".into(),
        bin_dir: "/b".into(),
        cni_bin_dir: "/c".into(),
    };
    Runtime::new(&cfg, NodeNet { index: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gate_names_an_earlier_daemon_with_a_probe() {
        for (i, d) in REGISTRY.iter().enumerate() {
            for a in d.after {
                let j = REGISTRY.iter().position(|e| e.name == *a);
                assert!(
                    j.is_some_and(|j| j < i),
                    "{} starts after {a}, which is not an earlier daemon of the registry",
                    d.name
                );
                assert!(
                    REGISTRY[j.unwrap()].ready.is_some(),
                    "{} waits for {a} to be ready, but {a} has no readiness probe",
                    d.name
                );
            }
        }
    }

    #[test]
    fn names_match_specs_and_are_unique() {
        let rt = test_runtime();
        let mut names: Vec<&str> = REGISTRY.iter().map(|d| d.name).collect();
        for d in REGISTRY {
            assert_eq!((d.spec)(&rt).name, d.name);
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), REGISTRY.len(), "a daemon name repeats");
    }

    #[test]
    fn kubelet_stops_first_kine_last_and_containerd_after_kube_proxy() {
        let order: Vec<&str> = stop_order().iter().map(|d| d.name).collect();
        let at = |n: &str| order.iter().position(|o| *o == n).unwrap();
        assert_eq!(order.first(), Some(&"kubelet"), "{order:?}");
        assert_eq!(order.last(), Some(&"kine"), "{order:?}");
        assert!(at("kube-proxy") < at("containerd"), "{order:?}");
        assert!(at("containerd") < at("kube-apiserver"), "{order:?}");
        let before: Vec<&str> = REGISTRY
            .iter()
            .filter(|d| d.stop_order < STOP_BEFORE_PODS)
            .map(|d| d.name)
            .collect();
        assert_eq!(before, ["kubelet"]);
    }

    #[test]
    fn render_is_sorted() {
        let mut a = Args::new();
        a.insert("zeta", "1".into());
        a.insert("alpha", "2".into());
        assert_eq!(render(&a), vec!["--alpha=2", "--zeta=1"]);
    }
}
