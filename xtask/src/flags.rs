//! xtask's command line: the clap types of every subcommand, in one file (rust-analyzer's
//! `flags.rs` shape). The domain modules hold no clap attribute: each implements its command's
//! `run` on these types (`impl flags::ClusterCmd` in `cluster/`), and `main.rs` holds the
//! top-level `Cmd`. A ground-floor module: it names no other module of xtask, so the defaults the
//! flags show (`--name`, `--k3s-tag`, the cache variable) are defined here and read from here.
//! `matrix`'s flags are still in `matrix/mod.rs` (its `--lab` is [`LabChoice`], defined here).

use std::path::PathBuf;

/// Default cluster name of `cargo xtask cluster up|down|status` (`--name`).
pub const DEFAULT_NAME: &str = "kca";

/// Environment variable that overrides the upstream cache directory (`--cache-dir`).
pub const CACHE_ENV: &str = "KCA_UPSTREAM_CACHE";

/// The rancher/k3s image tag of Kubernetes v1.35.8 (k3s release `v1.35.8+k3s1`; Docker tags use
/// `-` for `+`): the k3s backend's default (`--k3s-tag`).
pub const K3S_TAG: &str = "v1.35.8-k3s1";

/// Parses `--run-id`: non-empty, at most 64 of `[A-Za-z0-9_-]` (it names a directory).
pub fn parse_run_id(s: &str) -> std::result::Result<String, String> {
    if !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "expected 1-64 letters, digits, '-' or '_', found {s:?}"
        ))
    }
}

/// `--kubernetes vX.Y.Z --kyverno vX.Y.Z`: the pair to build or run (flattened into `upstream
/// build`, `cluster up` and `lab run`). Each defaults to the pinned version.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct VersionArgs {
    /// Kubernetes release (`k8s.io/kubernetes` module version), e.g. v1.36.3; default the pinned
    /// v1.35.8. Its minor needs a row in `KUBERNETES_MINORS` (xtask/src/upstream/versions.rs).
    #[arg(long, value_name = "vX.Y.Z")]
    pub kubernetes: Option<String>,
    /// Kyverno release (`github.com/kyverno/kyverno` module version), e.g. v1.18.2; default the
    /// pinned v1.19.1. Needs a row in `KYVERNO_RELEASES` (xtask/src/upstream/versions.rs).
    #[arg(long, value_name = "vX.Y.Z")]
    pub kyverno: Option<String>,
}

/// `cargo xtask upstream …`: build the upstream programs, images and chart.
#[derive(clap::Args, Debug)]
pub struct UpstreamCmd {
    /// Which `upstream` subcommand.
    #[command(subcommand)]
    pub cmd: UpstreamSub,
}

/// The subcommands of `cargo xtask upstream`.
// The field docs are `--help` text, shown as written: `<user cache dir>` is no HTML tag.
#[allow(rustdoc::invalid_html_tags)]
#[derive(clap::Subcommand, Debug)]
pub enum UpstreamSub {
    /// Build every program, image and the chart that the cache lacks (a warm
    /// cache builds nothing), then print where they are.
    Build {
        /// Cache directory (default: $KCA_UPSTREAM_CACHE or
        /// <user cache dir>/kca-webhook-lab/upstream).
        #[arg(long, env = CACHE_ENV)]
        cache_dir: Option<PathBuf>,
        /// Only report missing prerequisites; never run apt-get.
        #[arg(long)]
        no_install: bool,
        /// Which Kubernetes and Kyverno to build (default: the pinned pair).
        #[command(flatten)]
        versions: VersionArgs,
    },
    /// Print the cache directory, its entries and their sizes; builds nothing.
    Status {
        /// Cache directory (default as for `build`).
        #[arg(long, env = CACHE_ENV)]
        cache_dir: Option<PathBuf>,
    },
    /// Print the chart changes the assembly makes (for the README).
    ChartChanges,
}

/// `cargo xtask cluster …`
#[derive(clap::Args, Debug)]
pub struct ClusterCmd {
    /// Which `cluster` subcommand.
    #[command(subcommand)]
    pub cmd: ClusterSub,
}

/// The subcommands of `cargo xtask cluster`.
#[derive(clap::Subcommand, Debug)]
pub enum ClusterSub {
    /// Bring a fresh cluster up (Kyverno answering, lab namespaces and mark in place).
    Up {
        /// Cluster name.
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        /// Keep a half-started cluster when `up` fails (for debugging).
        #[arg(long)]
        retain: bool,
        /// Stop after the node is Ready (no Kyverno, no lab environment).
        #[arg(long)]
        no_kyverno: bool,
        /// Which Kubernetes and Kyverno (default: the pinned pair).
        #[command(flatten)]
        versions: VersionArgs,
    },
    /// Stop everything and remove every leftover (works after a crash).
    Down {
        /// Cluster name.
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
    },
    /// Show the cluster's state, kubeconfig, CRI endpoint, node.
    Status {
        /// Cluster name.
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `cargo xtask lab …`
#[derive(clap::Args, Debug)]
pub struct LabCmd {
    /// Which `lab` subcommand.
    #[command(subcommand)]
    pub cmd: LabSub,
}

/// The subcommands of `cargo xtask lab`.
#[derive(clap::Subcommand, Debug)]
pub enum LabSub {
    /// Run a lab (or every lab, each on its own fresh cluster) end to end and collect artifacts.
    Run(LabRunArgs),
    /// Print a Markdown table of the key facts of the lab runs under an artifacts directory
    /// (the nightly job summary).
    Summary {
        /// A directory holding `<run-id>/<lab>/` or `<lab>/` artifact directories (searched recursively).
        dir: PathBuf,
    },
    /// Print a Markdown summary of every junit.xml under an artifacts directory (the nightly job
    /// summary): counts per file and each failing test case.
    JunitSummary {
        /// A directory holding `<run-id>/junit.xml` files (searched recursively).
        dir: PathBuf,
    },
}

/// Options of `lab run`.
#[derive(clap::Args, Debug)]
pub struct LabRunArgs {
    /// Which lab, or all (default: every lab, in the registry's order; the kubeconfig backend
    /// needs one).
    #[arg(long, value_name = LAB_VALUES.as_str(), value_parser = parse_lab_choice)]
    pub lab: Option<LabChoice>,
    /// Embedded backend, several labs: run them at the same time, each on its own cluster, every
    /// line labelled `[lab b]` (the labs mostly wait, so they overlap; docs/bench.md has the
    /// figures). The default; the flag says it explicitly.
    #[arg(long, conflicts_with = "one_at_a_time")]
    pub at_once: bool,
    /// Run the labs one after another, each on its fresh cluster torn down before the next lab
    /// starts (one cluster's memory at a time; lines not labelled).
    #[arg(long)]
    pub one_at_a_time: bool,
    /// Keep the cluster running afterwards (for debugging); `cargo xtask cluster down --name N` ends it.
    #[arg(long)]
    pub retain: bool,
    /// The run id naming `target/lab-artifacts/<run-id>/` (default: the UTC time,
    /// `20261129T151500Z`); letters, digits, `-` and `_` only.
    #[arg(long, value_parser = parse_run_id)]
    pub run_id: Option<String>,
    /// Where the cluster comes from (`--cluster embedded|kubeconfig|k3s` and their flags).
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Embedded backend: which Kubernetes and Kyverno to build and run (default: the pinned pair).
    #[command(flatten)]
    pub versions: VersionArgs,
}

/// `cargo xtask guest …`
#[derive(clap::Args, Debug)]
pub struct GuestCmd {
    /// Which `guest` subcommand.
    #[command(subcommand)]
    pub cmd: GuestSub,
}

/// The subcommands of `cargo xtask guest`.
#[derive(clap::Subcommand, Debug)]
pub enum GuestSub {
    /// Build a Debian 12 cgroup v2 guest, boot it, run the steps inside, bring the results back
    /// to `target/guest-results/<run-id>/`, remove the guest.
    Run(GuestRunArgs),
}

/// Options of `guest run`.
#[derive(clap::Args, Debug, Clone)]
pub struct GuestRunArgs {
    /// What runs inside, in order: `up` (cluster up, status, down), `lab-a`, `lab-b`
    /// (`lab run --lab X`), `exec:<shell command>` (run from the checkout).
    #[arg(long = "step", default_values_t = ["lab-b".to_string(), "lab-a".to_string()])]
    pub steps: Vec<String>,
    /// `auto` (KVM when it can boot a stock kernel, else software emulation), `kvm`, `tcg`.
    #[arg(long, default_value = "auto")]
    pub accel: String,
    /// Guest CPUs.
    #[arg(long, default_value_t = 2)]
    pub cpus: u32,
    /// Guest memory in MiB.
    #[arg(long, default_value_t = 8192)]
    pub memory_mib: u32,
    /// Bound of the whole guest run (boot, steps, power-off) in minutes.
    #[arg(long, default_value_t = 90)]
    pub bound_min: u64,
    /// Keep `target/guest/<run-id>/` (root file system, disk image, kernel) afterwards.
    #[arg(long)]
    pub keep: bool,
    /// Keep the debootstrapped base root file system in `target/guest/base-bookworm/` and use it
    /// instead of debootstrap while it is there (`rm -r` it to start from Debian again).
    #[arg(long)]
    pub keep_base: bool,
    /// Run id naming `target/guest/<run-id>` and `target/guest-results/<run-id>`
    /// (default: `guest-<UTC time>`).
    #[arg(long)]
    pub run_id: Option<String>,
}

/// `--lab <lab>|all` of `lab run`, `matrix` and `bench`: which labs to run, in the registry's
/// order. The one definition: its values are the wire names of [`lab::acts::LABS`]
/// ([`lab::evidence::Lab::as_str`]) and `all` (every lab of the registry, in its order), so a lab
/// added to the registry is a value here without an edit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabChoice(Vec<lab::evidence::Lab>);

impl LabChoice {
    /// Every lab of [`lab::acts::LABS`], in its order.
    pub fn all() -> LabChoice {
        LabChoice(lab::acts::LABS.to_vec())
    }

    /// The labs chosen, in the registry's order (never empty).
    pub fn labs(&self) -> Vec<lab::evidence::Lab> {
        self.0.clone()
    }

    /// The accepted values, the registry's wire names then `all`, `|`-separated (for help and
    /// errors).
    pub fn values() -> String {
        let mut v: Vec<&str> = lab::acts::LABS.iter().map(|l| l.as_str()).collect();
        v.push("all");
        v.join("|")
    }
}

/// `--lab`'s value name in `--help` ([`LabChoice::values`], made once from the
/// registry: clap takes a `&'static str`).
pub static LAB_VALUES: std::sync::LazyLock<String> = std::sync::LazyLock::new(LabChoice::values);

/// Parses `--lab`: a lab's wire name from [`lab::acts::LABS`] or `all`.
///
/// # Errors
/// Anything else, naming the accepted values.
pub fn parse_lab_choice(s: &str) -> std::result::Result<LabChoice, String> {
    if s == "all" {
        return Ok(LabChoice::all());
    }
    lab::acts::LABS
        .iter()
        .find(|l| l.as_str() == s)
        .map(|l| LabChoice(vec![*l]))
        .ok_or_else(|| format!("expected one of {}, found {s:?}", LabChoice::values()))
}

/// `cargo xtask bench`
#[derive(clap::Args, Debug)]
pub struct BenchCmd {
    /// How many times to run the labs.
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Which labs, or all (every lab, in the registry's order).
    #[arg(long, value_name = LAB_VALUES.as_str(), value_parser = parse_lab_choice, default_value = "all")]
    pub lab: LabChoice,
    /// Run nothing: read a bench record (`target/bench/<id>.json`), recompute its table and
    /// print it (also rewriting the record's rows and its `.md` beside it).
    #[arg(long, value_name = "JSON")]
    pub render: Option<PathBuf>,
}

/// `cargo xtask dist`
#[derive(clap::Args, Debug)]
pub struct DistCmd {
    /// Where the binaries and SHA256SUMS go (relative to the workspace root; not `target/dist`,
    /// which is cargo's directory of the `dist` profile's host artifacts).
    #[arg(long, default_value = "target/dist-files")]
    pub out: PathBuf,
    /// Build and checksum only: skip the runs inside a root filesystem without a C library.
    #[arg(long)]
    pub no_check: bool,
    /// The GitHub repository (`OWNER/NAME`) the release is published from: the krew manifest's
    /// download URIs and homepage. Without it no krew manifest is written.
    #[arg(long, env = "GITHUB_REPOSITORY", value_name = "OWNER/NAME")]
    pub repository: Option<String>,
    /// Build nothing: write the krew manifest `kca-webhook-lab.yaml` into DIR for every archive
    /// its `SHA256SUMS` lists (the release job, after the architectures' files are merged).
    #[arg(long, value_name = "DIR", requires = "repository")]
    pub krew_from: Option<PathBuf>,
}

/// `--cluster` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    /// Fresh embedded cluster (default).
    Embedded,
    /// Existing cluster through `--kubeconfig` / `--cri-endpoint`.
    Kubeconfig,
    /// k3s in Docker (testcontainers).
    K3s,
}

/// The backend flags of `cargo xtask lab run` (flattened into its arguments).
#[derive(clap::Args, Debug, Clone)]
pub struct BackendArgs {
    /// Where the cluster comes from.
    #[arg(long = "cluster", value_enum, default_value = "embedded")]
    pub kind: BackendKind,
    /// kubeconfig backend: the existing cluster's kubeconfig (default: /etc/rancher/k3s/k3s.yaml when present).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// kubeconfig backend: the node's CRI endpoint (default: /run/k3s/containerd/containerd.sock when present).
    #[arg(long)]
    pub cri_endpoint: Option<PathBuf>,
    /// kubeconfig backend: install Kyverno from the assembled chart with the built Helm when it is absent.
    #[arg(long)]
    pub install_kyverno: bool,
    /// kubeconfig backend: put the lab mark on the cluster (faults are refused on a cluster without it).
    #[arg(long)]
    pub mark_as_lab: bool,
    /// kubeconfig/k3s backends: accept Kubernetes/Kyverno versions other than the pinned
    /// v1.35.8/v1.19.1 (the versions found are recorded in backend.json).
    #[arg(long)]
    pub allow_other_versions: bool,
    /// k3s backend: the rancher/k3s image tag.
    #[arg(long, default_value = K3S_TAG)]
    pub k3s_tag: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab::evidence::Lab;

    #[test]
    fn lab_choice_takes_the_registrys_names_and_all() {
        // Each lab of the registry by its wire name, `all` for every one in the registry's order.
        for lab in lab::acts::LABS {
            assert_eq!(parse_lab_choice(lab.as_str()).unwrap().labs(), vec![lab]);
        }
        assert_eq!(parse_lab_choice("a").unwrap().labs(), vec![Lab::A]);
        assert_eq!(
            parse_lab_choice("all").unwrap().labs(),
            lab::acts::LABS.to_vec()
        );
        assert_eq!(LabChoice::all().labs(), lab::acts::LABS.to_vec());
        let names: Vec<&str> = lab::acts::LABS.iter().map(|l| l.as_str()).collect();
        let values = format!("{}|all", names.join("|"));
        assert!(values.starts_with("a|b|c|"), "{values}");
        assert_eq!(LabChoice::values(), values);
        // A name the registry does not have (`z`, past any lab's letter) is refused with the list.
        for bad in ["both", "", "A", "z"] {
            let e = parse_lab_choice(bad).unwrap_err();
            assert!(
                e.contains(&values) && e.contains(&format!("{bad:?}")),
                "{e}"
            );
        }
    }

    #[test]
    fn bench_defaults_to_every_lab() {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            bench: BenchCmd,
        }
        let c = Cli::try_parse_from(["x"]).unwrap();
        assert_eq!(c.bench.lab, LabChoice::all());
        let c = Cli::try_parse_from(["x", "--lab", "c"]).unwrap();
        assert_eq!(c.bench.lab.labs(), vec![Lab::C]);
        assert!(Cli::try_parse_from(["x", "--lab", "both"]).is_err());
        // `--help` names the registry's labs (the value name is made from it).
        let help = <Cli as clap::CommandFactory>::command()
            .render_help()
            .to_string();
        assert!(
            help.contains(&format!("--lab <{}>", LabChoice::values())),
            "{help}"
        );
    }
}

/// `cargo xtask conformance`
#[derive(clap::Args, Debug)]
pub struct ConformanceCmd {
    /// The specs to run (a Ginkgo `--ginkgo.focus` regular expression on the spec's full text;
    /// default `AdmissionWebhook|ValidatingAdmissionPolicy`).
    #[arg(long, value_name = "REGEX")]
    pub focus: Option<String>,
    /// The Kubernetes release whose `e2e.test` runs (and, on the embedded backend, whose node it
    /// runs against); default the pinned v1.35.8. Needs a row in `KUBERNETES_MINORS`.
    #[arg(long, value_name = "vX.Y.Z")]
    pub kubernetes: Option<String>,
    /// `embedded` (a fresh node without Kyverno, torn down afterwards) or `kubeconfig` (an existing
    /// cluster, e.g. a student's k3s).
    #[arg(long = "cluster", value_enum, default_value = "embedded")]
    pub cluster: ConformanceCluster,
    /// kubeconfig backend: the cluster's kubeconfig (default: /etc/rancher/k3s/k3s.yaml when present).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// kubeconfig backend: the node's containerd socket, where the suite's images are imported
    /// (default: /run/k3s/containerd/containerd.sock when present; without one the images must be
    /// on the node already).
    #[arg(long)]
    pub cri_endpoint: Option<PathBuf>,
    /// Embedded backend: the node's name (default `conformance`).
    #[arg(long, default_value = "conformance")]
    pub name: String,
    /// Keep the embedded node running afterwards; `cargo xtask cluster down --name N` ends it.
    #[arg(long)]
    pub retain: bool,
    /// Where the JUnit report, the suite's log and the verdict go (default
    /// `target/conformance/<UTC time>/`).
    #[arg(long, value_name = "DIR")]
    pub report_dir: Option<PathBuf>,
}

/// Where `cargo xtask conformance` runs the suite.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConformanceCluster {
    /// A fresh embedded node without Kyverno.
    Embedded,
    /// An existing cluster through its kubeconfig.
    Kubeconfig,
}
