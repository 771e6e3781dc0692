//! The table of upstream program families: which Go wrapper module, which
//! packages, which build settings and version stamps. Pure data plus the pure
//! function that renders a family's `-ldflags`.
//!
//! The settings are the ones upstream's own builds use (each family's doc
//! names the Makefile or script they come from); where a setting differs, the
//! family's doc says so.

use std::collections::BTreeMap;

use anyhow::Context as _;

/// One program built from a family's wrapper module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Program {
    /// File name of the binary, e.g. `kube-apiserver`.
    pub name: &'static str,
    /// Go package path of its `main` package, or for a test program the package whose tests it
    /// is.
    pub package: &'static str,
    /// A test binary (`go test -c`, as upstream builds `e2e.test`) rather than a `go build`.
    pub test: bool,
}

/// Where a `-X` stamp's value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StampValue {
    /// A fixed string.
    Literal(&'static str),
    /// The selected version of a module in the wrapper's build list, e.g.
    /// `v1.35.8` (from `go list -m`).
    Version(&'static str),
    /// The major number of a module's version, `v1.35.8` → `1`.
    Major(&'static str),
    /// The minor number of a module's version, `v1.35.8` → `35`.
    Minor(&'static str),
    /// Kubernetes' major version from a staging module's version: `v0.35.8`
    /// → `1` (helm's Makefile: `K8S_MODULES_MAJOR_VER` = first number + 1).
    StagingKubeMajor(&'static str),
}

impl StampValue {
    /// The module this value reads its version from, if any.
    pub fn module(&self) -> Option<&'static str> {
        match *self {
            StampValue::Literal(_) => None,
            StampValue::Version(m)
            | StampValue::Major(m)
            | StampValue::Minor(m)
            | StampValue::StagingKubeMajor(m) => Some(m),
        }
    }
}

/// A `-X importpath.name=value` link-time stamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// `importpath.name` of the Go string variable.
    pub var: &'static str,
    /// Its value.
    pub value: StampValue,
}

/// A family of programs built from one Go wrapper module
/// (`xtask/upstream/<name>/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Family {
    /// Directory name under `xtask/upstream/` and cache entry prefix.
    pub name: &'static str,
    /// The upstream module the programs come from.
    pub module: &'static str,
    /// `CGO_ENABLED=1` when true, else `0`.
    pub cgo: bool,
    /// Build tags (`-tags`), empty for none.
    pub tags: &'static [&'static str],
    /// The programs, built one `go build` each, in this order.
    pub programs: &'static [Program],
    /// Version stamps (`-X`), after `-s -w`.
    pub stamps: &'static [Stamp],
    /// True when the programs are CNI plugins (they go to the CNI bin dir).
    pub cni: bool,
}

const fn p(name: &'static str, package: &'static str) -> Program {
    Program {
        name,
        package,
        test: false,
    }
}

/// A test program: the tests of `package` compiled into one binary (`go test -c`).
const fn t(name: &'static str, package: &'static str) -> Program {
    Program {
        name,
        package,
        test: true,
    }
}

const fn x(var: &'static str, value: StampValue) -> Stamp {
    Stamp { var, value }
}

const K8S: &str = "k8s.io/kubernetes";

/// Kubernetes v1.35.8: stamps as `hack/lib/version.sh` (`kube::version::ldflags`)
/// sets them, on both `k8s.io/component-base/version` and
/// `k8s.io/client-go/pkg/version`. `buildDate` is left at its default
/// `1970-01-01T00:00:00Z` so the binaries stay reproducible. CGO off as in
/// `hack/lib/golang.sh` for the server binaries.
pub const KUBERNETES: Family = Family {
    name: "kubernetes",
    module: K8S,
    cgo: false,
    tags: &[],
    programs: &[
        p("kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver"),
        p(
            "kube-controller-manager",
            "k8s.io/kubernetes/cmd/kube-controller-manager",
        ),
        p("kube-scheduler", "k8s.io/kubernetes/cmd/kube-scheduler"),
        p("kubelet", "k8s.io/kubernetes/cmd/kubelet"),
        p("kube-proxy", "k8s.io/kubernetes/cmd/kube-proxy"),
    ],
    stamps: &[
        x(
            "k8s.io/component-base/version.gitVersion",
            StampValue::Version(K8S),
        ),
        x(
            "k8s.io/component-base/version.gitMajor",
            StampValue::Major(K8S),
        ),
        x(
            "k8s.io/component-base/version.gitMinor",
            StampValue::Minor(K8S),
        ),
        x(
            "k8s.io/component-base/version.gitTreeState",
            StampValue::Literal("clean"),
        ),
        x(
            "k8s.io/client-go/pkg/version.gitVersion",
            StampValue::Version(K8S),
        ),
        x(
            "k8s.io/client-go/pkg/version.gitMajor",
            StampValue::Major(K8S),
        ),
        x(
            "k8s.io/client-go/pkg/version.gitMinor",
            StampValue::Minor(K8S),
        ),
        x(
            "k8s.io/client-go/pkg/version.gitTreeState",
            StampValue::Literal("clean"),
        ),
    ],
    cni: false,
};

/// Kubernetes' own end-to-end suite and the programs it runs, from the same `k8s.io/kubernetes`
/// module (wrapper `xtask/upstream/kubernetes-e2e/`): `e2e.test` (`go test -c
/// k8s.io/kubernetes/test/e2e`, as `hack/lib/golang.sh` builds its test targets, with the same
/// version stamps as the server programs: the suite reads them), `agnhost` (the suite's webhook
/// server, `test/images/agnhost`) and `kubectl` (the suite runs `kubectl attach`). Not in
/// [`FAMILIES`]: only `cargo xtask conformance` builds it (`crate::conformance`).
pub const KUBERNETES_E2E: Family = Family {
    name: "kubernetes-e2e",
    module: K8S,
    cgo: false,
    tags: &[],
    programs: &[
        t("e2e.test", "k8s.io/kubernetes/test/e2e"),
        p("agnhost", "k8s.io/kubernetes/test/images/agnhost"),
        p("kubectl", "k8s.io/kubernetes/cmd/kubectl"),
    ],
    stamps: KUBERNETES.stamps,
    cni: false,
};

const KINE: &str = "github.com/k3s-io/kine";

/// kine (SQLite through cgo). Stamp as kine's `scripts/build` sets it. That
/// script also passes SQLite feature tags and `CGO_CFLAGS`; they are left out
/// here (kine's SQLite backend works without them).
pub const KINE_FAMILY: Family = Family {
    name: "kine",
    module: KINE,
    cgo: true,
    tags: &[],
    programs: &[p("kine", KINE)],
    stamps: &[x(
        "github.com/k3s-io/kine/pkg/version.Version",
        StampValue::Version(KINE),
    )],
    cni: false,
};

const CONTAINERD: &str = "github.com/containerd/containerd/v2";

/// containerd 2.x: tags without the btrfs/devmapper/zfs snapshotters (they
/// need C headers), CGO off; stamps as containerd's Makefile (`GO_LDFLAGS`).
pub const CONTAINERD_FAMILY: Family = Family {
    name: "containerd",
    module: CONTAINERD,
    cgo: false,
    tags: &["no_btrfs", "no_devmapper", "no_zfs"],
    programs: &[
        p(
            "containerd",
            "github.com/containerd/containerd/v2/cmd/containerd",
        ),
        p(
            "containerd-shim-runc-v2",
            "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2",
        ),
        p("ctr", "github.com/containerd/containerd/v2/cmd/ctr"),
    ],
    stamps: &[
        x(
            "github.com/containerd/containerd/v2/version.Version",
            StampValue::Version(CONTAINERD),
        ),
        x(
            "github.com/containerd/containerd/v2/version.Package",
            StampValue::Literal(CONTAINERD),
        ),
    ],
    cni: false,
};

const RUNC: &str = "github.com/opencontainers/runc";

/// runc 1.3.x with seccomp (cgo, Debian's `libseccomp-dev`). Its version
/// comes from the embedded `VERSION` file, so no stamp is needed.
pub const RUNC_FAMILY: Family = Family {
    name: "runc",
    module: RUNC,
    cgo: true,
    tags: &["seccomp"],
    programs: &[p("runc", RUNC)],
    stamps: &[],
    cni: false,
};

const CNI: &str = "github.com/containernetworking/plugins";

/// The CNI plugins the node's bridge network needs; stamp as the plugins'
/// `build_linux.sh` sets it (`pkg/utils/buildversion.BuildVersion`).
pub const CNI_FAMILY: Family = Family {
    name: "cni",
    module: CNI,
    cgo: false,
    tags: &[],
    programs: &[
        p(
            "bridge",
            "github.com/containernetworking/plugins/plugins/main/bridge",
        ),
        p(
            "loopback",
            "github.com/containernetworking/plugins/plugins/main/loopback",
        ),
        p(
            "host-local",
            "github.com/containernetworking/plugins/plugins/ipam/host-local",
        ),
        p(
            "portmap",
            "github.com/containernetworking/plugins/plugins/meta/portmap",
        ),
    ],
    stamps: &[x(
        "github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion",
        StampValue::Version(CNI),
    )],
    cni: true,
};

const CRI_TOOLS: &str = "sigs.k8s.io/cri-tools";

/// crictl, for people inspecting the node; stamp as cri-tools' Makefile.
pub const CRI_TOOLS_FAMILY: Family = Family {
    name: "cri-tools",
    module: CRI_TOOLS,
    cgo: false,
    tags: &[],
    programs: &[p("crictl", "sigs.k8s.io/cri-tools/cmd/crictl")],
    stamps: &[x(
        "sigs.k8s.io/cri-tools/pkg/version.Version",
        StampValue::Version(CRI_TOOLS),
    )],
    cni: false,
};

const HELM: &str = "helm.sh/helm/v3";
const HELM_CLIENT_GO: &str = "k8s.io/client-go";

/// Helm v3: stamps as Helm's Makefile for a tagged build (`version`, empty
/// `metadata`, `gitTreeState`), and the default Kubernetes version Helm
/// assumes (`helm template`, `lint`) from its client-go version, as the
/// Makefile's `K8S_MODULES_MAJOR_VER`/`MINOR_VER` do. Without those two,
/// `helm template` assumes Kubernetes v1.20 and refuses Kyverno's chart
/// (`kubeVersion: >=1.25.0-0`).
pub const HELM_FAMILY: Family = Family {
    name: "helm",
    module: HELM,
    cgo: false,
    tags: &[],
    programs: &[p("helm", "helm.sh/helm/v3/cmd/helm")],
    stamps: &[
        x(
            "helm.sh/helm/v3/internal/version.version",
            StampValue::Version(HELM),
        ),
        x(
            "helm.sh/helm/v3/internal/version.metadata",
            StampValue::Literal(""),
        ),
        x(
            "helm.sh/helm/v3/internal/version.gitTreeState",
            StampValue::Literal("clean"),
        ),
        x(
            "helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor",
            StampValue::StagingKubeMajor(HELM_CLIENT_GO),
        ),
        x(
            "helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor",
            StampValue::Minor(HELM_CLIENT_GO),
        ),
        x(
            "helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor",
            StampValue::StagingKubeMajor(HELM_CLIENT_GO),
        ),
        x(
            "helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor",
            StampValue::Minor(HELM_CLIENT_GO),
        ),
    ],
    cni: false,
};

/// The Kyverno module path.
pub const KYVERNO: &str = "github.com/kyverno/kyverno";

/// Kyverno v1.19.1: CGO off, no tags, `pkg/version.BuildVersion` as Kyverno's
/// Makefile (`LD_FLAGS`) and `.ko.yaml` set it.
pub const KYVERNO_FAMILY: Family = Family {
    name: "kyverno",
    module: KYVERNO,
    cgo: false,
    tags: &[],
    programs: &[
        p("kyverno", "github.com/kyverno/kyverno/cmd/kyverno"),
        p(
            "kyverno-init",
            "github.com/kyverno/kyverno/cmd/kyverno-init",
        ),
        p(
            "background-controller",
            "github.com/kyverno/kyverno/cmd/background-controller",
        ),
        p(
            "cleanup-controller",
            "github.com/kyverno/kyverno/cmd/cleanup-controller",
        ),
        p(
            "reports-controller",
            "github.com/kyverno/kyverno/cmd/reports-controller",
        ),
    ],
    stamps: &[x(
        "github.com/kyverno/kyverno/pkg/version.BuildVersion",
        StampValue::Version(KYVERNO),
    )],
    cni: false,
};

/// Every family, in build order.
pub const FAMILIES: &[Family] = &[
    KUBERNETES,
    KINE_FAMILY,
    CONTAINERD_FAMILY,
    RUNC_FAMILY,
    CNI_FAMILY,
    CRI_TOOLS_FAMILY,
    HELM_FAMILY,
    KYVERNO_FAMILY,
];

impl Family {
    /// The modules whose versions the stamps need, sorted, without repeats.
    pub fn stamp_modules(&self) -> Vec<&'static str> {
        let mut mods: Vec<&'static str> = self
            .stamps
            .iter()
            .filter_map(|s| s.value.module())
            .collect();
        mods.sort_unstable();
        mods.dedup();
        mods
    }

    /// `CGO_ENABLED` value.
    pub fn cgo_enabled(&self) -> &'static str {
        if self.cgo { "1" } else { "0" }
    }

    /// The `-tags` value (space separated), empty for none.
    pub fn tags_arg(&self) -> String {
        self.tags.join(" ")
    }

    /// Renders `-ldflags`: `-s -w` then one `-X var=value` per stamp.
    /// `versions` maps module path → selected version (`go list -m`).
    ///
    /// # Errors
    /// A stamp's module missing from `versions`, or a version that is not
    /// `vMAJOR.MINOR.…`.
    pub fn ldflags(&self, versions: &BTreeMap<String, String>) -> anyhow::Result<String> {
        let mut out = String::from("-s -w");
        for stamp in self.stamps {
            let value = match stamp.value {
                StampValue::Literal(v) => v.to_string(),
                StampValue::Version(m) => lookup(versions, m)?.to_string(),
                StampValue::Major(m) => version_part(lookup(versions, m)?, 0)?.to_string(),
                StampValue::Minor(m) => version_part(lookup(versions, m)?, 1)?.to_string(),
                StampValue::StagingKubeMajor(m) => {
                    let v = lookup(versions, m)?;
                    let major: u64 = version_part(v, 0)?
                        .parse()
                        .with_context(|| format!("version {v} of {m}: major is not a number"))?;
                    (major + 1).to_string()
                }
            };
            out.push_str(&format!(" -X {}={}", stamp.var, value));
        }
        Ok(out)
    }
}

fn lookup<'a>(versions: &'a BTreeMap<String, String>, module: &str) -> anyhow::Result<&'a str> {
    versions
        .get(module)
        .map(String::as_str)
        .with_context(|| format!("no version of {module} in the wrapper's build list"))
}

/// `v1.35.8` → part 0 `1`, part 1 `35`; pre-release/build suffixes ignored.
fn version_part(version: &str, index: usize) -> anyhow::Result<&str> {
    let core = version
        .strip_prefix('v')
        .with_context(|| format!("version {version}: expected a leading v"))?;
    let core = core.split(['-', '+']).next().unwrap_or(core);
    core.split('.')
        .nth(index)
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .with_context(|| format!("version {version}: no numeric part {index}"))
}

/// Every program of every family, in build order.
pub fn all_programs() -> impl Iterator<Item = (&'static Family, &'static Program)> {
    FAMILIES
        .iter()
        .flat_map(|f| f.programs.iter().map(move |p| (f, p)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn versions(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn kubernetes_ldflags_stamp_both_version_packages() {
        let l = KUBERNETES.ldflags(&versions(&[(K8S, "v1.35.8")])).unwrap();
        assert_eq!(
            l,
            "-s -w -X k8s.io/component-base/version.gitVersion=v1.35.8 \
             -X k8s.io/component-base/version.gitMajor=1 \
             -X k8s.io/component-base/version.gitMinor=35 \
             -X k8s.io/component-base/version.gitTreeState=clean \
             -X k8s.io/client-go/pkg/version.gitVersion=v1.35.8 \
             -X k8s.io/client-go/pkg/version.gitMajor=1 \
             -X k8s.io/client-go/pkg/version.gitMinor=35 \
             -X k8s.io/client-go/pkg/version.gitTreeState=clean"
        );
    }

    #[test]
    fn helm_kube_version_follows_its_client_go() {
        let l = HELM_FAMILY
            .ldflags(&versions(&[(HELM, "v3.22.0"), (HELM_CLIENT_GO, "v0.37.0")]))
            .unwrap();
        assert!(
            l.contains("-X helm.sh/helm/v3/internal/version.version=v3.22.0"),
            "{l}"
        );
        assert!(
            l.contains("-X helm.sh/helm/v3/internal/version.metadata= "),
            "{l}"
        );
        assert!(
            l.contains("-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1"),
            "{l}"
        );
        assert!(
            l.contains("-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=37"),
            "{l}"
        );
    }

    #[test]
    fn missing_module_version_is_an_error() {
        let err = KYVERNO_FAMILY.ldflags(&BTreeMap::new()).unwrap_err();
        assert!(err.to_string().contains(KYVERNO), "{err}");
    }

    #[test]
    fn malformed_version_is_an_error() {
        assert!(KUBERNETES.ldflags(&versions(&[(K8S, "1.35.8")])).is_err());
        assert!(KUBERNETES.ldflags(&versions(&[(K8S, "vx.y")])).is_err());
    }

    #[test]
    fn prerelease_version_parts() {
        assert_eq!(version_part("v0.0.1-alpha.3.0.2026", 1).unwrap(), "0");
        assert_eq!(version_part("v1.35.8+k3s1", 1).unwrap(), "35");
    }

    #[test]
    fn every_program_name_is_unique_and_the_cluster_set_is_complete() {
        let names: Vec<&str> = all_programs().map(|(_, p)| p.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            sorted.len(),
            names.len(),
            "duplicate program names: {names:?}"
        );
        for needed in [
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kubelet",
            "kube-proxy",
            "kine",
            "containerd",
            "containerd-shim-runc-v2",
            "ctr",
            "runc",
            "bridge",
            "loopback",
            "host-local",
            "portmap",
            "crictl",
            "helm",
            "kyverno",
            "kyverno-init",
            "background-controller",
            "cleanup-controller",
            "reports-controller",
        ] {
            assert!(names.contains(&needed), "{needed} missing");
        }
    }

    #[test]
    fn the_e2e_family_is_built_only_on_demand_with_the_servers_stamps() {
        assert!(!FAMILIES.iter().any(|f| f.name == KUBERNETES_E2E.name));
        assert_eq!(KUBERNETES_E2E.module, KUBERNETES.module);
        assert_eq!(
            KUBERNETES_E2E
                .ldflags(&versions(&[(K8S, "v1.35.8")]))
                .unwrap(),
            KUBERNETES.ldflags(&versions(&[(K8S, "v1.35.8")])).unwrap()
        );
        let tests: Vec<&str> = KUBERNETES_E2E
            .programs
            .iter()
            .filter(|p| p.test)
            .map(|p| p.name)
            .collect();
        assert_eq!(tests, ["e2e.test"]);
        assert!(all_programs().all(|(_, p)| !p.test));
    }

    #[test]
    fn stamp_modules_are_deduplicated() {
        assert_eq!(KUBERNETES.stamp_modules(), vec![K8S]);
        assert_eq!(HELM_FAMILY.stamp_modules(), vec![HELM, HELM_CLIENT_GO]);
        assert!(RUNC_FAMILY.stamp_modules().is_empty());
    }
}
