//! The cluster's PKI, generated with rcgen: one CA, serving and client certificates, the service-account key pair.
//!
//! Subjects follow Kubernetes' conventions (kubeadm's `certs` phase and the RBAC bootstrap roles):
//! `O=system:masters` is cluster-admin, `CN=system:node:<node>,O=system:nodes` is what the Node
//! authorizer and NodeRestriction expect, `system:kube-controller-manager`, `system:kube-scheduler`
//! and `system:kube-proxy` are the users the bootstrap ClusterRoleBindings name.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType, date_time_ymd,
};

use super::config::{KUBERNETES_SERVICE_IP, Runtime};

/// One certificate to issue from the cluster CA: file stem, subject and usage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertSpec {
    /// File stem: writes `<stem>.crt` and `<stem>.key` in the PKI directory.
    pub stem: &'static str,
    /// Subject common name.
    pub cn: String,
    /// Subject organisations (Kubernetes groups).
    pub orgs: Vec<String>,
    /// Subject alternative names (DNS names or IP addresses); serving certificates only.
    pub sans: Vec<String>,
    /// true: serverAuth; false: clientAuth.
    pub server: bool,
}

fn client(stem: &'static str, cn: &str, orgs: &[&str]) -> CertSpec {
    CertSpec {
        stem,
        cn: cn.to_string(),
        orgs: orgs.iter().map(|o| o.to_string()).collect(),
        sans: Vec::new(),
        server: false,
    }
}

/// Every certificate of the cluster, derived from the runtime (pure).
pub fn cert_specs(rt: &Runtime) -> Vec<CertSpec> {
    let node_ip = rt.net.node_ip().to_string();
    vec![
        CertSpec {
            stem: "apiserver",
            cn: "kube-apiserver".into(),
            orgs: vec![],
            sans: vec![
                node_ip.clone(),
                KUBERNETES_SERVICE_IP.to_string(),
                "127.0.0.1".into(),
                "localhost".into(),
                "kubernetes".into(),
                "kubernetes.default".into(),
                "kubernetes.default.svc".into(),
                "kubernetes.default.svc.cluster.local".into(),
            ],
            server: true,
        },
        CertSpec {
            stem: "kubelet-serving",
            cn: rt.node_name.clone(),
            orgs: vec![],
            sans: vec![
                node_ip,
                rt.node_name.clone(),
                "localhost".into(),
                "127.0.0.1".into(),
            ],
            server: true,
        },
        client("admin", "kca-admin", &["system:masters"]),
        client(
            "kubelet",
            &format!("system:node:{}", rt.node_name),
            &["system:nodes"],
        ),
        client("controller-manager", "system:kube-controller-manager", &[]),
        client("scheduler", "system:kube-scheduler", &[]),
        client("kube-proxy", "system:kube-proxy", &[]),
        client(
            "apiserver-kubelet-client",
            "kube-apiserver-kubelet-client",
            &["system:masters"],
        ),
    ]
}

fn write_file(path: &Path, contents: &str, mode: u32) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(contents.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

fn validity(p: &mut CertificateParams) {
    p.not_before = date_time_ymd(2025, 1, 1);
    p.not_after = date_time_ymd(2045, 1, 1);
}

/// Writes `ca.crt/key`, every [`cert_specs`] pair and `sa.key`/`sa.pub` into the PKI directory.
///
/// Keys are ECDSA P-256 (PKCS#8 PEM, mode 0600); kube-apiserver accepts ECDSA service-account keys (ES256).
pub fn generate(rt: &Runtime) -> Result<()> {
    let dir = rt.pki();
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;

    let ca_key = KeyPair::generate().context("generating the CA key")?;
    let mut ca = CertificateParams::new(Vec::<String>::new()).context("CA parameters")?;
    ca.distinguished_name.push(
        DnType::CommonName,
        format!("kca-webhook-lab-ca-{}", rt.name),
    );
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut ca);
    let ca_cert = ca.self_signed(&ca_key).context("self-signing the CA")?;
    write_file(&dir.join("ca.crt"), &ca_cert.pem(), 0o644)?;
    write_file(&dir.join("ca.key"), &ca_key.serialize_pem(), 0o600)?;
    let issuer = Issuer::new(ca, ca_key);

    for spec in cert_specs(rt) {
        let key =
            KeyPair::generate().with_context(|| format!("generating the key of {}", spec.stem))?;
        let mut p =
            CertificateParams::new(Vec::<String>::new()).context("certificate parameters")?;
        p.distinguished_name
            .push(DnType::CommonName, spec.cn.clone());
        for o in &spec.orgs {
            p.distinguished_name
                .push(DnType::OrganizationName, o.clone());
        }
        for san in &spec.sans {
            p.subject_alt_names.push(match san.parse::<Ipv4Addr>() {
                Ok(ip) => SanType::IpAddress(IpAddr::V4(ip)),
                Err(_) => SanType::DnsName(san.clone().try_into().context("DNS name")?),
            });
        }
        p.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        p.extended_key_usages = vec![if spec.server {
            ExtendedKeyUsagePurpose::ServerAuth
        } else {
            ExtendedKeyUsagePurpose::ClientAuth
        }];
        validity(&mut p);
        let cert = p
            .signed_by(&key, &issuer)
            .with_context(|| format!("signing {}", spec.stem))?;
        write_file(&dir.join(format!("{}.crt", spec.stem)), &cert.pem(), 0o644)?;
        write_file(
            &dir.join(format!("{}.key", spec.stem)),
            &key.serialize_pem(),
            0o600,
        )?;
    }

    let sa = KeyPair::generate().context("generating the service-account key")?;
    write_file(&dir.join("sa.key"), &sa.serialize_pem(), 0o600)?;
    write_file(&dir.join("sa.pub"), &sa.public_key_pem(), 0o644)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::config::{ClusterConfig, NodeNet};

    fn rt() -> Runtime {
        let cfg = ClusterConfig {
            name: "t".into(),
            state_root: "/nonexistent".into(),
            bin_dir: "/bin".into(),
            cni_bin_dir: "/cni".into(),
        };
        Runtime::new(&cfg, NodeNet { index: 3 })
    }

    #[test]
    fn subjects_follow_kubernetes_conventions() {
        let specs = cert_specs(&rt());
        let kubelet = specs.iter().find(|s| s.stem == "kubelet").unwrap();
        assert_eq!(kubelet.cn, "system:node:kca-t");
        assert_eq!(kubelet.orgs, vec!["system:nodes"]);
        let admin = specs.iter().find(|s| s.stem == "admin").unwrap();
        assert_eq!(admin.orgs, vec!["system:masters"]);
        let api = specs.iter().find(|s| s.stem == "apiserver").unwrap();
        assert!(api.server);
        for san in [
            "10.44.0.14",
            "10.43.0.1",
            "kubernetes.default.svc",
            "localhost",
            "127.0.0.1",
        ] {
            assert!(api.sans.iter().any(|s| s == san), "missing SAN {san}");
        }
    }

    #[test]
    fn generate_writes_parseable_pem() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = ClusterConfig {
            name: "t".into(),
            state_root: dir.path().into(),
            bin_dir: "/bin".into(),
            cni_bin_dir: "/cni".into(),
        };
        let rt = Runtime::new(&cfg, NodeNet { index: 0 });
        generate(&rt).unwrap();
        for f in ["ca.crt", "apiserver.crt", "kubelet.key", "sa.key", "sa.pub"] {
            let s = std::fs::read_to_string(rt.pki_file(f)).unwrap();
            assert!(s.starts_with("-----BEGIN "), "{f}");
        }
        let kubelet = std::fs::read_to_string(rt.pki_file("kubelet.crt")).unwrap();
        let issuer = std::fs::read_to_string(rt.pki_file("ca.crt")).unwrap();
        assert_ne!(kubelet, issuer);
    }
}
