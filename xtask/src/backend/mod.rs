//! Cluster backends: where a lab run gets its cluster from. One lab code path for all of them: the
//! labs need a kubeconfig and the node's CRI endpoint, nothing else
//! (`docs/backends.md`).
//!
//! | backend | what | needs |
//! |---|---|---|
//! | [`Backend::Embedded`] (default) | a fresh single node from the upstream programs (`xtask::cluster`) | Linux, root, Go (first build) |
//! | [`Backend::Kubeconfig`] | an existing cluster you are on the node of (a student's k3s VM, or an embedded cluster started on its own) | root for the CRI socket and the freeze; Go only with `--install-kyverno` (the built Helm and chart) |
//! | [`Backend::K3s`] | `rancher/k3s:v1.35.8-k3s1` in Docker through testcontainers | a Docker engine, root (the freeze opens a pidfd on a host process), Go (Helm and chart) |
//!
//! [`Backend::acquire`] returns a [`ClusterHandle`]: kubeconfig path, CRI endpoint, node, what the
//! backend checked and recorded (`facts`, written to the artifacts as `backend.json`), and a
//! teardown. The test harness picks the backend from one environment variable, [`CLUSTER_ENV`]
//! ([`Backend::from_env`]).

pub mod k3s;
pub mod kubeconfig;
pub mod summary;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

pub use crate::flags::{BackendArgs, BackendKind};

/// The pinned pair, defined where the builds are (the lowest layer that needs it).
pub use crate::upstream::versions::{PINNED_KUBERNETES, PINNED_KYVERNO};

/// Environment variable choosing the test harness's backend: `embedded` (default), `kubeconfig`
/// or `k3s`.
pub const CLUSTER_ENV: &str = "KCA_CLUSTER";
/// With `KCA_CLUSTER=kubeconfig`: the existing cluster's kubeconfig (default: k3s's when present).
pub const KUBECONFIG_ENV: &str = "KCA_KUBECONFIG";
/// With `KCA_CLUSTER=kubeconfig`: the node's CRI endpoint (default: k3s's socket when present).
pub const CRI_ENDPOINT_ENV: &str = "KCA_CRI_ENDPOINT";
/// With `KCA_CLUSTER=kubeconfig`: `1` = install Kyverno with the built Helm (`--install-kyverno`).
pub const INSTALL_KYVERNO_ENV: &str = "KCA_INSTALL_KYVERNO";
/// With `KCA_CLUSTER=kubeconfig`: `1` = put the lab mark on the cluster (`--mark-as-lab`). Never
/// implied: without it the cluster must already carry the mark for any fault to run.
pub const MARK_AS_LAB_ENV: &str = "KCA_MARK_AS_LAB";
/// With `KCA_CLUSTER=kubeconfig|k3s`: `1` = accept other Kubernetes/Kyverno versions
/// (`--allow-other-versions`; the versions found are recorded).
pub const ALLOW_OTHER_VERSIONS_ENV: &str = "KCA_ALLOW_OTHER_VERSIONS";
/// With `KCA_CLUSTER=k3s`: the k3s image tag (default [`k3s::K3S_TAG`]); the nightly matrix sets it.
pub const K3S_TAG_ENV: &str = "KCA_K3S_TAG";

/// Which cluster a lab runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// A fresh embedded cluster per lab (`xtask::cluster`).
    Embedded,
    /// An existing cluster ([`kubeconfig::Options`]).
    Kubeconfig(kubeconfig::Options),
    /// k3s in Docker ([`k3s::Options`]).
    K3s(k3s::Options),
}

impl BackendArgs {
    /// The backend these flags describe; flags that belong to another backend are an error.
    pub fn backend(&self) -> Result<Backend> {
        let kubeconfig_only = [
            ("--kubeconfig", self.kubeconfig.is_some()),
            ("--cri-endpoint", self.cri_endpoint.is_some()),
            ("--install-kyverno", self.install_kyverno),
            ("--mark-as-lab", self.mark_as_lab),
        ];
        match self.kind {
            BackendKind::Embedded => {
                let given: Vec<&str> = kubeconfig_only
                    .iter()
                    .filter(|(_, g)| *g)
                    .map(|(n, _)| *n)
                    .collect();
                if !given.is_empty() || self.allow_other_versions {
                    bail!(
                        "{} only apply to --cluster kubeconfig (or k3s for --allow-other-versions); the embedded cluster is always fresh, pinned and marked",
                        given.join(", ")
                    );
                }
                Ok(Backend::Embedded)
            }
            BackendKind::Kubeconfig => Ok(Backend::Kubeconfig(kubeconfig::Options::resolve(
                self.kubeconfig.as_deref(),
                self.cri_endpoint.as_deref(),
                self.install_kyverno,
                self.mark_as_lab,
                self.allow_other_versions,
            )?)),
            BackendKind::K3s => {
                let given: Vec<&str> = kubeconfig_only
                    .iter()
                    .filter(|(_, g)| *g)
                    .map(|(n, _)| *n)
                    .collect();
                if !given.is_empty() {
                    bail!(
                        "{} only apply to --cluster kubeconfig; the k3s backend installs Kyverno and marks its own fresh container",
                        given.join(", ")
                    );
                }
                Ok(Backend::K3s(k3s::Options {
                    tag: self.k3s_tag.clone(),
                    allow_other_versions: self.allow_other_versions,
                }))
            }
        }
    }
}

fn env_flag(name: &str) -> Result<bool> {
    match std::env::var(name) {
        Err(_) => Ok(false),
        Ok(v) => match v.as_str() {
            "" | "0" | "false" => Ok(false),
            "1" | "true" => Ok(true),
            other => bail!("environment variable {name}: expected 1 or 0, found {other:?}"),
        },
    }
}

impl Backend {
    /// The backend named by [`CLUSTER_ENV`] (`embedded` when unset), with its settings from
    /// [`KUBECONFIG_ENV`], [`CRI_ENDPOINT_ENV`], [`INSTALL_KYVERNO_ENV`], [`MARK_AS_LAB_ENV`],
    /// [`ALLOW_OTHER_VERSIONS_ENV`], [`K3S_TAG_ENV`].
    ///
    /// Errors: an unknown backend name or flag value (naming the variable, expected and found).
    pub fn from_env() -> Result<Backend> {
        let kind = std::env::var(CLUSTER_ENV).unwrap_or_default();
        match kind.as_str() {
            "" | "embedded" => Ok(Backend::Embedded),
            "kubeconfig" => Ok(Backend::Kubeconfig(kubeconfig::Options::resolve(
                std::env::var_os(KUBECONFIG_ENV)
                    .map(PathBuf::from)
                    .as_deref(),
                std::env::var_os(CRI_ENDPOINT_ENV)
                    .map(PathBuf::from)
                    .as_deref(),
                env_flag(INSTALL_KYVERNO_ENV)?,
                env_flag(MARK_AS_LAB_ENV)?,
                env_flag(ALLOW_OTHER_VERSIONS_ENV)?,
            )?)),
            "k3s" => Ok(Backend::K3s(k3s::Options {
                tag: std::env::var(K3S_TAG_ENV).unwrap_or_else(|_| k3s::K3S_TAG.to_string()),
                allow_other_versions: env_flag(ALLOW_OTHER_VERSIONS_ENV)?,
            })),
            other => bail!(
                "environment variable {CLUSTER_ENV}: expected embedded, kubeconfig or k3s, found {other:?}"
            ),
        }
    }

    /// Checks that fail at once, before anything is built or started: the k3s backend's Docker
    /// engine ([`k3s::docker_engine`]).
    pub fn preflight(&self) -> Result<()> {
        match self {
            Backend::K3s(_) => k3s::docker_engine().map(|_| ()),
            _ => Ok(()),
        }
    }

    /// `embedded`, `kubeconfig` or `k3s`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Embedded => "embedded",
            Backend::Kubeconfig(_) => "kubeconfig",
            Backend::K3s(_) => "k3s",
        }
    }

    /// Provides a cluster for one lab run named `name` (embedded: the cluster name; k3s: part of
    /// the container's state directory; kubeconfig: only recorded), ready for the labs: Kyverno
    /// answering, lab namespaces present, the lab mark where the backend's rules put it.
    ///
    /// Errors: whatever stops the backend, with what to do (no root, no Docker engine, versions
    /// that differ from the pinned ones, Kyverno absent without `--install-kyverno`, …).
    pub fn acquire(&self, name: &str) -> Result<ClusterHandle> {
        match self {
            Backend::Embedded => {
                let c = crate::cluster::Cluster::up(crate::cluster::UpOptions::new(name))
                    .with_context(|| format!("bringing up the embedded cluster {name}"))?;
                Ok(ClusterHandle {
                    backend: "embedded",
                    name: name.to_string(),
                    kubeconfig: c.kubeconfig(),
                    cri_endpoint: c.cri_endpoint(),
                    node_name: c.node_name().to_string(),
                    node_uid: c.node_uid().to_string(),
                    logs_dir: Some(c.state_dir().join("logs")),
                    facts: serde_json::json!({
                        "backend": "embedded",
                        "cluster": name,
                        "state_dir": c.state_dir(),
                        "kubernetes": PINNED_KUBERNETES,
                        "kyverno": PINNED_KYVERNO,
                    }),
                    owned: Owned::Embedded(Box::new(c)),
                })
            }
            Backend::Kubeconfig(opts) => kubeconfig::acquire(opts, name),
            Backend::K3s(opts) => k3s::acquire(opts, name),
        }
    }
}

/// What the backend owns and ends at [`ClusterHandle::teardown`].
pub(crate) enum Owned {
    /// The embedded cluster this handle brought up.
    Embedded(Box<crate::cluster::Cluster>),
    /// Nothing: an existing cluster is never torn down by us.
    Nothing,
    /// The k3s container (removed when dropped) and its state directory.
    K3s(Box<k3s::Running>),
}

impl std::fmt::Debug for Owned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Owned::Embedded(_) => "Embedded",
            Owned::Nothing => "Nothing",
            Owned::K3s(_) => "K3s",
        })
    }
}

/// A cluster ready for the labs, from any backend.
#[derive(Debug)]
pub struct ClusterHandle {
    /// `embedded`, `kubeconfig` or `k3s`.
    pub backend: &'static str,
    /// The name given to [`Backend::acquire`].
    pub name: String,
    /// kubeconfig with cluster-admin rights.
    pub kubeconfig: PathBuf,
    /// The node's CRI endpoint (`unix://…` or a socket path).
    pub cri_endpoint: String,
    /// The node's name.
    pub node_name: String,
    /// The node's metadata.uid.
    pub node_uid: String,
    /// Component logs to copy into the artifacts (embedded: `<state>/logs`; k3s: the container's
    /// log written at teardown), if any.
    pub logs_dir: Option<PathBuf>,
    /// What the backend checked and recorded (versions, node, Kyverno image, mark), as JSON; the lab
    /// runner writes it to `<artifacts>/backend.json`.
    pub facts: serde_json::Value,
    pub(crate) owned: Owned,
}

impl ClusterHandle {
    /// Ends what the backend started: the embedded cluster goes down, the k3s container is
    /// removed; an existing cluster (kubeconfig) is left as it is (said on stderr).
    pub fn teardown(self) -> Result<()> {
        match self.owned {
            Owned::Embedded(c) => c.down().map(|_| ()),
            Owned::Nothing => {
                eprintln!(
                    " • the existing cluster behind {} is left running (the kubeconfig backend never tears a cluster down)",
                    self.kubeconfig.display()
                );
                Ok(())
            }
            Owned::K3s(r) => r.stop(),
        }
    }

    /// Writes what the backend keeps only in memory to [`ClusterHandle::logs_dir`] (k3s: the
    /// container's log); nothing to do for the other backends.
    pub fn write_logs(&self) -> Result<()> {
        match &self.owned {
            Owned::K3s(r) => r.write_logs(),
            _ => Ok(()),
        }
    }

    /// Whether [`ClusterHandle::teardown`] ends the cluster: `true` for the embedded cluster and
    /// the k3s container this handle started, `false` for the kubeconfig backend's existing
    /// cluster (never torn down).
    pub fn owns_cluster(&self) -> bool {
        !matches!(self.owned, Owned::Nothing)
    }

    /// Copies the cluster's component logs into `<artifacts>/logs/` before a teardown: writes
    /// what the backend keeps in memory first ([`ClusterHandle::write_logs`], k3s), then the
    /// files of [`ClusterHandle::logs_dir`] and, on the embedded node, the API server's audit log
    /// ([`collect_cluster_logs`]). Returns whether there were logs to collect
    /// (`false` on the kubeconfig backend: it has no logs of the existing cluster). Used by
    /// `cargo xtask lab run` and by the test fixture's signal thread.
    ///
    /// Errors: writing or copying a log (naming the file).
    pub fn collect_logs(&self, artifacts: &Path) -> Result<bool> {
        self.write_logs()?;
        match self.logs_dir.as_deref().and_then(Path::parent) {
            Some(state) => collect_cluster_logs(state, artifacts).map(|()| true),
            None => Ok(false),
        }
    }

    /// Keeps the cluster running and says how to end it later.
    pub fn retain(self) {
        match self.owned {
            Owned::Embedded(c) => eprintln!(
                "cluster {} retained: kubeconfig {}, cri {}; `cargo xtask cluster down --name {}` ends it",
                c.name(),
                c.kubeconfig().display(),
                c.cri_endpoint(),
                c.name()
            ),
            Owned::Nothing => {}
            Owned::K3s(r) => r.retain(),
        }
    }
}

/// `true` when `git_version` (`/version` `gitVersion`, e.g. `v1.35.8` or `v1.35.8+k3s1`) is the
/// pinned [`PINNED_KUBERNETES`].
pub fn is_pinned_kubernetes(git_version: &str) -> bool {
    match git_version.strip_prefix(PINNED_KUBERNETES) {
        Some(rest) => rest.is_empty() || rest.starts_with('+'),
        None => false,
    }
}

/// The tag of an image reference (`reg.kyverno.io/kyverno/kyverno:v1.19.1` → `v1.19.1`; a digest
/// suffix `@sha256:…` is dropped first); `None` without a tag.
pub fn image_tag(image: &str) -> Option<&str> {
    let image = image.split('@').next().unwrap_or(image);
    let last = image.rsplit('/').next().unwrap_or(image);
    last.split_once(':').map(|(_, t)| t)
}

/// A directory for backend state under the repository's `target/lab/backends/<name>` (or
/// `$KCA_LAB_STATE_ROOT/backends/<name>`), created.
pub fn state_dir(name: &str) -> Result<PathBuf> {
    let dir = crate::cluster::config::default_state_root()
        .join("backends")
        .join(name);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// Writes `facts` as pretty JSON to `path`.
pub fn write_facts(path: &Path, facts: &serde_json::Value) -> Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    std::fs::write(path, serde_json::to_string_pretty(facts)?)
        .with_context(|| format!("writing {}", path.display()))
}

/// Copies a cluster's component logs (`<state dir>/logs/`) to `<artifacts>/logs/`.
pub fn collect_cluster_logs(state_dir: &Path, artifacts: &Path) -> Result<()> {
    // The API server's audit log (embedded node; `0600`, the copy keeps the mode).
    let audit = state_dir.join(crate::cluster::config::AUDIT_LOG);
    if audit.is_file() {
        std::fs::create_dir_all(artifacts.join("logs"))?;
        std::fs::copy(
            &audit,
            artifacts.join("logs").join("kube-apiserver-audit.log"),
        )
        .with_context(|| format!("copying {}", audit.display()))?;
    }
    let logs = state_dir.join("logs");
    if logs.is_dir() {
        for entry in
            std::fs::read_dir(&logs).with_context(|| format!("reading {}", logs.display()))?
        {
            let p = entry?.path();
            if p.is_file() {
                copy_into(&p, &artifacts.join("logs"))?;
            }
        }
    }
    Ok(())
}

/// Copies `file` into `dir` (created when absent), keeping its name.
///
/// Errors: creating `dir` or copying (naming both).
pub fn copy_into(file: &Path, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let name = file.file_name().context("a file name")?;
    std::fs::copy(file, dir.join(name))
        .with_context(|| format!("copying {} to {}", file.display(), dir.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_kubernetes_accepts_k3s_suffix_only() {
        assert!(is_pinned_kubernetes("v1.35.8"));
        assert!(is_pinned_kubernetes("v1.35.8+k3s1"));
        assert!(!is_pinned_kubernetes("v1.35.80"));
        assert!(!is_pinned_kubernetes("v1.35.9+k3s1"));
        assert!(!is_pinned_kubernetes("v1.34.8"));
    }

    #[test]
    fn image_tags() {
        assert_eq!(
            image_tag("reg.kyverno.io/kyverno/kyverno:v1.19.1"),
            Some("v1.19.1")
        );
        assert_eq!(
            image_tag("localhost:5000/kyverno:v1.19.2@sha256:abcd"),
            Some("v1.19.2")
        );
        assert_eq!(image_tag("localhost:5000/kyverno"), None);
    }

    #[test]
    fn flags_of_another_backend_are_refused() {
        let args = BackendArgs {
            kind: BackendKind::Embedded,
            kubeconfig: None,
            cri_endpoint: None,
            install_kyverno: false,
            mark_as_lab: true,
            allow_other_versions: false,
            k3s_tag: k3s::K3S_TAG.into(),
        };
        let e = args.backend().unwrap_err().to_string();
        assert!(e.contains("--mark-as-lab"), "{e}");
        let k3s = BackendArgs {
            kind: BackendKind::K3s,
            install_kyverno: true,
            mark_as_lab: false,
            ..args
        };
        let e = k3s.backend().unwrap_err().to_string();
        assert!(e.contains("--install-kyverno"), "{e}");
    }
}
