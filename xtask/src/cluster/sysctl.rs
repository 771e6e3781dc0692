//! Host kernel settings (sysctls) the node changes, recorded before and restored after.
//!
//! kubelet's container manager (`pkg/kubelet/cm/container_manager_linux.go`, `setupNode` →
//! `setupKernelTunables(KernelTunableModify)` when `protectKernelDefaults` is false, Kubernetes
//! v1.35.8) writes the six values of [`KUBELET_TUNABLES`] once, when kubelet starts. They are
//! global to the kernel (not per network namespace), so the embedded node, whose kubelet runs in
//! the host's mount namespace with `/proc/sys` writable, changes the host's. With
//! `protectKernelDefaults: true` kubelet instead refuses to start unless the values already match,
//! so one of the two has to change them; kubelet never checks them again after its start.
//!
//! What `cluster up` does about it: before kubelet starts it records each value in `cluster.json`
//! ([`record`]); once the node is Ready it puts back every value that is still the one kubelet set
//! ([`restore`]), so the host runs with its own values while the cluster is up and was changed
//! only for the seconds of kubelet's start; `down` (and the next `up` after a crash, through its
//! teardown of the remains) restores again. A value someone else changed meanwhile is left alone.
//!
//! kube-proxy writes no host-global sysctl with the node's flags: `--conntrack-max-per-core=0`
//! skips `nf_conntrack_max` and `/sys/module/nf_conntrack/parameters/hashsize` (both global,
//! `cmd/kube-proxy/app/server_linux.go` `setupConntrack`), and the `nf_conntrack_tcp_timeout_*`,
//! `nf_conntrack_udp_timeout*`, `nf_conntrack_tcp_be_liberal` and `net.ipv4.conf.all.route_localnet`
//! values it may write are per network namespace (measured on Linux 6.18: writable in a fresh
//! netns, while `nf_conntrack_max` and `nf_conntrack_buckets` are read-only there). [`WATCHED`]
//! lists everything a host check should compare.

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// kubelet's `setupKernelTunables` map: sysctl key → the value kubelet writes
/// (`k8s.io/component-helpers/node/util/sysctl` v0.35.8 constants).
pub const KUBELET_TUNABLES: &[(&str, i64)] = &[
    ("vm.overcommit_memory", 1),
    ("vm.panic_on_oom", 0),
    ("kernel.panic", 10),
    ("kernel.panic_on_oops", 1),
    ("kernel.keys.root_maxkeys", 1_000_000),
    ("kernel.keys.root_maxbytes", 25_000_000),
];

/// Host-global values a host check compares before `up` and after `down`: kubelet's six, the
/// global conntrack limits kube-proxy would write without `--conntrack-max-per-core=0`, and the
/// per-namespace values that kube-proxy, kubelet, the CNI plugins and `netns::create` write inside
/// the node's namespace (read here in the host's: a write that leaked to the host shows).
pub const WATCHED: &[&str] = &[
    "vm.overcommit_memory",
    "vm.panic_on_oom",
    "kernel.panic",
    "kernel.panic_on_oops",
    "kernel.keys.root_maxkeys",
    "kernel.keys.root_maxbytes",
    "net.netfilter.nf_conntrack_max",
    "net.netfilter.nf_conntrack_buckets",
    "net.netfilter.nf_conntrack_expect_max",
    "net.netfilter.nf_conntrack_tcp_timeout_established",
    "net.netfilter.nf_conntrack_tcp_timeout_close_wait",
    "net.netfilter.nf_conntrack_tcp_be_liberal",
    "net.netfilter.nf_conntrack_udp_timeout",
    "net.netfilter.nf_conntrack_udp_timeout_stream",
    "net.ipv4.ip_forward",
    "net.ipv4.conf.all.forwarding",
    "net.ipv4.conf.all.route_localnet",
    "net.bridge.bridge-nf-call-iptables",
    "net.bridge.bridge-nf-call-ip6tables",
];

/// The conntrack hash size, a module parameter kube-proxy writes with `nf_conntrack_max`.
pub const CONNTRACK_HASHSIZE: &str = "/sys/module/nf_conntrack/parameters/hashsize";

/// One host sysctl as found before kubelet started and the value kubelet sets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedSysctl {
    /// Dotted key (`kernel.panic`).
    pub key: String,
    /// The value found before kubelet started (trimmed text of `/proc/sys/...`).
    pub before: String,
    /// The value kubelet writes.
    pub node_value: String,
}

/// `/proc/sys/<key with dots as slashes>`.
pub fn path(key: &str) -> PathBuf {
    PathBuf::from(format!("/proc/sys/{}", key.replace('.', "/")))
}

/// The current value of sysctl `key` (trimmed), or None when the kernel has no such key.
pub fn read(key: &str) -> Result<Option<String>> {
    match std::fs::read_to_string(path(key)) {
        Ok(s) => Ok(Some(s.trim().to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path(key).display())),
    }
}

/// Writes sysctl `key`.
pub fn write(key: &str, value: &str) -> Result<()> {
    std::fs::write(path(key), value)
        .with_context(|| format!("setting {key}={value} ({})", path(key).display()))
}

/// Reads kubelet's six values as they are now (call before kubelet starts).
pub fn record() -> Result<Vec<SavedSysctl>> {
    let mut out = Vec::new();
    for (key, node_value) in KUBELET_TUNABLES {
        let before = read(key)?.with_context(|| {
            format!("this kernel has no sysctl {key}, which kubelet sets at start")
        })?;
        out.push(SavedSysctl {
            key: key.to_string(),
            before,
            node_value: node_value.to_string(),
        });
    }
    Ok(out)
}

/// What [`restore`] did with one value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restored {
    /// It was the node's value and is now the recorded one again.
    PutBack {
        /// Key.
        key: String,
        /// The node's value that was replaced.
        from: String,
        /// The recorded value written back.
        to: String,
    },
    /// It already had the recorded value (kubelet did not need to change it, or it was restored).
    Unchanged,
    /// It has neither the recorded nor the node's value: someone else set it; left alone.
    LeftAlone {
        /// Key.
        key: String,
        /// The value found now.
        now: String,
    },
}

/// Puts back each recorded value that is still the one kubelet set. Errors name the key.
pub fn restore(saved: &[SavedSysctl]) -> Vec<Result<Restored>> {
    saved
        .iter()
        .map(|s| {
            let now = read(&s.key)?.with_context(|| format!("sysctl {} vanished", s.key))?;
            if now == s.before {
                Ok(Restored::Unchanged)
            } else if now == s.node_value {
                write(&s.key, &s.before)?;
                Ok(Restored::PutBack {
                    key: s.key.clone(),
                    from: now,
                    to: s.before.clone(),
                })
            } else {
                Ok(Restored::LeftAlone {
                    key: s.key.clone(),
                    now,
                })
            }
        })
        .collect()
}

/// `key = value` of every [`WATCHED`] sysctl the kernel has, plus the conntrack hash size.
pub fn snapshot() -> Result<std::collections::BTreeMap<String, String>> {
    let mut out = std::collections::BTreeMap::new();
    for key in WATCHED {
        if let Some(v) = read(key)? {
            out.insert(key.to_string(), v);
        }
    }
    if let Ok(v) = std::fs::read_to_string(CONNTRACK_HASHSIZE) {
        out.insert(CONNTRACK_HASHSIZE.to_string(), v.trim().to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(
            path("kernel.keys.root_maxkeys"),
            PathBuf::from("/proc/sys/kernel/keys/root_maxkeys")
        );
    }

    #[test]
    fn kubelet_list_is_in_the_watched_list() {
        for (k, _) in KUBELET_TUNABLES {
            assert!(WATCHED.contains(k), "{k}");
        }
    }
}
