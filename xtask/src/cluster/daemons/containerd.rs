//! containerd with its own root, state and socket under the state dir; its CRI config and the CNI network.

use anyhow::Result;
use serde_json::json;

use super::{Args, Daemon, DaemonSpec, Readiness, TICK, p, spec};
use crate::cluster::config::{NODE_POD_CIDR, PAUSE_IMAGE, Runtime};
use crate::cluster::host::HostFacts;

/// containerd in the registry: starts at once beside kine; ready when `ctr version` answers on
/// its socket and `up`'s image import step that follows it (`cluster::READY_STEPS`) is done, so
/// kubelet, which waits for it, never creates a sandbox whose image is missing (it would be
/// pulled, fail and back off). Stops after kube-proxy, once teardown removed the pods through CRI.
pub const DAEMON: Daemon = Daemon {
    name: "containerd",
    programs: &["containerd", "containerd-shim-runc-v2", "ctr", "runc"],
    spec: daemon,
    after: &[],
    before_start: None,
    ready: Some(Readiness {
        what: |_| "containerd's CRI socket (ctr version)".into(),
        probe: ctr_version,
        tick: TICK,
        timing: Some("images_imported_ms"),
        on_ready: None,
    }),
    host_wide: false,
    stop_order: 20,
};

/// `ctr -a <socket> version`: containerd answers on its socket.
fn ctr_version(rt: &Runtime) -> Result<String> {
    let (ctr, sock) = (rt.bin("ctr"), rt.containerd_socket());
    let sh = crate::command::shell()?;
    crate::command::run(xshell::cmd!(sh, "{ctr} -a {sock} version"))?;
    Ok(String::new())
}

/// containerd's flags: everything else is in the config file.
pub fn args(rt: &Runtime) -> Args {
    Args::from([("config", p(rt.path("containerd/config.toml")))])
}

/// The containerd daemon.
pub fn daemon(rt: &Runtime) -> DaemonSpec {
    spec(rt, "containerd", "containerd", &args(rt))
}

fn q(s: String) -> String {
    // TOML basic strings: our paths contain no quotes or backslashes, but escape them anyway.
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// containerd's config (version 3, containerd 2.2) for this node.
///
/// - root, state, gRPC/ttrpc sockets and the `opt` directory under the state dir, so a system
///   containerd is never touched;
/// - NRI disabled (it would create `/var/run/nri`);
/// - pod network namespaces pinned under containerd's state dir (`netns_mounts_under_state_dir`),
///   not `/run/netns/cni-*`, so a crashed node's pod namespaces are unmounted with the rest of the
///   state dir;
/// - CRI: `pinned_images.sandbox` is the pause image (never pulled: it is imported);
///   CNI plugins from the upstream CNI dir, CNI config from the state dir; runc from the upstream
///   bin dir with its state root under the state dir, cgroupfs;
/// - `restrict_oom_score_adj = true` when the host lacks CAP_SYS_RESOURCE: otherwise runc fails
///   every sandbox with `can't get final child's PID from pipe: EOF`
///   (`docs/embedded-node.md`, pitfall 3; containerd `docs/cri/config.md`).
pub fn config_toml(rt: &Runtime, host: &HostFacts) -> String {
    let d = |rel: &str| q(p(rt.path(rel)));
    format!(
        r#"version = 3
root = {root}
state = {state}

[grpc]
  address = {sock}

[ttrpc]
  address = {ttrpc}

[plugins."io.containerd.internal.v1.opt"]
  path = {opt}

[plugins."io.containerd.nri.v1.nri"]
  disable = true

[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = {pause}

[plugins."io.containerd.cri.v1.runtime"]
  restrict_oom_score_adj = {restrict}
  netns_mounts_under_state_dir = true
  enable_selinux = false

[plugins."io.containerd.cri.v1.runtime".cni]
  bin_dirs = [{cni_bin}]
  conf_dir = {cni_conf}

[plugins."io.containerd.cri.v1.runtime".containerd]
  default_runtime_name = "runc"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  BinaryName = {runc}
  Root = {runc_root}
  SystemdCgroup = false

[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
"#,
        root = d("containerd/root"),
        state = d("containerd/state"),
        sock = q(p(rt.containerd_socket())),
        ttrpc = q(format!("{}.ttrpc", rt.containerd_socket().display())),
        opt = d("containerd/opt"),
        pause = q(PAUSE_IMAGE.into()),
        restrict = !host.cap_sys_resource,
        cni_bin = q(p(rt.cni_bin_dir.clone())),
        cni_conf = q(p(rt.cni_conf_dir())),
        runc = q(p(rt.bin("runc"))),
        runc_root = d("runc"),
    )
}

/// CNI version of the network config; the CNI plugins v1.9.1 support 0.1.0 … 1.1.0.
pub const CNI_VERSION: &str = "1.0.0";

/// The node's CNI network: a bridge `cni0` (gateway 10.42.0.1) with host-local IPAM out of
/// [`NODE_POD_CIDR`] (allocations kept under the state dir), then portmap. containerd adds the
/// loopback plugin itself.
pub fn cni_conflist(rt: &Runtime) -> serde_json::Value {
    json!({
        "cniVersion": CNI_VERSION,
        "name": rt.cni_network(),
        "plugins": [
            {
                "type": "bridge",
                "bridge": "cni0",
                "isGateway": true,
                "ipMasq": false,
                "hairpinMode": true,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": NODE_POD_CIDR}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": p(rt.path("cni/ipam")),
                }
            },
            {"type": "portmap", "capabilities": {"portMappings": true}}
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_has_own_paths_and_oom_switch() {
        let rt = crate::cluster::daemons::test_runtime();
        let host = HostFacts {
            cap_sys_resource: false,
            cgroup_v1: true,
        };
        let t = config_toml(&rt, &host);
        assert!(t.contains("root = \"/s/t/containerd/root\""));
        assert!(t.contains("address = \"/s/t/containerd/containerd.sock\""));
        assert!(t.contains("restrict_oom_score_adj = true"));
        assert!(t.contains("netns_mounts_under_state_dir = true"));
        assert!(t.contains("sandbox = \"registry.k8s.io/pause:3.10.1\""));
        assert!(t.contains("bin_dirs = [\"/c\"]"));
        let t = config_toml(
            &rt,
            &HostFacts {
                cap_sys_resource: true,
                cgroup_v1: true,
            },
        );
        assert!(t.contains("restrict_oom_score_adj = false"));
    }

    #[test]
    fn cni_network() {
        let rt = crate::cluster::daemons::test_runtime();
        let c = cni_conflist(&rt);
        assert_eq!(
            c["plugins"][0]["ipam"]["ranges"][0][0]["subnet"],
            "10.42.0.0/24"
        );
        assert_eq!(c["cniVersion"], "1.0.0");
    }
}
