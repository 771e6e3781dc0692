//! One module per upstream daemon: its arguments (and config files) as a pure function of the [`Runtime`].
//!
//! Arguments are built in a `BTreeMap` so the command line is sorted and deterministic (k3s's
//! `GetArgsList`), rendered as `--key=value`, and printed before spawn.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::config::Runtime;

pub mod apiserver;
pub mod containerd;
pub mod controller_manager;
pub mod kine;
pub mod kube_proxy;
pub mod kubelet;
pub mod scheduler;

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

/// Builds the spec of one daemon from its argument map.
pub fn spec(rt: &Runtime, name: &'static str, program: &str, args: &Args) -> DaemonSpec {
    DaemonSpec {
        name,
        binary: rt.bin(program),
        args: render(args),
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
    fn render_is_sorted() {
        let mut a = Args::new();
        a.insert("zeta", "1".into());
        a.insert("alpha", "2".into());
        assert_eq!(render(&a), vec!["--alpha=2", "--zeta=1"]);
    }
}
