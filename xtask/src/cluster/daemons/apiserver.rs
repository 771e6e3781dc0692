//! kube-apiserver, advertising the node IP.

use super::{Args, DaemonSpec, p, spec};
use crate::cluster::config::{APISERVER_PORT, KINE_PORT, Runtime, SERVICE_CIDR};

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
    ])
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
    }
}
