//! Kubeconfig files for the components and the user; certificates referenced by absolute path.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::json;

use super::config::Runtime;

/// (kubeconfig name, certificate stem) of every component that talks to kube-apiserver.
pub const COMPONENTS: &[(&str, &str)] = &[
    ("admin", "admin"),
    ("kubelet", "kubelet"),
    ("controller-manager", "controller-manager"),
    ("scheduler", "scheduler"),
    ("kube-proxy", "kube-proxy"),
];

/// Renders one kubeconfig (YAML) for `server` with the client certificate `<pki>/<stem>.crt/key`.
pub fn render(rt: &Runtime, server: &str, stem: &str) -> Result<String> {
    let p = |f: String| rt.pki_file(&f).display().to_string();
    let ctx = format!("kca-{}", rt.name);
    let v = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": ctx, "cluster": {"server": server, "certificate-authority": p("ca.crt".into())}}],
        "users": [{"name": stem, "user": {
            "client-certificate": p(format!("{stem}.crt")),
            "client-key": p(format!("{stem}.key")),
        }}],
        "contexts": [{"name": ctx, "context": {"cluster": ctx, "user": stem}}],
        "current-context": ctx,
    });
    serde_yaml_ng::to_string(&v).context("rendering a kubeconfig")
}

fn write(path: &Path, s: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, s).with_context(|| format!("writing {}", path.display()))
}

/// Writes every component's kubeconfig and the user's (cluster-admin) kubeconfig.
///
/// All point at `https://<node ip>:6443`, which is reachable both inside the node's network
/// namespace and from the host through the veth pair.
pub fn write_all(rt: &Runtime) -> Result<()> {
    let server = rt.apiserver_url();
    for (name, stem) in COMPONENTS {
        write(&rt.kubeconfig(name), &render(rt, &server, stem)?)?;
    }
    write(&rt.user_kubeconfig(), &render(rt, &server, "admin")?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::config::{ClusterConfig, NodeNet};

    #[test]
    fn renders_paths_and_server() {
        let cfg = ClusterConfig {
            name: "t".into(),
            state_root: "/s".into(),
            bin_dir: "/bin".into(),
            cni_bin_dir: "/cni".into(),
        };
        let rt = Runtime::new(&cfg, NodeNet { index: 0 });
        let y = render(&rt, &rt.apiserver_url(), "kubelet").unwrap();
        assert!(y.contains("server: https://10.44.0.2:6443"), "{y}");
        assert!(
            y.contains("client-certificate: /s/t/pki/kubelet.crt"),
            "{y}"
        );
        assert!(y.contains("certificate-authority: /s/t/pki/ca.crt"), "{y}");
    }
}
