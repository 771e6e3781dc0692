//! Upstream builds: every program of the embedded single-node cluster, built
//! from its Go module into a machine-level cache, plus the OCI images the
//! cluster runs and the assembled Kyverno chart.
//!
//! # Entry point
//!
//! [`ensure_built`] is the one call the cluster code and the test fixtures
//! make. It checks the prerequisites, builds what the cache lacks and returns
//! [`Artifacts`]: where every binary, the CNI plugins, the image archives and
//! the chart are. With a warm cache it builds nothing and returns in seconds.
//!
//! # The cache
//!
//! The cache lives outside the clone so that every clone on the machine
//! shares it: `$KCA_UPSTREAM_CACHE`, else `<user cache dir>/kca-webhook-lab/upstream`
//! (`~/.cache/kca-webhook-lab/upstream` for root on Linux). Each entry is a
//! directory named `<what>-<key>` where the key is the first 16 hex digits of
//! a SHA-256 over every input of that build (see [`cache::CacheKey`]):
//!
//! - `<family>-<key>/` (one per Go wrapper module under `xtask/upstream/`): the
//!   family's binaries and `build.json` (the exact commands). The key covers
//!   the wrapper's `go.mod`, `go.sum` and `tools.go`, the packages, build
//!   tags, the resolved `-ldflags`, the environment (`CGO_ENABLED`,
//!   `GOFLAGS`), `go version` and, for cgo builds, the C compiler's version.
//! - `pause-<key>/pause`: Kubernetes' `build/pause/linux/pause.c`, static.
//! - `images-<key>/*.tar`: OCI image layout archives (see [`images`]).
//! - `chart-<key>/kyverno/`: the assembled chart (see [`chart`]).
//! - `bin-<key>/`: symlinks to every binary (and `cni/` to the CNI plugins
//!   only), the directory [`Artifacts::bin_dir`] names.
//!
//! Every entry is written into `.tmp/` inside the cache and renamed into
//! place when complete, so a half-written binary never sits in the cache.
//! One build at a time per cache (an exclusive lock on `<cache>/.lock`).

pub mod cache;
pub mod chart;
pub mod components;
pub mod debian;
pub mod go;
pub mod images;
pub mod prereq;
pub mod progress;
pub mod versions;
pub mod wrapper;

use std::path::{Path, PathBuf};

use anyhow::Context as _;

pub use crate::flags::VersionArgs;
use crate::flags::{UpstreamCmd, UpstreamSub};

pub use chart::CHART_CHANGES;
pub use versions::Versions;

/// Environment variable that overrides the cache directory.
pub use crate::flags::CACHE_ENV;

/// What [`ensure_built`] produced: absolute paths inside the cache.
///
/// Every path stays valid until someone deletes the cache directory; a later
/// build with other inputs writes new entries beside it and never changes an
/// existing one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifacts {
    /// A directory with every program (symlinks into the cache entries):
    /// `kube-apiserver`, `kube-controller-manager`, `kube-scheduler`,
    /// `kubelet`, `kube-proxy`, `kine`, `containerd`,
    /// `containerd-shim-runc-v2`, `ctr`, `runc`, `bridge`, `loopback`,
    /// `host-local`, `portmap`, `crictl`, `helm`, and Kyverno's `kyverno`,
    /// `kyverno-init`, `background-controller`, `cleanup-controller`,
    /// `reports-controller`. Suitable as the first entry of `PATH` for
    /// containerd (which looks up `containerd-shim-runc-v2` and `runc` there).
    pub bin_dir: PathBuf,
    /// A directory holding only the CNI plugins (`bridge`, `loopback`,
    /// `host-local`, `portmap`): containerd's CRI `bin_dirs` / `bin_dir`.
    pub cni_bin_dir: PathBuf,
    /// The images the cluster runs, as OCI image layout tar archives that
    /// `ctr -n k8s.io images import <path>` accepts (the index carries the
    /// reference in `io.containerd.image.name` and
    /// `org.opencontainers.image.ref.name`). Order: pause first, then
    /// Kyverno's five images as listed in [`images::KYVERNO_IMAGES`].
    pub images: Vec<ImageArchive>,
    /// The assembled Kyverno chart directory (chart 3.9.1, appVersion
    /// v1.19.1) that `helm install kyverno <chart_dir> -n kyverno` accepts.
    /// Its changes to the upstream chart are listed in [`CHART_CHANGES`].
    ///
    /// `helm install` renders only the five Kyverno images made here. The
    /// chart's hooks and tests name images that are not made
    /// (`ghcr.io/kyverno/readiness-checker` in the pre-delete hooks and
    /// `helm test` pods, `reg.kyverno.io/kyverno/kyverno-cli` in the
    /// post-upgrade migration hook): they run only on `helm uninstall`,
    /// `helm upgrade` and `helm test`, so uninstall with `--no-hooks` (or set
    /// `webhooksCleanup.enabled=false`) and do not upgrade in place.
    pub chart_dir: PathBuf,
    /// The cache root these paths live under.
    pub cache_dir: PathBuf,
    /// The Kubernetes × Kyverno pair these artifacts were built for.
    pub versions: Versions,
}

impl Artifacts {
    /// The path of one program in [`Artifacts::bin_dir`], e.g. `binary("kubelet")`.
    pub fn binary(&self, name: &str) -> PathBuf {
        self.bin_dir.join(name)
    }

    /// The archive of one image by its full reference, e.g.
    /// `registry.k8s.io/pause:3.10.1`; `None` if no such image was made.
    pub fn image(&self, reference: &str) -> Option<&ImageArchive> {
        self.images.iter().find(|i| i.reference == reference)
    }
}

/// One image made by [`images`], ready for `ctr images import`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageArchive {
    /// Full reference as the pod specs name it, e.g.
    /// `reg.kyverno.io/kyverno/kyverno:v1.19.1`.
    pub reference: String,
    /// The OCI image layout tar archive.
    pub path: PathBuf,
    /// The image manifest's digest, `sha256:<64 hex>` (what containerd
    /// reports as the image's digest after the import).
    pub manifest_digest: String,
}

/// Options of [`ensure_built`].
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Cache directory; `None` means [`default_cache_dir`].
    pub cache_dir: Option<PathBuf>,
    /// Never run `apt-get`: only report missing prerequisites. (By default,
    /// when running as root on Debian, missing packages are installed.)
    pub no_install: bool,
    /// Which Kubernetes and Kyverno (default: the pinned pair, from the committed wrappers;
    /// another version's wrapper is made by [`wrapper::ensure_wrapper`]).
    pub versions: Versions,
}

/// The cache directory: `$KCA_UPSTREAM_CACHE` if set and non-empty, else
/// `<user cache dir>/kca-webhook-lab/upstream` (`dirs::cache_dir`).
///
/// # Errors
/// When neither is available (no home directory).
pub fn default_cache_dir() -> anyhow::Result<PathBuf> {
    if let Some(dir) = std::env::var_os(CACHE_ENV).filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    let base = dirs::cache_dir().with_context(|| {
        format!("no user cache directory (no home directory?); set {CACHE_ENV}")
    })?;
    Ok(base.join("kca-webhook-lab").join("upstream"))
}

/// The workspace root (the directory holding the top-level `Cargo.toml`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// The directory of the Go wrapper modules, `xtask/upstream/`.
pub fn wrappers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("upstream")
}

/// Builds whatever the cache lacks and returns where everything is.
///
/// Steps, each shown on stderr: prerequisites ([`prereq::check`]), then each
/// Go family in [`components::FAMILIES`] order (one progress line per
/// program with its elapsed time), the pause binary, the images, the chart,
/// and the `bin-<key>` directory of symlinks.
///
/// # Errors
/// - a missing prerequisite (with the packages to install),
/// - a failed `go build`: the program, the full command, the log file and the
///   last lines of Go's output,
/// - a failed `gcc` for pause, a chart that does not match expectations
///   (version, a dropped dependency enabled by default), I/O errors.
///
/// Nothing half-written is left in the cache on any error.
pub fn ensure_built(opts: &BuildOptions) -> anyhow::Result<Artifacts> {
    let cache_dir = match &opts.cache_dir {
        Some(d) => d.clone(),
        None => default_cache_dir()?,
    };
    let tools = prereq::check(!opts.no_install)?;
    let cache = cache::Cache::open(&cache_dir)?;
    let _lock = cache.lock()?;
    cache.clear_tmp()?;

    let env = go::GoEnv::detect(&tools)?;
    let versions = &opts.versions;
    let kyverno_release = versions.kyverno_release()?;
    versions.kubernetes_minor()?;
    if !versions.is_pinned() {
        crate::status_line!(
            " • building {} (the pinned pair is {}); other families use their committed wrappers",
            versions.label(),
            Versions::pinned().label()
        );
    }
    let mut built = Vec::new();
    let mut kyverno_wrapper = wrappers_dir().join("kyverno");
    // The first family that must be built starts the download of the later pinned families'
    // modules beside the builds ([`go::prefetch_modules`]); a warm cache starts nothing.
    let stop = std::sync::atomic::AtomicBool::new(false);
    let prefetching = std::cell::Cell::new(false);
    std::thread::scope(|s| {
        let result = (|| {
            for (i, family) in components::FAMILIES.iter().enumerate() {
                let version = versions
                    .of_family(family.name)
                    .filter(|_| !versions.family_is_pinned(family.name));
                let wrapper = wrapper::ensure_wrapper(&cache, &env, family, version)?;
                if family.name == "kyverno" {
                    kyverno_wrapper = wrapper.clone();
                }
                let on_build = || {
                    if !prefetching.replace(true) {
                        let rest: Vec<&components::Family> = components::FAMILIES[i + 1..]
                            .iter()
                            .filter(|f| versions.family_is_pinned(f.name))
                            .collect();
                        let (env, stop) = (&env, &stop);
                        s.spawn(move || go::prefetch_modules(env, &rest, stop));
                    }
                };
                built.push(go::ensure_family(&cache, &env, family, &wrapper, on_build)?);
            }
            anyhow::Ok(())
        })();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        result
    })?;
    // The sandbox image is the same for every cell: pause from the pinned Kubernetes module.
    let pause = images::ensure_pause(&cache, &env)?;
    let kyverno = built
        .iter()
        .find(|b| b.family.name == "kyverno")
        .context("internal: the kyverno family is missing from the table")?;
    let images = images::ensure_images(&cache, &pause, kyverno, &versions.kyverno)?;
    let helm = built
        .iter()
        .find(|b| b.family.name == "helm")
        .map(|b| b.dir.join("helm"))
        .context("internal: the helm family is missing from the table")?;
    let chart_dir = chart::ensure_chart(&cache, &env, &helm, &kyverno_wrapper, kyverno_release)?;
    let (bin_dir, cni_bin_dir) = cache::ensure_bin_dir(&cache, &built)?;
    Ok(Artifacts {
        bin_dir,
        cni_bin_dir,
        images,
        chart_dir,
        cache_dir,
        versions: versions.clone(),
    })
}

impl VersionArgs {
    /// The pair named, each defaulting to the pinned version, checked against the tables.
    ///
    /// # Errors
    /// As [`Versions::new`].
    pub fn resolve(&self) -> anyhow::Result<Versions> {
        let p = Versions::pinned();
        Versions::new(
            self.kubernetes.as_deref().unwrap_or(&p.kubernetes),
            self.kyverno.as_deref().unwrap_or(&p.kyverno),
        )
    }

    /// Whether either flag was given.
    pub fn given(&self) -> bool {
        self.kubernetes.is_some() || self.kyverno.is_some()
    }
}

impl UpstreamCmd {
    /// Runs the subcommand.
    pub fn run(self) -> anyhow::Result<()> {
        match self.cmd {
            UpstreamSub::Build {
                cache_dir,
                no_install,
                versions,
            } => {
                let started = std::time::Instant::now();
                let a = ensure_built(&BuildOptions {
                    cache_dir,
                    no_install,
                    versions: versions.resolve()?,
                })?;
                println!("versions  {}", a.versions.label());
                println!("cache     {}", a.cache_dir.display());
                println!("bin       {}", a.bin_dir.display());
                println!("cni bin   {}", a.cni_bin_dir.display());
                for i in &a.images {
                    println!(
                        "image     {} {} {}",
                        i.reference,
                        i.manifest_digest,
                        i.path.display()
                    );
                }
                println!("chart     {}", a.chart_dir.display());
                crate::status_line!(
                    "upstream build done in {:.1}s",
                    started.elapsed().as_secs_f64()
                );
                Ok(())
            }
            UpstreamSub::Status { cache_dir } => {
                let dir = match cache_dir {
                    Some(d) => d,
                    None => default_cache_dir()?,
                };
                cache::print_status(&dir)
            }
            UpstreamSub::ChartChanges => {
                for c in CHART_CHANGES {
                    println!("- {}: {}", c.file, c.change);
                }
                Ok(())
            }
        }
    }
}
