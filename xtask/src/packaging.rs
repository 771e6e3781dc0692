//! What `cargo xtask dist` packs around the binary, pure where it can be: the release archive
//! ([`write_archive`]: the binary, `LICENSE`, completions and man pages, as krew's submission
//! checklist asks), the krew plugin manifest ([`krew_manifest`], checked by [`krew_problems`],
//! a port of krew's own `internal/index/validation` rules), and the CycloneDX SBOM of the binary
//! ([`sbom`]).
//!
//! # Why cargo-cyclonedx for the SBOM
//!
//! The SBOM is made by `cargo-cyclonedx` (the CycloneDX project's own Cargo plugin, Apache-2.0,
//! pinned at [`CYCLONEDX_VERSION`]), not by code of ours: it reads `cargo metadata`, so it
//! follows Cargo.lock and the target's resolved dependencies (no dev-dependencies, and with
//! `--no-build-deps` no build scripts' dependencies), which a hand-written Cargo.lock reader would
//! have to re-derive; the `cyclonedx-bom` library would still leave that resolution to us. It is
//! installed once per machine with `cargo install --locked` into the directory its caller names
//! (the upstream cache's `tools/cargo-cyclonedx-<version>/`, like actionlint; never into the
//! user's `~/.cargo/bin`), or taken from `KCA_CARGO_CYCLONEDX` (a path to the program).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};

use crate::command;

/// The cargo-cyclonedx release used (`cargo install --locked cargo-cyclonedx@VERSION`).
pub const CYCLONEDX_VERSION: &str = "0.5.9";

/// Where [`cyclonedx`] installs the tool below a machine-level cache directory `cache` (the
/// upstream cache, `xtask::upstream::default_cache_dir`): `tools/cargo-cyclonedx-<version>`.
pub fn tools_dir(cache: &Path) -> PathBuf {
    cache
        .join("tools")
        .join(format!("cargo-cyclonedx-{CYCLONEDX_VERSION}"))
}

/// The CycloneDX specification version of the SBOM.
pub const CYCLONEDX_SPEC: &str = "1.5";

/// The krew plugin's name (`kubectl kca-webhook-lab`; krew links it as `kubectl-kca_webhook_lab`).
pub const PLUGIN_NAME: &str = "kca-webhook-lab";

/// krew's manifest apiVersion (`pkg/constants`: `CurrentAPIVersion`).
pub const KREW_API_VERSION: &str = "krew.googlecontainertools.github.com/v1alpha2";

/// One file of a release archive: its path inside the archive and its bytes.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Path inside the archive, e.g. `completions/kca-webhook-lab.bash`.
    pub path: String,
    /// Its content.
    pub bytes: Vec<u8>,
    /// Unix mode (0o755 for the binary, 0o644 otherwise).
    pub mode: u32,
}

/// Writes a gzip'd tar of `entries` to `path`, in the given order, owned by 0:0 and dated
/// `mtime` (seconds since the epoch: the commit's date, so one commit gives one archive).
///
/// # Errors
/// The file cannot be written.
pub fn write_archive(path: &Path, entries: &[Entry], mtime: u64) -> Result<()> {
    let file =
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let gz = flate2::write::GzEncoder::new(file, flate2::Compression::best());
    let mut tar = tar::Builder::new(gz);
    tar.mode(tar::HeaderMode::Deterministic);
    for e in entries {
        let mut h = tar::Header::new_gnu();
        h.set_size(e.bytes.len() as u64);
        h.set_mode(e.mode);
        h.set_mtime(mtime);
        h.set_uid(0);
        h.set_gid(0);
        h.set_entry_type(tar::EntryType::Regular);
        tar.append_data(&mut h, &e.path, e.bytes.as_slice())
            .with_context(|| format!("adding {} to {}", e.path, path.display()))?;
    }
    let gz = tar.into_inner().context("finishing the tar")?;
    gz.finish()
        .and_then(|mut f| f.flush())
        .with_context(|| format!("writing {}", path.display()))
}

/// The paths inside the gzip'd tar at `path`, in order (what a test and krew's `files` see).
///
/// # Errors
/// The file is not a readable tar.gz.
pub fn archive_paths(path: &Path) -> Result<Vec<String>> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut out = Vec::new();
    for e in tar.entries().context("reading the tar")? {
        let e = e?;
        out.push(e.path()?.to_string_lossy().into_owned());
    }
    Ok(out)
}

/// A krew plugin manifest (`krew.googlecontainertools.github.com/v1alpha2` `Plugin`), the fields
/// krew documents ("Writing plugin manifests"); unknown fields are refused when read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KrewPlugin {
    /// [`KREW_API_VERSION`].
    pub api_version: String,
    /// `Plugin`.
    pub kind: String,
    /// `name`: the plugin's name, equal to the manifest's file name.
    pub metadata: KrewMetadata,
    /// The plugin.
    pub spec: KrewSpec,
}

/// `metadata` of a krew manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KrewMetadata {
    /// The plugin's name.
    pub name: String,
}

/// `spec` of a krew manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KrewSpec {
    /// Semver with a leading `v`, e.g. `v0.1.0`.
    pub version: String,
    /// The project's page.
    pub homepage: String,
    /// One line (no line break), shown by `kubectl krew search`.
    pub short_description: String,
    /// What it does, shown by `kubectl krew info`.
    pub description: String,
    /// What to know after installing, shown once by `kubectl krew install`.
    pub caveats: String,
    /// One entry per os/arch.
    pub platforms: Vec<KrewPlatform>,
}

/// One platform of a krew manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KrewPlatform {
    /// `matchLabels` of `os` and `arch` (Go's names: `linux`, `amd64`, `arm64`).
    pub selector: KrewSelector,
    /// The archive's download URL.
    pub uri: String,
    /// The archive's SHA-256, lowercase hex.
    pub sha256: String,
    /// Files to keep from the archive (`from` a path in it, `to` a directory of the install).
    pub files: Vec<KrewFile>,
    /// The program krew links as `kubectl-kca_webhook_lab`.
    pub bin: String,
}

/// A platform selector.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KrewSelector {
    /// `os`, `arch`.
    pub match_labels: std::collections::BTreeMap<String, String>,
}

/// One `files` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KrewFile {
    /// Path (or glob) in the archive.
    pub from: String,
    /// Directory in the install.
    pub to: String,
}

/// Go's `GOARCH` name of a Rust target's architecture (krew's `arch` label).
pub fn go_arch(rust_arch: &str) -> Option<&'static str> {
    match rust_arch {
        "x86_64" => Some("amd64"),
        "aarch64" => Some("arm64"),
        _ => None,
    }
}

/// The krew manifest of release `version` (without `v`) of `repository` (`OWNER/NAME` on
/// GitHub), one platform per `(rust arch, archive file name, sha256)`; the URIs are the
/// release's download URLs (`…/releases/download/v<version>/<archive>`), the tag the release
/// workflow runs on.
///
/// # Errors
/// An architecture krew has no name for.
pub fn krew_manifest(
    version: &str,
    repository: &str,
    archives: &[(String, String, String)],
) -> Result<KrewPlugin> {
    let mut platforms = Vec::new();
    for (arch, file, sha256) in archives {
        let Some(go) = go_arch(arch) else {
            bail!("no krew arch for {arch}");
        };
        platforms.push(KrewPlatform {
            selector: KrewSelector {
                match_labels: [("os", "linux"), ("arch", go)]
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            },
            uri: format!("https://github.com/{repository}/releases/download/v{version}/{file}"),
            sha256: sha256.clone(),
            files: ["kca-webhook-lab", "LICENSE"]
                .iter()
                .map(|f| KrewFile {
                    from: (*f).to_owned(),
                    to: ".".to_owned(),
                })
                .collect(),
            bin: "kca-webhook-lab".to_owned(),
        });
    }
    Ok(KrewPlugin {
        api_version: KREW_API_VERSION.to_owned(),
        kind: "Plugin".to_owned(),
        metadata: KrewMetadata {
            name: PLUGIN_NAME.to_owned(),
        },
        spec: KrewSpec {
            version: format!("v{version}"),
            homepage: format!("https://github.com/{repository}"),
            short_description: "Audit admission webhooks and admission policies".to_owned(),
            description: "Reads every admission webhook registration, ValidatingAdmissionPolicy \
                and MutatingAdmissionPolicy of a cluster (read-only) and shows what each does to \
                a request when its backend fails: failurePolicy, timeouts, selectors, ready \
                endpoints, the worst-case wait, and the traps (a Fail webhook with no ready \
                endpoint, a binding whose policy or params are missing, Audit-only actions). \
                It is also the student tool of the kca-webhook-lab admission-webhook labs.\n"
                .to_owned(),
            caveats: "Run `kubectl kca-webhook-lab audit` (exit 3 when something is found). \
                The lab commands (`act N`) change a lab cluster and need root on its node; never \
                run them against a cluster you care about. Messages are Japanese by default: \
                add `--lang en` for English.\n"
                .to_owned(),
            platforms,
        },
    })
}

/// What krew's `ValidatePlugin` would refuse in `manifest` read from the file `file_name`
/// (krew `internal/index/validation/validate.go`): the apiVersion, `kind: Plugin`, a safe name
/// (`^[\w-]+$`) equal to the file's, a one-line short description, at least one platform, a
/// semver `version` with `v`, and per platform a `uri`, a 64-hex `sha256`, a `bin`, non-empty
/// `from`/`to` in `files`, and a selector on `os`/`arch` only. Empty when krew would accept it.
pub fn krew_problems(manifest: &KrewPlugin, file_name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let name = &manifest.metadata.name;
    if manifest.api_version != KREW_API_VERSION {
        out.push(format!(
            "apiVersion {:?} is not {KREW_API_VERSION}",
            manifest.api_version
        ));
    }
    if manifest.kind != "Plugin" {
        out.push(format!("kind {:?} is not Plugin", manifest.kind));
    }
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
    {
        out.push(format!("name {name:?} does not match ^[\\w-]+$"));
    }
    if file_name.strip_suffix(".yaml") != Some(name.as_str()) {
        out.push(format!(
            "name {name:?} is not the file name {file_name:?} without .yaml"
        ));
    }
    let s = &manifest.spec;
    if s.short_description.is_empty() || s.short_description.contains(['\r', '\n']) {
        out.push("shortDescription must be one non-empty line".to_owned());
    }
    if s.platforms.is_empty() {
        out.push("no platform".to_owned());
    }
    if !is_semver_with_v(&s.version) {
        out.push(format!(
            "version {:?} is not semver with a leading v",
            s.version
        ));
    }
    for (i, p) in s.platforms.iter().enumerate() {
        if p.uri.is_empty() {
            out.push(format!("platforms[{i}].uri is empty"));
        }
        if p.sha256.len() != 64 || !p.sha256.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')) {
            out.push(format!(
                "platforms[{i}].sha256 {:?} is not 64 lowercase hex digits",
                p.sha256
            ));
        }
        if p.bin.is_empty() {
            out.push(format!("platforms[{i}].bin is empty"));
        }
        if p.files.iter().any(|f| f.from.is_empty() || f.to.is_empty()) {
            out.push(format!("platforms[{i}].files has an empty from/to"));
        }
        let labels = &p.selector.match_labels;
        if labels.is_empty() {
            out.push(format!("platforms[{i}].selector is empty"));
        }
        for k in labels.keys().filter(|k| *k != "os" && *k != "arch") {
            out.push(format!(
                "platforms[{i}].selector key {k:?} not supported (os, arch)"
            ));
        }
    }
    out
}

/// `vMAJOR.MINOR.PATCH` with an optional `-pre` / `+build` (krew's `semver.Parse`).
fn is_semver_with_v(v: &str) -> bool {
    let Some(rest) = v.strip_prefix('v') else {
        return false;
    };
    let core = rest.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

/// The program that runs `cargo cyclonedx`: `KCA_CARGO_CYCLONEDX` when set, else
/// `<tools>/bin/cargo-cyclonedx` at [`CYCLONEDX_VERSION`], installed there first
/// (`cargo install --locked --root <tools>`) when missing or another version. `tools` is the
/// caller's: [`tools_dir`] under the upstream cache, so a fresh clone reuses it.
///
/// # Errors
/// The install failed.
pub fn cyclonedx(tools: &Path) -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("KCA_CARGO_CYCLONEDX") {
        return Ok(PathBuf::from(p));
    }
    let bin = tools.join("bin/cargo-cyclonedx");
    let current = bin.exists() && {
        let mut v = Command::new(&bin);
        v.args(["cyclonedx", "--version"]);
        command::run(v).is_ok_and(|o| o.stdout.contains(CYCLONEDX_VERSION))
    };
    if !current {
        println!(
            "  installing cargo-cyclonedx {CYCLONEDX_VERSION} into {} (once)",
            tools.display()
        );
        let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
        c.args(["install", "--locked", "--quiet"])
            .arg(format!("cargo-cyclonedx@{CYCLONEDX_VERSION}"))
            .arg("--root")
            .arg(tools);
        command::run_inherited(c)?;
    }
    Ok(bin)
}

/// The CycloneDX JSON SBOM of the `kca-webhook-lab` binary for `target`, from Cargo.lock
/// through `cargo metadata` (normal dependencies of `lab` for that target; no dev or build
/// dependencies), written as `out`. cargo-cyclonedx writes it beside `lab/Cargo.toml` first
/// (`kca-webhook-lab_bin.cdx.json`); it is moved from there.
///
/// # Errors
/// The tool failed or wrote no SBOM.
pub fn sbom(root: &Path, tool: &Path, target: &str, out: &Path) -> Result<()> {
    let mut c = Command::new(tool);
    c.current_dir(root)
        .args([
            "cyclonedx",
            "--manifest-path",
            "lab/Cargo.toml",
            "--describe",
            "binaries",
        ])
        .args([
            "--format",
            "json",
            "--spec-version",
            CYCLONEDX_SPEC,
            "--no-build-deps",
        ])
        .args(["--target", target]);
    command::run(c)?;
    let written = root.join("lab/kca-webhook-lab_bin.cdx.json");
    ensure!(
        written.exists(),
        "cargo cyclonedx wrote no {}",
        written.display()
    );
    // It describes every binary of the workspace: xtask's is not released.
    let _ = std::fs::remove_file(root.join("xtask/xtask_bin.cdx.json"));
    std::fs::rename(&written, out).with_context(|| format!("moving the SBOM to {}", out.display()))
}

/// What in the CycloneDX document `sbom` contradicts Cargo.lock `lock`: its format and spec
/// version, its subject (`kca-webhook-lab` `version`, an application), and every component's
/// version being the one Cargo.lock pins for a package of that name. Empty when it agrees.
pub fn sbom_problems(sbom: &serde_json::Value, lock: &str, version: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lock: toml_lock::Lock = match toml_lock::parse(lock) {
        Ok(l) => l,
        Err(e) => return vec![format!("Cargo.lock: {e}")],
    };
    if sbom["bomFormat"] != "CycloneDX" || sbom["specVersion"] != CYCLONEDX_SPEC {
        out.push(format!(
            "not CycloneDX {CYCLONEDX_SPEC}: {} {}",
            sbom["bomFormat"], sbom["specVersion"]
        ));
    }
    let subject = &sbom["metadata"]["component"];
    if subject["name"] != "kca-webhook-lab"
        || subject["version"] != version
        || subject["type"] != "application"
    {
        out.push(format!(
            "the subject is not the application kca-webhook-lab {version}: {subject}"
        ));
    }
    let components = sbom["components"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if components.is_empty() {
        out.push("no components".to_owned());
    }
    for c in components {
        let (name, v) = (
            c["name"].as_str().unwrap_or(""),
            c["version"].as_str().unwrap_or(""),
        );
        if !lock.has(name, v) {
            out.push(format!("component {name} {v} is not in Cargo.lock"));
        }
    }
    out
}

/// Cargo.lock's `[[package]]` name/version pairs (a minimal reader of the lock's own layout: one
/// `name = "…"` then `version = "…"` per package).
mod toml_lock {
    /// The packages of a Cargo.lock.
    pub struct Lock(Vec<(String, String)>);

    impl Lock {
        /// Whether the lock pins `name` at `version`.
        pub fn has(&self, name: &str, version: &str) -> bool {
            self.0.iter().any(|(n, v)| n == name && v == version)
        }
    }

    /// Reads the `[[package]]` entries.
    pub fn parse(text: &str) -> Result<Lock, String> {
        let mut out = Vec::new();
        let mut name: Option<String> = None;
        for line in text.lines() {
            let value = |k: &str| {
                line.strip_prefix(k)
                    .and_then(|r| r.trim().strip_prefix('='))
                    .map(|r| r.trim().trim_matches('"').to_owned())
            };
            if line == "[[package]]" {
                name = None;
            } else if let Some(n) = value("name ") {
                name = Some(n);
            } else if let (Some(v), Some(n)) = (value("version "), name.take()) {
                out.push((n, v));
            }
        }
        if out.is_empty() {
            return Err("no [[package]] entries".to_owned());
        }
        Ok(Lock(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> KrewPlugin {
        krew_manifest(
            "0.1.0",
            "example/kca-webhook-lab",
            &[
                (
                    "x86_64".into(),
                    "kca-webhook-lab-0.1.0-x86_64-linux.tar.gz".into(),
                    "a".repeat(64),
                ),
                (
                    "aarch64".into(),
                    "kca-webhook-lab-0.1.0-aarch64-linux.tar.gz".into(),
                    "b".repeat(64),
                ),
            ],
        )
        .unwrap()
    }

    #[test]
    fn the_krew_manifest_has_krews_documented_fields_and_passes_its_rules() {
        let m = manifest();
        assert_eq!(
            krew_problems(&m, "kca-webhook-lab.yaml"),
            Vec::<String>::new()
        );
        let yaml = serde_yaml_ng::to_string(&m).unwrap();
        for field in [
            "apiVersion: krew.googlecontainertools.github.com/v1alpha2",
            "kind: Plugin",
            "shortDescription:",
            "caveats:",
            "homepage:",
            "sha256:",
            "matchLabels:",
            "bin: kca-webhook-lab",
        ] {
            assert!(yaml.contains(field), "{field} in\n{yaml}");
        }
        let back: KrewPlugin = serde_yaml_ng::from_str(&yaml).unwrap();
        assert_eq!(back, m);
        assert_eq!(m.spec.platforms[1].selector.match_labels["arch"], "arm64");
        assert!(
            m.spec.platforms[0]
                .uri
                .ends_with("/releases/download/v0.1.0/kca-webhook-lab-0.1.0-x86_64-linux.tar.gz")
        );
    }

    #[test]
    fn krews_rules_name_each_broken_field() {
        let mut m = manifest();
        m.spec.version = "0.1.0".into();
        m.spec.short_description = "two\nlines".into();
        m.spec.platforms[0].sha256 = "ABC".into();
        m.spec.platforms[0].bin = String::new();
        m.spec.platforms[1]
            .selector
            .match_labels
            .insert("distro".into(), "debian".into());
        let p = krew_problems(&m, "other.yaml");
        assert_eq!(p.len(), 6, "{p:#?}");
        let unknown = "apiVersion: x\nkind: Plugin\nmetadata: {name: a}\nspec: {version: v1.0.0, homepage: h, shortDescription: s, description: d, caveats: c, platforms: [], extra: 1}\n";
        assert!(serde_yaml_ng::from_str::<KrewPlugin>(unknown).is_err());
        assert!(is_semver_with_v("v1.2.3-rc.1+b") && !is_semver_with_v("v1.2"));
    }

    #[test]
    fn an_sbom_is_held_against_cargo_lock() {
        let lock = "version = 4\n\n[[package]]\nname = \"clap\"\nversion = \"4.6.9\"\nsource = \"x\"\n\n[[package]]\nname = \"lab\"\nversion = \"0.1.0\"\n";
        let good = serde_json::json!({"bomFormat": "CycloneDX", "specVersion": "1.5",
            "metadata": {"component": {"name": "kca-webhook-lab", "version": "0.1.0", "type": "application"}},
            "components": [{"name": "clap", "version": "4.6.9"}]});
        assert_eq!(sbom_problems(&good, lock, "0.1.0"), Vec::<String>::new());
        let mut bad = good.clone();
        bad["components"][0]["version"] = "4.0.0".into();
        bad["specVersion"] = "1.3".into();
        assert_eq!(sbom_problems(&bad, lock, "0.1.0").len(), 2);
    }
}
