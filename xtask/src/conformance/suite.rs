//! The suite's programs and images, as cache entries of the upstream builder: the
//! `kubernetes-e2e` family (`e2e.test`, `agnhost`, `kubectl`, [`KUBERNETES_E2E`]) from the wrapper
//! `xtask/upstream/kubernetes-e2e/` (another Kubernetes release's wrapper made from it by
//! [`wrapper::ensure_wrapper`]), and `conformance-images-<key>/`: agnhost's image under the name
//! the suite's own `test/utils/image/manifest.go` asks for ([`super::suite_image`],
//! [`super::agnhost_spec`]) and, when that release's suite asks for another pause tag than the
//! node's, the node's pause program under that tag too.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::status::Step;
use crate::upstream::cache::{BuiltFamily, Cache, CacheKey};
use crate::upstream::components::{CONTAINERD_FAMILY, KUBERNETES_E2E};
use crate::upstream::go::{self, GoEnv};
use crate::upstream::images::{self, PAUSE_IMAGE, PauseBinary};
use crate::upstream::{ImageArchive, prereq, wrapper};

/// What [`ensure_suite`] made: absolute paths in the upstream cache.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The Kubernetes release the suite is from (`v1.35.8`).
    pub kubernetes: String,
    /// `e2e.test`.
    pub e2e_test: PathBuf,
    /// `kubectl` of the same release (the suite's `--kubectl-path`).
    pub kubectl: PathBuf,
    /// The images to import into the node: agnhost first, then pause under the suite's tag
    /// when it differs from the node's ([`PAUSE_IMAGE`]).
    pub images: Vec<ImageArchive>,
    /// The built `ctr` (containerd's client), to import the images into a node the kubeconfig
    /// backend names; `None` unless asked for.
    pub ctr: Option<PathBuf>,
}

/// Builds what the cache lacks of the suite of Kubernetes `kubernetes` and returns where it is.
/// `with_ctr`: also containerd's family, for its `ctr`.
///
/// # Errors
/// A prerequisite missing, a failed `go build`/`go test -c` (the program, command, log and Go's
/// last lines), the module's `manifest.go` not naming the images, I/O.
pub fn ensure_suite(
    kubernetes: &str,
    cache_dir: Option<PathBuf>,
    with_ctr: bool,
) -> anyhow::Result<Suite> {
    let cache_dir = match cache_dir {
        Some(d) => d,
        None => crate::upstream::default_cache_dir()?,
    };
    let tools = prereq::check(true)?;
    let cache = Cache::open(&cache_dir)?;
    let _lock = cache.lock()?;
    cache.clear_tmp()?;
    let env = GoEnv::detect(&tools)?;
    let version =
        (kubernetes != crate::upstream::versions::PINNED_KUBERNETES).then_some(kubernetes);
    let wrapper = wrapper::ensure_wrapper(&cache, &env, &KUBERNETES_E2E, version)?;
    let built = go::ensure_family(&cache, &env, &KUBERNETES_E2E, &wrapper, || {})?;
    let k8s = go::module_dirs(&env, &wrapper, &["k8s.io/kubernetes"])?;
    let manifest = k8s[0].dir.join("test/utils/image/manifest.go");
    let text =
        fs::read_to_string(&manifest).with_context(|| format!("reading {}", manifest.display()))?;
    let shown = manifest.display().to_string();
    let agnhost = super::suite_image(&text, &shown, "Agnhost")?;
    let pause_ref = super::suite_image(&text, &shown, "Pause")?;
    let pause = images::ensure_pause(&cache, &env)?;
    crate::upstream::debian::ensure(
        crate::upstream::debian::CONFORMANCE,
        "cargo xtask conformance",
        false,
    )
    .map_err(anyhow::Error::msg)?;
    let refs = (agnhost.as_str(), pause_ref.as_str());
    let images = ensure_suite_images(&cache, &built, &pause, Path::new(BUSYBOX), refs)?;
    let ctr = if with_ctr {
        let dir = crate::upstream::wrappers_dir().join(CONTAINERD_FAMILY.name);
        let c = go::ensure_family(&cache, &env, &CONTAINERD_FAMILY, &dir, || {})?;
        Some(c.dir.join("ctr"))
    } else {
        None
    };
    Ok(Suite {
        kubernetes: kubernetes.to_owned(),
        e2e_test: built.dir.join("e2e.test"),
        kubectl: built.dir.join("kubectl"),
        images,
        ctr,
    })
}

/// Debian's static BusyBox (package `busybox-static`), the agnhost image's `/bin`.
const BUSYBOX: &str = "/bin/busybox";

/// The images of [`Suite::images`] in `conformance-images-<key>/` (the key: the family's and
/// pause's keys, BusyBox's bytes and both references `(agnhost, pause)`), written unless there.
fn ensure_suite_images(
    cache: &Cache,
    built: &BuiltFamily,
    pause: &PauseBinary,
    busybox: &Path,
    (agnhost, pause_ref): (&str, &str),
) -> anyhow::Result<Vec<ImageArchive>> {
    let mut key = CacheKey::new("conformance-images/v2");
    key.field("kubernetes-e2e", built.key.as_bytes())
        .field("pause", pause.key.as_bytes())
        .file("busybox", busybox)?
        .field("agnhost reference", agnhost.as_bytes())
        .field("pause reference", pause_ref.as_bytes());
    let dest = cache.entry("conformance-images", &key);
    let index = dest.join("images.json");
    if index.is_file() {
        crate::upstream::progress::cached("conformance images", &dest);
        return images::read_images_json(&index, &dest);
    }
    let step = Step::start(format!("Writing the suite's images ({agnhost})"));
    let staging = cache.staging(&format!("conformance-images-{}", key.short()))?;
    let mut specs = vec![(
        "agnhost.tar",
        super::agnhost_spec(&built.dir.join("agnhost"), busybox, agnhost),
    )];
    if pause_ref != PAUSE_IMAGE {
        specs.push(("pause.tar", images::pause_spec(&pause.path, pause_ref)));
    }
    let mut list = Vec::new();
    for (file, spec) in &specs {
        let w = images::write_layout_archive(spec, &staging.path().join(file))?;
        list.push(serde_json::json!({
            "reference": spec.reference,
            "file": file,
            "manifest_digest": w.manifest_digest,
            "config_digest": w.config_digest,
            "layer_digest": w.layer_digest,
            "layer_size": w.layer_size,
        }));
    }
    let text = serde_json::to_vec_pretty(&list).context("rendering images.json")?;
    crate::upstream::cache::write_file(&staging.path().join("images.json"), &text)?;
    staging.commit(&dest)?;
    step.ok();
    images::read_images_json(&index, &dest)
}

/// Imports `images` into the containerd behind `socket` (namespace `k8s.io`, where kubelet
/// looks) with `ctr`, then checks it lists each reference.
///
/// # Errors
/// `ctr` fails (its command and output), or an image is not listed after its import.
pub fn import_images(ctr: &Path, socket: &Path, images: &[ImageArchive]) -> anyhow::Result<()> {
    let step = Step::start(format!(
        "importing {} image(s) into {}",
        images.len(),
        socket.display()
    ));
    let sh = crate::command::shell()?;
    for i in images {
        let path = &i.path;
        crate::command::run(xshell::cmd!(
            sh,
            "{ctr} -a {socket} -n k8s.io images import {path}"
        ))
        .with_context(|| format!("importing {}", i.reference))?;
    }
    let listed = crate::command::run(xshell::cmd!(sh, "{ctr} -a {socket} -n k8s.io images ls -q"))?;
    for i in images {
        if !listed.stdout.lines().any(|l| l.trim() == i.reference) {
            anyhow::bail!(
                "after importing {} the node's containerd does not list {}",
                i.path.display(),
                i.reference
            );
        }
    }
    step.ok();
    Ok(())
}
