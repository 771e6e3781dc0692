//! The images the embedded cluster runs, made from the built binaries as OCI
//! image layout tar archives that `ctr -n k8s.io images import` accepts.
//!
//! No registry is reachable, so nothing is pulled: each image is one layer
//! made here, with our own code (`oci-spec` for the index, manifest and
//! config, `tar` + `flate2` for the layer, `sha2` for digests).
//!
//! - `registry.k8s.io/pause:3.10.1`: Kubernetes' own
//!   `build/pause/linux/pause.c` from the `k8s.io/kubernetes` module, built
//!   as its `build/pause/Makefile` does (`-Os -Wall -Werror -static`, stripped,
//!   `-DVERSION=v3.10.1-v1.35.8`); image as its `Dockerfile`: `/pause`,
//!   `USER 65535:65535`, `ENTRYPOINT ["/pause"]`.
//! - `reg.kyverno.io/kyverno/{kyverno,kyvernopre,background-controller,cleanup-controller,reports-controller}:v1.19.1`
//!   (the names and tags the chart 3.9.1 renders: `defaultRegistry`
//!   `reg.kyverno.io`, tag = appVersion), laid out as ko builds Kyverno's
//!   images (`.ko.yaml`, base `ghcr.io/wolfi-dev/static`): the binary at
//!   `/ko-app/<binary>` (mode 0555), entrypoint that path, `PATH` ending in
//!   `:/ko-app`, `KO_DATA_PATH=/var/run/ko`; from the static base:
//!   `SSL_CERT_FILE`, the CA bundle, `/etc/passwd` and `/etc/group` with
//!   root, `nobody` (65534) and `nonroot` (65532), user 65532, `/tmp` (1777).
//!   The chart's pods run as 65534 with a read-only root file system.
//!
//! Deterministic: entries sorted, mtime 0, uid/gid 0, gzip without a time
//! stamp, JSON in RFC 8785 canonical form; the same binaries give the same
//! digests.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read as _, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Context as _;
use oci_spec::image::{
    ANNOTATION_REF_NAME, Arch, ConfigBuilder, Descriptor, DescriptorBuilder, Digest,
    HistoryBuilder, ImageConfigurationBuilder, ImageIndexBuilder, ImageManifestBuilder, MediaType,
    Os, RootFsBuilder,
};
use sha2::{Digest as _, Sha256};

use super::ImageArchive;
use super::cache::{BuiltFamily, Cache, CacheKey};
use super::go::{GoEnv, module_dirs};
use super::prereq::CA_BUNDLE;
use crate::status::Step;

/// The annotation containerd's importer reads the full image name from.
pub const ANNOTATION_CONTAINERD_IMAGE_NAME: &str = "io.containerd.image.name";

/// Pause image reference (Kubernetes v1.35's default sandbox image).
pub const PAUSE_IMAGE: &str = "registry.k8s.io/pause:3.10.1";

/// The `VERSION` define pause.c prints for `-v` (`v$(TAG)-$(REV)` in its
/// Makefile; REV is the Kubernetes version here, the module has no git).
pub const PAUSE_VERSION_DEFINE: &str = "v3.10.1-v1.35.8";

/// Kyverno's registry as the chart renders it (`image.defaultRegistry`).
pub const KYVERNO_REGISTRY: &str = "reg.kyverno.io";

/// Kyverno's image tag of the pinned pair: the chart's appVersion (another Kyverno release tags
/// its images with its own version, [`ensure_images`]).
pub const KYVERNO_TAG: &str = "v1.19.1";

/// Kyverno's images: (repository under [`KYVERNO_REGISTRY`], binary name),
/// as the chart's values (`admissionController.container.image` …) and
/// `.ko.yaml` name them.
pub const KYVERNO_IMAGES: &[(&str, &str)] = &[
    ("kyverno/kyverno", "kyverno"),
    ("kyverno/kyvernopre", "kyverno-init"),
    ("kyverno/background-controller", "background-controller"),
    ("kyverno/cleanup-controller", "cleanup-controller"),
    ("kyverno/reports-controller", "reports-controller"),
];

/// Fixed time of every entry and history record (ko's default `SOURCE_DATE_EPOCH`).
const EPOCH_RFC3339: &str = "1970-01-01T00:00:00Z";

/// The static pause binary in the cache.
#[derive(Debug, Clone)]
pub struct PauseBinary {
    /// Path of the binary.
    pub path: PathBuf,
    /// Its cache key (64 hex digits).
    pub key: String,
}

/// Builds `pause` from Kubernetes' `build/pause/linux/pause.c` into the cache
/// (`pause-<key>/pause`), unless it is there.
///
/// # Errors
/// The module cannot be found, or `gcc` fails (its command and output).
pub fn ensure_pause(cache: &Cache, env: &GoEnv) -> anyhow::Result<PauseBinary> {
    let wrapper = super::wrappers_dir().join("kubernetes");
    let k8s = module_dirs(env, &wrapper, &["k8s.io/kubernetes"])?;
    let src = k8s[0].dir.join("build/pause/linux/pause.c");
    let source = fs::read(&src).with_context(|| format!("reading {}", src.display()))?;
    let define = format!("-DVERSION={PAUSE_VERSION_DEFINE}");
    let flags = ["-Os", "-Wall", "-Werror", "-static", "-s", define.as_str()];
    let mut key = CacheKey::new("pause/v1");
    key.field("pause.c", &source)
        .field("cflags", flags.join(" ").as_bytes())
        .field("cc", env.cc_version.as_bytes());
    let dest = cache.entry("pause", &key);
    let bin = dest.join("pause");
    if bin.is_file() {
        super::progress::cached("pause", &dest);
        return Ok(PauseBinary {
            path: bin,
            key: key.hex(),
        });
    }
    let step = Step::start(format!("Building pause from {}", src.display()));
    let staging = cache.staging(&format!("pause-{}", key.short()))?;
    super::cache::write_file(&staging.path().join("pause.c"), &source)?;
    let mut cmd = Command::new(&env.tools.gcc);
    cmd.current_dir(staging.path())
        .args(flags)
        .args(["-o", "pause", "pause.c"]);
    crate::command::run(cmd).context("building pause")?;
    fs::remove_file(staging.path().join("pause.c")).context("removing the pause.c copy")?;
    staging.commit(&dest)?;
    step.ok();
    Ok(PauseBinary {
        path: bin,
        key: key.hex(),
    })
}

/// Makes the image archives into `images-<key>/` unless they are there.
/// The key covers the pause and Kyverno cache keys, the CA bundle and the
/// format version of this writer.
///
/// # Errors
/// A binary or the CA bundle cannot be read, or an archive cannot be written.
pub fn ensure_images(
    cache: &Cache,
    pause: &PauseBinary,
    kyverno: &BuiltFamily,
    kyverno_tag: &str,
) -> anyhow::Result<Vec<ImageArchive>> {
    let ca = fs::read(CA_BUNDLE).with_context(|| format!("reading {CA_BUNDLE}"))?;
    let mut key = CacheKey::new("images/v1");
    key.field("pause", pause.key.as_bytes())
        .field("kyverno", kyverno.key.as_bytes())
        .field("ca-certificates", &ca);
    let dest = cache.entry("images", &key);
    let index = dest.join("images.json");
    if index.is_file() {
        let images = read_images_json(&index, &dest)?;
        super::progress::cached("images", &dest);
        return Ok(images);
    }
    let step = Step::start("Writing the images (pause, Kyverno's five controllers)");
    let staging = cache.staging(&format!("images-{}", key.short()))?;
    let mut specs = vec![(
        "pause.tar".to_string(),
        pause_spec(&pause.path, PAUSE_IMAGE),
    )];
    for (repo, binary) in KYVERNO_IMAGES {
        let file = format!("{}.tar", repo.rsplit('/').next().unwrap_or(repo));
        specs.push((
            file,
            ko_spec(repo, binary, kyverno_tag, &kyverno.dir.join(binary), &ca),
        ));
    }
    let mut images = Vec::new();
    for (file, spec) in &specs {
        let written = write_layout_archive(spec, &staging.path().join(file))?;
        images.push(serde_json::json!({
            "reference": spec.reference,
            "file": file,
            "manifest_digest": written.manifest_digest,
            "config_digest": written.config_digest,
            "layer_digest": written.layer_digest,
            "layer_size": written.layer_size,
        }));
    }
    let text = serde_json::to_vec_pretty(&images).context("rendering images.json")?;
    super::cache::write_file(&staging.path().join("images.json"), &text)?;
    staging.commit(&dest)?;
    step.ok();
    read_images_json(&index, &dest)
}

/// The archives listed in an images entry's `images.json` (paths made absolute under `dir`).
///
/// # Errors
/// The file cannot be read or parsed.
pub fn read_images_json(path: &Path, dir: &Path) -> anyhow::Result<Vec<ImageArchive>> {
    #[derive(serde::Deserialize)]
    struct Entry {
        reference: String,
        file: String,
        manifest_digest: String,
    }
    let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let entries: Vec<Entry> =
        serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()))?;
    Ok(entries
        .into_iter()
        .map(|e| ImageArchive {
            reference: e.reference,
            path: dir.join(e.file),
            manifest_digest: e.manifest_digest,
        })
        .collect())
}

/// Where a file's bytes come from.
#[derive(Debug, Clone)]
pub enum Source {
    /// Bytes in memory.
    Bytes(Vec<u8>),
    /// A file on disk (read when the layer is written).
    Path(PathBuf),
}

/// One entry of the image's single layer. Paths are relative (`etc/passwd`),
/// directories without a trailing slash.
#[derive(Debug, Clone)]
pub enum Entry {
    /// A directory with its mode (e.g. `0o1777` for `tmp`).
    Dir {
        /// Relative path.
        path: String,
        /// Permission bits.
        mode: u32,
    },
    /// A regular file.
    File {
        /// Relative path.
        path: String,
        /// Permission bits.
        mode: u32,
        /// Contents.
        source: Source,
    },
    /// A symbolic link (mode 0777, as `ln -s` makes it).
    Symlink {
        /// Relative path.
        path: String,
        /// What it points at, e.g. `busybox`.
        target: String,
    },
}

impl Entry {
    /// The entry's relative path.
    pub fn path(&self) -> &str {
        match self {
            Entry::Dir { path, .. } | Entry::File { path, .. } | Entry::Symlink { path, .. } => {
                path
            }
        }
    }
}

/// An image to write: one layer, the runtime config, its reference.
#[derive(Debug, Clone)]
pub struct ImageSpec {
    /// Full reference, e.g. `registry.k8s.io/pause:3.10.1`.
    pub reference: String,
    /// The layer's entries (sorted by path when written).
    pub entries: Vec<Entry>,
    /// `config.Entrypoint`.
    pub entrypoint: Vec<String>,
    /// `config.Cmd` (empty: left out of the config, as for pause and the ko images).
    pub cmd: Vec<String>,
    /// `config.Env`.
    pub env: Vec<String>,
    /// `config.User`.
    pub user: String,
    /// The history record's `created_by`.
    pub created_by: String,
}

/// What [`write_layout_archive`] wrote: digests are `sha256:<hex>`, sizes bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenImage {
    /// The manifest's digest (the image's identity in containerd).
    pub manifest_digest: String,
    /// The manifest's size.
    pub manifest_size: u64,
    /// The config blob's digest.
    pub config_digest: String,
    /// The compressed layer's digest.
    pub layer_digest: String,
    /// The compressed layer's size.
    pub layer_size: u64,
    /// The uncompressed layer's digest (`rootfs.diff_ids[0]`).
    pub diff_id: String,
}

/// The pause image of `binary` under `reference` (the node's is [`PAUSE_IMAGE`]; another
/// Kubernetes release's e2e suite may ask for another tag of the same program).
pub fn pause_spec(binary: &Path, reference: &str) -> ImageSpec {
    ImageSpec {
        reference: reference.to_string(),
        entries: vec![Entry::File {
            path: "pause".into(),
            mode: 0o755,
            source: Source::Path(binary.to_path_buf()),
        }],
        entrypoint: vec!["/pause".into()],
        cmd: Vec::new(),
        env: vec!["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()],
        user: "65535:65535".into(),
        created_by: "kca-webhook-lab xtask: Kubernetes build/pause/linux/pause.c (gcc -static)"
            .into(),
    }
}

/// `/etc/passwd` of the Wolfi static base the Kyverno images are built on.
const PASSWD: &str = "root:x:0:0:root:/root:/sbin/nologin\n\
                      nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n\
                      nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n";
/// `/etc/group` to match [`PASSWD`].
const GROUP: &str = "root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n";

/// The ko layout of one Kyverno image, tagged `tag` (the chart's appVersion, e.g. `v1.19.1`).
pub fn ko_spec(
    repo: &str,
    binary_name: &str,
    tag: &str,
    binary: &Path,
    ca_bundle: &[u8],
) -> ImageSpec {
    let app = format!("/ko-app/{binary_name}");
    let dir = |path: &str, mode: u32| Entry::Dir {
        path: path.into(),
        mode,
    };
    let file = |path: &str, mode: u32, bytes: &[u8]| Entry::File {
        path: path.into(),
        mode,
        source: Source::Bytes(bytes.to_vec()),
    };
    ImageSpec {
        reference: format!("{KYVERNO_REGISTRY}/{repo}:{tag}"),
        entries: vec![
            dir("etc", 0o755),
            file("etc/group", 0o644, GROUP.as_bytes()),
            file("etc/passwd", 0o644, PASSWD.as_bytes()),
            dir("etc/ssl", 0o755),
            dir("etc/ssl/certs", 0o755),
            file("etc/ssl/certs/ca-certificates.crt", 0o644, ca_bundle),
            dir("home", 0o755),
            dir("home/nonroot", 0o755),
            dir("ko-app", 0o555),
            Entry::File {
                path: format!("ko-app/{binary_name}"),
                mode: 0o555,
                source: Source::Path(binary.to_path_buf()),
            },
            dir("tmp", 0o1777),
            dir("var", 0o755),
            dir("var/run", 0o755),
            dir("var/run/ko", 0o555),
        ],
        entrypoint: vec![app],
        cmd: Vec::new(),
        env: vec![
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/ko-app".into(),
            "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt".into(),
            "KO_DATA_PATH=/var/run/ko".into(),
        ],
        user: "65532".into(),
        created_by: format!(
            "kca-webhook-lab xtask: ko layout of github.com/kyverno/kyverno/cmd/{binary_name}"
        ),
    }
}

/// Counts and hashes what passes through to `inner`.
struct HashWriter<W> {
    inner: W,
    hasher: Sha256,
    count: u64,
}

impl<W: Write> HashWriter<W> {
    fn new(inner: W) -> Self {
        HashWriter {
            inner,
            hasher: Sha256::new(),
            count: 0,
        }
    }
    fn digest(&self) -> String {
        format!("sha256:{}", hex::encode(self.hasher.clone().finalize()))
    }
}

impl<W: Write> Write for HashWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn header(kind: tar::EntryType, mode: u32, size: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_size(size);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(0);
    h
}

/// Writes the layer tar (gzip) of `entries` into `out`; returns
/// `(compressed digest, compressed size, uncompressed digest)`.
///
/// # Errors
/// Duplicate paths, a file entry whose parent directory is not an entry, I/O.
pub fn write_layer(entries: &[Entry], out: &Path) -> anyhow::Result<(String, u64, String)> {
    let mut sorted: Vec<&Entry> = entries.iter().collect();
    sorted.sort_by(|a, b| a.path().cmp(b.path()));
    for pair in sorted.windows(2) {
        if pair[0].path() == pair[1].path() {
            anyhow::bail!("layer entry {} appears twice", pair[0].path());
        }
    }
    for e in &sorted {
        if let Some((parent, _)) = e.path().rsplit_once('/') {
            let has_parent = sorted
                .iter()
                .any(|d| matches!(d, Entry::Dir { path, .. } if path == parent));
            if !has_parent {
                anyhow::bail!("layer entry {} has no directory entry {parent}", e.path());
            }
        }
    }
    let file = fs::File::create(out).with_context(|| format!("creating {}", out.display()))?;
    let compressed = HashWriter::new(io::BufWriter::new(file));
    // Level 1: the five Kyverno images took 22.4 s at the default level 6 on a cold machine
    // (2026-12-04, docs/bench.md "A cold machine"); the layers are local, never pulled.
    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(compressed, flate2::Compression::fast());
    let mut tar = tar::Builder::new(HashWriter::new(gz));
    for e in sorted {
        match e {
            Entry::Dir { path, mode } => {
                let mut h = header(tar::EntryType::Directory, *mode, 0);
                tar.append_data(&mut h, format!("{path}/"), io::empty())
                    .with_context(|| format!("adding {path}/ to {}", out.display()))?;
            }
            Entry::File { path, mode, source } => {
                let data: Box<dyn io::Read> = match source {
                    Source::Bytes(b) => Box::new(io::Cursor::new(b.clone())),
                    Source::Path(p) => Box::new(
                        fs::File::open(p).with_context(|| format!("opening {}", p.display()))?,
                    ),
                };
                let size = match source {
                    Source::Bytes(b) => b.len() as u64,
                    Source::Path(p) => fs::metadata(p)
                        .with_context(|| format!("reading {}", p.display()))?
                        .len(),
                };
                let mut h = header(tar::EntryType::Regular, *mode, size);
                tar.append_data(&mut h, path, data.take(size))
                    .with_context(|| format!("adding {path} to {}", out.display()))?;
            }
            Entry::Symlink { path, target } => {
                let mut h = header(tar::EntryType::Symlink, 0o777, 0);
                tar.append_link(&mut h, path, target)
                    .with_context(|| format!("adding {path} -> {target} to {}", out.display()))?;
            }
        }
    }
    let uncompressed = tar
        .into_inner()
        .with_context(|| format!("finishing {}", out.display()))?;
    let diff_id = uncompressed.digest();
    let gz = uncompressed.inner;
    let mut compressed = gz
        .finish()
        .with_context(|| format!("finishing {}", out.display()))?;
    compressed
        .flush()
        .with_context(|| format!("writing {}", out.display()))?;
    let digest = compressed.digest();
    let size = compressed.count;
    let file = compressed
        .inner
        .into_inner()
        .map_err(|e| e.into_error())
        .with_context(|| format!("writing {}", out.display()))?;
    file.sync_all()
        .with_context(|| format!("syncing {}", out.display()))?;
    Ok((digest, size, diff_id))
}

fn descriptor(media_type: MediaType, digest: &str, size: u64) -> anyhow::Result<Descriptor> {
    let digest: Digest = digest.parse().with_context(|| format!("digest {digest}"))?;
    Ok(Descriptor::new(media_type, size, digest))
}

fn host_arch() -> anyhow::Result<Arch> {
    match std::env::consts::ARCH {
        "x86_64" => Ok(Arch::Amd64),
        "aarch64" => Ok(Arch::ARM64),
        other => anyhow::bail!("no image architecture for host architecture {other}"),
    }
}

/// Writes `spec` as an OCI image layout tar archive at `out`: `oci-layout`,
/// `index.json` (one manifest, annotated with the full reference in
/// `io.containerd.image.name` and the tag in `org.opencontainers.image.ref.name`),
/// and `blobs/sha256/` holding the config, the layer and the manifest.
///
/// # Errors
/// As [`write_layer`], and I/O on `out`.
pub fn write_layout_archive(spec: &ImageSpec, out: &Path) -> anyhow::Result<WrittenImage> {
    let layer_path = out.with_extension("layer.tmp");
    let result = write_layout_archive_inner(spec, out, &layer_path);
    let _ = fs::remove_file(&layer_path);
    if result.is_err() {
        let _ = fs::remove_file(out);
    }
    result
}

/// [`write_layout_archive`]'s steps: the layer, the config, manifest and index (each canonical
/// JSON, named by its digest), then the archive of them all.
fn write_layout_archive_inner(
    spec: &ImageSpec,
    out: &Path,
    layer_path: &Path,
) -> anyhow::Result<WrittenImage> {
    let (layer_digest, layer_size, diff_id) = write_layer(&spec.entries, layer_path)?;
    let config_bytes = config_json(spec, &diff_id)?;
    let config_digest = sha256_hex(&config_bytes);
    let manifest_bytes = manifest_json(
        spec,
        (&config_digest, config_bytes.len() as u64),
        (&layer_digest, layer_size),
    )?;
    let manifest_digest = sha256_hex(&manifest_bytes);
    let index_bytes = index_json(spec, &manifest_digest, manifest_bytes.len() as u64)?;
    let layout_bytes = br#"{"imageLayoutVersion":"1.0.0"}"#.to_vec();

    let blob = |d: &str| format!("blobs/sha256/{}", d.trim_start_matches("sha256:"));
    let mut files: Vec<(String, Source)> = vec![
        (blob(&config_digest), Source::Bytes(config_bytes)),
        (blob(&layer_digest), Source::Path(layer_path.to_path_buf())),
        (
            blob(&manifest_digest),
            Source::Bytes(manifest_bytes.clone()),
        ),
    ];
    files.sort_by(|a, b| a.0.cmp(&b.0));
    files.push(("index.json".into(), Source::Bytes(index_bytes)));
    files.push(("oci-layout".into(), Source::Bytes(layout_bytes)));
    write_layout_tar(out, files)?;
    Ok(WrittenImage {
        manifest_digest,
        manifest_size: manifest_bytes.len() as u64,
        config_digest,
        layer_digest,
        layer_size,
        diff_id,
    })
}

/// The error of an `oci-spec` builder for `spec`'s image, naming its reference.
fn oci_error(spec: &ImageSpec) -> impl Fn(oci_spec::OciSpecError) -> anyhow::Error + '_ {
    move |e| anyhow::anyhow!("building the image config of {}: {e}", spec.reference)
}

/// The image config of `spec` with its one layer `diff_id`, as canonical JSON (RFC 8785).
fn config_json(spec: &ImageSpec, diff_id: &str) -> anyhow::Result<Vec<u8>> {
    let oci = oci_error(spec);
    let runtime = ConfigBuilder::default()
        .entrypoint(spec.entrypoint.clone())
        .env(spec.env.clone())
        .user(spec.user.clone());
    let runtime = if spec.cmd.is_empty() {
        runtime
    } else {
        runtime.cmd(spec.cmd.clone())
    };
    let config = ImageConfigurationBuilder::default()
        .created(EPOCH_RFC3339)
        .architecture(host_arch()?)
        .os(Os::Linux)
        .config(runtime.build().map_err(&oci)?)
        .rootfs(
            RootFsBuilder::default()
                .typ("layers")
                .diff_ids(vec![diff_id.to_owned()])
                .build()
                .map_err(&oci)?,
        )
        .history(vec![
            HistoryBuilder::default()
                .created(EPOCH_RFC3339)
                .created_by(spec.created_by.clone())
                .build()
                .map_err(&oci)?,
        ])
        .build()
        .map_err(&oci)?;
    serde_json_canonicalizer::to_vec(&config).context("serialising the image config")
}

/// The image manifest naming the config and the one gzip layer, each `(digest, size)`, as
/// canonical JSON.
fn manifest_json(
    spec: &ImageSpec,
    config: (&str, u64),
    layer: (&str, u64),
) -> anyhow::Result<Vec<u8>> {
    let manifest = ImageManifestBuilder::default()
        .schema_version(2u32)
        .media_type(MediaType::ImageManifest)
        .config(descriptor(MediaType::ImageConfig, config.0, config.1)?)
        .layers(vec![descriptor(
            MediaType::ImageLayerGzip,
            layer.0,
            layer.1,
        )?])
        .build()
        .map_err(oci_error(spec))?;
    serde_json_canonicalizer::to_vec(&manifest).context("serialising the manifest")
}

/// `index.json`: the one manifest, annotated with the full reference
/// (`io.containerd.image.name`) and the tag (`org.opencontainers.image.ref.name`), as canonical
/// JSON.
fn index_json(
    spec: &ImageSpec,
    manifest_digest: &str,
    manifest_size: u64,
) -> anyhow::Result<Vec<u8>> {
    let oci = oci_error(spec);
    let tag = spec
        .reference
        .rsplit_once(':')
        .map(|(_, t)| t)
        .filter(|t| !t.contains('/'))
        .with_context(|| format!("image reference {} has no tag", spec.reference))?;
    let mut annotations = HashMap::new();
    annotations.insert(
        ANNOTATION_CONTAINERD_IMAGE_NAME.to_string(),
        spec.reference.clone(),
    );
    annotations.insert(ANNOTATION_REF_NAME.to_string(), tag.to_string());
    let manifest_desc = DescriptorBuilder::default()
        .media_type(MediaType::ImageManifest)
        .digest(
            manifest_digest
                .parse::<Digest>()
                .with_context(|| format!("digest {manifest_digest}"))?,
        )
        .size(manifest_size)
        .annotations(annotations)
        .build()
        .map_err(&oci)?;
    let index = ImageIndexBuilder::default()
        .schema_version(2u32)
        .media_type(MediaType::ImageIndex)
        .manifests(vec![manifest_desc])
        .build()
        .map_err(&oci)?;
    serde_json_canonicalizer::to_vec(&index).context("serialising index.json")
}

/// Writes the layout archive `out`: the `blobs/` and `blobs/sha256/` directories, then `files`
/// in order (`0644`, the fixed header of [`header`]), synced.
fn write_layout_tar(out: &Path, files: Vec<(String, Source)>) -> anyhow::Result<()> {
    let file = fs::File::create(out).with_context(|| format!("creating {}", out.display()))?;
    let mut tar = tar::Builder::new(io::BufWriter::new(file));
    for dir in ["blobs/", "blobs/sha256/"] {
        let mut h = header(tar::EntryType::Directory, 0o755, 0);
        tar.append_data(&mut h, dir, io::empty())
            .with_context(|| format!("writing {}", out.display()))?;
    }
    for (name, source) in files {
        let (size, reader): (u64, Box<dyn io::Read>) = match source {
            Source::Bytes(b) => (b.len() as u64, Box::new(io::Cursor::new(b))),
            Source::Path(p) => {
                let f = fs::File::open(&p).with_context(|| format!("opening {}", p.display()))?;
                (
                    f.metadata()
                        .with_context(|| format!("reading {}", p.display()))?
                        .len(),
                    Box::new(f),
                )
            }
        };
        let mut h = header(tar::EntryType::Regular, 0o644, size);
        tar.append_data(&mut h, &name, reader)
            .with_context(|| format!("writing {name} to {}", out.display()))?;
    }
    let writer = tar
        .into_inner()
        .with_context(|| format!("finishing {}", out.display()))?;
    let file = writer
        .into_inner()
        .map_err(|e| e.into_error())
        .with_context(|| format!("writing {}", out.display()))?;
    file.sync_all()
        .with_context(|| format!("syncing {}", out.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::GzDecoder;

    fn read_archive(path: &Path) -> HashMap<String, Vec<u8>> {
        let mut out = HashMap::new();
        let mut a = tar::Archive::new(fs::File::open(path).unwrap());
        for e in a.entries().unwrap() {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().to_string();
            let mut buf = Vec::new();
            e.read_to_end(&mut buf).unwrap();
            out.insert(name, buf);
        }
        out
    }

    fn fake_kyverno(dir: &Path) -> PathBuf {
        let bin = dir.join("kyverno");
        fs::write(&bin, b"\x7fELF not really a binary, but bytes to carry").unwrap();
        bin
    }

    #[test]
    fn same_inputs_give_same_digests_and_bytes() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = fake_kyverno(tmp.path());
        let spec = ko_spec(
            "kyverno/kyverno",
            "kyverno",
            KYVERNO_TAG,
            &bin,
            b"CA BUNDLE\n",
        );
        let a = write_layout_archive(&spec, &tmp.path().join("a.tar")).unwrap();
        let b = write_layout_archive(&spec, &tmp.path().join("b.tar")).unwrap();
        assert_eq!(a, b);
        assert_eq!(
            fs::read(tmp.path().join("a.tar")).unwrap(),
            fs::read(tmp.path().join("b.tar")).unwrap()
        );
        assert!(!tmp.path().join("a.layer.tmp").exists());

        fs::write(&bin, b"\x7fELF another build").unwrap();
        let c = write_layout_archive(&spec, &tmp.path().join("c.tar")).unwrap();
        assert_ne!(a.manifest_digest, c.manifest_digest);
        assert_ne!(a.diff_id, c.diff_id);
    }

    #[test]
    fn layout_blobs_match_their_digests_and_sizes() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = fake_kyverno(tmp.path());
        let spec = ko_spec(
            "kyverno/kyvernopre",
            "kyverno-init",
            KYVERNO_TAG,
            &bin,
            b"CA\n",
        );
        let out = tmp.path().join("img.tar");
        let w = write_layout_archive(&spec, &out).unwrap();
        let files = read_archive(&out);

        assert_eq!(files["oci-layout"], br#"{"imageLayoutVersion":"1.0.0"}"#);
        for (name, bytes) in &files {
            if let Some(hex) = name.strip_prefix("blobs/sha256/").filter(|h| !h.is_empty()) {
                assert_eq!(sha256_hex(bytes), format!("sha256:{hex}"), "{name}");
            }
        }
        let index: serde_json::Value = serde_json::from_slice(&files["index.json"]).unwrap();
        let m = &index["manifests"][0];
        assert_eq!(m["digest"], w.manifest_digest.as_str());
        assert_eq!(m["size"], w.manifest_size);
        assert_eq!(
            m["annotations"]["io.containerd.image.name"],
            "reg.kyverno.io/kyverno/kyvernopre:v1.19.1"
        );
        assert_eq!(
            m["annotations"]["org.opencontainers.image.ref.name"],
            "v1.19.1"
        );
        assert_eq!(m["mediaType"], "application/vnd.oci.image.manifest.v1+json");

        let manifest_hex = w.manifest_digest.trim_start_matches("sha256:");
        let manifest: serde_json::Value =
            serde_json::from_slice(&files[&format!("blobs/sha256/{manifest_hex}")]).unwrap();
        assert_eq!(manifest["schemaVersion"], 2);
        assert_eq!(manifest["config"]["digest"], w.config_digest.as_str());
        assert_eq!(manifest["layers"][0]["digest"], w.layer_digest.as_str());
        assert_eq!(manifest["layers"][0]["size"], w.layer_size);
        assert_eq!(
            manifest["layers"][0]["mediaType"],
            "application/vnd.oci.image.layer.v1.tar+gzip"
        );
        let layer = &files[&format!(
            "blobs/sha256/{}",
            w.layer_digest.trim_start_matches("sha256:")
        )];
        assert_eq!(layer.len() as u64, w.layer_size);

        let config_hex = w.config_digest.trim_start_matches("sha256:");
        let config: serde_json::Value =
            serde_json::from_slice(&files[&format!("blobs/sha256/{config_hex}")]).unwrap();
        assert_eq!(
            config["config"]["Entrypoint"],
            serde_json::json!(["/ko-app/kyverno-init"])
        );
        assert_eq!(config["config"]["User"], "65532");
        assert_eq!(config["rootfs"]["diff_ids"][0], w.diff_id.as_str());
        assert_eq!(config["os"], "linux");
        let mut raw = Vec::new();
        GzDecoder::new(&layer[..]).read_to_end(&mut raw).unwrap();
        assert_eq!(sha256_hex(&raw), w.diff_id);
    }

    #[test]
    fn ko_layer_file_list_modes_and_owners() {
        let tmp = tempfile::tempdir().unwrap();
        let bin = fake_kyverno(tmp.path());
        let spec = ko_spec("kyverno/kyverno", "kyverno", KYVERNO_TAG, &bin, b"CA\n");
        let (_, _, _) = write_layer(&spec.entries, &tmp.path().join("l.tgz")).unwrap();
        let mut a = tar::Archive::new(GzDecoder::new(
            fs::File::open(tmp.path().join("l.tgz")).unwrap(),
        ));
        let mut listed = Vec::new();
        for e in a.entries().unwrap() {
            let e = e.unwrap();
            let h = e.header();
            assert_eq!(
                (h.uid().unwrap(), h.gid().unwrap(), h.mtime().unwrap()),
                (0, 0, 0)
            );
            listed.push((
                e.path().unwrap().to_string_lossy().to_string(),
                h.mode().unwrap(),
                h.size().unwrap(),
            ));
        }
        let names: Vec<&str> = listed.iter().map(|(n, _, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "etc/",
                "etc/group",
                "etc/passwd",
                "etc/ssl/",
                "etc/ssl/certs/",
                "etc/ssl/certs/ca-certificates.crt",
                "home/",
                "home/nonroot/",
                "ko-app/",
                "ko-app/kyverno",
                "tmp/",
                "var/",
                "var/run/",
                "var/run/ko/",
            ]
        );
        let find = |n: &str| listed.iter().find(|(p, _, _)| p == n).unwrap().clone();
        assert_eq!(find("tmp/").1, 0o1777);
        assert_eq!(find("ko-app/kyverno").1, 0o555);
        assert_eq!(find("ko-app/kyverno").2, fs::metadata(&bin).unwrap().len());
    }

    #[test]
    fn passwd_has_nobody_and_nonroot() {
        assert!(
            PASSWD
                .lines()
                .any(|l| l.starts_with("nobody:x:65534:65534:"))
        );
        assert!(
            PASSWD
                .lines()
                .any(|l| l.starts_with("nonroot:x:65532:65532:"))
        );
    }

    #[test]
    fn kyverno_references_are_the_charts() {
        let refs: Vec<String> = KYVERNO_IMAGES
            .iter()
            .map(|(repo, bin)| ko_spec(repo, bin, KYVERNO_TAG, Path::new("/x"), b"").reference)
            .collect();
        assert_eq!(refs[0], "reg.kyverno.io/kyverno/kyverno:v1.19.1");
        assert_eq!(refs[1], "reg.kyverno.io/kyverno/kyvernopre:v1.19.1");
        assert_eq!(refs[4], "reg.kyverno.io/kyverno/reports-controller:v1.19.1");
    }

    #[test]
    fn missing_parent_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let entries = vec![Entry::File {
            path: "a/b".into(),
            mode: 0o644,
            source: Source::Bytes(vec![]),
        }];
        let err = write_layer(&entries, &tmp.path().join("l")).unwrap_err();
        assert!(err.to_string().contains("no directory entry a"), "{err}");
    }
}
