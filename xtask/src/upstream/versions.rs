//! Which Kubernetes and Kyverno the embedded backend builds, and the one table of what differs
//! between the versions it knows. Pure data and pure functions (no I/O).
//!
//! The pinned pair ([`PINNED_KUBERNETES`] × [`PINNED_KYVERNO`])
//! builds from the wrapper modules committed under `xtask/upstream/`; any other version gets its
//! wrapper made from the pinned one ([`super::wrapper`]). What a version changes beyond its module
//! (the chart's version, Kyverno's stated support range, daemon flags) is a row of
//! [`KYVERNO_RELEASES`] or [`KUBERNETES_MINORS`], never an `if` in the code: a version without a
//! row is refused with the table to edit.

use anyhow::{Context as _, bail};

/// The Kubernetes version the labs are pinned to (`gitVersion` of `/version`, k3s adds `+k3s1`).
pub const PINNED_KUBERNETES: &str = "v1.35.8";
/// The Kyverno version the labs are pinned to (the admission controller image's tag).
pub const PINNED_KYVERNO: &str = "v1.19.1";

/// A release number `vMAJOR.MINOR.PATCH` (no pre-release, no build suffix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Release {
    /// Major number.
    pub major: u32,
    /// Minor number.
    pub minor: u32,
    /// Patch number.
    pub patch: u32,
}

impl Release {
    /// Parses `vX.Y.Z` (digits only, leading `v` required).
    ///
    /// # Errors
    /// Anything else, naming what was found.
    pub fn parse(s: &str) -> anyhow::Result<Release> {
        let bad = || format!("expected a release vMAJOR.MINOR.PATCH (e.g. v1.36.3), found {s:?}");
        let rest = s.strip_prefix('v').with_context(bad)?;
        let parts: Vec<&str> = rest.split('.').collect();
        if parts.len() != 3
            || parts
                .iter()
                .any(|p| p.is_empty() || p.len() > 6 || !p.bytes().all(|b| b.is_ascii_digit()))
        {
            bail!(bad());
        }
        let n = |i: usize| parts[i].parse::<u32>().with_context(bad);
        Ok(Release {
            major: n(0)?,
            minor: n(1)?,
            patch: n(2)?,
        })
    }

    /// The version of Kubernetes' staging modules (`k8s.io/api` …) that goes with this
    /// `k8s.io/kubernetes` release: `v1.36.3` → `v0.36.3` (Kubernetes publishes every staging
    /// repository with tag `v0.Y.Z` for release `v1.Y.Z`, `k8s.io/kubernetes` `staging/README.md`).
    pub fn staging(&self) -> String {
        format!("v0.{}.{}", self.minor, self.patch)
    }
}

impl std::fmt::Display for Release {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "v{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// One daemon flag that a Kubernetes minor handles differently from the pinned one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagChange {
    /// The daemon ([`crate::cluster::daemons::Daemon::name`]), e.g. `kubelet`.
    pub daemon: &'static str,
    /// The flag without `--`.
    pub flag: &'static str,
    /// `None`: the flag is dropped (the component no longer accepts it); `Some(v)`: set to `v`.
    pub value: Option<&'static str>,
    /// Why, with the upstream source.
    pub why: &'static str,
}

/// What the embedded backend needs to know about one Kubernetes minor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KubernetesMinor {
    /// The minor number (`36` for v1.36.x).
    pub minor: u32,
    /// Daemon flags that differ from the pinned minor's (empty: the pinned flags hold).
    pub flags: &'static [FlagChange],
    /// What was checked for this minor, and how.
    pub note: &'static str,
}

/// Every Kubernetes minor the embedded backend builds. The staging modules a wrapper needs are
/// not listed here: they are read from the release's own `go.mod` ([`super::wrapper`]), so a
/// module added in a minor (v1.36 adds `k8s.io/cri-streaming` and `k8s.io/streaming`) is picked
/// up without an edit.
pub const KUBERNETES_MINORS: &[KubernetesMinor] = &[
    KubernetesMinor {
        minor: 34,
        flags: &[],
        note: "every flag the daemons pass is in v1.34.4's `--help` (kube-apiserver, \
               kube-controller-manager, kube-scheduler, kubelet, kube-proxy; checked 2026-12-01)",
    },
    KubernetesMinor {
        minor: 35,
        flags: &[],
        note: "the pinned minor: the flags in xtask/src/cluster/daemons/ are written for it",
    },
    KubernetesMinor {
        minor: 36,
        flags: &[],
        note: "every flag the daemons pass is in v1.36.3's `--help` (kube-apiserver, \
               kube-controller-manager, kube-scheduler, kubelet, kube-proxy; checked 2026-12-01)",
    },
    KubernetesMinor {
        minor: 37,
        flags: &[],
        note: "every flag the daemons pass is in v1.37.2's `--help` (kube-apiserver, \
               kube-controller-manager, kube-scheduler, kubelet, kube-proxy; checked 2026-12-02). \
               What changes for the labs: the `WebhookRoundTripLoadBalancing` gate (Beta, on by \
               default from v1.37; kubernetes/kubernetes PR #139237, `k8s.io/apiserver` \
               `pkg/util/webhook/client.go`) resolves a webhook service's endpoint for each call \
               (a RoundTripper) instead of when a connection is dialled, so with \
               `--enable-aggregator-routing=true` (which the embedded node and k3s set) every \
               admission call picks a random Ready endpoint (`pkg/util/proxy/proxy.go`, \
               `RandomEndpoint`) where v1.35 reused an idle connection to the replica it had \
               dialled: lab C's share of the calls per replica changes (docs/lab-c.md). The gate \
               is left at its default (no flag set).",
    },
];

/// What the embedded backend needs to know about one Kyverno release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KyvernoRelease {
    /// The release, e.g. `v1.19.1` (the module version and the image tag).
    pub version: &'static str,
    /// `charts/kyverno/Chart.yaml` `version` in the module (the assembly checks it).
    pub chart_version: &'static str,
    /// The Kubernetes minors Kyverno states support for (inclusive).
    pub supported_minors: (u32, u32),
    /// Where the support range is stated.
    pub support_source: &'static str,
}

/// Kyverno's stated support ranges: endoflife.date's Kyverno record (`products/kyverno.md`),
/// which follows Kyverno's installation docs ("Compatibility Matrix").
const KYVERNO_SUPPORT_SOURCE: &str =
    "endoflife.date products/kyverno.md (Kyverno docs, installation, compatibility matrix)";

/// Every Kyverno release the embedded backend builds. Chart versions from each module's
/// `charts/kyverno/Chart.yaml` (`3.Y.Z` for `v1.Y.Z` since v1.17).
pub const KYVERNO_RELEASES: &[KyvernoRelease] = &[
    KyvernoRelease {
        version: "v1.18.2",
        chart_version: "3.8.2",
        supported_minors: (33, 35),
        support_source: KYVERNO_SUPPORT_SOURCE,
    },
    KyvernoRelease {
        version: "v1.19.0",
        chart_version: "3.9.0",
        supported_minors: (33, 35),
        support_source: KYVERNO_SUPPORT_SOURCE,
    },
    KyvernoRelease {
        version: "v1.19.1",
        chart_version: "3.9.1",
        supported_minors: (33, 35),
        support_source: KYVERNO_SUPPORT_SOURCE,
    },
];

/// A Kubernetes × Kyverno pair the embedded backend builds and runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Versions {
    /// `k8s.io/kubernetes` release, e.g. `v1.35.8`.
    pub kubernetes: String,
    /// `github.com/kyverno/kyverno` release, e.g. `v1.19.1`.
    pub kyverno: String,
}

impl Default for Versions {
    fn default() -> Self {
        Versions::pinned()
    }
}

/// Whether Kyverno states support for a cell's Kubernetes minor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    /// Inside the stated range.
    Supported,
    /// Outside it: the range `(first minor, last minor)` and where it is stated.
    Outside {
        /// The stated range of minors, inclusive.
        range: (u32, u32),
        /// Where it is stated.
        source: &'static str,
    },
}

impl Versions {
    /// The pinned pair (the default; builds from the committed wrapper modules).
    pub fn pinned() -> Versions {
        Versions {
            kubernetes: PINNED_KUBERNETES.to_string(),
            kyverno: PINNED_KYVERNO.to_string(),
        }
    }

    /// A pair, checked against the tables: both must be `vX.Y.Z`, the Kubernetes minor a row of
    /// [`KUBERNETES_MINORS`], the Kyverno release a row of [`KYVERNO_RELEASES`].
    ///
    /// # Errors
    /// A malformed version or one without a row (naming the table to extend).
    pub fn new(kubernetes: &str, kyverno: &str) -> anyhow::Result<Versions> {
        let v = Versions {
            kubernetes: kubernetes.to_string(),
            kyverno: kyverno.to_string(),
        };
        v.kubernetes_minor()?;
        v.kyverno_release()?;
        Ok(v)
    }

    /// `true` for the pinned pair.
    pub fn is_pinned(&self) -> bool {
        *self == Versions::pinned()
    }

    /// The Kubernetes release, parsed.
    ///
    /// # Errors
    /// Not `vX.Y.Z`.
    pub fn kubernetes_release(&self) -> anyhow::Result<Release> {
        Release::parse(&self.kubernetes).context("--kubernetes")
    }

    /// The row of [`KUBERNETES_MINORS`] for the Kubernetes version.
    ///
    /// # Errors
    /// Not `v1.Y.Z`, or no row for its minor.
    pub fn kubernetes_minor(&self) -> anyhow::Result<&'static KubernetesMinor> {
        let r = self.kubernetes_release()?;
        let known: Vec<String> = KUBERNETES_MINORS
            .iter()
            .map(|m| format!("v1.{}", m.minor))
            .collect();
        KUBERNETES_MINORS
            .iter()
            .find(|m| r.major == 1 && m.minor == r.minor)
            .with_context(|| {
                format!(
                    "--kubernetes {}: no row for v{}.{} in KUBERNETES_MINORS (xtask/src/upstream/versions.rs; known: {})",
                    self.kubernetes,
                    r.major,
                    r.minor,
                    known.join(", ")
                )
            })
    }

    /// The row of [`KYVERNO_RELEASES`] for the Kyverno version.
    ///
    /// # Errors
    /// Not `vX.Y.Z`, or no row for it.
    pub fn kyverno_release(&self) -> anyhow::Result<&'static KyvernoRelease> {
        Release::parse(&self.kyverno).context("--kyverno")?;
        let known: Vec<&str> = KYVERNO_RELEASES.iter().map(|k| k.version).collect();
        KYVERNO_RELEASES
            .iter()
            .find(|k| k.version == self.kyverno)
            .with_context(|| {
                format!(
                    "--kyverno {}: no row in KYVERNO_RELEASES (xtask/src/upstream/versions.rs; known: {})",
                    self.kyverno,
                    known.join(", ")
                )
            })
    }

    /// Whether Kyverno states support for this Kubernetes minor.
    ///
    /// # Errors
    /// As [`Versions::kubernetes_release`] and [`Versions::kyverno_release`].
    pub fn support(&self) -> anyhow::Result<Support> {
        let k = self.kubernetes_release()?;
        let ky = self.kyverno_release()?;
        let (lo, hi) = ky.supported_minors;
        Ok(if k.major == 1 && (lo..=hi).contains(&k.minor) {
            Support::Supported
        } else {
            Support::Outside {
                range: (lo, hi),
                source: ky.support_source,
            }
        })
    }

    /// The version a family's wrapper module is made for: `Some` for the two families that vary
    /// (`kubernetes`, `kyverno`), `None` for the others (always their committed wrapper).
    pub fn of_family(&self, family: &str) -> Option<&str> {
        match family {
            "kubernetes" => Some(&self.kubernetes),
            "kyverno" => Some(&self.kyverno),
            _ => None,
        }
    }

    /// Whether `family`'s version is the pinned one (families that do not vary always are).
    pub fn family_is_pinned(&self, family: &str) -> bool {
        self.of_family(family) == Versions::pinned().of_family(family)
    }

    /// `kubernetes v1.36.3 × kyverno v1.19.1`.
    pub fn label(&self) -> String {
        format!("kubernetes {} × kyverno {}", self.kubernetes, self.kyverno)
    }

    /// A name for directories and ids: `k8s-v1.36.3_kyverno-v1.19.1`.
    pub fn cell_id(&self) -> String {
        format!("k8s-{}_kyverno-{}", self.kubernetes, self.kyverno)
    }

    /// The daemon flags to change for this Kubernetes minor (empty for the pinned minor).
    ///
    /// # Errors
    /// As [`Versions::kubernetes_minor`].
    pub fn flag_changes(&self) -> anyhow::Result<&'static [FlagChange]> {
        Ok(self.kubernetes_minor()?.flags)
    }
}

/// Applies `changes` for `daemon` to its argument map (drop or set), in table order.
pub fn apply_flag_changes(
    daemon: &str,
    changes: &[FlagChange],
    args: &mut std::collections::BTreeMap<&'static str, String>,
) {
    for c in changes.iter().filter(|c| c.daemon == daemon) {
        match c.value {
            None => {
                args.remove(c.flag);
            }
            Some(v) => {
                args.insert(c.flag, v.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_parse_strictly() {
        let r = Release::parse("v1.36.3").unwrap();
        assert_eq!((r.major, r.minor, r.patch), (1, 36, 3));
        assert_eq!(r.staging(), "v0.36.3");
        assert_eq!(r.to_string(), "v1.36.3");
        for bad in [
            "1.36.3",
            "v1.36",
            "v1.36.3-rc.1",
            "v1.36.3+k3s1",
            "v1..3",
            "v1.x.3",
            "",
        ] {
            let e = Release::parse(bad).unwrap_err().to_string();
            assert!(e.contains("vMAJOR.MINOR.PATCH"), "{bad}: {e}");
        }
    }

    #[test]
    fn the_pinned_pair_is_the_default_and_has_rows() {
        let p = Versions::default();
        assert!(p.is_pinned());
        assert_eq!(p.kubernetes, "v1.35.8");
        assert_eq!(p.kyverno, "v1.19.1");
        assert_eq!(p.kyverno_release().unwrap().chart_version, "3.9.1");
        assert!(p.flag_changes().unwrap().is_empty());
        assert_eq!(p.support().unwrap(), Support::Supported);
        assert_eq!(p.cell_id(), "k8s-v1.35.8_kyverno-v1.19.1");
    }

    #[test]
    fn versions_without_a_row_are_refused_naming_the_table() {
        assert!(
            Versions::new("v1.37.2", "v1.19.1").is_ok(),
            "v1.37 has a row"
        );
        let e = Versions::new("v1.38.0", "v1.19.1").unwrap_err().to_string();
        assert!(
            e.contains("KUBERNETES_MINORS") && e.contains("v1.37"),
            "{e}"
        );
        let e = Versions::new("v1.30.1", "v1.19.1").unwrap_err().to_string();
        assert!(
            e.contains("KUBERNETES_MINORS") && e.contains("v1.36"),
            "{e}"
        );
        let e = Versions::new("v1.35.8", "v1.17.0").unwrap_err().to_string();
        assert!(
            e.contains("KYVERNO_RELEASES") && e.contains("v1.18.2"),
            "{e}"
        );
        let e = format!("{:#}", Versions::new("1.35.8", "v1.19.1").unwrap_err());
        assert!(e.contains("--kubernetes"), "{e}");
    }

    #[test]
    fn support_follows_kyvernos_stated_range() {
        let v = Versions::new("v1.36.3", "v1.19.1").unwrap();
        assert!(!v.is_pinned());
        assert!(matches!(
            v.support().unwrap(),
            Support::Outside {
                range: (33, 35),
                ..
            }
        ));
        assert_eq!(
            Versions::new("v1.34.4", "v1.18.2")
                .unwrap()
                .support()
                .unwrap(),
            Support::Supported
        );
    }

    #[test]
    fn only_kubernetes_and_kyverno_vary() {
        let v = Versions::new("v1.36.3", "v1.19.1").unwrap();
        assert_eq!(v.of_family("kubernetes"), Some("v1.36.3"));
        assert_eq!(v.of_family("kyverno"), Some("v1.19.1"));
        assert_eq!(v.of_family("helm"), None);
        assert!(!v.family_is_pinned("kubernetes"));
        assert!(v.family_is_pinned("kyverno"));
        assert!(v.family_is_pinned("containerd"));
    }

    #[test]
    fn flag_changes_drop_or_set_only_their_daemons_flags() {
        let changes = [
            FlagChange {
                daemon: "kubelet",
                flag: "gone",
                value: None,
                why: "t",
            },
            FlagChange {
                daemon: "kubelet",
                flag: "new",
                value: Some("1"),
                why: "t",
            },
            FlagChange {
                daemon: "kube-apiserver",
                flag: "keep",
                value: None,
                why: "t",
            },
        ];
        let mut args: std::collections::BTreeMap<&'static str, String> =
            [("gone", "x".to_string()), ("keep", "y".to_string())]
                .into_iter()
                .collect();
        apply_flag_changes("kubelet", &changes, &mut args);
        assert_eq!(args.get("gone"), None);
        assert_eq!(args.get("new").map(String::as_str), Some("1"));
        assert_eq!(args.get("keep").map(String::as_str), Some("y"));
    }
}
